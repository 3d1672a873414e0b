#pragma once
// The GEMM kernels of the CUDA backend (kernels/cuda/gemm.cu launches them):
//   out[z] = alpha * a[z] @ b[z] + beta * out[z]  for every batch index z,
// a[z]: (m, k), b[z]: (k, n), out[z]: (m, n), each matrix read and written through its row and
// column strides (a transposed operand is just another pair of strides), the batch through
// GemmArgs::batch. beta == 0 never reads out (NaN there is overwritten, as in BLAS).
//
// Note [The GEMM ladder]
// The kernels are a ladder of numbered variants, kept side by side for teaching (llm.c's
// dev/cuda habit; each step is one technique, and each is tested on its own: set_gemm_variant
// in core/cuda_gemm.h):
//   1 naive            a thread per output element, its k loop reading a row of A and a column
//                      of B straight from global memory (every operand element read m or n times);
//   2 shared tiles     a 16 x 16 block stages 16 x 16 tiles of A and B in shared memory, so each
//                      global element is read once per block, and each thread still makes one
//                      output from 16 shared reads per 16 multiply-adds;
//   3 register blocks  a 128 x 128 block tile, k in steps of 8, each of 256 threads computing an
//                      8 x 8 micro-tile in registers: per k step a thread reads 8 + 8 values of
//                      shared memory for 64 multiply-adds (shared bandwidth stops being the limit);
//   4 vector loads     variant 3 with the global loads of the tiles as float4 (one 16-byte load
//                      for four elements along the operand's unit-stride dim), where the address
//                      is aligned and the four are in bounds; scalar loads elsewhere;
//   5 double buffer    variant 4 with two shared buffers: the next k tile's global loads are in
//                      flight in registers while the current tile is multiplied, one barrier per
//                      k step instead of two; each thread's 8 x 8 micro-tile is split into four
//                      4 x 4 pieces 64 rows / columns apart, so the threads of a warp read
//                      consecutive shared addresses (broadcast-free, conflict-free) -- the
//                      default for the SIMT dtypes other than float32;
//   6 WMMA             float16 / bfloat16 on tensor cores through nvcuda::wmma m16n16k16 with
//                      float32 accumulation: a 64 x 64 block tile, k in steps of 32, four warps
//                      of 2 x 2 fragments each; tiles go through shared memory (converted from
//                      any layout on the way in), the accumulators leave through shared memory
//                      for the alpha / beta epilogue -- the 16-bit default for small products;
//   7 warp tiles       float32: variant 5 with k in steps of 16 (half the barriers) and each
//                      warp owning a 64 x 32 piece of the block tile, its lanes 8 x 4 over it
//                      (see Micro below), the k loop unrolled -- the float32 default;
//   8 pipelined WMMA   float16 / bfloat16: 128 x 128 tiles, operands staged in their own layout
//                      in 16-byte cp.async chunks, a ring of four stages (Note [A pipelined
//                      WMMA GEMM]) -- the 16-bit default once the product has 128 such tiles;
//   9 warpgroup MMA    float16 / bfloat16 on Hopper (sm_90a): 128 x 256 tiles multiplied by
//                      wgmma from shared memory, operands K-major with the 128-byte swizzle
//                      (Note [A warpgroup GEMM]); not yet the default: written without a GPU,
//                      it waits for a run on one to be checked against variant 8.
// Variants 1-5 are templates over the element type: float32 is the ladder proper; float64,
// the 16-bit floats and the integers run them too with the accumulator of gemm_acc_t (float for
// the 16-bit floats, int64 for integers, wrapping to the dtype on store like the CPU kernel),
// float4 loads only for float32. Tiles that cross the matrix edge load zeros and store nothing
// outside it, so every size works. No variant splits k or uses atomics: results are
// deterministic, bit for bit from run to run.

#include <cstdint>
#include <type_traits>

#include "core/half.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/wgmma.cuh"

#if !defined(EMBER_CUDA_SIM)
#include <cuda_pipeline.h>
#include <mma.h>
#endif

