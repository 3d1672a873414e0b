#pragma once
// PrefixStore: a namespace inside another store (torch.distributed.PrefixStore). Every key is
// stored as "<prefix>/<key>" in the wrapped store, so two users of one store (two process
// groups, two attempts of a restarted job) cannot see each other's keys.
//
//   auto base = std::make_shared<dist::TCPStore>(host, port, opts);
//   dist::PrefixStore pg0("pg0", base);
//   pg0.set("ready", "1");          // base holds "pg0/ready"
//
// The timeout is the wrapped store's (get and wait(keys) use it; set_timeout on a PrefixStore
// changes only its own wait(keys) default). num_keys() counts every key of the wrapped store, as
// PyTorch's does: a store cannot count one prefix cheaply.

#include <memory>

#include "distributed/store.h"

namespace ember::dist {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

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

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::vector<std::string> keys(const std::vector<std::string>& ks) const;
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace ember::dist
