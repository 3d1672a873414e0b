// The CUDA function qualifiers, for the host compiler.
//
// A .cu file compiled as C++ for the simulator still says `__global__ void k(...)` and
// `__device__ __forceinline__ float f(...)`. These macros must be defined *before* any CUDA
// header: crt/host_defines.h only defines them when they are not defined yet (and otherwise turns
// them into unknown GNU attributes that g++ warns about). sim.h includes this file first.
#pragma once

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#error "kernels/cuda/sim is the host-compiler simulator; never build it with nvcc"
#endif

#if defined(__HOST_DEFINES_H__)
#error "include kernels/cuda/sim/sim.h (or kernels/cuda/common.cuh) before any CUDA header"
#endif

// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
// __noinline__ is defined at the end of sim.h: libstdc++'s <memory> itself writes
// `__attribute__((__noinline__))`, which a macro would break, so it must come after <memory>.
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif
#ifndef __constant__
#define __constant__
#endif
// `__shared__` does not silently work: a `static __shared__` array in a host build would be one
// array for every block running at once, and AddressSanitizer would not see its bounds. Using it
// is a compile error that says what to write instead.
#define __shared__                                                                               \
  _Pragma(                                                                                       \
      "GCC error \"use EMBER_SHARED_ARRAY / EMBER_SHARED_VAR / EMBER_DYNAMIC_SHARED instead of " \
      "__shared__ (kernels/cuda/sim/shared.h)\"")
// NOLINTEND(bugprone-reserved-identifier)
