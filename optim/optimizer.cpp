#include "optim/optimizer.h"

#include <cmath>
#include <optional>

#include "autograd/grad_mode.h"
#include "autograd/ops/copy.h"
#include "core/ops/factory.h"
#include "core/record_function.h"

namespace ember::optim {

namespace {

std::string join_keys(const GroupOptions& options) {
  std::string s;
  for (const auto& kv : options) s += (s.empty() ? "" : ", ") + kv.first;
  return s;
}

// "<prefix>.<index>.<rest>" -> {prefix, index, rest}; nullopt when the key has another form.
struct IndexedKey {
  std::string prefix;
  int64_t index;
  std::string rest;
};

std::optional<IndexedKey> split_key(const std::string& key) {
  const size_t a = key.find('.');
  if (a == std::string::npos) return std::nullopt;
  const size_t b = key.find('.', a + 1);
  if (b == std::string::npos || b == a + 1 || b + 1 == key.size()) return std::nullopt;
  int64_t index = 0;
  for (size_t i = a + 1; i < b; ++i) {
    if (key[i] < '0' || key[i] > '9' || index > (int64_t{1} << 40)) return std::nullopt;
    index = index * 10 + (key[i] - '0');
  }
  return IndexedKey{key.substr(0, a), index, key.substr(b + 1)};
}

// A step counter from a file: one number, a non-negative integer of at most 2^53 (where doubles
// stop counting one by one, and far inside int64).
void check_step(const std::string& who, const std::string& key, const Tensor& t) {
  EMBER_CHECK(t.numel() == 1, who, ": ", key, " must hold one number, got shape ", t.sizes());
  EMBER_CHECK(t.dtype() != kBool, who, ": ", key, " must be a number, got a bool");
  const double v = t.item<double>();
  EMBER_CHECK(std::isfinite(v) && v >= 0.0 && v <= 9007199254740992.0 && v == std::floor(v), who,
              ": ", key, " must be a non-negative integer of at most 2^53, got ", v);
}

}  // namespace

double ParamGroup::get(const std::string& name) const {
  auto it = options.find(name);
  EMBER_CHECK(it != options.end(), "optimizer parameter group has no option \"", name,
              "\" (it has: ", join_keys(options), ")");
  return it->second;
}

bool ParamState::has(const std::string& name) const {
  for (const auto& kv : entries_)
    if (kv.first == name) return true;
  return false;
}

Tensor& ParamState::operator[](const std::string& name) {
  for (auto& kv : entries_)
    if (kv.first == name) return kv.second;
  entries_.emplace_back(name, Tensor());
  return entries_.back().second;
}

const Tensor& ParamState::at(const std::string& name) const {
  for (const auto& kv : entries_)
    if (kv.first == name && kv.second.defined()) return kv.second;
  std::string have;
  for (const auto& kv : entries_) have += (have.empty() ? "" : ", ") + kv.first;
  EMBER_ERROR("optimizer state has no entry \"", name, "\" (it has: ", have.empty() ? "none" : have,
              ")");
}

void Optimizer::add_param_groups(std::vector<ParamGroup> groups) {
  size_t total = 0;
  for (const ParamGroup& g : groups) total += g.params.size();
  EMBER_CHECK(total > 0, name_, ": optimizer got an empty parameter list");
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  for (size_t k = 0; k < group.params.size(); ++k) {
    const Tensor& p = group.params[k];
    EMBER_CHECK(p.defined(), name_, ": parameter ", k, " of the new group is an undefined tensor");
    EMBER_CHECK(p.is_floating_point(), name_,
                ": can only optimize floating-point tensors, but parameter ", k,
                " of the new group has dtype ", dtype_name(p.dtype()));
    EMBER_CHECK(p.is_leaf() || p.retains_grad(), name_, ": can't optimize a non-leaf Tensor (",
                "parameter ", k, " of the new group)");
    for (size_t m = 0; m < k; ++m)
      EMBER_CHECK(!group.params[m].is_same(p), name_, ": parameter ", k,
                  " of the new group is the same tensor as parameter ", m);
    for (const ParamGroup& other : groups_)
      for (const Tensor& q : other.params)
        EMBER_CHECK(!q.is_same(p), name_,
                    ": some parameters appear in more than one parameter group");
  }
  for (const auto& [key, value] : defaults_) group.options.emplace(key, value);
  check_options(group.options);
  for (const auto& [key, value] : group.options)
    EMBER_CHECK(!std::isnan(value), name_, ": option \"", key, "\" of the new group is NaN");

  std::vector<ParamState> states(group.params.size());
  for (size_t k = 0; k < group.params.size(); ++k) init_state(group, group.params[k], states[k]);
  groups_.push_back(std::move(group));
  state_.push_back(std::move(states));
}

void Optimizer::zero_grad(bool set_to_none) {
  profiler::RecordFunction range(zero_grad_range_);
  autograd::NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    for (const Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        if (!g.is_leaf()) g.detach_();  // a gradient made with create_graph
        g.zero_();
      }
    }
  }
}

