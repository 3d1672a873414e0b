#pragma once
// The calling thread's handles of a CUDA library (cuBLAS, cuDNN) per (device, stream).
//
// Note [Library handles per thread and stream]
// A cuDNN or cuBLAS handle holds a stream and a workspace, and cuDNN forbids two threads from
// using one handle at the same time. A handle shared per device would need its set-stream and the
// call after it to be one critical section, and two streams would still share its workspace. So
// each thread keeps its own handle per (device, stream), bound to that stream once: no lock, no
// set-stream per call, and work on different streams never shares a workspace. The handles go
// at the thread's exit (for the main thread, before the CUDA runtime's own teardown).

#include <map>
#include <utility>

#include "core/stream.h"
#include "kernels/cuda/runtime.h"

namespace ember::kernels::cuda {

// Library supplies: using Handle; static Handle create(NativeStream, args...) (a handle bound to
// the stream, or it throws); static void destroy(Handle) noexcept. args (the op's name for the
// error messages, say) reach create when the handle is made.
template <class Library, class... Args>
typename Library::Handle thread_handle(const Device& device, const Stream& stream,
                                       const Args&... args) {
  struct Handles {
    std::map<std::pair<int, NativeStream>, typename Library::Handle> by_stream;
    ~Handles() {
      for (auto& entry : by_stream) Library::destroy(entry.second);
    }
  };
  thread_local Handles handles;
  const NativeStream s = native_stream(stream);
  auto it = handles.by_stream.find({device.index, s});
  if (it != handles.by_stream.end()) return it->second;
  DeviceGuard guard(device);
  return handles.by_stream.emplace(std::make_pair(device.index, s), Library::create(s, args...))
      .first->second;
}

}  // namespace ember::kernels::cuda
