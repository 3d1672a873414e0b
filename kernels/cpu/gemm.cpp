// The raw CPU GEMM of kernels/cpu/gemm.h.
//
// Note [GEMM micro-kernels]
// A float32 product runs BLIS's five loops around a micro-kernel:
//
//   for jc in n step NC:                     B panel (KC x NC) packed, lives in L3
//     for pc in k step KC:
//       pack B[pc:pc+KC, jc:jc+NC] into NR-wide micro-panels
//       for ic in m step MC:                 A block (MC x KC) packed, lives in L2
//         pack A[ic:ic+MC, pc:pc+KC] into MR-tall micro-panels
//         for jr in NC step NR:              one B micro-panel (KC x NR) stays in L1
//           for ir in MC step MR:
//             C[ir:ir+MR, jr:jr+NR] += A micro-panel . B micro-panel   (the micro-kernel)
//
// The micro-kernel keeps an MR x NR tile of C in vector registers; per step of k it loads NR
// floats of B and broadcasts MR floats of A into MR x NR/W fused multiply-adds. Packing makes
// both streams contiguous whatever the strides of A and B (a transposed operand costs nothing
// extra), and zero-pads the edges so the micro-kernel always runs a full tile; partial tiles
// are written back through a small buffer.
//
// The library is built for baseline x86-64, so the micro-kernels alone are compiled for AVX-512
// and AVX2+FMA (`__attribute__((target(...)))` on each) and picked at run time
// (__builtin_cpu_supports). They call nothing but intrinsics, so no inline function compiled
// for a wider ISA can be merged into code that runs on a CPU without it. Without AVX2, float32
// falls back to Eigen's product, like float64.

#include "kernels/cpu/gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

// Eigen runs on ember's pool (gemm() splits the work); make sure it never uses OpenMP.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>

#include "core/error.h"
#include "core/parallel.h"

namespace ember::kernels::cpu {

namespace {

// ---- micro-kernels ---------------------------------------------------------------------------

// C[0:m, 0:n] = alpha * (A panel . B panel) + beta * C for an MR x NR tile (m <= MR, n <= NR).
// a: kc steps of MR floats, b: kc steps of NR floats (both 64-byte aligned). beta == 0 does not
// read C.
using micro_kernel_fn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t c_rs,
                                 int64_t c_cs, float alpha, float beta, int64_t m, int64_t n);

struct MicroKernel {
  const char* name;
  micro_kernel_fn run;  // null: use Eigen
  int64_t mr, nr;       // register tile
  int64_t kc, mc, nc;   // cache blocks (mc a multiple of mr, nc of nr)
};

// Writes the m x n corner of a register tile saved in `tile` (row-major, nr_stride floats a row)
// into C with alpha and beta: the path for partial tiles and non-unit column strides.
inline void store_tile(const float* tile, int64_t nr_stride, float* c, int64_t c_rs, int64_t c_cs,
                       float alpha, float beta, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float* dst = c + i * c_rs + j * c_cs;
      float v = alpha * tile[i * nr_stride + j];
      *dst = beta == 0.0f ? v : v + beta * *dst;
    }
  }
}

// Micro-kernels are compiled for a wider ISA than the rest of the library, function by function.
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))
// Full unrolling of the register-tile loops, so every accumulator stays in a register.
#if defined(__clang__)
#define EMBER_UNROLL _Pragma("unroll")
#else
#define EMBER_UNROLL _Pragma("GCC unroll 16")
#endif

constexpr int kNr512 = 32;

