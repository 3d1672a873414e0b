#pragma once
// FileStore: a Store shared by the processes that can open one file (one machine, or a shared
// file system). The file is a log of records -- set key=value, delete key -- that every call
// appends to and replays under an exclusive flock(2), so the processes agree on one order of
// changes. Waiting polls the file (every few milliseconds) until the keys appear or the
// deadline passes (Note [Every store call has a deadline] in store.h).
//
//   dist::FileStore store("/tmp/job42.store", /*timeout=*/std::chrono::seconds(30));
//
// The file is created when missing; it is never truncated by ember (a new job uses a new path).
// A damaged record (a truncated file, a foreign file) raises a dist::Error naming the path and
// the offset.

#include <map>
#include <mutex>

#include "distributed/store.h"

namespace ember::dist {

class FileStore : public Store {
 public:
  explicit FileStore(std::string path, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~FileStore() override;

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

  const std::string& path() const { return path_; }

 private:
  class Locked;  // the file locked and replayed up to its end (file_store.cpp)
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;                   // threads of this process take turns
  std::map<std::string, Bytes> data_;  // the state after replaying the log up to offset_
  int64_t offset_ = 0;
};

}  // namespace ember::dist
