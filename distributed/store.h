#pragma once
// Store: the small key-value service that ranks meet through before they have any other channel
// (torch.distributed.Store). Rendezvous, the NCCL unique id, join barriers, failure reports and
// the launcher's bookkeeping all go through one.
//
//   auto store = std::make_shared<dist::TCPStore>("10.0.0.1", 29500, opts);   // tcp_store.h
//   store->set("ready/0", "1");
//   store->wait({"ready/0", "ready/1"});          // blocks until both exist, or its deadline
//   int64_t n = store->add("joined", 1);           // atomic counter: returns the new value
//
// Note [Every store call has a deadline]
// A call that waits (get, wait, and the network round trips of every call) gives up after the
// store's timeout() -- or the timeout passed to wait -- and raises dist::Error (kind Timeout,
// op "store.get" / "store.wait" / ..., naming the keys it waited for). Nothing in ember waits on
// a store without one: a rank that never starts must turn into an error on its peers, never a
// hang. Implementations: HashStore (one process, hash_store.h), FileStore (processes sharing a
// file system, file_store.h), TCPStore (a server and clients over TCP, tcp_store.h) and
// PrefixStore (a namespace inside another store, prefix_store.h).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::dist {

using Bytes = std::vector<uint8_t>;

Bytes to_bytes(const std::string& s);
std::string to_string(const Bytes& b);

class Store {
 public:
  // PyTorch's default store timeout: 5 minutes.
  static constexpr std::chrono::milliseconds kDefaultTimeout{300000};

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout);
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Sets key to value (overwrites).
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // The value of key, waiting up to timeout() for it to be set.
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the integer stored at key (a missing key counts as 0) and returns the new
  // value. The counter is stored as its decimal text, so get() of it reads "3".
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Atomically: if key holds `expected` (a missing key matches an empty `expected`), sets it to
  // `desired`. Returns the value the key holds after the call (desired on success; the current
  // value otherwise; empty when the key is missing and expected was not empty).
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // Waits until every key exists, up to `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // Whether every key exists now (no waiting).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Removes key; returns whether it existed.
  virtual bool delete_key(const std::string& key) = 0;
  // The number of keys stored.
  virtual int64_t num_keys() = 0;

  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  void set(const std::string& key, const std::string& value) { set(key, to_bytes(value)); }
  std::string get_string(const std::string& key) { return to_string(get(key)); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout);

 private:
  std::chrono::milliseconds timeout_;
};

// A barrier of `world_size` participants on `store` under `key`: each caller adds itself and
// waits until all have, up to `timeout`. The Timeout error says how many arrived. Every
// participant must use the same key once (a fresh key per barrier).
void store_barrier(Store& store, const std::string& key, int world_size,
                   std::chrono::milliseconds timeout);

}  // namespace ember::dist
