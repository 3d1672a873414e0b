#pragma once
// cuDNN as the reference softmax / log_softmax and batch_norm forward (core/norm_backend.h), for
// kernels/cuda/softmax.cu and norm.cu. In a build without cuDNN (EMBER_CUDA=sim) each cuDNN call
// raises an ember::Error naming the op.
//
// Note [Norm backends on CUDA]
// softmax_kernel (softmax.cu) and batch_norm_cuda (norm.cu) ask choose_norm_cudnn which
// implementation runs:
// - ember: the ember kernel.
// - cudnn: in a build without cuDNN, an ember::Error naming the op, the switch and
//   EMBER_CUDA=real (whatever the case). Else cuDNN where it can express the case
//   (cudnn_softmax_supported, cudnn_batch_norm_supported) and the ember kernel where it cannot
//   (a softmax whose dim is not the last, a strided input, float64; batch_norm on anything but
//   float32, eps under CUDNN_BN_MIN_EPSILON, one value per channel in training): a reference for
//   what cuDNN runs, never an error for what it does not.
// - auto: where cuDNN is built and supports the case, the first call for one op, shape and dtype
//   runs both once to warm up, times kTimedRuns of each between events, caches the faster under
//   that key and prints one line to stderr; ember everywhere else. batch_norm's timing runs
//   update clones of the running statistics, so that only the chosen run moves them.
// cuDNN is float32 in, float32 out, as ember is, so the two agree to rounding, not bit for bit
// (different reduction orders; cuDNN's softmax keeps float16 / bfloat16 in float internally).
// The backward passes stay ember's.

#include <cstdint>
#include <functional>
#include <string>

#include "core/stream.h"
#include "core/tensor.h"

namespace ember::kernels::cuda {

// Whether `op` runs cuDNN (run_cudnn) rather than ember (run_ember), by core/norm_backend.h's
// switch; `supported`: cuDNN can run this case; `key` names the case (op, shape, dtype) for
// auto's cache (called in auto only); the run functions are only called by auto's timing.
bool choose_norm_cudnn(const char* op, const std::function<std::string()>& key, bool supported,
                       const Stream& stream, const std::function<void()>& run_ember,
                       const std::function<void()>& run_cudnn);

// Whether cudnn_softmax_forward takes softmax of `input` along `dim`: a contiguous float32,
// float16 or bfloat16 input with dim the last, rows and row length that fit cuDNN's int.
bool cudnn_softmax_supported(const Tensor& input, int64_t dim);
// out (contiguous, input's shape and dtype) = softmax or log_softmax of input over its last dim.
void cudnn_softmax_forward(const Tensor& out, const Tensor& input, bool log);

// Whether cudnn_batch_norm_forward takes this batch_norm (batch_norm_fn's arguments).
bool cudnn_batch_norm_supported(const Tensor& x, const Tensor& running_mean,
                                const Tensor& running_var, int64_t N, int64_t C, int64_t L,
                                bool training, double eps);
// batch_norm_fn's forward: y, and in training mean and rstd and the running statistics. In eval
// it writes y only (the caller fills mean and rstd from the running statistics).
void cudnn_batch_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                              const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var, int64_t N,
                              int64_t C, int64_t L, bool training, double momentum_factor,
                              double eps);

}  // namespace ember::kernels::cuda