void Optimizer::step() {
  profiler::RecordFunction range(step_range_);
  autograd::NoGradGuard no_grad;
  try {
    update_all();
  } catch (...) {
    flush_updates();  // the updates queued before the error happen, as they would one by one
    throw;
  }
  flush_updates();
}

void Optimizer::update_all() {
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    for (size_t j = 0; j < group.params.size(); ++j, ++index) {
      const Tensor& p = group.params[j];
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(grad.sizes() == p.sizes(), name_, ": the gradient of parameter ", index,
                  " has shape ", grad.sizes(), " but the parameter has shape ", p.sizes());
      EMBER_CHECK(grad.dtype() == p.dtype(), name_, ": the gradient of parameter ", index,
                  " has dtype ", dtype_name(grad.dtype()), " but the parameter has dtype ",
                  dtype_name(p.dtype()));
      EMBER_CHECK(grad.device() == p.device(), name_, ": the gradient of parameter ", index,
                  " is on ", grad.device().str(), " but the parameter is on ", p.device().str());
      update(group, p, grad.detach(), state_[g][j]);
    }
  }
}

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  {
    autograd::EnableGradGuard enable_grad;
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::check_flag(const GroupOptions& options, const std::string& key) const {
  const double v = options.at(key);
  EMBER_CHECK(v == 0.0 || v == 1.0, name_, ": ", key, " must be 0 or 1 (false or true), got ", v);
}

std::pair<size_t, size_t> Optimizer::locate(const Tensor& param) const {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t j = 0; j < groups_[g].params.size(); ++j)
      if (groups_[g].params[j].is_same(param)) return {g, j};
  EMBER_ERROR(name_, ": the tensor is not a parameter of this optimizer");
}

ParamState& Optimizer::state(const Tensor& param) {
  const auto [g, j] = locate(param);
  return state_[g][j];
}

const ParamState& Optimizer::state(const Tensor& param) const {
  const auto [g, j] = locate(param);
  return state_[g][j];
}

TensorDict Optimizer::state_dict() const {
  TensorDict out;
  int64_t index = 0;
  for (const auto& group_state : state_) {
    for (const ParamState& st : group_state) {
      for (const auto& [name, t] : st.entries()) {
        if (t.defined())
          out.emplace_back("state." + std::to_string(index) + "." + name, t.detach().clone());
      }
      ++index;
    }
  }
  index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [key, value] : groups_[g].options)
      out.emplace_back(prefix + key, scalar_tensor(value, kFloat64));
    std::vector<int64_t> ids;
    for (size_t j = 0; j < groups_[g].params.size(); ++j) ids.push_back(index++);
    out.emplace_back(prefix + "params", tensor(ids, {static_cast<int64_t>(ids.size())}));
  }
  return out;
}