namespace ember::kernels::cuda::gemm {

// The accumulator of a GEMM of T (the CPU kernel's: int64 for the integers).
template <class T>
struct gemm_acc {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, T>;
};
template <>
struct gemm_acc<Half> {
  using type = float;
};
template <>
struct gemm_acc<BFloat16> {
  using type = float;
};
template <class T>
using gemm_acc_t = typename gemm_acc<T>::type;

// Batch dims kept on the device (coalesced; the host loops over any further outer dims).
constexpr int kMaxBatchDims = 4;

// The geometry of one launch: sizes, element strides, and the batch dims (innermost last).
struct GemmArgs {
  int64_t m, n, k;
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
  int64_t batches;
  int batch_dims;
  int64_t batch_size[kMaxBatchDims];
  int64_t a_bs[kMaxBatchDims], b_bs[kMaxBatchDims], c_bs[kMaxBatchDims];
};

// Element offsets of batch z in a, b and out.
__device__ inline void batch_offsets(const GemmArgs& g, int64_t z, int64_t& ao, int64_t& bo,
                                     int64_t& co) {
  ao = bo = co = 0;
  for (int d = g.batch_dims - 1; d >= 0; --d) {
    const int64_t i = z % g.batch_size[d];
    z /= g.batch_size[d];
    ao += i * g.a_bs[d];
    bo += i * g.b_bs[d];
    co += i * g.c_bs[d];
  }
}

// out = alpha * acc + beta * out, out not read when beta == 0.
template <class T, class Acc>
__device__ inline void store_out(T* p, Acc acc, Acc alpha, Acc beta) {
  Acc r = alpha * acc;
  if (beta != Acc(0)) r += beta * static_cast<Acc>(*p);
  *p = static_cast<T>(r);
}

// ---- 1: naive ----------------------------------------------------------------------------
// block (16, 16): x along n, y along m; grid (ceil(n / 16), ceil(m / 16), batches).
template <class T>
__global__ void gemm_naive(const T* a, const T* b, T* c, GemmArgs g, gemm_acc_t<T> alpha,
                           gemm_acc_t<T> beta) {
  using Acc = gemm_acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (row >= g.m || col >= g.n) return;
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    const T* pa = a + ao + row * g.a_rs;
    const T* pb = b + bo + col * g.b_cs;
    Acc acc = 0;
    for (int64_t p = 0; p < g.k; ++p)
      acc += static_cast<Acc>(pa[p * g.a_cs]) * static_cast<Acc>(pb[p * g.b_rs]);
    store_out(c + co + row * g.c_rs + col * g.c_cs, acc, alpha, beta);
  }
}

// ---- 2: shared-memory tiles --------------------------------------------------------------
constexpr int kSharedTile = 16;

// block (16, 16), grid as gemm_naive's.
template <class T>
__global__ void gemm_shared(const T* a, const T* b, T* c, GemmArgs g, gemm_acc_t<T> alpha,
                            gemm_acc_t<T> beta) {
  using Acc = gemm_acc_t<T>;
  constexpr int kT = kSharedTile;
  EMBER_SHARED_ARRAY(Acc, as, kT, kT);  // as[i][p] = A(row0 + i, k0 + p)
  EMBER_SHARED_ARRAY(Acc, bs, kT, kT);  // bs[p][j] = B(k0 + p, col0 + j)
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kT + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kT + tx;
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    Acc acc = 0;
    for (int64_t k0 = 0; k0 < g.k; k0 += kT) {
      as[ty][tx] = row < g.m && k0 + tx < g.k
                       ? static_cast<Acc>(a[ao + row * g.a_rs + (k0 + tx) * g.a_cs])
                       : Acc(0);
      bs[ty][tx] = k0 + ty < g.k && col < g.n
                       ? static_cast<Acc>(b[bo + (k0 + ty) * g.b_rs + col * g.b_cs])
                       : Acc(0);
      __syncthreads();
      for (int p = 0; p < kT; ++p) acc += static_cast<Acc>(as[ty][p]) * static_cast<Acc>(bs[p][tx]);
      __syncthreads();
    }
    if (row < g.m && col < g.n) store_out(c + co + row * g.c_rs + col * g.c_cs, acc, alpha, beta);
  }
}

// ---- 3, 4, 5, 7: register blocking, vector loads, double buffering, warp tiles -----------
constexpr int kBM = 128, kBN = 128, kTM = 8, kTN = 8;
constexpr int kBlockedThreads = (kBM / kTM) * (kBN / kTN);  // 256

// Where a thread's 8 x 8 micro-tile lies in the 128 x 128 block tile:
//   contiguous (3, 4)  rows tr * 8 + i, columns tc * 8 + j (tr = tid / 16, tc = tid % 16);
//   split (5)          four 4 x 4 pieces 64 rows / columns apart, so a warp reads consecutive
//                      shared addresses;
//   warp_tiles (7)     each warp owns a 64 x 32 piece of the block tile (warps 2 x 4), and each
//                      lane four 4 x 4 pieces of it, 32 rows / 16 columns apart (lanes 8 x 4):
//                      a warp's shared reads per k are 8 distinct float4 of A and 4 of B, all
//                      in different banks, and its A and B footprints stay small.
enum class Micro { contiguous, split, warp_tiles };

template <Micro kMicro>
__device__ inline int micro_row(int tid, int i) {
  if constexpr (kMicro == Micro::warp_tiles) {
    const int warp = tid / 32, lane = tid % 32;
    return warp / 4 * 64 + i / 4 * 32 + lane / 4 * 4 + i % 4;
  } else if constexpr (kMicro == Micro::split) {
    return i / (kTM / 2) * (kBM / 2) + tid / (kBN / kTN) * (kTM / 2) + i % (kTM / 2);
  } else {
    return tid / (kBN / kTN) * kTM + i;
  }
}

template <Micro kMicro>
__device__ inline int micro_col(int tid, int j) {
  if constexpr (kMicro == Micro::warp_tiles) {
    const int warp = tid / 32, lane = tid % 32;
    return warp % 4 * 32 + j / 4 * 16 + lane % 4 * 4 + j % 4;
  } else if constexpr (kMicro == Micro::split) {
    return j / (kTN / 2) * (kBN / 2) + tid % (kBN / kTN) * (kTN / 2) + j % (kTN / 2);
  } else {
    return tid % (kBN / kTN) * kTN + j;
  }
}