// MR x 32 tile: 2 * MR zmm accumulators, 2 loads of B and MR broadcasts of A per step. MR = 12
// is the main kernel (24 accumulators); MR = 8 serves m a multiple of 8 but not of 12 (a batch
// of 64 rows: 8 full panels instead of 6 panels of which the last is a third full).
template <int MR>
EMBER_TARGET_AVX512 void micro_kernel_avx512(int64_t kc, const float* a, const float* b, float* c,
                                             int64_t c_rs, int64_t c_cs, float alpha, float beta,
                                             int64_t m, int64_t n) {
  __m512 acc0[MR], acc1[MR];
  EMBER_UNROLL
  for (int i = 0; i < MR; ++i) {
    acc0[i] = _mm512_setzero_ps();
    acc1[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    EMBER_UNROLL
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
    }
    a += MR;
    b += kNr512;
  }
  const __m512 va = _mm512_set1_ps(alpha);
  if (m == MR && n == kNr512 && c_cs == 1) {
    const __m512 vb = _mm512_set1_ps(beta);
    EMBER_UNROLL
    for (int i = 0; i < MR; ++i) {
      float* row = c + i * c_rs;
      __m512 r0 = _mm512_mul_ps(va, acc0[i]);
      __m512 r1 = _mm512_mul_ps(va, acc1[i]);
      if (beta != 0.0f) {
        r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row), r0);
        r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row + 16), r1);
      }
      _mm512_storeu_ps(row, r0);
      _mm512_storeu_ps(row + 16, r1);
    }
    return;
  }
  alignas(64) float tile[MR * kNr512];
  EMBER_UNROLL
  for (int i = 0; i < MR; ++i) {
    _mm512_store_ps(tile + i * kNr512, acc0[i]);
    _mm512_store_ps(tile + i * kNr512 + 16, acc1[i]);
  }
  store_tile(tile, kNr512, c, c_rs, c_cs, alpha, beta, m, n);
}

constexpr int kMr256 = 6, kNr256 = 16;

// 6 x 16 tile: 12 ymm accumulators, 2 loads of B and 6 broadcasts of A per step.
EMBER_TARGET_AVX2 void micro_kernel_avx2(int64_t kc, const float* a, const float* b, float* c,
                                         int64_t c_rs, int64_t c_cs, float alpha, float beta,
                                         int64_t m, int64_t n) {
  __m256 acc0[kMr256], acc1[kMr256];
  EMBER_UNROLL
  for (int i = 0; i < kMr256; ++i) {
    acc0[i] = _mm256_setzero_ps();
    acc1[i] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    EMBER_UNROLL
    for (int i = 0; i < kMr256; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
    }
    a += kMr256;
    b += kNr256;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  if (m == kMr256 && n == kNr256 && c_cs == 1) {
    const __m256 vb = _mm256_set1_ps(beta);
    EMBER_UNROLL
    for (int i = 0; i < kMr256; ++i) {
      float* row = c + i * c_rs;
      __m256 r0 = _mm256_mul_ps(va, acc0[i]);
      __m256 r1 = _mm256_mul_ps(va, acc1[i]);
      if (beta != 0.0f) {
        r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row), r0);
        r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8), r1);
      }
      _mm256_storeu_ps(row, r0);
      _mm256_storeu_ps(row + 8, r1);
    }
    return;
  }
  alignas(32) float tile[kMr256 * kNr256];
  EMBER_UNROLL
  for (int i = 0; i < kMr256; ++i) {
    _mm256_store_ps(tile + i * kNr256, acc0[i]);
    _mm256_store_ps(tile + i * kNr256 + 8, acc1[i]);
  }
  store_tile(tile, kNr256, c, c_rs, c_cs, alpha, beta, m, n);
}

const MicroKernel kAvx512{"avx512", micro_kernel_avx512<12>, 12, kNr512, 256, 144, 4096};
const MicroKernel kAvx512Mr8{"avx512", micro_kernel_avx512<8>, 8, kNr512, 256, 144, 4096};
const MicroKernel kAvx2{"avx2", micro_kernel_avx2, kMr256, kNr256, 256, 144, 4096};
const MicroKernel kEigen{"eigen", nullptr, 0, 0, 0, 0, 0};

const MicroKernel* best_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return &kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kAvx2;
  return &kEigen;
}

// The AVX-512 kernel for an m-row product: the 8-row tile when it wastes clearly fewer padded
// rows than the 12-row one (m = 64: 8 full panels rather than 72 rows computed for 64).
const MicroKernel& kernel_for_rows(const MicroKernel& uk, int64_t m) {
  if (&uk != &kAvx512) return uk;
  auto fill = [m](int64_t mr) {
    const int64_t padded = (m + mr - 1) / mr * mr;  // the rows computed, whole panels
    return static_cast<double>(m) / static_cast<double>(padded);
  };
  return fill(8) > fill(12) + 0.05 ? kAvx512Mr8 : uk;
}

const MicroKernel*& current_kernel() {
  static const MicroKernel* k = best_kernel();
  return k;
}

// ---- packing ---------------------------------------------------------------------------------

