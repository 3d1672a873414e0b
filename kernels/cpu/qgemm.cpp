// The exact int8 GEMM of kernels/cpu/qgemm.h (Note [Exact int8 GEMM] there).

#include "kernels/cpu/qgemm.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/cpu/isa.h"

namespace ember::kernels::cpu {

namespace {

// Micro-kernels are compiled for a wider ISA than the rest of the library, function by function
// (as in kernels/cpu/gemm.cpp). Helpers inlined into them carry the same target.
#define EMBER_QGEMM_TARGET_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define EMBER_QGEMM_TARGET_AVXVNNI __attribute__((target("avx2,avxvnni")))
#define EMBER_QGEMM_TARGET_AVX2 __attribute__((target("avx2")))
#define EMBER_QGEMM_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define EMBER_QGEMM_UNROLL _Pragma("unroll")
#else
#define EMBER_QGEMM_UNROLL _Pragma("GCC unroll 16")
#endif

constexpr int64_t kKcMax = 1024;          // the largest k block (bytes of an A row in L1)
constexpr int64_t kL2Bytes = 512 * 1024;  // the B block kept in L2
constexpr int64_t kRowAlign = 24;         // row blocks of threads: a multiple of every MR
constexpr int kMaxMr = 12, kMaxNv = 4;

// ---- micro-kernels -----------------------------------------------------------------------------

// One micro-kernel call: C[0:MR, 0:cols] = A strip . B panels - z * rowsum (first k block) or
// C[0:MR, 0:cols] += A strip . B panels (later k blocks). See Note [Exact int8 GEMM].
struct Tile {
  const uint8_t* a = nullptr;         // row 0 of the A strip at the block's first k
  int64_t lda = 0;                    // bytes between rows of a
  int64_t groups = 0;                 // whole 4-byte groups to read from each row
  int64_t tail = 0;                   // bytes (0..3) of a last, partial group
  const int8_t* b = nullptr;          // the first panel, at the block's first group
  int64_t panel_stride = 0;           // bytes between panels
  int32_t* c = nullptr;               // C(0, 0) of the tile
  int64_t ldc = 0;                    // elements between rows of c
  int64_t cols = 0;                   // columns to write: (NV - 1) * W < cols <= NV * W
  const int32_t* row_sums = nullptr;  // rowsum(B) of the tile's columns, zero-padded to NV * W
  int32_t zero_point = 0;
  bool first = true;
};
using TileFn = void (*)(const Tile&);

inline uint32_t load_group(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The k tail: the last `tail` (1..3) bytes of each of `rows` rows, zero-padded to one group each
// (byte by byte: a call to memcpy would cost more than the tile's arithmetic at small k).
inline void copy_tail(const uint8_t* a, int64_t lda, int rows, int64_t tail, uint8_t* out) {
  for (int i = 0; i < rows; ++i) {
    const uint8_t* p = a + i * lda;
    uint8_t* q = out + 4 * i;
    q[0] = p[0];
    q[1] = tail > 1 ? p[1] : 0;
    q[2] = tail > 2 ? p[2] : 0;
    q[3] = 0;
  }
}

// -- AVX-512 VNNI: zmm, 16 columns a vector, vpdpbusd.

template <int MR, int NV>
EMBER_QGEMM_TARGET_VNNI512 void tile_avx512vnni(const Tile& t) {
  uint8_t tail[MR * 4];
  const int passes = t.tail != 0 ? 2 : 1;
  if (t.tail != 0) copy_tail(t.a + 4 * t.groups, t.lda, MR, t.tail, tail);
  __m512i acc[MR][NV];  // C tile: (MR, NV * 16)
  EMBER_QGEMM_UNROLL
  for (int i = 0; i < MR; ++i) {
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_si512();
  }
  // One loop over the groups of k, run a second time over the k tail's copy when k % 4 != 0.
  // (A helper taking acc by reference, called twice, reads better, but GCC 12 then keeps the
  // accumulators in memory.)
  const uint8_t* a = t.a;  // row i at a + i * lda
  const int8_t* b = t.b;   // panel v at b + v * panel_stride
  int64_t lda = t.lda, groups = t.groups;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == 1) {
      a = tail;
      lda = 4;
      groups = 1;
    }
    for (int64_t g = 0; g < groups; ++g, a += 4, b += 64) {
      __m512i bv[NV];
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(b + v * t.panel_stride);
      EMBER_QGEMM_UNROLL
      for (int i = 0; i < MR; ++i) {
        const __m512i ai = _mm512_set1_epi32(static_cast<int>(load_group(a + i * lda)));
        EMBER_QGEMM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], ai, bv[v]);
      }
    }
  }
  __mmask16 mask[NV];  // the columns of C to write: all but in the last vector of a tail tile
  EMBER_QGEMM_UNROLL
  for (int v = 0; v < NV; ++v) {
    const int64_t cols = std::min<int64_t>(16, t.cols - 16 * v);
    mask[v] = static_cast<__mmask16>((1u << cols) - 1u);
  }
  if (t.first) {
    const __m512i z = _mm512_set1_epi32(t.zero_point);
    __m512i zsum[NV];
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v)
      zsum[v] = _mm512_mullo_epi32(z, _mm512_loadu_si512(t.row_sums + 16 * v));
    EMBER_QGEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v)
        _mm512_mask_storeu_epi32(t.c + i * t.ldc + 16 * v, mask[v],
                                 _mm512_sub_epi32(acc[i][v], zsum[v]));
    }
  } else {
    EMBER_QGEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v) {
        int32_t* dst = t.c + i * t.ldc + 16 * v;
        const __m512i old = _mm512_maskz_loadu_epi32(mask[v], dst);
        _mm512_mask_storeu_epi32(dst, mask[v], _mm512_add_epi32(acc[i][v], old));
      }
    }
  }
}