// One thread's share of an R x C tile of a strided matrix, fetched from global memory into
// registers in runs of four along the matrix's unit-stride dim (`cols_fast`: along the columns,
// else along the rows), then stored into shared memory.
template <class T, class Acc, int R, int C, bool kVec>
struct TileFetch {
  static constexpr int kRuns = R * C / 4 / kBlockedThreads;
  static_assert(R * C % (4 * kBlockedThreads) == 0, "tile must split into runs of four");
  Acc v[kRuns][4];

  // The run q's first element (r, c) and its direction.
  __device__ static void locate(int q, bool cols_fast, int& r, int& c) {
    if (cols_fast) {
      r = q / (C / 4);
      c = q % (C / 4) * 4;
    } else {
      c = q / (R / 4);
      r = q % (R / 4) * 4;
    }
  }

  // base: the tile's (0, 0) element; rows_left / cols_left: how many of its rows / columns lie
  // inside the matrix.
  __device__ void fetch(const T* base, int64_t rs, int64_t cs, int64_t rows_left, int64_t cols_left,
                        bool cols_fast, int tid) {
    const int64_t step = cols_fast ? cs : rs;
    for (int i = 0; i < kRuns; ++i) {
      int r, c;
      locate(tid + i * kBlockedThreads, cols_fast, r, c);
      const T* p = base + r * rs + c * cs;
      const int dr = cols_fast ? 0 : 1, dc = cols_fast ? 1 : 0;
      if constexpr (kVec && std::is_same_v<T, float>) {
        const bool whole = r + 3 * dr < rows_left && c + 3 * dc < cols_left;
        if (whole && step == 1 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
          const float4 x = *reinterpret_cast<const float4*>(p);
          v[i][0] = x.x;
          v[i][1] = x.y;
          v[i][2] = x.z;
          v[i][3] = x.w;
          continue;
        }
      }
      for (int j = 0; j < 4; ++j) {
        const bool inside = r + j * dr < rows_left && c + j * dc < cols_left;
        v[i][j] = inside ? static_cast<Acc>(p[j * step]) : Acc(0);
      }
    }
  }

  // Stores the registers into s[stage][c][r] (kTransposed: A's tile, kept k-major) or
  // s[stage][r][c] (B's tile).
  template <bool kTransposed, class S>
  __device__ void store(S&& s, int stage, bool cols_fast, int tid) const {
    for (int i = 0; i < kRuns; ++i) {
      int r, c;
      locate(tid + i * kBlockedThreads, cols_fast, r, c);
      const int dr = cols_fast ? 0 : 1, dc = cols_fast ? 1 : 0;
      for (int j = 0; j < 4; ++j) {
        if constexpr (kTransposed)
          s[stage][c + j * dc][r + j * dr] = v[i][j];
        else
          s[stage][r + j * dr][c + j * dc] = v[i][j];
      }
    }
  }
};

// The k depth of a tile: 8 for variants 3-5; 16 with warp tiles (half the barriers per k, and
// 16 multiply steps between them). A's k-major tile gets a pad of 4 there: its transposed
// stores then hit two banks per address instead of four, and each row stays 16-byte aligned
// for the float4 reads.
template <Micro kMicro>
constexpr int blocked_bk = kMicro == Micro::warp_tiles ? 16 : 8;
template <Micro kMicro>
constexpr int blocked_pad = kMicro == Micro::warp_tiles ? 4 : 0;