void Optimizer::load_state_dict(const TensorDict& dict) {
  const std::string who = name_ + ".load_state_dict";
  struct SavedGroup {
    Tensor params;
    GroupOptions options;
  };
  std::map<int64_t, SavedGroup> saved_groups;
  std::map<int64_t, TensorDict> saved_state;  // by saved parameter number
  for (const auto& [key, t] : dict) {
    auto k = split_key(key);
    EMBER_CHECK(k && (k->prefix == "state" || k->prefix == "param_groups"), who,
                ": unexpected key \"", key,
                "\" (keys are state.<i>.<name> and param_groups.<g>.<option>)");
    EMBER_CHECK(t.defined(), who, ": \"", key, "\" is an undefined tensor");
    if (k->prefix == "state") {
      saved_state[k->index].emplace_back(k->rest, t);
    } else if (k->rest == "params") {
      EMBER_CHECK(t.dim() == 1 && !t.is_floating_point() && t.dtype() != kBool, who, ": \"", key,
                  "\" must be a 1-D integer tensor of parameter numbers, got ",
                  dtype_name(t.dtype()), " ", t.sizes());
      saved_groups[k->index].params = t.to(kCPU).to(kInt64).contiguous();
    } else {
      EMBER_CHECK(t.numel() == 1, who, ": \"", key, "\" must hold one number, got shape ",
                  t.sizes());
      saved_groups[k->index].options[k->rest] = t.item<double>();
    }
  }

  EMBER_CHECK(saved_groups.size() == groups_.size(), who,
              ": loaded state dict has a different number of parameter groups (",
              saved_groups.size(), " in the state dict, ", groups_.size(), " in the optimizer)");
  // saved parameter number -> (group, position) in this optimizer
  std::map<int64_t, std::pair<size_t, size_t>> id_map;
  std::vector<GroupOptions> new_options;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto it = saved_groups.find(static_cast<int64_t>(g));
    EMBER_CHECK(it != saved_groups.end(), who, ": the state dict has no param_groups.", g);
    const SavedGroup& saved = it->second;
    EMBER_CHECK(saved.params.defined(), who, ": param_groups.", g, ".params is missing");
    EMBER_CHECK(saved.params.numel() == static_cast<int64_t>(groups_[g].params.size()), who,
                ": loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group (group ",
                g, ": ", saved.params.numel(), " parameters in the state dict, ",
                groups_[g].params.size(), " in the optimizer)");
    const int64_t* ids = saved.params.data_ptr<int64_t>();
    for (size_t j = 0; j < groups_[g].params.size(); ++j) {
      EMBER_CHECK(id_map.emplace(ids[j], std::make_pair(g, j)).second, who, ": parameter number ",
                  ids[j], " appears twice in the param_groups");
    }
    for (const auto& kv : defaults_)
      EMBER_CHECK(saved.options.count(kv.first), who, ": param_groups.", g, ".", kv.first,
                  " is missing (", name_, " needs: ", join_keys(defaults_), ")");
    // Note [Validating loaded state]: the constructor's checks, the error naming the key.
    for (const auto& [key, value] : saved.options)
      EMBER_CHECK(!std::isnan(value), who, ": param_groups.", g, ".", key, " is NaN");
    try {
      check_options(saved.options);
    } catch (const Error& e) {
      // The first key that alone makes the group's current (valid) options invalid.
      for (const auto& [key, value] : saved.options) {
        GroupOptions probe = groups_[g].options;
        probe[key] = value;
        bool bad = false;
        try {
          check_options(probe);
        } catch (const Error&) {
          bad = true;
        }
        if (bad) EMBER_ERROR(who, ": param_groups.", g, ".", key, ": ", e.what());
      }
      EMBER_ERROR(who, ": param_groups.", g, ": ", e.what());
    }
    new_options.push_back(saved.options);
  }

  std::vector<std::vector<ParamState>> new_state(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) new_state[g].resize(groups_[g].params.size());
  for (const auto& [id, entries] : saved_state) {
    auto it = id_map.find(id);
    EMBER_CHECK(it != id_map.end(), who, ": state.", id,
                " belongs to no parameter listed in the param_groups");
    const auto [g, j] = it->second;
    const Tensor& p = groups_[g].params[j];
    ParamState& st = new_state[g][j];
    for (const auto& [name, t] : entries) {
      const std::string key = "state." + std::to_string(id) + "." + name;
      if (name == "step") {  // a counter, kept as saved (PyTorch does not cast it either)
        check_step(who, key, t);
        st[name] = t.detach().clone();
        continue;
      }
      if (!state_has_param_shape(name)) {  // checked by check_state below
        st[name] = t.detach().to(p.device()).clone();
        continue;
      }
      EMBER_CHECK(t.sizes() == p.sizes(), who, ": state.", id, ".", name, " has shape ", t.sizes(),
                  " but parameter ", id, " has shape ", p.sizes());
      EMBER_CHECK(t.is_floating_point(), who, ": state.", id, ".", name, " has dtype ",
                  dtype_name(t.dtype()), ", a floating dtype is expected");
      st[name] = t.detach().to(p.device(), p.dtype()).clone();
    }
    try {
      check_state("state." + std::to_string(id) + ".", new_options[g], p, st);
    } catch (const Error& e) {
      EMBER_ERROR(who, ": ", e.what());
    }
  }

  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = std::move(new_options[g]);
  state_ = std::move(new_state);
}

}  // namespace ember::optim