// -- The ymm kernels (AVX-VNNI and AVX2): 8 columns a vector, 16 registers. They differ only in
// the dot step; the stores are shared.

// Lanes [0, cols) of a ymm, as the mask of vpmaskmovd.
EMBER_QGEMM_TARGET_AVX2 EMBER_QGEMM_INLINE __m256i lanes_below(int64_t cols) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int MR, int NV>
EMBER_QGEMM_TARGET_AVX2 EMBER_QGEMM_INLINE void store_ymm(__m256i (&acc)[MR][NV], const Tile& t) {
  const bool full = t.cols == 8 * NV;
  const __m256i last = lanes_below(t.cols - 8 * (NV - 1));
  if (t.first) {
    const __m256i z = _mm256_set1_epi32(t.zero_point);
    __m256i zsum[NV];
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v)
      zsum[v] = _mm256_mullo_epi32(
          z, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.row_sums + 8 * v)));
    EMBER_QGEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_sub_epi32(acc[i][v], zsum[v]);
    }
  } else {
    EMBER_QGEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v) {
        const int32_t* src = t.c + i * t.ldc + 8 * v;
        const __m256i old = full || v < NV - 1
                                ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))
                                : _mm256_maskload_epi32(src, last);
        acc[i][v] = _mm256_add_epi32(acc[i][v], old);
      }
    }
  }
  EMBER_QGEMM_UNROLL
  for (int i = 0; i < MR; ++i) {
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v) {
      int32_t* dst = t.c + i * t.ldc + 8 * v;
      if (full || v < NV - 1) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), acc[i][v]);
      } else {
        _mm256_maskstore_epi32(dst, last, acc[i][v]);
      }
    }
  }
}

template <int MR, int NV>
EMBER_QGEMM_TARGET_AVXVNNI void tile_avxvnni(const Tile& t) {
  uint8_t tail[MR * 4];
  const int passes = t.tail != 0 ? 2 : 1;
  if (t.tail != 0) copy_tail(t.a + 4 * t.groups, t.lda, MR, t.tail, tail);
  __m256i acc[MR][NV];
  EMBER_QGEMM_UNROLL
  for (int i = 0; i < MR; ++i) {
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_si256();
  }
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  int64_t lda = t.lda, groups = t.groups;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == 1) {  // the k tail, from its copy (as in tile_avx512vnni)
      a = tail;
      lda = 4;
      groups = 1;
    }
    for (int64_t g = 0; g < groups; ++g, a += 4, b += 32) {
      __m256i bv[NV];
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v)
        bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + v * t.panel_stride));
      EMBER_QGEMM_UNROLL
      for (int i = 0; i < MR; ++i) {
        const __m256i ai = _mm256_set1_epi32(static_cast<int>(load_group(a + i * lda)));
        EMBER_QGEMM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_dpbusd_avx_epi32(acc[i][v], ai, bv[v]);
      }
    }
  }
  store_ymm<MR, NV>(acc, t);
}