// block 256 threads; grid (ceil(n / 128), ceil(m / 128), batches). ptxas for sm_90 (float32):
// variant 5 uses 195 registers, variant 7 168, neither spills -- one block (eight warps) per SM.
// Capping variant 7 at 128 registers (two blocks per SM) made ptxas spill; which wins is a GPU
// measurement still to make.
// kMinBlocks: the blocks per SM ptxas must fit (set_gemm_tuning in core/cuda_gemm.h).
template <class T, bool kVec, bool kDoubleBuffer, Micro kMicro, int kMinBlocks = 1>
__global__ void __launch_bounds__(kBlockedThreads, kMinBlocks)
    gemm_blocked(const T* a, const T* b, T* c, GemmArgs g, gemm_acc_t<T> alpha,
                 gemm_acc_t<T> beta) {
  using Acc = gemm_acc_t<T>;
  constexpr int kStages = kDoubleBuffer ? 2 : 1;
  constexpr int kBK = blocked_bk<kMicro>;
  EMBER_SHARED_ARRAY(Acc, as, kStages, kBK, kBM + blocked_pad<kMicro>);  // A(m0 + i, k0 + p)
  EMBER_SHARED_ARRAY(Acc, bs, kStages, kBK, kBN);  // bs[s][p][j] = B(k0 + p, n0 + j)
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  // The unit-stride dim of each operand decides how its tile is read (coalesced either way).
  const bool a_k_fast = !(g.a_rs == 1 && g.a_cs != 1);
  const bool b_n_fast = !(g.b_rs == 1 && g.b_cs != 1);
  const int64_t k_tiles = (g.k + kBK - 1) / kBK;
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    const T* pa = a + ao + m0 * g.a_rs;
    const T* pb = b + bo + n0 * g.b_cs;
    TileFetch<T, Acc, kBM, kBK, kVec> fa;  // A's tile: kBM rows (m) x kBK columns (k)
    TileFetch<T, Acc, kBK, kBN, kVec> fb;  // B's tile: kBK rows (k) x kBN columns (n)
    auto fetch = [&](int64_t t) {
      const int64_t k0 = t * kBK;
      fa.fetch(pa + k0 * g.a_cs, g.a_rs, g.a_cs, g.m - m0, g.k - k0, a_k_fast, tid);
      fb.fetch(pb + k0 * g.b_rs, g.b_rs, g.b_cs, g.k - k0, g.n - n0, b_n_fast, tid);
    };
    auto stash = [&](int stage) {
      fa.template store<true>(as, stage, a_k_fast, tid);
      fb.template store<false>(bs, stage, b_n_fast, tid);
    };
    Acc acc[kTM][kTN] = {};
    auto multiply = [&](int stage) {
      EMBER_UNROLL
      for (int p = 0; p < kBK; ++p) {
        Acc am[kTM], bn[kTN];
        for (int i = 0; i < kTM; ++i) am[i] = as[stage][p][micro_row<kMicro>(tid, i)];
        for (int j = 0; j < kTN; ++j) bn[j] = bs[stage][p][micro_col<kMicro>(tid, j)];
        for (int i = 0; i < kTM; ++i)
          for (int j = 0; j < kTN; ++j) acc[i][j] += am[i] * bn[j];
      }
    };
    if constexpr (kDoubleBuffer) {
      if (k_tiles > 0) {
        fetch(0);
        stash(0);
        __syncthreads();
      }
      for (int64_t t = 0; t < k_tiles; ++t) {
        const int stage = static_cast<int>(t & 1);
        if (t + 1 < k_tiles) fetch(t + 1);  // in flight while this tile is multiplied
        multiply(stage);
        if (t + 1 < k_tiles) stash(stage ^ 1);  // last read in step t - 1, before its barrier
        __syncthreads();
      }
    } else {
      for (int64_t t = 0; t < k_tiles; ++t) {
        fetch(t);
        stash(0);
        __syncthreads();
        multiply(0);
        __syncthreads();
      }
    }
    for (int i = 0; i < kTM; ++i) {
      const int64_t row = m0 + micro_row<kMicro>(tid, i);
      if (row >= g.m) continue;
      for (int j = 0; j < kTN; ++j) {
        const int64_t col = n0 + micro_col<kMicro>(tid, j);
        if (col < g.n) store_out(c + co + row * g.c_rs + col * g.c_cs, acc[i][j], alpha, beta);
      }
    }
  }
}

// ---- 6: WMMA tensor cores (float16 / bfloat16) -------------------------------------------
constexpr int kWM = 64, kWN = 64, kWK = 32, kWmmaThreads = 128;
// Row pads keep every fragment's pointer 32-byte aligned and ldm a multiple of 16 bytes
// (Note [WMMA in the simulator] in kernels/cuda/sim/wmma.h) and spread the rows over banks.
constexpr int kWPadA = 8, kWPadB = 8, kWPadC = 4;

template <class T>
struct wmma_type;  // the CUDA type of ember's 16-bit float
template <>
struct wmma_type<Half> {
  using type = __half;
  __device__ static type from(float v) { return __float2half_rn(v); }
};
template <>
struct wmma_type<BFloat16> {
  using type = __nv_bfloat16;
  __device__ static type from(float v) { return __float2bfloat16_rn(v); }
};

