#pragma once
// What the cuDNN reference paths share (kernels/cuda/conv_cudnn.cpp, norm_cudnn.cpp): whether
// the build has cuDNN, and in a real build (EMBER_CUDA_REAL) the status check and the handle of
// each device. Host code only: the .cu files reach cuDNN through conv_cudnn.h and norm_cudnn.h,
// which do not include cudnn.h.

namespace ember::kernels::cuda {

// Whether this build has cuDNN (EMBER_CUDA=real).
bool cudnn_available();

}  // namespace ember::kernels::cuda

#if defined(EMBER_CUDA_REAL)
#include <cudnn.h>

#include "core/device.h"
#include "core/stream.h"

namespace ember::kernels::cuda {

// Raises an ember::Error naming `op` and the cuDNN `call` unless s is CUDNN_STATUS_SUCCESS.
void cudnn_check(cudnnStatus_t s, const char* op, const char* call);

// The calling thread's cuDNN handle for `device` and `stream`, created on first use and bound to
// that stream (Note [Library handles per thread and stream] in kernels/cuda/library_handles.h).
cudnnHandle_t cudnn_handle(const Device& device, const Stream& stream, const char* op);

}  // namespace ember::kernels::cuda
#endif