// 64-byte aligned scratch, one per thread, grown on demand.
struct Scratch {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data;
  size_t size = 0;
  float* get(size_t n) {
    if (n > size) {
      size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
      data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      EMBER_CHECK(data != nullptr, "gemm: out of memory for a ", bytes, "-byte packing buffer");
      size = n;
    }
    return data.get();
  }
};

// A sub-block of an operand (strided or by lines), with the accessors packing needs.
struct Operand {
  GemmOperand op;
  int64_t r0 = 0, c0 = 0;  // the block's corner in the whole operand

  Operand block(int64_t dr, int64_t dc) const { return {op, r0 + dr, c0 + dc}; }
  bool lines() const { return op.by_lines.lines != nullptr; }
  // Rows contiguous (unit column stride): row_ptr(r)[c] is element (r, c) of the block.
  bool has_rows() const { return lines() ? op.by_lines.lines_are_rows : op.cs == 1; }
  const float* row_ptr(int64_t r) const {
    return lines() ? op.by_lines.lines[r0 + r] + op.by_lines.offset + c0
                   : op.data + (r0 + r) * op.rs + c0;
  }
  // Columns contiguous (unit row stride): col_ptr(c)[r] is element (r, c) of the block.
  bool has_cols() const { return lines() ? !op.by_lines.lines_are_rows : op.rs == 1; }
  const float* col_ptr(int64_t c) const {
    return lines() ? op.by_lines.lines[c0 + c] + op.by_lines.offset + r0
                   : op.data + r0 + (c0 + c) * op.cs;
  }
  float at(int64_t r, int64_t c) const {
    if (!lines()) return op.data[(r0 + r) * op.rs + (c0 + c) * op.cs];
    return op.by_lines.lines_are_rows ? row_ptr(r)[c] : col_ptr(c)[r];
  }
};

// Writes dst[p * ld + r] = src[r][p] for r < R (at most 32), p < kc: R source lines, each
// contiguous along p, transposed into kc rows of R floats. This is what packing a row-major A
// (or a column-major B) amounts to; it runs in 4 x 4 blocks of SSE registers (baseline
// x86-64), several times faster than an element-by-element gather.
void pack_transposed(const float* const* src, int64_t R, int64_t kc, float* dst, int64_t ld) {
  int64_t r = 0;
  for (; r + 4 <= R; r += 4) {
    const float* s0 = src[r];
    const float* s1 = src[r + 1];
    const float* s2 = src[r + 2];
    const float* s3 = src[r + 3];
    float* d = dst + r;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      __m128 x0 = _mm_loadu_ps(s0 + p), x1 = _mm_loadu_ps(s1 + p);
      __m128 x2 = _mm_loadu_ps(s2 + p), x3 = _mm_loadu_ps(s3 + p);
      _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
      _mm_storeu_ps(d + (p + 0) * ld, x0);
      _mm_storeu_ps(d + (p + 1) * ld, x1);
      _mm_storeu_ps(d + (p + 2) * ld, x2);
      _mm_storeu_ps(d + (p + 3) * ld, x3);
    }
    for (; p < kc; ++p) {
      d[p * ld + 0] = s0[p];
      d[p * ld + 1] = s1[p];
      d[p * ld + 2] = s2[p];
      d[p * ld + 3] = s3[p];
    }
  }
  for (; r < R; ++r)
    for (int64_t p = 0; p < kc; ++p) dst[p * ld + r] = src[r][p];
}

constexpr int64_t kMaxTile = 32;  // the largest MR or NR

// A[0:mc, 0:kc] -> micro-panels of mr rows: panel r holds, for each p, A[r*mr + 0..mr-1, p].
void pack_a(int64_t mc, int64_t kc, const Operand& a, int64_t mr, float* out) {
  const float* lines[kMaxTile];
  for (int64_t ir = 0; ir < mc; ir += mr) {
    const int64_t rows = std::min(mr, mc - ir);
    float* dst = out + ir * kc;
    if (rows < mr) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(mr * kc));
    if (a.has_rows()) {
      for (int64_t i = 0; i < rows; ++i) lines[i] = a.row_ptr(ir + i);
      pack_transposed(lines, rows, kc, dst, mr);
    } else if (a.has_cols()) {
      // Column-major A: each step p is `rows` contiguous floats.
      for (int64_t p = 0; p < kc; ++p) std::copy_n(a.col_ptr(p) + ir, rows, dst + p * mr);
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < rows; ++i) dst[p * mr + i] = a.at(ir + i, p);
    }
  }
}

