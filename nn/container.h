#pragma once
// Containers: modules that hold modules and register them, so that their parameters show up
// in parameters(), state_dict(), to() and zero_grad() (a plain std::vector of modules does
// not: see nn/module.h).
//
//   auto net = std::make_shared<nn::Sequential>();
//   net->push_back(std::make_shared<MyLayer>(...));   // registered as "0", "1", ...
//   Tensor y = (*net)(x);                               // each module's forward in turn
//
// - Sequential: an ordered chain; forward(x) feeds each module's output to the next.
// - ModuleList: an indexed list with no forward of its own (iterate it yourself).
// - ModuleDict: modules by name, in insertion order.

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  // Registers `m` under the next index ("0", "1", ...).
  void push_back(std::shared_ptr<Module> m);
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // Index i of the list; negative counts from the end. Out of range is an error.
  const std::shared_ptr<Module>& at(int64_t i) const;
  const std::shared_ptr<Module>& operator[](int64_t i) const { return at(i); }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }

 protected:
  explicit ModuleList(std::string type_name) : Module(std::move(type_name)) {}
  void child_replaced(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

class Sequential : public ModuleList {
 public:
  Sequential() : ModuleList("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Tensor forward(const Tensor& input) override;
};

class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  // Registers `m` under `key` (a new key: no '.').
  void insert(const std::string& key, std::shared_ptr<Module> m);
  bool contains(const std::string& key) const;
  const std::shared_ptr<Module>& at(const std::string& key) const;  // unknown key: an error
  std::vector<std::string> keys() const;
  size_t size() const { return entries_.size(); }

 protected:
  void child_replaced(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> entries_;
};

}  // namespace ember::nn
