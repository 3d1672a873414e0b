#pragma once
// cuDNN as the reference convolution (core/conv_backend.h), for kernels/cuda/conv.cu. Every
// tensor is contiguous, batched (N, C, H, W), float32 or float64, on one cuda device; the shapes
// are conv2d_fn's (core/ops/conv.h). The bias is not handled here. In a build without cuDNN
// (EMBER_CUDA=sim) each call raises an ember::Error naming `op`.

#include <cstdint>

#include "core/ops/conv.h"
#include "core/tensor.h"

namespace ember::kernels::cuda {

// Whether this build has cuDNN (EMBER_CUDA=real; defined in kernels/cuda/cudnn_common.cpp).
bool cudnn_available();

// y = conv2d(x, w) without bias.
void cudnn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& y, const Window2d& g,
                          int64_t groups);
// gx = the input gradient of conv2d for grad_out gy.
void cudnn_conv2d_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx,
                                const Window2d& g, int64_t groups);
// gw = the weight gradient of conv2d for grad_out gy.
void cudnn_conv2d_backward_filter(const Tensor& gy, const Tensor& x, const Tensor& gw,
                                  const Window2d& g, int64_t groups);

}  // namespace ember::kernels::cuda