// Copies kc rows of N floats (row p at b.row_ptr(p) + j0) into consecutive rows of N: the
// packing of a row-major B. N is a compile-time constant, so the copy is inlined.
template <int N>
void pack_rows(const Operand& b, int64_t j0, int64_t kc, float* dst) {
  for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * N, b.row_ptr(p) + j0, sizeof(float) * N);
}

// B[0:kc, 0:nc] -> micro-panels of nr columns: panel j holds, for each p, B[p, j*nr + 0..nr-1].
void pack_b(int64_t kc, int64_t nc, const Operand& b, int64_t nr, float* out) {
  const float* lines[kMaxTile];
  for (int64_t jr = 0; jr < nc; jr += nr) {
    const int64_t cols = std::min(nr, nc - jr);
    float* dst = out + jr * kc;
    if (b.has_rows() && cols == nr && (nr == 32 || nr == 16)) {
      if (nr == 32) {
        pack_rows<32>(b, jr, kc, dst);
      } else {
        pack_rows<16>(b, jr, kc, dst);
      }
      continue;
    }
    if (cols < nr) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(nr * kc));
    if (b.has_rows()) {
      for (int64_t p = 0; p < kc; ++p) std::copy_n(b.row_ptr(p) + jr, cols, dst + p * nr);
    } else if (b.has_cols()) {
      // Column-major B: column j is contiguous along p.
      for (int64_t j = 0; j < cols; ++j) lines[j] = b.col_ptr(jr + j);
      pack_transposed(lines, cols, kc, dst, nr);
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < cols; ++j) dst[p * nr + j] = b.at(p, jr + j);
    }
  }
}

// One thread's packed product (Note [GEMM micro-kernels]).
void packed_gemm(const MicroKernel& uk, int64_t m, int64_t n, int64_t k, float alpha,
                 const Operand& a, const Operand& b, float beta, float* c, int64_t c_rs,
                 int64_t c_cs) {
  thread_local Scratch a_buf, b_buf;
  const int64_t mr = uk.mr, nr = uk.nr;
  // Equal k blocks of at most uk.kc (k = 288: two of 144, not 256 and a short 32 whose tiles
  // would spend as long loading and storing C as multiplying).
  const int64_t k_blocks = (k + uk.kc - 1) / uk.kc;
  const int64_t kc_max = (k + k_blocks - 1) / k_blocks;
  for (int64_t jc = 0; jc < n; jc += uk.nc) {
    const int64_t nc = std::min(uk.nc, n - jc);
    const int64_t nc_padded = (nc + nr - 1) / nr * nr;
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      float* bp = b_buf.get(static_cast<size_t>(kc * nc_padded));
      pack_b(kc, nc, b.block(pc, jc), nr, bp);
      const float beta_p = pc == 0 ? beta : 1.0f;  // later k blocks accumulate
      for (int64_t ic = 0; ic < m; ic += uk.mc) {
        const int64_t mc = std::min(uk.mc, m - ic);
        const int64_t mc_padded = (mc + mr - 1) / mr * mr;
        float* ap = a_buf.get(static_cast<size_t>(mc_padded * kc));
        pack_a(mc, kc, a.block(ic, pc), mr, ap);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          for (int64_t ir = 0; ir < mc; ir += mr) {
            uk.run(kc, ap + ir * kc, bp + jr * kc, c + (ic + ir) * c_rs + (jc + jr) * c_cs, c_rs,
                   c_cs, alpha, beta_p, std::min(mr, mc - ir), std::min(nr, nc - jr));
          }
        }
      }
    }
  }
}

Operand strided(const float* x, int64_t rs, int64_t cs) { return {GemmOperand{x, rs, cs, {}}}; }

// ---- Eigen ---------------------------------------------------------------------------------

template <class T>
using ColMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>, 0,
                          Eigen::OuterStride<>>;
template <class T>
using RowMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          0, Eigen::OuterStride<>>;
template <class T>
using ConstColMap =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>, 0,
               Eigen::OuterStride<>>;

