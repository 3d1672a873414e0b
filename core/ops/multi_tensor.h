#pragma once
// Multi-tensor ops: one optimizer step over many parameters, and the total 2-norm of many
// tensors, each as one kernel launch on a cuda device (apex's multi_tensor_apply, llm.c's
// fused optimizer).
//
// Note [Multi-tensor optimizer steps]
// optim::SGD, Adam and AdamW queue the updates of a step (optim/optimizer.h's flush_updates) and
// hand them here at once. When every tensor of every update is on one device, contiguous and
// like its parameter, the device's multi-tensor kernel takes them all. On a cuda device it sees
// a list of (pointer, numel) tensors and a table of chunks of kMultiTensorChunk elements, a
// block per chunk, and applies the functors of kernels/math/optim.h in the same opmath_t as the
// per-parameter kernels: every element gets the same operations, so the result equals the
// per-parameter path's bit for bit (the functor is per tensor, so parameters of different steps
// or groups share a launch). A launch holds a bounded list (Note [Multi-tensor launches] in
// kernels/cuda/multi_tensor.cu), so a long list takes a few launches; updates of different
// dtypes or state sets (momentum or not, amsgrad or not) launch separately. The CPU kernel runs
// the per-parameter kernels in turn. Otherwise (devices mixed, a strided or mismatched tensor)
// each update is the per-parameter native step of core/ops/optim.h, which checks and stages.

#include <vector>

#include "core/dispatch.h"
#include "core/ops/optim.h"
#include "core/tensor.h"

namespace ember {

// One parameter's SGD update (native::sgd_step_'s arguments).
struct SgdUpdate {
  Tensor param, grad, momentum_buffer;
  SgdCoefficients c;
};

// One parameter's Adam / AdamW update (native::adam_step_'s arguments).
struct AdamUpdate {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
  AdamCoefficients c;
};

// Elements of a tensor one block of a multi-tensor kernel works on.
constexpr int64_t kMultiTensorChunk = 65536;

// Kernels: every tensor is contiguous, on one device, and checked like native::sgd_step_'s.
using multi_sgd_step_fn = void (*)(const std::vector<SgdUpdate>& updates);
using multi_adam_step_fn = void (*)(const std::vector<AdamUpdate>& updates);
// out: a 0-dim tensor of the tensors' (one) dtype on their device = sqrt of the sum over all
// tensors of sum(x^2): per-chunk partial sums in opmath_t, merged in double in a fixed order.
using multi_norm2_fn = void (*)(const Tensor& out, const std::vector<Tensor>& tensors);
EMBER_DECLARE_DISPATCH(multi_sgd_step_fn, multi_sgd_step_stub);
EMBER_DECLARE_DISPATCH(multi_adam_step_fn, multi_adam_step_stub);
EMBER_DECLARE_DISPATCH(multi_norm2_fn, multi_norm2_stub);

namespace native {
// Every update in place, as native::sgd_step_ / adam_step_ would do them one after another
// (Note [Multi-tensor optimizer steps]).
void sgd_steps_(const std::vector<SgdUpdate>& updates);
void adam_steps_(const std::vector<AdamUpdate>& updates);

// Whether `tensors` (non-empty, defined) are all of one floating dtype and on one cuda device:
// where nn::utils::clip_grad_norm_ takes total_norm2 (the CPU keeps its per-tensor norms).
bool multi_tensor_norm_applies(const std::vector<Tensor>& tensors);
// sqrt(sum over all tensors of sum(x^2)) as a 0-dim tensor of the tensors' dtype on their
// device: one launch of per-chunk partial sums, then one deterministic merge (non-contiguous
// tensors are read through contiguous copies).
Tensor total_norm2(const std::vector<Tensor>& tensors);
}  // namespace native

}  // namespace ember
