#include "distributed/prefix_store.h"

#include "distributed/error.h"

namespace ember::dist {

namespace {

std::chrono::milliseconds timeout_of(const std::shared_ptr<Store>& store) {
  if (!store) {
    throw Error(ErrorKind::Usage, "PrefixStore", -1, -1, -1, "the wrapped store is null");
  }
  return store->timeout();
}

}  // namespace

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(timeout_of(store)), prefix_(std::move(prefix)), store_(std::move(store)) {}

std::vector<std::string> PrefixStore::keys(const std::vector<std::string>& ks) const {
  std::vector<std::string> out;
  out.reserve(ks.size());
  for (const auto& k : ks) out.push_back(key(k));
  return out;
}

void PrefixStore::set(const std::string& k, const Bytes& value) { store_->set(key(k), value); }
Bytes PrefixStore::get(const std::string& k) { return store_->get(key(k)); }
int64_t PrefixStore::add(const std::string& k, int64_t delta) { return store_->add(key(k), delta); }
Bytes PrefixStore::compare_set(const std::string& k, const Bytes& expected, const Bytes& desired) {
  return store_->compare_set(key(k), expected, desired);
}
void PrefixStore::wait(const std::vector<std::string>& ks, std::chrono::milliseconds timeout) {
  store_->wait(keys(ks), timeout);
}
bool PrefixStore::check(const std::vector<std::string>& ks) { return store_->check(keys(ks)); }
bool PrefixStore::delete_key(const std::string& k) { return store_->delete_key(key(k)); }
int64_t PrefixStore::num_keys() { return store_->num_keys(); }

}  // namespace ember::dist
