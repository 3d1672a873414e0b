// GradScaler (optim/grad_scaler.h).

#include "optim/grad_scaler.h"

#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/ops/binary.h"
#include "core/ops/factory.h"
#include "core/ops/reduce.h"
#include "core/ops/unary.h"

namespace ember::amp {

namespace {

void check_growth_factor(double v, const char* who) {
  EMBER_CHECK(std::isfinite(v) && v > 1.0, who, ": growth_factor must be a finite number > 1, got ",
              v);
}
void check_backoff_factor(double v, const char* who) {
  EMBER_CHECK(v > 0.0 && v < 1.0, who, ": backoff_factor must be in (0, 1), got ", v);
}
void check_growth_interval(int64_t v, const char* who) {
  EMBER_CHECK(v > 0, who, ": growth_interval must be a positive integer, got ", v);
}
void check_scale(double v, const char* who) {
  EMBER_CHECK(std::isfinite(v) && v > 0.0 && std::isfinite(static_cast<float>(v)), who,
              ": the scale must be a finite positive float32 value, got ", v);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : scale_(static_cast<float>(options.init_scale())),
      growth_factor_(options.growth_factor()),
      backoff_factor_(options.backoff_factor()),
      growth_interval_(options.growth_interval()),
      enabled_(options.enabled()) {
  const char* who = "GradScaler";
  check_scale(options.init_scale(), who);
  check_growth_factor(growth_factor_, who);
  check_backoff_factor(backoff_factor_, who);
  check_growth_interval(growth_interval_, who);
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!enabled_) return outputs;
  EMBER_CHECK(outputs.defined(), "GradScaler.scale: the output tensor is undefined");
  EMBER_CHECK(outputs.is_floating_point(),
              "GradScaler.scale: expected a floating-point output, got ",
              dtype_name(outputs.dtype()));
  return outputs * static_cast<double>(scale_);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) const {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& t : outputs) out.push_back(scale(t));
  return out;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& s = per_optimizer_[&optimizer];
  EMBER_CHECK(s.stage != Stage::Unscaled,
              "GradScaler.unscale_: unscale_() has already been called on this optimizer since "
              "the last update()");
  EMBER_CHECK(s.stage != Stage::Stepped,
              "GradScaler.unscale_: unscale_() is being called after step()");
  // PyTorch: the reciprocal in double, rounded to float32.
  const double inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  autograd::NoGradGuard no_grad;
  std::vector<std::pair<Device, Tensor>> found;
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor grad = groups[g].params[i].grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(grad.dtype() != kFloat16,
                  "GradScaler.unscale_: attempting to unscale float16 "
                  "gradients (parameter ",
                  i, " of group ", g,
                  "); keep the parameters float32 "
                  "and let autocast cast them");
      // Non-finite values are looked for before the multiply, as PyTorch's kernel does.
      const Tensor bad = logical_not(all(isfinite(grad)));
      auto it = found.begin();
      while (it != found.end() && it->first != grad.device()) ++it;
      if (it == found.end()) {
        found.emplace_back(grad.device(), bad);
      } else {
        it->second = logical_or(it->second, bad);
      }
      if (inv_scale != 1.0) grad.mul_(inv_scale);
    }
  }
  s.found_inf = std::move(found);
  s.stage = Stage::Unscaled;
}

bool GradScaler::found_inf(const PerOptimizer& s) const {
  bool any_inf = false;
  for (const auto& [device, flag] : s.found_inf) any_inf |= flag.item<bool>();
  return any_inf;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  {
    auto it = per_optimizer_.find(&optimizer);
    EMBER_CHECK(it == per_optimizer_.end() || it->second.stage != Stage::Stepped,
                "GradScaler.step: step() has already been called since the last update()");
  }
  if (per_optimizer_[&optimizer].stage == Stage::Ready) unscale_(optimizer);
  PerOptimizer& s = per_optimizer_[&optimizer];
  if (s.found_inf.empty()) {
    per_optimizer_.erase(&optimizer);  // nothing was unscaled: leave the optimizer as it was
    EMBER_ERROR(
        "GradScaler.step: no inf checks were recorded for this optimizer (none of its "
        "parameters has a gradient)");
  }
  const bool skip = found_inf(s);
  if (!skip) optimizer.step();
  s.stage = Stage::Stepped;
  return !skip;
}

