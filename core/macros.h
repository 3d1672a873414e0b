#pragma once
// Portability macros shared by core and the kernels.
//
// EMBER_HOST_DEVICE marks math that both the CPU loops and the CUDA kernels apply
// (DESIGN.md: "an element-wise kernel is a small functor that both apply").

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif

#if defined(__GNUC__)
#define EMBER_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define EMBER_NOINLINE __attribute__((noinline))
#else
#define EMBER_LIKELY(x) (x)
#define EMBER_UNLIKELY(x) (x)
#define EMBER_NOINLINE
#endif
