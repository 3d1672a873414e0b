// The shared cuDNN helpers (kernels/cuda/cudnn_common.h).

#include "kernels/cuda/cudnn_common.h"

#include "core/error.h"

#if defined(EMBER_CUDA_REAL)
#include <cuda_runtime.h>

#include <map>
#include <utility>

#include "core/stream.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::kernels::cuda {

#if defined(EMBER_CUDA_REAL)

bool cudnn_available() { return true; }

void cudnn_check(cudnnStatus_t s, const char* op, const char* call) {
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS, op, ": ", call, " failed: ", cudnnGetErrorString(s));
}

// Note [Library handles per thread and stream]
// A cuDNN or cuBLAS handle holds a stream and a workspace, and cuDNN forbids two threads from
// using one handle at the same time. A handle shared per device would need its set-stream and the
// call after it to be one critical section, and two streams would still share its workspace. So
// each thread keeps its own handle per (device, stream), bound to that stream once: no lock, no
// set-stream per call, and work on different streams never shares a workspace. The handles go
// at the thread's exit (for the main thread, before the CUDA runtime's own teardown).
namespace {

struct CudnnHandles {
  std::map<std::pair<int, NativeStream>, cudnnHandle_t> by_stream;
  ~CudnnHandles() {
    for (auto& entry : by_stream) cudnnDestroy(entry.second);
  }
};

}  // namespace

cudnnHandle_t cudnn_handle(const Device& device, const Stream& stream, const char* op) {
  thread_local CudnnHandles handles;
  const NativeStream s = native_stream(stream);
  auto [it, fresh] = handles.by_stream.try_emplace({device.index, s}, nullptr);
  if (fresh) {
    DeviceGuard guard(device);
    cudnnHandle_t h = nullptr;
    const cudnnStatus_t created = cudnnCreate(&h);
    if (created != CUDNN_STATUS_SUCCESS) handles.by_stream.erase(it);
    cudnn_check(created, op, "cudnnCreate");
    it->second = h;
    cudnn_check(cudnnSetStream(h, static_cast<cudaStream_t>(s)), op, "cudnnSetStream");
  }
  return it->second;
}

#else

bool cudnn_available() { return false; }

#endif

}  // namespace ember::kernels::cuda
