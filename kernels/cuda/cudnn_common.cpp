// The shared cuDNN helpers (kernels/cuda/cudnn_common.h).

#include "kernels/cuda/cudnn_common.h"

#include "core/error.h"

#if defined(EMBER_CUDA_REAL)
#include <cuda_runtime.h>

#include "kernels/cuda/library_handles.h"
#endif

namespace ember::kernels::cuda {

#if defined(EMBER_CUDA_REAL)

bool cudnn_available() { return true; }

void cudnn_check(cudnnStatus_t s, const char* op, const char* call) {
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, op, ": ", call, " failed: ", cudnnGetErrorString(s));
}

namespace {

// cuDNN for thread_handle (Note [Library handles per thread and stream]).
struct Cudnn {
  using Handle = cudnnHandle_t;
  static Handle create(NativeStream s, const char* op) {
    cudnnHandle_t h = nullptr;
    cudnn_check(cudnnCreate(&h), op, "cudnnCreate");
    const cudnnStatus_t bound = cudnnSetStream(h, static_cast<cudaStream_t>(s));
    if (bound != CUDNN_STATUS_SUCCESS) cudnnDestroy(h);
    cudnn_check(bound, op, "cudnnSetStream");
    return h;
  }
  static void destroy(Handle h) noexcept { cudnnDestroy(h); }
};

}  // namespace

cudnnHandle_t cudnn_handle(const Device& device, const Stream& stream, const char* op) {
  return thread_handle<Cudnn>(device, stream, op);
}

#else

bool cudnn_available() { return false; }

#endif

}  // namespace ember::kernels::cuda
