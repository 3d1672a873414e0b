#pragma once
// Hopper's warpgroup matrix multiply (wgmma, PTX ISA "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate"), the instructions behind GEMM rung 9 (Note [A warpgroup GEMM] in
// kernels/cuda/gemm.cuh), written once for both builds: under nvcc they are the PTX
// instructions, which exist for the sm_90a target only (elsewhere they trap, and the host never
// launches a kernel using them: wgmma_built()); in a sim build they are the simulator's model
// (Note [wgmma in the simulator] in kernels/cuda/sim/wgmma.cpp).
//
// Note [Warpgroup MMA]
// A warpgroup (four consecutive warps, the first one's index a multiple of 4) multiplies a
// 64 x 16 tile of A by a 16 x N tile of B into 64 x N float accumulators held in its registers,
// N / 2 a thread. A and B stay in shared memory, where the tensor cores read them directly
// through 64-bit descriptors: the tile's start address, the distance between its 8-row groups,
// and the swizzle with which it was stored. Ember stores both operands K-major (a row of A, a
// column of B: 64 contiguous 16-bit k values, 128 bytes) with the 128-byte swizzle: in each
// 1024-byte atom of 8 rows, the 16-byte chunk c of row r lies at chunk position c ^ r, so the
// eight rows' chunks of one k range fall in different banks. The instruction is asynchronous:
// fence() before the first wgmma of a step, commit() closes a group, wait<N>() returns when all
// but the newest N groups completed; until then neither the accumulators nor the shared tiles
// they read may be touched. fence_operands() keeps the compiler from moving accumulator reads
// and writes across those points, and fence_proxy_async() makes shared memory written by the
// threads (cp.async and ordinary stores) visible to the tensor cores' reads.

#include <cstdint>

#include "kernels/cuda/common.cuh"
#if defined(EMBER_CUDA_SIM)
#include "kernels/cuda/sim/wgmma.h"
#endif

namespace ember::kernels::cuda::wgmma {

// Whether this binary's kernels carry the wgmma instructions (a real build with sm_90a among
// CMAKE_CUDA_ARCHITECTURES, or the simulator) and `device` can run them (compute capability
// 9.0: sm_90a code runs there only). Defined in kernels/cuda/gemm.cu.
bool available(int device);

// The shared-window address of a pointer into dynamic shared memory.
__device__ inline uint32_t shared_address(const void* p, const char* file = __builtin_FILE(),
                                          int line = __builtin_LINE()) {
#if defined(EMBER_CUDA_SIM)
  return ::ember::sim::detail::shared_address(p, file, line);
#else
  (void)file, (void)line;
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#endif
}

// The descriptor of a K-major operand stored with the 128-byte swizzle, starting at shared
// address `addr` (in the first row of a 1024-byte aligned atom), its 8-row groups `stride`
// bytes apart. The leading byte offset is unused by this layout (1 by convention).
__host__ __device__ constexpr uint64_t k_major_sw128(uint32_t addr, uint32_t stride) {
  return uint64_t{(addr >> 4) & 0x3FFF} | (uint64_t{1} << 16) |
         (uint64_t{(stride >> 4) & 0x3FFF} << 32) | (uint64_t{1} << 62);
}

// Where byte k * 2 of row r of a K-major, 128-byte swizzled tile lies, from the tile's start
// (a 1024-byte aligned address; k < 64).
__host__ __device__ constexpr uint32_t sw128_offset(int r, int k) {
  return static_cast<uint32_t>(r * 128 + (((k / 8) ^ (r % 8)) * 16) + (k % 8) * 2);
}

#if defined(EMBER_CUDA_SIM)

inline void fence() { ::ember::sim::detail::wgmma_fence(); }
inline void commit() { ::ember::sim::detail::wgmma_commit(); }
template <int N>
inline void wait() {
  ::ember::sim::detail::wgmma_wait(N);
}
inline void fence_proxy_async() {}
template <int kCount>
inline void fence_operands(float (&)[kCount]) {}

// d (+)= A * B for a 64 x 16 A and a 16 x 256 B of W (__half or __nv_bfloat16).
template <class W>
inline void mma_m64n256k16(uint64_t desc_a, uint64_t desc_b, float (&d)[128], bool accumulate,
                           const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::sim::detail::wgmma_issue(desc_a, desc_b, d, 256, accumulate,
                                    std::is_same_v<W, __nv_bfloat16>, file, line);
}

#else

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define EMBER_WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define EMBER_WGMMA_ASM(...) __trap()
#endif

__device__ inline void fence() { EMBER_WGMMA_ASM("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() {
  EMBER_WGMMA_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ inline void wait() {
  EMBER_WGMMA_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ inline void fence_proxy_async() {
  EMBER_WGMMA_ASM("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// An empty asm that "writes" every accumulator: reads and writes of them cannot move across it.
template <int kCount>
__device__ inline void fence_operands(float (&d)[kCount]) {
  EMBER_UNROLL
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define EMBER_WGMMA_D8(i)                                                               \
  "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])

#define EMBER_WGMMA_M64N256K16(TYPE)                                                               \
  EMBER_WGMMA_ASM(                                                                                 \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE                                 \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "           \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "           \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "           \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "           \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "           \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "     \
      "%111, "                                                                                     \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, " \
      "%127}, "                                                                                    \
      "%128, %129, p, 1, 1, 0, 0;\n}\n"                                                            \
      : EMBER_WGMMA_D8(0), EMBER_WGMMA_D8(8), EMBER_WGMMA_D8(16), EMBER_WGMMA_D8(24),              \
        EMBER_WGMMA_D8(32), EMBER_WGMMA_D8(40), EMBER_WGMMA_D8(48), EMBER_WGMMA_D8(56),            \
        EMBER_WGMMA_D8(64), EMBER_WGMMA_D8(72), EMBER_WGMMA_D8(80), EMBER_WGMMA_D8(88),            \
        EMBER_WGMMA_D8(96), EMBER_WGMMA_D8(104), EMBER_WGMMA_D8(112), EMBER_WGMMA_D8(120)          \
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)))

// d (+)= A * B for a 64 x 16 A and a 16 x 256 B of W (__half or __nv_bfloat16), both K-major.
template <class W>
__device__ inline void mma_m64n256k16(uint64_t desc_a, uint64_t desc_b, float (&d)[128],
                                      bool accumulate) {
  (void)desc_a, (void)desc_b, (void)d, (void)accumulate;  // unused where the asm is a trap
  if constexpr (std::is_same_v<W, __nv_bfloat16>)
    EMBER_WGMMA_M64N256K16("bf16");
  else
    EMBER_WGMMA_M64N256K16("f16");
}

#undef EMBER_WGMMA_M64N256K16
#undef EMBER_WGMMA_D8
#undef EMBER_WGMMA_ASM

#endif

}  // namespace ember::kernels::cuda::wgmma
