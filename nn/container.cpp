#include "nn/container.h"

namespace ember::nn {

void ModuleList::push_back(std::shared_ptr<Module> m) {
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

const std::shared_ptr<Module>& ModuleList::at(int64_t i) const {
  const int64_t n = static_cast<int64_t>(modules_.size());
  EMBER_CHECK(i >= -n && i < n, type_name(), ": index ", i, " is out of range for ", n, " modules");
  return modules_[static_cast<size_t>(i < 0 ? i + n : i)];
}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::child_replaced(const std::string& name, const std::shared_ptr<Module>& module) {
  modules_.at(static_cast<size_t>(std::stoll(name))) = module;
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : *this) x = (*m)(x);  // through operator(): a profiler range per layer
  return x;
}

void ModuleDict::child_replaced(const std::string& name, const std::shared_ptr<Module>& module) {
  for (auto& e : entries_)
    if (e.first == name) e.second = module;
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) {
  register_module(key, m);
  entries_.emplace_back(key, std::move(m));
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.first == key) return true;
  return false;
}

const std::shared_ptr<Module>& ModuleDict::at(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.first == key) return e.second;
  std::string known;
  for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.first;
  EMBER_ERROR("ModuleDict: no module named \"", key, "\" (keys: ", known, ")");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

}  // namespace ember::nn