// AVX2: A's rows arrive widened to int16 (widen_rows), so a 4-byte group is a pair of k, and B
// holds pairs of k as int16; vpmaddwd multiplies them and adds each pair into int32.
template <int MR, int NV>
EMBER_QGEMM_TARGET_AVX2 void tile_avx2(const Tile& t) {
  __m256i acc[MR][NV];
  EMBER_QGEMM_UNROLL
  for (int i = 0; i < MR; ++i) {
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_si256();
  }
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int64_t g = 0; g < t.groups; ++g, a += 4, b += 32) {
    __m256i bv[NV];
    EMBER_QGEMM_UNROLL
    for (int v = 0; v < NV; ++v)
      bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + v * t.panel_stride));
    EMBER_QGEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
      const __m256i ai = _mm256_set1_epi32(static_cast<int>(load_group(a + i * t.lda)));
      EMBER_QGEMM_UNROLL
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(ai, bv[v]));
    }
  }
  store_ymm<MR, NV>(acc, t);
}

// rows x kc bytes of A -> int16, each row padded with a zero to an even length; out_ld elements
// between output rows.
EMBER_QGEMM_TARGET_AVX2 void widen_rows(const uint8_t* a, int64_t lda, int64_t rows, int64_t kc,
                                        uint16_t* out, int64_t out_ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = a + r * lda;
    uint16_t* dst = out + r * out_ld;
    int64_t p = 0;
    for (; p + 16 <= kc; p += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + p));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + p), _mm256_cvtepu8_epi16(x));
    }
    for (; p < kc; ++p) dst[p] = src[p];
    if (kc % 2 != 0) dst[kc] = 0;
  }
}

// ---- the kernel table --------------------------------------------------------------------------

using TileRow = std::array<TileFn, kMaxMr>;  // by MR - 1; null past the largest MR

struct Avx512VnniTiles {
  template <int MR, int NV>
  static constexpr TileFn get() {
    return &tile_avx512vnni<MR, NV>;
  }
};
struct AvxVnniTiles {
  template <int MR, int NV>
  static constexpr TileFn get() {
    return &tile_avxvnni<MR, NV>;
  }
};
struct Avx2Tiles {
  template <int MR, int NV>
  static constexpr TileFn get() {
    return &tile_avx2<MR, NV>;
  }
};

// The tiles 1..MAX_MR x NV of one kernel.
template <class Tiles, int NV, int... I>
constexpr TileRow tile_row_of(std::integer_sequence<int, I...>) {
  return TileRow{{Tiles::template get<I + 1, NV>()...}};
}
template <class Tiles, int NV, int MAX_MR>
constexpr TileRow tile_row() {
  return tile_row_of<Tiles, NV>(std::make_integer_sequence<int, MAX_MR>{});
}

bool has_avx512vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}
// AVX-VNNI is CPUID leaf 7, subleaf 1, EAX bit 4 (not every compiler's __builtin_cpu_supports
// knows it); the ymm state is the OS's part of the AVX2 check.
bool has_avxvnni() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool vnni = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4));
  return vnni && __builtin_cpu_supports("avx2");
}
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
bool has_scalar() { return true; }