// Calls f with an Eigen view of the (rows x cols) matrix x: column-major or row-major when one
// stride is 1 (a transposed operand maps without a copy), else a column-major copy.
template <class T, class F>
void with_eigen_view(const T* x, int64_t rows, int64_t cols, int64_t rs, int64_t cs, F&& f) {
  if (rs == 1) {
    f(ConstColMap<T>(x, rows, cols, Eigen::OuterStride<>(cs)));
  } else if (cs == 1) {
    f(RowMap<T>(x, rows, cols, Eigen::OuterStride<>(rs)));
  } else {
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> copy(rows, cols);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) copy(i, j) = x[i * rs + j * cs];
    f(copy);
  }
}

// Single-threaded Eigen product into a column-major C (c_rs == 1).
template <class T>
void eigen_gemm_colmajor(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs,
                         int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c,
                         int64_t c_cs) {
  ColMap<T> cm(c, m, n, Eigen::OuterStride<>(n == 1 ? m : c_cs));
  with_eigen_view(a, m, k, a_rs, a_cs, [&](const auto& am) {
    with_eigen_view(b, k, n, b_rs, b_cs, [&](const auto& bm) {
      if (beta == T(0)) {
        cm.noalias() = alpha * am * bm;
      } else {
        if (beta != T(1)) cm *= beta;
        cm.noalias() += alpha * am * bm;
      }
    });
  });
}

template <class T>
void eigen_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs, int64_t c_cs) {
  if (c_rs == 1 || m == 1) {
    eigen_gemm_colmajor(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_cs);
  } else if (c_cs == 1 || n == 1) {
    // Row-major C: C^T = B^T A^T is column-major with the same memory.
    eigen_gemm_colmajor(n, m, k, alpha, b, b_cs, b_rs, a, a_cs, a_rs, beta, c, c_rs);
  } else {
    // No unit stride in C: compute into a column-major buffer, then add into C.
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> tmp(m, n);
    eigen_gemm_colmajor(m, n, k, T(1), a, a_rs, a_cs, b, b_rs, b_cs, T(0), tmp.data(), m);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T* dst = c + i * c_rs + j * c_cs;
        *dst = beta == T(0) ? alpha * tmp(i, j) : alpha * tmp(i, j) + beta * *dst;
      }
    }
  }
}

// ---- small products and matrix-vector shapes -------------------------------------------------

// Plain loops for tiny products and for m == 1 or n == 1, where packing a full register tile
// would waste most of the work. float accumulates in double: long dot products stay accurate.
template <class T>
void small_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs, int64_t c_cs) {
  auto store = [&](T* dst, double acc) {
    T v = alpha * static_cast<T>(acc);
    *dst = beta == T(0) ? v : v + beta * *dst;
  };
  if (m == 1 && n > 1) {
    // A row vector times B: accumulate whole rows of B (contiguous when B is row-major).
    std::unique_ptr<double[]> acc(new double[static_cast<size_t>(n)]());
    for (int64_t p = 0; p < k; ++p) {
      const double ap = static_cast<double>(a[p * a_cs]);
      const T* brow = b + p * b_rs;
      for (int64_t j = 0; j < n; ++j) acc[j] += ap * static_cast<double>(brow[j * b_cs]);
    }
    for (int64_t j = 0; j < n; ++j) store(c + j * c_cs, acc[j]);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const T* ar = a + i * a_rs;
      const T* bc = b + j * b_cs;
      double acc[4] = {0, 0, 0, 0};
      int64_t p = 0;
      for (; p + 4 <= k; p += 4)
        for (int l = 0; l < 4; ++l)
          acc[l] +=
              static_cast<double>(ar[(p + l) * a_cs]) * static_cast<double>(bc[(p + l) * b_rs]);
      for (; p < k; ++p)
        acc[0] += static_cast<double>(ar[p * a_cs]) * static_cast<double>(bc[p * b_rs]);
      store(c + i * c_rs + j * c_cs, (acc[0] + acc[1]) + (acc[2] + acc[3]));
    }
  }
}

constexpr int64_t kSmallWork = 16 * 16 * 16;  // m * n * k below which plain loops win

