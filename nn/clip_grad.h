#pragma once
// Gradient clipping (PyTorch's torch.nn.utils.clip_grad_norm_ / clip_grad_value_). Both act
// in place on the gradients (grad()) of the given parameters and skip parameters without one.
//
//   loss.backward();
//   Tensor norm = nn::utils::clip_grad_norm_(model->parameters(), /*max_norm=*/1.0);
//   opt.step();

#include <vector>

#include "core/tensor.h"

namespace ember::nn::utils {

// Scales the gradients so that their total norm is at most max_norm. The total norm is the
// norm_type-norm of the vector of each gradient's norm_type-norm, i.e. the norm of all
// gradients concatenated; norm_type may be any p > 0, 0 (count of non-zeros), INFINITY (the
// largest |g|) or -INFINITY (the smallest). Each gradient is multiplied by
// min(1, max_norm / (total_norm + 1e-6)), as PyTorch does (always, also when that is 1).
// Returns the total norm before clipping: a 0-dim tensor of the gradients' dtype (a 0-dim
// float32 0 when no parameter has a gradient). With error_if_nonfinite, a NaN or infinite total
// norm is an error (and nothing is scaled); without, the gradients are scaled by it anyway.
// With norm_type 2 and every gradient of one dtype on one cuda device, the total norm is one
// pass over all of them (native::total_norm2, core/ops/multi_tensor.h): the same value up to
// rounding.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace ember::nn::utils