// One kernel: its layout and its tiles (Note [Exact int8 GEMM]).
struct QKernel {
  const char* name;
  QWeightLayout layout;
  int64_t width;    // columns of a B panel (int32 lanes of a vector; 1 for scalar)
  int64_t k_group;  // k of a 4-byte group: 4 (bytes) or 2 (int16 pairs)
  bool widen_a;     // AVX2: A's rows widened to int16 first
  bool (*supported)();
  std::array<int, kMaxNv> mr;  // the MR used with NV vectors, by NV - 1 (0: no such NV)
  std::array<TileRow, kMaxNv> tiles;
  int nv_max() const {
    int nv = 0;
    while (nv < kMaxNv && mr[nv] > 0) ++nv;
    return nv;
  }
};

// MR x NV accumulators: at most 24 of the 32 zmm registers, 12 of the 16 ymm registers with
// AVX-VNNI and 8 with AVX2 (whose vpmaddwd products need registers of their own); the rest hold
// B and the broadcast A. Constant-initialized: usable from other files' static initializers.
constexpr QKernel kAvx512Vnni{
    "avx512vnni",
    QWeightLayout::kVnni16,
    16,
    4,
    false,
    has_avx512vnni,
    {12, 12, 8, 6},
    {tile_row<Avx512VnniTiles, 1, 12>(), tile_row<Avx512VnniTiles, 2, 12>(),
     tile_row<Avx512VnniTiles, 3, 8>(), tile_row<Avx512VnniTiles, 4, 6>()}};
constexpr QKernel kAvxVnni{
    "avxvnni",
    QWeightLayout::kVnni8,
    8,
    4,
    false,
    has_avxvnni,
    {12, 6, 0, 0},
    {tile_row<AvxVnniTiles, 1, 12>(), tile_row<AvxVnniTiles, 2, 6>(), {}, {}}};
constexpr QKernel kAvx2{"avx2",
                        QWeightLayout::kPairs8,
                        8,
                        2,
                        true,
                        has_avx2,
                        {8, 4, 0, 0},
                        {tile_row<Avx2Tiles, 1, 8>(), tile_row<Avx2Tiles, 2, 4>(), {}, {}}};
constexpr QKernel kScalar{"scalar", QWeightLayout::kRowMajor, 1, 1, false, has_scalar, {1}, {}};

constexpr const QKernel* kKernels[] = {&kAvx512Vnni, &kAvxVnni, &kAvx2, &kScalar};  // widest first

const QKernel& kernel_for(QWeightLayout layout) {
  for (const QKernel* q : kKernels)
    if (q->layout == layout) return *q;
  EMBER_INTERNAL_ASSERT(false, "qgemm: unknown weight layout ", static_cast<int>(layout));
  return kScalar;
}

// The kernel set_qgemm_kernel chose; null: automatic.
const QKernel*& chosen_kernel() {
  static const QKernel* k = nullptr;
  return k;
}

const QKernel& selected_kernel() {
  if (chosen_kernel() != nullptr) return *chosen_kernel();
  if (!use_avx2()) return kScalar;  // EMBER_CPU_ISA=baseline
  for (const QKernel* q : kKernels)
    if (q->supported()) return *q;
  return kScalar;
}

// ---- the blocked product -----------------------------------------------------------------------

struct Problem {
  const uint8_t* a;
  int64_t lda;
  int32_t zero_point;
  const PackedQWeight* b;
  int32_t* c;
  int64_t ldc;
};

// Rows [i0, i1) of C against panels [q0, q1) of B with the scalar kernel (panels are columns).
void scalar_block(const Problem& pr, int64_t i0, int64_t i1, int64_t q0, int64_t q1) {
  const int64_t k = pr.b->k();
  const int8_t* w = pr.b->data();
  const int32_t* sums = pr.b->row_sums();
  for (int64_t i = i0; i < i1; ++i) {
    const uint8_t* arow = pr.a + i * pr.lda;
    int32_t* crow = pr.c + i * pr.ldc;
    for (int64_t j = q0; j < q1; ++j) {
      const int8_t* brow = w + j * k;
      int32_t s = 0;  // |s| <= 255 * 128 * k: no overflow (check_qgemm_k)
      for (int64_t p = 0; p < k; ++p) s += static_cast<int32_t>(arow[p]) * brow[p];
      crow[j] = s - pr.zero_point * sums[j];
    }
  }
}

