#pragma once
// Module: the base of every layer (ember::nn). A module owns named parameters, buffers and
// child modules, registered by name, so that the whole tree can be walked with dotted names
// ("encoder.layers.0.weight"), moved (`to`), switched between training and evaluation, saved
// (`state_dict`) and restored (`load_state_dict`).
//
//   struct Net : nn::Module {
//     Net() : Module("Net") {
//       w = register_parameter("w", randn({4, 2}));      // a leaf that requires grad
//       steps = register_buffer("steps", zeros({1}));     // state, not trained
//       head = register_module("head", std::make_shared<Head>());
//     }
//     Tensor w, steps;
//     std::shared_ptr<Head> head;
//   };
//
// Only registered things count: a std::vector<std::shared_ptr<Module>> member is invisible to
// parameters(), state_dict() and to() (use ModuleList, which registers its elements).
// Members keep seeing the same tensors after to(): conversion changes the registered tensors'
// data in place (PyTorch's set_data), so `w` above stays the parameter.

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/macros.h"
#include "core/record_function.h"
#include "core/tensor.h"
#include "core/tensor_dict.h"

namespace ember::nn {

// An ordered name -> tensor list, in registration order (PyTorch's OrderedDict): the
// TensorDict of core/tensor_dict.h under the name nn code reads best.
using StateDict = TensorDict;

// What load_state_dict found: keys the module has but the dict lacks, and the reverse.
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }

  // ---- registration (names may not contain '.' and must be unique in this module) -------
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // Replaces the child registered as `name` with `module` (libtorch's replace_module), in the
  // registry and in a container's own list (ModuleList, Sequential, ModuleDict). A typed member
  // pointer of a custom module still points at the old child: reassign it yourself.
  void replace_module(const std::string& name, const std::shared_ptr<Module>& module);

  // ---- walking the tree ---------------------------------------------------------------------
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // This module (name "") and every descendant, depth first, in registration order.
  std::vector<std::pair<std::string, Module*>> named_modules();

  // ---- modes and housekeeping ---------------------------------------------------------------
  virtual void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Converts every parameter and buffer (and existing gradients) in place.
  void to(Device device);
  void to(DType dtype);  // floating parameters and buffers only, as in PyTorch
  void to(Device device, DType dtype);
  // Drops (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);
  // fn on every descendant, children first, then this module (PyTorch's Module.apply).
  void apply(const std::function<void(Module&)>& fn);

  // ---- state ------------------------------------------------------------------------------
  // Parameters and persistent buffers with dotted names.
  StateDict state_dict() const;
  // Copies the matching tensors in (under no_grad). A key whose shape differs is an error
  // naming the key and both shapes. With strict, missing or unexpected keys are an error
  // listing them; without, they are returned.
  LoadResult load_state_dict(const StateDict& dict, bool strict = true);

  // One tensor in, one tensor out: what Sequential chains. Layers with other signatures
  // (several inputs, several outputs) define their own forward and leave this one, which
  // throws an error naming the module.
  virtual Tensor forward(const Tensor& input);
  // Runs forward(); while a profiler records, inside a range "nn.<type_name>" (core/profiler.h).
  Tensor operator()(const Tensor& input) {
    if (EMBER_UNLIKELY(profiler::enabled())) return forward_recorded(input);
    return forward(input);
  }

  // One line describing this module's own settings, e.g. "in_features=4, out_features=2".
  virtual std::string extra_repr() const { return ""; }

 protected:
  // For containers that keep their own list of children: replace_module just replaced `name`.
  virtual void child_replaced(const std::string& /*name*/,
                              const std::shared_ptr<Module>& /*module*/) {}

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
    bool persistent = true;  // buffers only
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, bool params, bool recurse, bool persistent_only,
               StateDict& out) const;
  void convert(Device device, std::optional<DType> dtype);
  void print(std::ostream& os, int indent) const;
  friend std::ostream& operator<<(std::ostream& os, const Module& m);

  Tensor forward_recorded(const Tensor& input);
  std::string type_name_;
  bool training_ = true;
  std::vector<Entry> parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// The module tree as PyTorch prints it:
//   Net(
//     (head): Linear(in_features=4, out_features=2, bias=true)
//   )
std::ostream& operator<<(std::ostream& os, const Module& m);

// A copy of `dict` with `prefix` removed from the keys that start with it (e.g. "module." from
// a data-parallel checkpoint), or added to every key.
StateDict strip_prefix(const StateDict& dict, const std::string& prefix);
StateDict add_prefix(const StateDict& dict, const std::string& prefix);

}  // namespace ember::nn
