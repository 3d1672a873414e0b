#pragma once
// What every kernels/cuda/*.cu file includes first: the CUDA language (nvcc's, or the
// simulator's in a host-compiled sim build), the shared-memory macros, and launch_kernel.
//
// Note [One kernel source, two compilers]
// A .cu file compiles with nvcc (EMBER_CUDA=real) or with the host compiler as C++
// (EMBER_CUDA=sim, where kernels/cuda/sim runs it on the CPU). The source is the same; what
// differs is hidden here and in three habits:
// - shared memory is declared with EMBER_SHARED_ARRAY(T, name, dims...), EMBER_SHARED_VAR(T, name)
//   and EMBER_DYNAMIC_SHARED(T, name) instead of `__shared__` (the simulator keeps shared memory
//   in a per-block arena it owns and race-checks; `__shared__` is a compile error in sim builds);
// - kernels launch through launch_kernel(name, kernel, grid, block, shared_bytes, stream, args...)
//   instead of <<<>>>: it checks the launch and names the kernel in every error (Note [Checked
//   CUDA calls] in kernels/cuda/runtime.h);
// - where the builds must differ, `#if defined(EMBER_CUDA_SIM)`. __CUDACC__ and __CUDA_ARCH__
//   are never defined by a sim build, so CUDA's headers keep their host meaning.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(EMBER_CUDA_SIM)
#include "kernels/cuda/sim/sim.h"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

// `EMBER_UNROLL for (...)`: asks nvcc to unroll a loop whose trip count is a constant, where its
// own heuristics stop short (a GEMM's inner k loop). g++ in a sim build has no such pragma (it
// would warn), so there it expands to nothing.
#if defined(EMBER_CUDA_SIM)
#define EMBER_UNROLL
#else
#define EMBER_UNROLL _Pragma("unroll")
#endif

#include "core/error.h"
#include "core/profiler.h"
#include "core/stream.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sync_debug.h"

#if !defined(EMBER_CUDA_SIM)
namespace ember::kernels::cuda::detail {
template <class T, size_t... Dims>
struct SharedArrayType;
template <class T>
struct SharedArrayType<T> {
  using type = T;
};
template <class T, size_t D0, size_t... Rest>
struct SharedArrayType<T, D0, Rest...> {
  using type = typename SharedArrayType<T, Rest...>::type[D0];
};
}  // namespace ember::kernels::cuda::detail

// T name[d0][d1]... in shared memory, 32-byte aligned as WMMA's loads and stores need (the
// simulator aligns its slots alike: Note [Shared memory in the simulator]).
#define EMBER_SHARED_ARRAY(T, name, ...) \
  __shared__ __align__(32)               \
      typename ::ember::kernels::cuda::detail::SharedArrayType<T, __VA_ARGS__>::type name
#define EMBER_SHARED_VAR(T, name) __shared__ T name
// The launch's dynamic shared memory, seen as T* (32-byte aligned, as WMMA's loads need).
#define EMBER_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(32) unsigned char ember_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_smem_)
#endif

namespace ember::kernels::cuda {

// Launches kernel(args...) on a grid of `grid` blocks of `block` threads with `shared_bytes` of
// dynamic shared memory, in stream order on `stream` (a stream of a cuda device). The arguments
// convert to the kernel's parameter types here, on the host, as <<<>>> would. A bad
// configuration raises at once naming the kernel; a failure while the kernel runs is reported at
// a later synchronisation (Note [Checked CUDA calls]).
template <class... Params, class... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                   size_t shared_bytes, const Stream& stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch_kernel: argument count");
  EMBER_INTERNAL_ASSERT(stream.device().is_cuda(), name, ": launched on ", stream);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;  // an empty launch does nothing
  NativeStream native = native_stream(stream);
  profiler::DeviceKernelTimer timer(name, stream);  // Note [What the profiler records]
#if defined(EMBER_CUDA_SIM)
  try {
    sim::launch({name, grid, block, shared_bytes, static_cast<sim::Stream*>(native)}, kernel,
                std::forward<Args>(args)...);
  } catch (const sim::Error& e) {
    EMBER_CHECK(false, name, ": ", e.what());
  }
#else
  std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  void* ptrs[sizeof...(Params) + 1] = {};
  std::apply(
      [&](auto&... p) {
        int i = 0;
        ((ptrs[i++] = static_cast<void*>(&p)), ...);
      },
      params);
  DeviceGuard guard(stream.device());
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, ptrs,
                                         shared_bytes, static_cast<cudaStream_t>(native));
  if (e != cudaSuccess) {
    cudaGetLastError();
    EMBER_CHECK(false, name, ": kernel launch failed (grid ", grid.x, "x", grid.y, "x", grid.z,
                ", block ", block.x, "x", block.y, "x", block.z, ", ", shared_bytes,
                " bytes of dynamic shared memory): ", cudaGetErrorString(e));
  }
  note_launch(native, name);
#endif
  timer.finish();
  if (launch_blocking()) {
    const QuietWait quiet;  // asked for: Note [Sync debug mode]
    stream_synchronize(native, name);
  }
}

// Declares that `kernel` may call a barrier or a warp collective on some launches and not on
// others (a reduction whose block has one thread skips its shuffles). The simulator then runs it
// as fibers from its first launch instead of learning its mode from that launch (Note [Loop mode
// and fiber mode] in kernels/cuda/sim/engine.h); a real build needs nothing.
template <class... Params>
void uses_collectives(void (*kernel)(Params...)) {
#if defined(EMBER_CUDA_SIM)
  sim::use_fibers(reinterpret_cast<const void*>(kernel));
#else
  (void)kernel;
#endif
}

// Lets `kernel` launch with up to `bytes` of dynamic shared memory on the current device:
// cudaFuncSetAttribute's MaxDynamicSharedMemorySize, which a launch past 48 KiB needs (the
// simulator checks the same opt-in). A device with less shared memory per block is an Error
// naming the kernel.
template <class... Params>
void allow_dynamic_shared(const char* name, void (*kernel)(Params...), size_t bytes) {
#if defined(EMBER_CUDA_SIM)
  try {
    sim::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
  } catch (const sim::Error& e) {
    EMBER_CHECK(false, name, ": ", e.what());
  }
#else
  const cudaError_t e =
      cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) {
    cudaGetLastError();
    EMBER_CHECK(false, name, ": the device cannot give ", bytes,
                " bytes of dynamic shared memory to a block: ", cudaGetErrorString(e));
  }
#endif
}

// Copies moved in the widest machine word the data allows (cat, index_select's rows).
// The widest word (16, 8, 4, 2 or 1 bytes) dividing every value (addresses and byte counts).
inline int common_word(std::initializer_list<uintptr_t> values) {
  uintptr_t bits = 0;
  for (uintptr_t v : values) bits |= v;
  for (int w : {16, 8, 4, 2}) {
    if (bits % static_cast<uintptr_t>(w) == 0) return w;
  }
  return 1;
}

// f(W{}) for the unsigned word type W of w bytes (uint4 for 16).
template <class F>
void dispatch_word(int w, F&& f) {
  switch (w) {
    case 16:
      return f(uint4{});
    case 8:
      return f(uint64_t{});
    case 4:
      return f(uint32_t{});
    case 2:
      return f(uint16_t{});
    default:
      return f(uint8_t{});
  }
}

// The number of blocks of `threads` covering n items (at least 1; n fits the grid's x limit
// for every n a 32-bit indexed iteration has).
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

}  // namespace ember::kernels::cuda