// block 128 threads (four warps, 2 x 2 over the 64 x 64 tile); grid (ceil(n / 64),
// ceil(m / 64), batches).
template <class T>
__global__ void gemm_wmma(const T* a, const T* b, T* c, GemmArgs g, float alpha, float beta) {
  namespace wmma = nvcuda::wmma;
  using W = typename wmma_type<T>::type;
  EMBER_SHARED_ARRAY(W, as, kWM, kWK + kWPadA);      // as[i][p] = A(m0 + i, k0 + p)
  EMBER_SHARED_ARRAY(W, bs, kWK, kWN + kWPadB);      // bs[p][j] = B(k0 + p, n0 + j)
  EMBER_SHARED_ARRAY(float, cs, kWM, kWN + kWPadC);  // the block's accumulators
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, wm = warp / 2, wn = warp % 2;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kWM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kWN;
  const bool a_k_fast = !(g.a_rs == 1 && g.a_cs != 1);
  const bool b_n_fast = !(g.b_rs == 1 && g.b_cs != 1);
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int64_t k0 = 0; k0 < g.k; k0 += kWK) {
      // Consecutive threads take consecutive elements along each operand's unit-stride dim.
      for (int e = tid; e < kWM * kWK; e += kWmmaThreads) {
        const int i = a_k_fast ? e / kWK : e % kWM, p = a_k_fast ? e % kWK : e / kWM;
        const bool inside = m0 + i < g.m && k0 + p < g.k;
        const float v =
            inside ? static_cast<float>(a[ao + (m0 + i) * g.a_rs + (k0 + p) * g.a_cs]) : 0.0f;
        as[i][p] = wmma_type<T>::from(v);
      }
      for (int e = tid; e < kWK * kWN; e += kWmmaThreads) {
        const int p = b_n_fast ? e / kWN : e % kWK, j = b_n_fast ? e % kWN : e / kWK;
        const bool inside = k0 + p < g.k && n0 + j < g.n;
        const float v =
            inside ? static_cast<float>(b[bo + (k0 + p) * g.b_rs + (n0 + j) * g.b_cs]) : 0.0f;
        bs[p][j] = wmma_type<T>::from(v);
      }
      __syncthreads();
      for (int kk = 0; kk < kWK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb[2];
        for (int i = 0; i < 2; ++i)
          wmma::load_matrix_sync(fa[i], &as[wm * 32 + i * 16][kk], kWK + kWPadA);
        for (int j = 0; j < 2; ++j)
          wmma::load_matrix_sync(fb[j], &bs[kk][wn * 32 + j * 16], kWN + kWPadB);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
      __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(&cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], kWN + kWPadC,
                                wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < kWM * kWN; e += kWmmaThreads) {
      const int i = e / kWN, j = e % kWN;
      if (m0 + i < g.m && n0 + j < g.n)
        store_out(c + co + (m0 + i) * g.c_rs + (n0 + j) * g.c_cs, static_cast<float>(cs[i][j]),
                  alpha, beta);
    }
    __syncthreads();  // cs is rewritten by the next batch
  }
}

// ---- 8: WMMA, pipelined ------------------------------------------------------------------
// Note [A pipelined WMMA GEMM]
// Variant 6 spends most of its time staging: one scalar load and one float round trip per
// element, 64 x 64 tiles (each element of A and B is read from global memory n / 64 and m / 64
// times), and a barrier pair around every 32-deep k step with nothing in flight. Variant 8:
// - 128 x 128 block tiles, k in steps of 32, eight warps (2 x 4) of 64 x 32 each: a warp keeps
//   4 x 2 accumulator fragments, and per 16-deep step loads 4 + 2 fragments for 8 mma_syncs;
// - tiles are staged in the operand's own layout: A with unit column stride is kept row-major
//   (m x k), A with unit row stride (a transposed A) col-major (k x m), and likewise B, so the
//   16-byte chunks (eight elements along the unit-stride dim) are copied unchanged, and the
//   fragments are loaded as row_major or col_major to match (four instantiations); a matrix with
//   no unit stride, a chunk crossing the matrix's edge or a misaligned address takes the
//   element-by-element path, writing zeros outside the matrix;
// - the chunks go through cp.async (sm_80+), global to shared without passing through
//   registers, into a ring of kPStages stages in dynamic shared memory: while the warps
//   multiply tile t, the copies of tiles t + 1 .. t + kPStages - 1 are in flight. Each k step
//   waits for tile t's copies (cp.async's groups complete in order, so "all but the newest
//   kPStages - 2 groups"), passes one barrier (tile t visible to every warp, and every warp
//   done with tile t - 1), then issues tile t + kPStages - 1 into t - 1's stage and multiplies.
//   The simulator lands each copy at the wait that covers it (Note [cp.async in the
//   simulator] in kernels/cuda/sim/pipeline.cpp), so a read before the wait computes garbage
//   and a missing barrier after it is a racecheck hazard;
// - the accumulators leave through a 16 x 16 float tile per warp for the alpha / beta epilogue.
// Each stage's rows are padded by 8 elements (each fragment pointer 32-byte aligned, rows 16
// bytes apart in banks): four stages are 68-80 KiB of dynamic shared memory, past the 48 KiB a
// block gets without opting in (allow_dynamic_shared in kernels/cuda/common.cuh).
constexpr int kPM = 128, kPN = 128, kPK = 32, kPipelinedThreads = 256, kPPad = 8, kPStages = 4;

// The shared row length and size of an operand's tile: `rows` x `cols` as stored (the second
// dim the unit-stride one), each row padded.
template <int kRows, int kCols>
struct StagedTile {
  static constexpr int kLd = kCols + kPPad;
  static constexpr int kSize = kRows * kLd;
};

// The operand tiles of variant 8 (kACol: A staged col-major, k x m, for an A with unit row
// stride, else row-major, m x k; kBCol: B staged col-major, n x k, else row-major, k x n).
template <bool kACol, bool kBCol>
struct PipelinedTiles {
  using A = std::conditional_t<kACol, StagedTile<kPK, kPM>, StagedTile<kPM, kPK>>;
  using B = std::conditional_t<kBCol, StagedTile<kPN, kPK>, StagedTile<kPK, kPN>>;
  // Bytes of dynamic shared memory for a ring of kStages stages, of 16-bit elements.
  template <int kStages>
  static constexpr size_t kSharedBytes = size_t{kStages} * (A::kSize + B::kSize) * 2;
};

