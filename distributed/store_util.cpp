#include "distributed/store_util.h"

#include <cerrno>
#include <cstdlib>

#include "distributed/error.h"

namespace ember::dist {

int64_t parse_counter(const char* op, const std::string& key, const Bytes& value) {
  const std::string text = to_string(value);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end != text.c_str() + text.size()) {
    throw Error(ErrorKind::Usage, op, -1, -1, -1,
                "key '" + key + "' holds '" + text.substr(0, 32) + "', not an integer counter");
  }
  return v;
}

void throw_wait_timeout(const char* op, const std::vector<std::string>& missing,
                        std::chrono::milliseconds timeout,
                        std::chrono::steady_clock::time_point start) {
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 8; ++i) keys += (i ? ", '" : "'") + missing[i] + "'";
  if (missing.size() > 8) keys += ", ... (" + std::to_string(missing.size()) + " keys)";
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  throw Error(ErrorKind::Timeout, op, -1, -1, s,
              "keys " + keys + " not set within " + std::to_string(timeout.count()) + " ms");
}

}  // namespace ember::dist
