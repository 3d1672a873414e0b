#pragma once
// Autocast: mixed precision without editing the model (PyTorch's torch.autocast).
//
//   {
//     autocast::AutocastGuard amp(DeviceType::CUDA);   // float16 on cuda, bfloat16 on cpu
//     Tensor loss = nn::cross_entropy(model.forward(x), y);  // products in float16
//   }
//   scaler.scale(loss).backward();                      // outside the region (optim/grad_scaler.h)
//
// Inside a region, ops on tensors of the region's device type run in the precision that suits
// them (Note [Autocast op lists]); the casts are ordinary differentiable ops, so the backward
// pass runs each op in the dtype its forward used and every gradient reaches its leaf in the
// leaf's own dtype (float32 weights get float32 gradients). The parameters stay float32: only
// their casts are 16-bit.
//
// Note [Autocast op lists]
// - Lower precision (cast floating inputs to the region's dtype): matmul, mm, bmm, addmm,
//   linear, conv2d. These are the products, where 16-bit inputs pay (tensor cores on a GPU;
//   half the memory traffic everywhere) and float32 accumulation keeps them accurate.
// - float32 (cast 16-bit inputs up): softmax, log_softmax, layer_norm, group_norm, batch_norm
//   and the losses (cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
//   binary_cross_entropy(_with_logits), kl_div). These sum over many values or take exp/log,
//   where float16's range and 11-bit mantissa lose the result.
// - Everything else runs in the dtype of its inputs, and ops on several inputs promote as
//   always (float16 + float32 is float32), as under PyTorch's "promote" rule.
// float64 tensors are never cast, nor integer ones, nor tensors on another device type than
// the region's. ember's lists are shorter than PyTorch's: they name the ops ember has.
//
// Note [Autocast weight cache]
// A float32 leaf that requires grad (a parameter) is cast once per region: the cast is cached
// by tensor until the outermost region ends, so a weight used by several products (or an RNN
// step) is converted once and its gradient still flows through the one cast. A cached cast is
// refreshed if the parameter was modified in place since (its version changed). cache=false
// turns this off.

#include <optional>

#include "core/device.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace ember::autocast {

namespace detail {
// Any region open on this thread: the ops' fast path is one thread-local read.
inline thread_local int active_regions = 0;
}  // namespace detail

// Whether autocast is on for a device type on this thread, and its dtype (float16 by default on
// cuda, bfloat16 on cpu).
bool is_enabled(DeviceType device);
DType get_dtype(DeviceType device);

// Turns autocast on (or, enabled = false, off) for `device` until the guard is destroyed;
// nested guards restore the state they found. dtype must be float16 or bfloat16; device cpu or
// cuda. Leaving the outermost region on the thread empties the weight cache.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device, std::optional<DType> dtype = std::nullopt,
                         bool enabled = true, bool cache = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_;
  DType prev_dtype_;
  bool prev_cache_;
};

// Drops the weight cast cache now (the outermost guard does it on exit).
void clear_cache();
// Number of cached casts (for tests and the curious).
size_t cache_size();

// For op implementations (Note [Autocast op lists]): t cast to the region's lower-precision
// dtype, or to float32, when autocast is on for t's device type and t is eligible; else t.
Tensor cast_lower(const Tensor& t);
Tensor cast_float32(const Tensor& t);

inline bool any_enabled() { return detail::active_regions > 0; }

// Whether a cast returned its input itself (nothing to cast). An op on a list starts with
//   if (autocast::any_enabled()) {
//     const Tensor a2 = autocast::cast_lower(a), b2 = autocast::cast_lower(b);
//     if (!autocast::same(a, a2) || !autocast::same(b, b2)) return mm(a2, b2);
//   }
// and the call with cast inputs finds nothing more to cast.
inline bool same(const Tensor& a, const Tensor& b) { return a.unsafe_impl() == b.unsafe_impl(); }

}  // namespace ember::autocast