// The calling block's first row and column, and the number of k tiles, for block tiles of
// kM x kN stepping k by kK (grid x over columns, y over rows).
struct BlockTile {
  int64_t m0, n0, k_tiles;
};
template <int kM, int kN, int kK>
__device__ inline BlockTile block_tile(const GemmArgs& g) {
  return {static_cast<int64_t>(blockIdx.y) * kM, static_cast<int64_t>(blockIdx.x) * kN,
          (g.k + kK - 1) / kK};
}

// One operand's ring of stages in dynamic shared memory: ring[s][i] is element i of stage s.
template <class P>
struct StageRing {
  P base;
  int stage_size;
  __device__ auto operator[](int stage) const { return base + stage * stage_size; }
};

// Stages a kRows x kCols tile whose element (r, c) lies at src[r * rs + c * cs] (rows_left /
// cols_left of it inside the matrix) into s[stage] (row length StagedTile::kLd), chunk by chunk.
template <int kRows, int kCols, class S, class W>
__device__ inline void stage_tile(const S& s, int stage, const W* src, int64_t rs, int64_t cs,
                                  int64_t rows_left, int64_t cols_left, int tid) {
  constexpr int kLd = StagedTile<kRows, kCols>::kLd;
  constexpr int kChunks = kRows * kCols / 8;
  static_assert(kChunks % kPipelinedThreads == 0, "tile must split into whole chunks");
  for (int q = tid; q < kChunks; q += kPipelinedThreads) {
    const int r = q / (kCols / 8), c = q % (kCols / 8) * 8;
    const W* p = src + r * rs + c * cs;
    if (cs == 1 && r < rows_left && c + 8 <= cols_left &&
        reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
      // 16 bytes, global to shared, landing by the __pipeline_wait_prior that covers them.
      __pipeline_memcpy_async(&s[stage][r * kLd + c], p, 16);
      continue;
    }
    for (int j = 0; j < 8; ++j) {
      const bool inside = r < rows_left && c + j < cols_left;
      s[stage][r * kLd + c + j] = inside ? p[j * cs] : W(0.0f);  // zeros past the edge
    }
  }
}

