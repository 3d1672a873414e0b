#include "nn/module.h"

#include <map>
#include <ostream>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "autograd/ops/copy.h"

namespace ember::nn {

Tensor Module::forward_recorded(const Tensor& input) {
  profiler::RecordFunction range("nn." + type_name_, profiler::Category::module);
  return forward(input);
}

void Module::check_new_name(const std::string& name, const char* what) const {
  EMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": ", what,
              " name \"", name, "\" must be non-empty and contain no '.'");
  auto taken = [&](const auto& list) {
    for (const auto& e : list)
      if (e.name == name) return true;
    return false;
  };
  bool child = false;
  for (const auto& c : children_) child = child || c.first == name;
  EMBER_CHECK(!taken(parameters_) && !taken(buffers_) && !child, type_name_, ": ", what, " \"",
              name, "\" is already registered in this module");
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name, "parameter");
  EMBER_CHECK(t.defined(), type_name_, ": parameter \"", name, "\" is undefined");
  if (requires_grad) t.requires_grad_(true);
  parameters_.push_back(Entry{name, t, true});
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_new_name(name, "buffer");
  buffers_.push_back(Entry{name, t, persistent});
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "submodule");
  EMBER_CHECK(module != nullptr, type_name_, ": submodule \"", name, "\" is null");
  children_.emplace_back(name, std::move(module));
}

void Module::replace_module(const std::string& name, const std::shared_ptr<Module>& module) {
  EMBER_CHECK(module != nullptr, type_name_, ": replace_module: the new \"", name, "\" is null");
  for (auto& c : children_) {
    if (c.first != name) continue;
    c.second = module;
    child_replaced(name, module);
    return;
  }
  EMBER_ERROR(type_name_, ": replace_module: no submodule named \"", name, "\"");
}

void Module::collect(const std::string& prefix, bool params, bool recurse, bool persistent_only,
                     StateDict& out) const {
  for (const Entry& e : params ? parameters_ : buffers_) {
    if (!e.tensor.defined() || (persistent_only && !e.persistent)) continue;
    out.emplace_back(prefix + e.name, e.tensor);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    child->collect(prefix + name + ".", params, true, persistent_only, out);
  }
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  collect("", true, recurse, false, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters(recurse)) out.push_back(p.second);
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  collect("", false, recurse, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& b : named_buffers(recurse)) out.push_back(b.second);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& c : children_) out.push_back(c.second);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  // An explicit stack keeps the order depth first, children in registration order.
  std::vector<std::pair<std::string, Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [prefix, m] = stack.back();
    stack.pop_back();
    out.emplace_back(prefix, m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it) {
      stack.emplace_back(prefix.empty() ? it->first : prefix + "." + it->first, it->second.get());
    }
  }
  return out;
}

Tensor Module::forward(const Tensor& input) {
  EMBER_ERROR(type_name_, " has no forward(Tensor) (called with ", dtype_name(input.dtype()), " ",
              shape_str(input.sizes()), "); a module used in Sequential must define one");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->train(on);
}

namespace {

// Gives `t` the data of `src` in place (PyTorch's set_data): handles to `t` stay valid.
void set_data(const Tensor& t, const Tensor& src) {
  TensorImpl& impl = t.impl();
  impl.storage = src.storage();
  impl.sizes = src.sizes();
  impl.strides = src.strides();
  impl.storage_offset = src.storage_offset();
  impl.dtype = src.dtype();
  impl.refresh();
  // A leaf's AccumulateGrad node remembers its shape and dtype: make a fresh one next time.
  if (autograd::AutogradMeta* m = autograd::get_meta(t)) m->grad_accumulator.reset();
}

}  // namespace