// Rows [i0, i1) of C against panels [q0, q1) of B on one thread: the loops of Note [Exact int8
// GEMM] around the micro-kernel.
void vector_block(const QKernel& kern, const Problem& pr, int64_t i0, int64_t i1, int64_t q0,
                  int64_t q1) {
  const PackedQWeight& b = *pr.b;
  const int64_t n = b.n(), k = b.k(), w = kern.width;
  const int nv_main = static_cast<int>(std::min<int64_t>(kern.nv_max(), q1 - q0));
  const int64_t mr = kern.mr[nv_main - 1];  // also valid for every smaller NV
  // Equal k blocks of at most kKcMax, whole groups but for the last (k = 1100: 2 x 552, not
  // 1024 + 76).
  const int64_t k_blocks = (k + kKcMax - 1) / kKcMax;
  const int64_t kc_max = ((k + k_blocks - 1) / k_blocks + 3) / 4 * 4;
  const int64_t panel_stride = (k + kern.k_group - 1) / kern.k_group * w * 4;
  const int64_t block_panels =
      std::max<int64_t>(nv_main, kL2Bytes / (kc_max * w) / nv_main * nv_main);
  thread_local std::vector<uint16_t> wide;  // AVX2: the widened A strip
  for (int64_t qb = q0; qb < q1; qb += block_panels) {
    const int64_t qe = std::min(q1, qb + block_panels);
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      Tile t;
      t.panel_stride = panel_stride;
      t.ldc = pr.ldc;
      t.zero_point = pr.zero_point;
      t.first = pc == 0;
      for (int64_t ir = i0; ir < i1; ir += mr) {
        const int64_t rows = std::min(mr, i1 - ir);
        const uint8_t* a = pr.a + ir * pr.lda + pc;
        if (kern.widen_a) {
          const int64_t pairs = (kc + 1) / 2;
          wide.resize(static_cast<size_t>(rows * pairs * 2));
          widen_rows(a, pr.lda, rows, kc, wide.data(), pairs * 2);
          t.a = reinterpret_cast<const uint8_t*>(wide.data());
          t.lda = pairs * 4;
          t.groups = pairs;
          t.tail = 0;
        } else {
          t.a = a;
          t.lda = pr.lda;
          t.groups = kc / 4;
          t.tail = kc % 4;
        }
        for (int64_t q = qb; q < qe;) {
          const int nv = static_cast<int>(std::min<int64_t>(nv_main, qe - q));
          t.b = b.data() + q * panel_stride + pc / kern.k_group * w * 4;
          t.c = pr.c + ir * pr.ldc + q * w;
          t.cols = std::min(nv * w, n - q * w);
          t.row_sums = b.row_sums() + q * w;
          kern.tiles[nv - 1][rows - 1](t);
          q += nv;
        }
      }
    }
  }
}

// Work (m * n * k multiply-adds) under which one thread does it all.
constexpr double kParallelWork = 1 << 20;

}  // namespace

void check_qgemm_k(int64_t k) {
  EMBER_CHECK(k >= 0 && k <= kQgemmMaxK, "qgemm: k = ", k, " is outside [0, ", kQgemmMaxK,
              "], the depth whose int32 sum is exact");
}

const char* PackedQWeight::kernel_name() const { return kernel_for(layout_).name; }