// block 256 threads (eight warps, 2 x 4 over the 128 x 128 tile), dynamic shared memory
// PipelinedTiles<kACol, kBCol>::kSharedBytes<kStages>; grid (ceil(n / 128), ceil(m / 128),
// batches). kStages and kMinBlocks: set_gemm_tuning in core/cuda_gemm.h.
template <class T, bool kACol, bool kBCol, int kStages = kPStages, int kMinBlocks = 1>
__global__ void __launch_bounds__(kPipelinedThreads, kMinBlocks)
    gemm_wmma_pipelined(const T* a, const T* b, T* c, GemmArgs g, float alpha, float beta) {
  namespace wmma = nvcuda::wmma;
  using W = typename wmma_type<T>::type;
  using ATile = typename PipelinedTiles<kACol, kBCol>::A;
  using BTile = typename PipelinedTiles<kACol, kBCol>::B;
  using ALayout = std::conditional_t<kACol, wmma::col_major, wmma::row_major>;
  using BLayout = std::conditional_t<kBCol, wmma::col_major, wmma::row_major>;
  EMBER_DYNAMIC_SHARED(W, smem);  // A's kStages stages, then B's
  const StageRing<decltype(smem)> as{smem, ATile::kSize};
  const StageRing<decltype(smem)> bs{smem + kStages * ATile::kSize, BTile::kSize};
  EMBER_SHARED_ARRAY(float, cs, kPipelinedThreads / 32, 16 * 16);  // a warp's epilogue tile
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, wm = warp / 4, wn = warp % 4;
  const BlockTile tile = block_tile<kPM, kPN, kPK>(g);
  const int64_t m0 = tile.m0, n0 = tile.n0, k_tiles = tile.k_tiles;
  const W* wa = reinterpret_cast<const W*>(a);
  const W* wb = reinterpret_cast<const W*>(b);
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    // Starts the copies of tile t into its stage, as one cp.async group (an empty group past
    // the last tile keeps the count of groups per step constant).
    auto issue = [&](int64_t t) {
      if (t < k_tiles) {
        const int stage = static_cast<int>(t % kStages);
        const int64_t k0 = t * kPK;
        const W* pa = wa + ao + m0 * g.a_rs + k0 * g.a_cs;
        const W* pb = wb + bo + k0 * g.b_rs + n0 * g.b_cs;
        if constexpr (kACol)
          stage_tile<kPK, kPM>(as, stage, pa, g.a_cs, g.a_rs, g.k - k0, g.m - m0, tid);
        else
          stage_tile<kPM, kPK>(as, stage, pa, g.a_rs, g.a_cs, g.m - m0, g.k - k0, tid);
        if constexpr (kBCol)
          stage_tile<kPN, kPK>(bs, stage, pb, g.b_cs, g.b_rs, g.n - n0, g.k - k0, tid);
        else
          stage_tile<kPK, kPN>(bs, stage, pb, g.b_rs, g.b_cs, g.k - k0, g.n - n0, tid);
      }
      __pipeline_commit();
    };
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
    // Constant indices only (EMBER_UNROLL below too): an accumulator indexed at run time would
    // live in local memory.
    EMBER_UNROLL
    for (int i = 0; i < 4; ++i) EMBER_UNROLL
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int t = 0; t < kStages - 1; ++t) issue(t);
    for (int64_t t = 0; t < k_tiles; ++t) {
      __pipeline_wait_prior(kStages - 2);  // this thread's copies of tile t have landed
      __syncthreads();
      issue(t + kStages - 1);  // into tile t - 1's stage
      const int stage = static_cast<int>(t % kStages);
      EMBER_UNROLL
      for (int kk = 0; kk < kPK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, W, ALayout> fa[4];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, W, BLayout> fb[2];
        EMBER_UNROLL
        for (int i = 0; i < 4; ++i) {
          const int row = wm * 64 + i * 16;  // A(row.., kk..)
          const int off = kACol ? kk * ATile::kLd + row : row * ATile::kLd + kk;
          wmma::load_matrix_sync(fa[i], &as[stage][off], ATile::kLd);
        }
        EMBER_UNROLL
        for (int j = 0; j < 2; ++j) {
          const int col = wn * 32 + j * 16;  // B(kk.., col..)
          const int off = kBCol ? col * BTile::kLd + kk : kk * BTile::kLd + col;
          wmma::load_matrix_sync(fb[j], &bs[stage][off], BTile::kLd);
        }
        EMBER_UNROLL
        for (int i = 0; i < 4; ++i) EMBER_UNROLL
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __pipeline_wait_prior(0);  // no copy (all empty by now) outlives the batch
    EMBER_UNROLL
    for (int i = 0; i < 4; ++i) {
      EMBER_UNROLL
      for (int j = 0; j < 2; ++j) {
        wmma::store_matrix_sync(&cs[warp][0], acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        const int64_t row0 = m0 + wm * 64 + i * 16, col0 = n0 + wn * 32 + j * 16;
        for (int e = lane; e < 16 * 16; e += 32) {
          const int64_t row = row0 + e / 16, col = col0 + e % 16;
          if (row < g.m && col < g.n)
            store_out(c + co + row * g.c_rs + col * g.c_cs, static_cast<float>(cs[warp][e]), alpha,
                      beta);
        }
        __syncwarp();  // the tile is rewritten by the next fragment
      }
    }
    __syncthreads();  // the stages are rewritten by the next batch
  }
}

// ---- 9: warpgroup MMA (sm_90a) ---------------------------------------------------------
// Note [A warpgroup GEMM]
// Hopper's tensor cores are fed by wgmma (Note [Warpgroup MMA] in kernels/cuda/wgmma.cuh): a
// warpgroup multiplies tiles that stay in shared memory, with no fragment loads through
// registers (which variant 8's load_matrix_sync spends most of its issue slots on). Variant 9:
// - 128 x 256 block tiles, k in steps of 64 (one 128-byte row of 16-bit values), two warpgroups
//   of 128 threads, each owning 64 rows x 256 columns: four m64n256k16 per k step, 128 float
//   accumulators a thread;
// - both operands K-major in shared memory (A's rows, B's columns: k contiguous), stored with
//   the 128-byte swizzle, so each stage is 16 + 32 KiB on 1024-byte boundaries (the dynamic
//   shared memory is rounded up to one); the launcher hands the kernel an A with unit column
//   stride and a B with unit row stride, making a contiguous copy of an operand that is not
//   (run_ember in kernels/cuda/gemm.cu);
// - the chunks go through cp.async into a ring of four stages, as in variant 8, but a stage is
//   refilled only two steps later: wgmma runs asynchronously, and each step waits for its
//   own group only down to one in flight (wgmma::wait<1>), so tile t - 1 may still be being
//   read when step t starts. Step t: wait for tile t's copies (all but the newest group),
//   fence.proxy.async (the tensor cores read shared memory through another proxy than the
//   copies wrote it), barrier (tile t everywhere, and every warpgroup's tile t - 2 complete),
//   issue tile t + 2 into t - 2's stage, fence, four wgmma, commit, wait for all but this one;
// - the accumulators go straight from registers to global memory through the alpha / beta
//   epilogue (each thread holds pairs of adjacent columns).
// The simulator runs it (Note [wgmma in the simulator]); a real build compiles it for sm_90a
// only (CMAKE_CUDA_ARCHITECTURES 90a), and the host offers the variant only where the binary
// has it and the device is compute capability 9.0 (wgmma::available).
constexpr int kGM = 128, kGN = 256, kGK = 64, kGStages = 4, kGThreads = 256;
constexpr int kGAStageBytes = kGM * kGK * 2, kGBStageBytes = kGN * kGK * 2;  // 16 and 32 KiB
// The ring, plus the slack to round its start up to a 1024-byte boundary.
constexpr size_t kGSharedBytes = size_t{kGStages} * (kGAStageBytes + kGBStageBytes) + 1024;

// Stages the kRows x 64 K-major tile whose element (r, k) lies at src[r * ld + k] (rows_left /
// k_left of it inside the matrix) into s[stage], swizzled (wgmma::sw128_offset), chunk by chunk.
template <int kRows, class S, class W>
__device__ inline void stage_k_major(const S& s, int stage, const W* src, int64_t ld,
                                     int64_t rows_left, int64_t k_left, int tid) {
  constexpr int kChunks = kRows * kGK / 8;
  static_assert(kChunks % kGThreads == 0, "tile must split into whole chunks");
  for (int q = tid; q < kChunks; q += kGThreads) {
    const int r = q / (kGK / 8), k = q % (kGK / 8) * 8;
    const W* p = src + r * ld + k;
    const int at = static_cast<int>(wgmma::sw128_offset(r, k) / 2);
    if (r < rows_left && k + 8 <= k_left && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
      __pipeline_memcpy_async(&s[stage][at], p, 16);
      continue;
    }
    for (int j = 0; j < 8; ++j)
      s[stage][at + j] = r < rows_left && k + j < k_left ? p[j] : W(0.0f);  // zeros past the edge
  }
}

// block 256 threads (two warpgroups over the 128 x 256 tile), dynamic shared memory
// kGSharedBytes; grid (ceil(n / 256), ceil(m / 128), batches). A with unit column stride, B
// with unit row stride.
template <class T>
__global__ void __launch_bounds__(kGThreads, 1)
    gemm_wgmma(const T* a, const T* b, T* c, GemmArgs g, float alpha, float beta) {
  using W = typename wmma_type<T>::type;
  EMBER_DYNAMIC_SHARED(W, smem);
  const uint32_t window = wgmma::shared_address(&smem[0]);
  const int pad = static_cast<int>((1024 - window % 1024) % 1024);  // bytes to a 1024 boundary
  const uint32_t a_addr = window + pad, b_addr = a_addr + kGStages * kGAStageBytes;
  const StageRing<decltype(smem)> as{smem + pad / 2, kGAStageBytes / 2};
  const StageRing<decltype(smem)> bs{smem + (pad + kGStages * kGAStageBytes) / 2,
                                     kGBStageBytes / 2};
  const int tid = static_cast<int>(threadIdx.x);
  const int group = tid / 128, warp = tid % 128 / 32, lane = tid % 32;
  const BlockTile tile = block_tile<kGM, kGN, kGK>(g);
  const int64_t m0 = tile.m0, n0 = tile.n0, k_tiles = tile.k_tiles;
  const W* wa = reinterpret_cast<const W*>(a);
  const W* wb = reinterpret_cast<const W*>(b);
  for (int64_t z = blockIdx.z; z < g.batches; z += gridDim.z) {
    int64_t ao, bo, co;
    batch_offsets(g, z, ao, bo, co);
    // Starts the copies of tile t into its stage as one cp.async group (empty past the end).
    auto issue = [&](int64_t t) {
      if (t < k_tiles) {
        const int stage = static_cast<int>(t % kGStages);
        const int64_t k0 = t * kGK;
        stage_k_major<kGM>(as, stage, wa + ao + m0 * g.a_rs + k0, g.a_rs, g.m - m0, g.k - k0, tid);
        stage_k_major<kGN>(bs, stage, wb + bo + n0 * g.b_cs + k0, g.b_cs, g.n - n0, g.k - k0, tid);
      }
      __pipeline_commit();
    };
    float d[128];
    EMBER_UNROLL
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int t = 0; t < kGStages - 2; ++t) issue(t);
    for (int64_t t = 0; t < k_tiles; ++t) {
      __pipeline_wait_prior(kGStages - 3);  // this thread's copies of tile t have landed
      wgmma::fence_proxy_async();
      __syncthreads();
      issue(t + kGStages - 2);  // into tile t - 2's stage, whose wgmma completed
      const auto stage = static_cast<uint32_t>(t % kGStages);
      const uint32_t a_tile = a_addr + stage * kGAStageBytes + group * 64 * 128;
      const uint32_t b_tile = b_addr + stage * kGBStageBytes;
      wgmma::fence_operands(d);
      wgmma::fence();
      EMBER_UNROLL
      for (int kk = 0; kk < kGK / 16; ++kk) {
        wgmma::mma_m64n256k16<W>(wgmma::k_major_sw128(a_tile + kk * 32, 1024),
                                 wgmma::k_major_sw128(b_tile + kk * 32, 1024), d, true);
      }
      wgmma::commit();
      wgmma::wait<1>();  // tile t - 1's products are done; tile t's may run on
      wgmma::fence_operands(d);
    }
    wgmma::wait<0>();
    wgmma::fence_operands(d);
    __pipeline_wait_prior(0);
    // Element i of the fragment: row 16 * warp + lane / 4 + 8 * ((i / 2) % 2) of the group's 64,
    // column 8 * (i / 4) + 2 * (lane % 4) + i % 2.
    EMBER_UNROLL
    for (int i = 0; i < 128; ++i) {
      const int64_t row = m0 + group * 64 + warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
      const int64_t col = n0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
      if (row < g.m && col < g.n)
        store_out(c + co + row * g.c_rs + col * g.c_cs, d[i], alpha, beta);
    }
    __syncthreads();  // the stages are rewritten by the next batch
  }
}

}  // namespace ember::kernels::cuda::gemm
