// The shared cuDNN helpers (kernels/cuda/cudnn_common.h).

#include "kernels/cuda/cudnn_common.h"

#include "core/error.h"

#if defined(EMBER_CUDA_REAL)
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "kernels/cuda/runtime.h"
#endif

namespace ember::kernels::cuda {

#if defined(EMBER_CUDA_REAL)

bool cudnn_available() { return true; }

void cudnn_check(cudnnStatus_t s, const char* op, const char* call) {
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, op, ": ", call, " failed: ", cudnnGetErrorString(s));
}

cudnnHandle_t cudnn_handle(const Device& device, const Stream& stream, const char* op) {
  static std::mutex mu;
  static std::vector<cudnnHandle_t> handles;
  std::lock_guard<std::mutex> lock(mu);
  const auto d = static_cast<size_t>(device.index);
  if (handles.size() <= d) handles.resize(d + 1, nullptr);
  if (handles[d] == nullptr) cudnn_check(cudnnCreate(&handles[d]), op, "cudnnCreate");
  cudnn_check(cudnnSetStream(handles[d], static_cast<cudaStream_t>(native_stream(stream))), op,
              "cudnnSetStream");
  return handles[d];
}

#else

bool cudnn_available() { return false; }

#endif

}  // namespace ember::kernels::cuda
