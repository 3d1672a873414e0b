#pragma once
// HashStore: a Store inside one process (threads of one program, tests). Waiting callers sleep
// on a condition variable until the keys they wait for are set or their deadline passes.

#include <condition_variable>
#include <map>
#include <mutex>

#include "distributed/store.h"

namespace ember::dist {

class HashStore : public Store {
 public:
  explicit HashStore(std::chrono::milliseconds timeout = kDefaultTimeout) : Store(timeout) {}

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  using Store::set;
  using Store::wait;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Bytes> data_;
};

}  // namespace ember::dist