PackedQWeight pack_qweight(const int8_t* w, int64_t n, int64_t k) {
  check_qgemm_k(k);
  EMBER_CHECK(n >= 0, "pack_qweight: n = ", n, " is negative");
  EMBER_CHECK(w != nullptr || n * k == 0, "pack_qweight: null weights for a (", n, ", ", k,
              ") matrix");
  const QKernel& kern = selected_kernel();
  PackedQWeight p;
  p.n_ = n;
  p.k_ = k;
  p.layout_ = kern.layout;
  const int64_t width = kern.width;
  const int64_t panels = (n + width - 1) / width;
  p.row_sums_.assign(static_cast<size_t>(panels * width), 0);
  for (int64_t j = 0; j < n; ++j) {
    int32_t s = 0;
    for (int64_t q = 0; q < k; ++q) s += w[j * k + q];
    p.row_sums_[static_cast<size_t>(j)] = s;
  }
  if (kern.layout == QWeightLayout::kRowMajor) {
    p.data_.assign(w, w + n * k);
    return p;
  }
  // Note [Exact int8 GEMM]: panel P, group g, column c holds 4 bytes at ((P * G + g) * W + c) * 4:
  // k = 4g..4g+3 as bytes, or k = 2g, 2g+1 as int16.
  const int64_t groups = (k + kern.k_group - 1) / kern.k_group;
  p.data_.assign(static_cast<size_t>(panels * groups * width * 4), 0);
  int8_t* out = p.data_.data();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t panel = j / width, col = j % width;
    for (int64_t q = 0; q < k; ++q) {
      const int64_t g = q / kern.k_group, t = q % kern.k_group;
      int8_t* slot = out + ((panel * groups + g) * width + col) * 4;
      if (kern.k_group == 4) {
        slot[t] = w[j * k + q];
      } else {
        // An int8 weight, sign-extended: the conversion the check warns of is the point here.
        const auto v = static_cast<int16_t>(w[j * k + q]);  // NOLINT(bugprone-signed-char-misuse)
        std::memcpy(slot + 2 * t, &v, sizeof v);
      }
    }
  }
  return p;
}

void qgemm_u8s8(int64_t m, const uint8_t* a, int64_t lda, int32_t a_zero_point,
                const PackedQWeight& b, int32_t* c, int64_t ldc) {
  const int64_t n = b.n(), k = b.k();
  check_qgemm_k(k);
  EMBER_CHECK(m >= 0, "qgemm: m = ", m, " is negative");
  EMBER_CHECK(a_zero_point >= 0 && a_zero_point <= 255, "qgemm: the activation zero point ",
              a_zero_point, " is not a uint8 value");
  if (m == 0 || n == 0) return;
  EMBER_CHECK(lda >= k, "qgemm: lda = ", lda, " is less than k = ", k);
  EMBER_CHECK(ldc >= n, "qgemm: ldc = ", ldc, " is less than n = ", n);
  EMBER_CHECK(c != nullptr && (a != nullptr || k == 0), "qgemm: null A or C for (", m, ", ", k,
              ") x (", k, ", ", n, ")");
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0);
    return;
  }
  const QKernel& kern = kernel_for(b.layout());
  const Problem pr{a, lda, a_zero_point, &b, c, ldc};
  auto block = [&](int64_t i0, int64_t i1, int64_t q0, int64_t q1) {
    if (kern.layout == QWeightLayout::kRowMajor) {
      scalar_block(pr, i0, i1, q0, q1);
    } else {
      vector_block(kern, pr, i0, i1, q0, q1);
    }
  };
  const int64_t panels = (n + kern.width - 1) / kern.width;
  const int threads = in_parallel_region() ? 1 : num_threads();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads == 1 || work < kParallelWork) {
    block(0, m, 0, panels);
    return;
  }
  // Whole row strips per thread, or whole groups of NV panels when there are few rows.
  const bool split_rows = m >= kRowAlign * threads || m >= n;
  const int64_t len = split_rows ? m : panels;
  const int64_t align = split_rows ? kRowAlign : kern.nv_max();
  int64_t per = (len + threads - 1) / threads;
  per = (per + align - 1) / align * align;
  const int64_t blocks = (len + per - 1) / per;
  parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t s = blk * per, e = std::min(len, s + per);
      if (split_rows) {
        block(s, e, 0, panels);
      } else {
        block(0, m, s, e);
      }
    }
  });
}

const char* qgemm_kernel_name() { return selected_kernel().name; }

bool set_qgemm_kernel(const char* name) {
  if (name == nullptr) return false;
  const std::string want = name;
  if (want == "default") {
    chosen_kernel() = nullptr;
    return true;
  }
  for (const QKernel* q : kKernels) {
    if (want == q->name) {
      if (!q->supported()) return false;
      chosen_kernel() = q;
      return true;
    }
  }
  return false;
}

}  // namespace ember::kernels::cpu
