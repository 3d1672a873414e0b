#include "distributed/hash_store.h"

#include "distributed/error.h"
#include "distributed/store_util.h"

namespace ember::dist {

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    data_[key] = value;
  }
  changed_.notify_all();
}

Bytes HashStore::get(const std::string& key) {
  wait({key}, timeout());
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = data_.find(key);
    if (it != data_.end()) value = parse_counter("store.add", key, it->second);
    value += delta;
    data_[key] = to_bytes(std::to_string(value));
  }
  changed_.notify_all();
  return value;
}

Bytes HashStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = data_.find(key);
    if (it == data_.end()) {
      if (!expected.empty()) return {};
      data_[key] = desired;
      result = desired;
    } else if (it->second == expected) {
      it->second = desired;
      result = desired;
    } else {
      return it->second;
    }
  }
  changed_.notify_all();
  return result;
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  const bool ok = changed_.wait_until(lock, start + timeout, [&] {
    for (const auto& k : keys)
      if (data_.count(k) == 0) return false;
    return true;
  });
  if (!ok) {
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (data_.count(k) == 0) missing.push_back(k);
    throw_wait_timeout("store.wait", missing, timeout, start);
  }
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& k : keys)
    if (data_.count(k) == 0) return false;
  return true;
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.erase(key) > 0;
}

int64_t HashStore::num_keys() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(data_.size());
}

}  // namespace ember::dist