template <class T>
void serial_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                 const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs, int64_t c_cs) {
  if (m == 1 || n == 1 || m * n * k <= kSmallWork) {
    small_gemm(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    const MicroKernel* uk = current_kernel();
    if (uk->run != nullptr) {
      packed_gemm(kernel_for_rows(*uk, m), m, n, k, alpha, strided(a, a_rs, a_cs),
                  strided(b, b_rs, b_cs), beta, c, c_rs, c_cs);
      return;
    }
  }
  eigen_gemm(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
}

// Splits C into blocks of whole rows (or columns, when n > m) of a multiple of the micro-kernel
// tiles, one per thread, and runs product(i0, i1, j0, j1) for each: the single-threaded product
// of C[i0:i1, j0:j1]. Empty and k == 0 / alpha == 0 products are handled here.
template <class T, class Product>
void parallel_gemm(int64_t m, int64_t n, int64_t k, T alpha, T beta, T* c, int64_t c_rs,
                   int64_t c_cs, Product&& product) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T* dst = c + i * c_rs + j * c_cs;
        *dst = beta == T(0) ? T(0) : beta * *dst;
      }
    return;
  }
  const int threads = in_parallel_region() ? 1 : num_threads();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads == 1 || work < 64.0 * 64.0 * 64.0) {
    product(0, m, 0, n);
    return;
  }
  const bool split_rows = m >= n;
  const int64_t len = split_rows ? m : n;
  // Block edges on multiples of the micro-kernels' tiles (MR 12 or 6, NR 32 or 16).
  const int64_t align = split_rows ? 12 : 32;
  int64_t per = (len + threads - 1) / threads;
  per = (per + align - 1) / align * align;
  const int64_t blocks = (len + per - 1) / per;
  parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t s = blk * per, e = std::min(len, s + per);
      if (split_rows) {
        product(s, e, 0, n);
      } else {
        product(0, m, s, e);
      }
    }
  });
}

template <class T>
void strided_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                  const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs,
                  int64_t c_cs) {
  parallel_gemm(m, n, k, alpha, beta, c, c_rs, c_cs,
                [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
                  serial_gemm(i1 - i0, j1 - j0, k, alpha, a + i0 * a_rs, a_rs, a_cs, b + j0 * b_cs,
                              b_rs, b_cs, beta, c + i0 * c_rs + j0 * c_cs, c_rs, c_cs);
                });
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs, int64_t a_cs,
          const float* b, int64_t b_rs, int64_t b_cs, float beta, float* c, int64_t c_rs,
          int64_t c_cs) {
  strided_gemm(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
}

void gemm(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t a_rs,
          int64_t a_cs, const double* b, int64_t b_rs, int64_t b_cs, double beta, double* c,
          int64_t c_rs, int64_t c_cs) {
  strided_gemm(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
}

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const GemmOperand& a, const GemmOperand& b,
          float beta, float* c, int64_t c_rs, int64_t c_cs) {
  const Operand oa{a}, ob{b};
  const MicroKernel* uk = current_kernel();
  parallel_gemm(m, n, k, alpha, beta, c, c_rs, c_cs,
                [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
                  float* cb = c + i0 * c_rs + j0 * c_cs;
                  if (uk->run != nullptr) {
                    packed_gemm(kernel_for_rows(*uk, i1 - i0), i1 - i0, j1 - j0, k, alpha,
                                oa.block(i0, 0), ob.block(0, j0), beta, cb, c_rs, c_cs);
                    return;
                  }
                  // No vector micro-kernel on this CPU: plain loops, double accumulation.
                  for (int64_t i = i0; i < i1; ++i)
                    for (int64_t j = j0; j < j1; ++j) {
                      double s = 0;
                      for (int64_t p = 0; p < k; ++p)
                        s += static_cast<double>(oa.at(i, p)) * static_cast<double>(ob.at(p, j));
                      float* dst = c + i * c_rs + j * c_cs;
                      const float v = alpha * static_cast<float>(s);
                      *dst = beta == 0.0f ? v : v + beta * *dst;
                    }
                });
}

const char* gemm_kernel_name() { return current_kernel()->name; }

bool set_gemm_kernel(const char* name) {
  const std::string want = name;
  __builtin_cpu_init();
  if (want == "avx512" && __builtin_cpu_supports("avx512f")) {
    current_kernel() = &kAvx512;
  } else if (want == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    current_kernel() = &kAvx2;
  } else if (want == "eigen") {
    current_kernel() = &kEigen;
  } else {
    return false;
  }
  return true;
}

}  // namespace ember::kernels::cpu
