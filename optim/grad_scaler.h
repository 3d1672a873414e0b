#pragma once
// GradScaler: loss scaling for float16 mixed precision (PyTorch's torch.cuda.amp.GradScaler, on
// any device).
//
//   amp::GradScaler scaler;                        // scale 2^16, x2 every 2000 clean steps
//   for (...) {
//     opt.zero_grad();
//     Tensor loss;
//     {
//       autocast::AutocastGuard amp(DeviceType::CUDA);   // autograd/autocast.h
//       loss = loss_fn(model->forward(x), y);
//     }
//     scaler.scale(loss).backward();               // gradients scaled by get_scale()
//     scaler.unscale_(opt);                        // optional: to clip the true gradients
//     nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(opt);                            // skipped if a gradient is inf or NaN
//     scaler.update();                             // halve the scale after a skip, or grow it
//   }
//
// Note [Why scale the loss]
// float16's smallest normal is 6.1e-5 and its smallest subnormal 6e-8: the small gradients of a
// deep net underflow to zero when backward runs in float16. Multiplying the loss by S multiplies
// every gradient by S (backward is linear), which lifts them into range; unscale_ divides the
// float32 gradients of the parameters by S before the step. S is as large as works: after a
// step whose gradients overflowed (an inf or NaN anywhere), the step is skipped and S halves
// (backoff_factor); after growth_interval steps in a row without one, S doubles
// (growth_factor). bfloat16 has float32's range and needs no scaler.
//
// The rules and messages are PyTorch 1.13's:
// - per optimizer and per update(): unscale_ at most once, and before step(); step() at most
//   once (it unscales first when unscale_ was not called);
// - the scale is a float32 value; a grown scale that is not finite is not taken;
// - float16 gradients are refused (PyTorch's "Attempting to unscale FP16 gradients."): keep the
//   parameters float32 and let autocast cast them;
// - a disabled scaler (enabled = false) passes everything through: scale() returns its input,
//   step() just steps, update() does nothing, get_scale() is 1.
// Finding infs costs one host synchronisation per device in step(), as in PyTorch.
//
// state_dict() is a TensorDict like the optimizers' (Note [Optimizer state_dict keys]), with
// PyTorch's keys: "scale" (float32), "growth_factor", "backoff_factor" (float64),
// "growth_interval", "_growth_tracker" (int64), all 0-dim. load_state_dict checks every value
// as the constructor does and names the key (Note [Validating loaded state]).

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_dict.h"
#include "optim/optimizer.h"

namespace ember::amp {

struct GradScalerOptions {
  EMBER_ARG(double, init_scale) = 65536.0;  // 2^16
  EMBER_ARG(double, growth_factor) = 2.0;
  EMBER_ARG(double, backoff_factor) = 0.5;
  EMBER_ARG(int64_t, growth_interval) = 2000;
  EMBER_ARG(bool, enabled) = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // outputs * scale (a float32 multiply); the input itself when disabled.
  Tensor scale(const Tensor& outputs) const;
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs) const;

  // Divides the gradients of the optimizer's parameters by the scale, in place, and records
  // whether any was inf or NaN.
  void unscale_(optim::Optimizer& optimizer);

  // optimizer.step() unless the gradients held an inf or NaN; returns whether it stepped.
  bool step(optim::Optimizer& optimizer);

  // Adjusts the scale from this iteration's steps (Note [Why scale the loss]); with new_scale,
  // sets it instead.
  void update();
  void update(double new_scale);

  double get_scale() const;  // 1 when disabled
  double get_growth_factor() const { return growth_factor_; }
  double get_backoff_factor() const { return backoff_factor_; }
  int64_t get_growth_interval() const { return growth_interval_; }
  int64_t get_growth_tracker() const { return growth_tracker_; }  // clean steps in a row
  void set_growth_factor(double v);
  void set_backoff_factor(double v);
  void set_growth_interval(int64_t v);
  bool is_enabled() const { return enabled_; }

  TensorDict state_dict() const;
  void load_state_dict(const TensorDict& dict);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    std::vector<std::pair<Device, Tensor>> found_inf;  // a 0-dim bool per device of the grads
  };

  bool found_inf(const PerOptimizer& s) const;

  float scale_;
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;
  bool enabled_;
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace ember::amp