void Module::convert(Device device, std::optional<DType> dtype) {
  autograd::NoGradGuard no_grad;
  auto convert_one = [&](const Tensor& t) {
    if (!t.defined()) return;
    const DType target = (dtype && t.is_floating_point()) ? *dtype : t.dtype();
    if (t.device() == device && t.dtype() == target) return;
    set_data(t, native::to(t, device, target));
    Tensor g = t.grad();
    if (g.defined()) set_data(g, native::to(g, device, target));
  };
  for (auto& e : parameters_) convert_one(e.tensor);
  for (auto& e : buffers_) convert_one(e.tensor);
  for (auto& c : children_) c.second->convert(device, dtype);
}

void Module::to(Device device) { convert(device, std::nullopt); }
void Module::to(Device device, DType dtype) {
  EMBER_CHECK(is_floating(dtype), type_name_, ".to: expected a floating dtype, got ",
              dtype_name(dtype));
  convert(device, dtype);
}
void Module::to(DType dtype) {
  const std::vector<Tensor> ps = parameters();
  to(ps.empty() ? Device(kCPU) : ps.front().device(), dtype);
}

void Module::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      g.zero_();
    }
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& c : children_) c.second->apply(fn);
  fn(*this);
}

StateDict Module::state_dict() const {
  // Registration order per module (parameters, then buffers), as PyTorch lists them.
  StateDict ordered;
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [prefix, m] = stack.back();
    stack.pop_back();
    for (const Entry& e : m->parameters_) ordered.emplace_back(prefix + e.name, e.tensor);
    for (const Entry& e : m->buffers_)
      if (e.persistent && e.tensor.defined()) ordered.emplace_back(prefix + e.name, e.tensor);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it) {
      stack.emplace_back(prefix + it->first + ".", it->second.get());
    }
  }
  return ordered;
}

LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [k, v] : dict) given[k] = &v;
  LoadResult result;
  std::vector<std::string> mismatched;
  const StateDict own = state_dict();
  std::map<std::string, bool> own_keys;
  for (const auto& [k, t] : own) {
    own_keys[k] = true;
    auto it = given.find(k);
    if (it == given.end()) {
      result.missing_keys.push_back(k);
      continue;
    }
    if (it->second->sizes() != t.sizes()) {
      mismatched.push_back(k + ": checkpoint " + shape_str(it->second->sizes()) + ", model " +
                           shape_str(t.sizes()));
    }
  }
  for (const auto& [k, v] : dict) {
    if (!own_keys.count(k)) result.unexpected_keys.push_back(k);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  EMBER_CHECK(mismatched.empty(), "load_state_dict (", type_name_, "): size mismatch for ",
              join(mismatched));
  if (strict) {
    EMBER_CHECK(
        result.missing_keys.empty() && result.unexpected_keys.empty(), "load_state_dict (",
        type_name_, "): Error(s) in loading state_dict: ",
        result.missing_keys.empty() ? "" : "Missing key(s): " + join(result.missing_keys) + ". ",
        result.unexpected_keys.empty()
            ? ""
            : "Unexpected key(s): " + join(result.unexpected_keys) + ".");
  }
  autograd::NoGradGuard no_grad;
  for (const auto& [k, t] : own) {
    auto it = given.find(k);
    if (it != given.end()) native::copy_(t, *it->second);
  }
  return result;
}

void Module::print(std::ostream& os, int indent) const {
  os << type_name_ << "(" << extra_repr();
  if (children_.empty()) {
    os << ")";
    return;
  }
  os << "\n";
  for (const auto& [name, child] : children_) {
    os << std::string(static_cast<size_t>(indent + 2), ' ') << "(" << name << "): ";
    child->print(os, indent + 2);
    os << "\n";
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  m.print(os, 0);
  return os;
}

StateDict strip_prefix(const StateDict& dict, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, v] : dict) {
    const bool has = k.compare(0, prefix.size(), prefix) == 0;
    out.emplace_back(has ? k.substr(prefix.size()) : k, v);
  }
  return out;
}

StateDict add_prefix(const StateDict& dict, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, v] : dict) out.emplace_back(prefix + k, v);
  return out;
}

}  // namespace ember::nn
