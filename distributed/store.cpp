#include "distributed/store.h"

#include "distributed/error.h"

namespace ember::dist {

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

Store::Store(std::chrono::milliseconds timeout) : timeout_(timeout) { set_timeout(timeout); }

void Store::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw Error(ErrorKind::Usage, "store.set_timeout", -1, -1, -1,
                "the timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  }
  timeout_ = timeout;
}

void store_barrier(Store& store, const std::string& key, int world_size,
                   std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  const std::string arrived_key = key + "/arrived";
  const std::string done_key = key + "/done";
  // The last to arrive marks the barrier done; everyone waits for that mark.
  if (store.add(arrived_key, 1) >= world_size) store.set(done_key, "1");
  try {
    store.wait({done_key}, timeout);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    const int64_t arrived = store.add(arrived_key, 0);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw Error(ErrorKind::Timeout, "barrier", -1, -1, s,
                "only " + std::to_string(arrived) + " of " + std::to_string(world_size) +
                    " ranks arrived at '" + key + "' within " + std::to_string(timeout.count()) +
                    " ms");
  }
}

}  // namespace ember::dist