void GradScaler::update() {
  if (!enabled_) return;
  bool any_inf = false, any_check = false;
  for (const auto& [opt, s] : per_optimizer_) {
    any_check |= !s.found_inf.empty();
    any_inf |= found_inf(s);
  }
  EMBER_CHECK(any_check, "GradScaler.update: no inf checks were recorded prior to update()");
  // PyTorch's _amp_update_scale_: the product in double, stored as float32.
  if (any_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * backoff_factor_);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == growth_interval_) {
    const auto grown = static_cast<float>(static_cast<double>(scale_) * growth_factor_);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  check_scale(new_scale, "GradScaler.update");
  scale_ = static_cast<float>(new_scale);
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return enabled_ ? static_cast<double>(scale_) : 1.0; }

void GradScaler::set_growth_factor(double v) {
  check_growth_factor(v, "GradScaler.set_growth_factor");
  growth_factor_ = v;
}
void GradScaler::set_backoff_factor(double v) {
  check_backoff_factor(v, "GradScaler.set_backoff_factor");
  backoff_factor_ = v;
}
void GradScaler::set_growth_interval(int64_t v) {
  check_growth_interval(v, "GradScaler.set_growth_interval");
  growth_interval_ = v;
}

TensorDict GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", full({}, static_cast<double>(scale_), TensorOptions(kFloat32))},
          {"growth_factor", full({}, growth_factor_, TensorOptions(kFloat64))},
          {"backoff_factor", full({}, backoff_factor_, TensorOptions(kFloat64))},
          {"growth_interval", full({}, growth_interval_, TensorOptions(kInt64))},
          {"_growth_tracker", full({}, growth_tracker_, TensorOptions(kInt64))}};
}

void GradScaler::load_state_dict(const TensorDict& dict) {
  if (!enabled_) return;
  const char* who = "GradScaler.load_state_dict";
  EMBER_CHECK(!dict.empty(), who,
              ": the state dict is empty, possibly because it was saved from a disabled "
              "GradScaler");
  auto get = [&](const std::string& key, bool integer) -> double {
    const Tensor* found = nullptr;
    for (const auto& [k, v] : dict)
      if (k == key) found = &v;
    EMBER_CHECK(found != nullptr, who, ": missing key \"", key, "\"");
    EMBER_CHECK(found->defined() && found->numel() == 1, who, ": \"", key,
                "\" must hold one value");
    EMBER_CHECK(integer ? !found->is_floating_point() && found->dtype() != kBool
                        : found->is_floating_point(),
                who, ": \"", key, "\" must be ", integer ? "an integer" : "a floating-point",
                " tensor, got ", dtype_name(found->dtype()));
    return found->to(kCPU).to(kFloat64).item<double>();
  };
  const double scale = get("scale", false), growth = get("growth_factor", false);
  const double backoff = get("backoff_factor", false);
  const auto interval = static_cast<int64_t>(get("growth_interval", true));
  const auto tracker = static_cast<int64_t>(get("_growth_tracker", true));
  const std::string prefix = std::string(who) + ": ";
  check_scale(scale, (prefix + "scale").c_str());
  check_growth_factor(growth, (prefix + "growth_factor").c_str());
  check_backoff_factor(backoff, (prefix + "backoff_factor").c_str());
  check_growth_interval(interval, (prefix + "growth_interval").c_str());
  EMBER_CHECK(tracker >= 0 && tracker < interval, who, ": _growth_tracker must be in [0, ",
              interval, "), got ", tracker);
  scale_ = static_cast<float>(scale);
  growth_factor_ = growth;
  backoff_factor_ = backoff;
  growth_interval_ = interval;
  growth_tracker_ = tracker;
}

}  // namespace ember::amp
