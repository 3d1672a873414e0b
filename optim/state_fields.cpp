#include "optim/state_fields.h"

#include <cmath>
#include <map>

#include "autograd/ops/copy.h"
#include "core/ops/factory.h"

namespace ember::optim {

void StateFields::add(const std::string& name, int64_t& value) {
  fields_.emplace_back(name, &value);
}
void StateFields::add(const std::string& name, double& value) {
  fields_.emplace_back(name, &value);
}
void StateFields::add(const std::string& name, bool& value) { fields_.emplace_back(name, &value); }
void StateFields::add(const std::string& name, std::vector<double>& values, int64_t length) {
  fields_.emplace_back(name, List<double>{&values, length});
}
void StateFields::add(const std::string& name, std::vector<int64_t>& values, int64_t length) {
  fields_.emplace_back(name, List<int64_t>{&values, length});
}

void StateFields::add_all(const std::string& prefix, const StateFields& other) {
  for (const auto& [name, ref] : other.fields_) fields_.emplace_back(prefix + name, ref);
}

namespace {

template <class T>
Tensor list_tensor(const std::vector<T>& v) {
  return tensor(v, {static_cast<int64_t>(v.size())});
}

struct Saver {
  Tensor operator()(int64_t* v) const { return scalar_tensor(*v, kInt64); }
  Tensor operator()(double* v) const { return scalar_tensor(*v, kFloat64); }
  Tensor operator()(bool* v) const { return scalar_tensor(*v, kBool); }
  template <class T>
  Tensor operator()(const T& list) const {
    return list_tensor(*list.values);
  }
};

}  // namespace

TensorDict StateFields::save() const {
  TensorDict out;
  for (const auto& [name, ref] : fields_) out.emplace_back(name, std::visit(Saver{}, ref));
  return out;
}

void StateFields::load(const TensorDict& dict, const std::string& who) const {
  std::map<std::string, const Tensor*> given;
  for (const auto& [key, t] : dict) {
    EMBER_CHECK(given.emplace(key, &t).second, who, ": key \"", key, "\" appears twice");
  }
  std::map<std::string, bool> known;
  for (const auto& field : fields_) known[field.first] = true;
  for (const auto& [key, t] : dict) {
    (void)t;
    EMBER_CHECK(known.count(key), who, ": unexpected key \"", key, "\"");
  }

  // Check everything first, so that a bad dict changes nothing.
  std::vector<Tensor> values;
  for (const auto& [name, ref] : fields_) {
    auto it = given.find(name);
    EMBER_CHECK(it != given.end(), who, ": missing key \"", name, "\"");
    const Tensor& t = *it->second;
    EMBER_CHECK(t.defined(), who, ": \"", name, "\" is an undefined tensor");
    const bool is_list =
        std::holds_alternative<List<double>>(ref) || std::holds_alternative<List<int64_t>>(ref);
    if (is_list) {
      EMBER_CHECK(t.dim() == 1, who, ": \"", name, "\" must be a 1-D list, got shape ", t.sizes());
      int64_t length = std::holds_alternative<List<double>>(ref)
                           ? std::get<List<double>>(ref).length
                           : std::get<List<int64_t>>(ref).length;
      EMBER_CHECK(length < 0 || t.numel() == length, who, ": \"", name, "\" has ", t.numel(),
                  " values, expected ", length, " (one per parameter group)");
    } else {
      EMBER_CHECK(t.numel() == 1, who, ": \"", name, "\" must hold one number, got shape ",
                  t.sizes());
    }
    const bool wants_int =
        std::holds_alternative<int64_t*>(ref) || std::holds_alternative<List<int64_t>>(ref);
    EMBER_CHECK(!wants_int || !t.is_floating_point(), who, ": \"", name,
                "\" must hold integers, got dtype ", dtype_name(t.dtype()));
    values.push_back(t.to(kCPU).to(wants_int ? kInt64 : kFloat64).contiguous());
  }

  for (size_t k = 0; k < fields_.size(); ++k) {
    const Ref& ref = fields_[k].second;
    const Tensor& t = values[k];
    if (auto p = std::get_if<int64_t*>(&ref)) {
      **p = t.item<int64_t>();
    } else if (auto p = std::get_if<double*>(&ref)) {
      **p = t.item<double>();
    } else if (auto p = std::get_if<bool*>(&ref)) {
      **p = t.item<double>() != 0.0;
    } else if (auto p = std::get_if<List<double>>(&ref)) {
      const double* d = t.data_ptr<double>();
      p->values->assign(d, d + t.numel());
    } else if (auto p = std::get_if<List<int64_t>>(&ref)) {
      const int64_t* d = t.data_ptr<int64_t>();
      p->values->assign(d, d + t.numel());
    }
  }
}

void StateFields::load(const TensorDict& dict, const std::string& who,
                       const std::function<void()>& check) const {
  const TensorDict before = save();
  load(dict, who);
  try {
    check();
  } catch (...) {
    load(before, who);
    throw;
  }
}

}  // namespace ember::optim
