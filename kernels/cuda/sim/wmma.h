#pragma once
// CUDA's warp matrix-multiply API (nvcuda::wmma, <mma.h>) for kernels in the simulator, the
// tensor-core path of CUDA II's GEMM:
//
//   wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
//   wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
//   wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
//   wmma::fill_fragment(c, 0.0f);
//   wmma::load_matrix_sync(a, A + row * lda, lda);
//   wmma::load_matrix_sync(b, B + col * ldb, ldb);
//   wmma::mma_sync(c, a, b, c);
//   wmma::store_matrix_sync(C + row * ldc + col, c, ldc, wmma::mem_row_major);
//
// Supplied: the shapes m16n16k16, m32n8k16 and m8n32k16; matrix_a / matrix_b of __half or
// __nv_bfloat16, row_major or col_major; accumulators of float or __half; fill_fragment,
// load_matrix_sync, store_matrix_sync, mma_sync (any mix of those element types, products and
// sums in float). Not supplied: tf32, double, the integer and sub-byte types, the satf argument
// of mma_sync, the experimental namespace.
//
// Note [WMMA in the simulator]
// Every lane holds the whole tile: a fragment's `x[]` has rows * cols elements (num_elements,
// 256 for m16n16k16) in row-major order of the tile, whatever the fragment's layout. A GPU
// spreads the tile over the lanes in an unspecified order (8 accumulator elements a lane), so a
// kernel may only loop over x[] for element-wise work that does not depend on the position
// (scaling, conversion, activation), which works the same here. load_matrix_sync reads the
// whole tile into every lane and mma_sync computes the whole product in every lane (products of
// the 16-bit inputs are exact in float; the k sum is sequential in float, starting from c: a
// tensor core adds in another order, so compare with tolerances). store_matrix_sync writes a
// disjoint slice of the tile from each lane (num_elements / 32 elements), so racecheck, were it
// to see the stores, would see no two lanes writing one element.
// The _sync functions are warp collectives: every lane of the warp must call them (a partial
// warp, or lanes that diverge, is a synccheck error naming the call site), and the pointer, ldm
// and layout must be the same in every lane, as CUDA requires (a mismatch is an Error). Like a
// GPU, the pointer must be 32-byte aligned and ldm a multiple of 16 bytes (8 elements of a
// 16-bit type, 4 of float); breaking either raises ember::sim::Error instead of a GPU's
// misaligned-address fault. Shared-memory tiles are passed as raw pointers (`&tile[0][0]`);
// racecheck still sees them: each lane reports its slice of the tile (detail_sim::race_tile).

// The qualifiers before any CUDA header (qualifiers.h says why).
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/shared.h"
#include "kernels/cuda/sim/warp.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

}  // namespace nvcuda::wmma

namespace ember::sim::wmma_detail {

namespace w = nvcuda::wmma;

template <class T>
struct identity {
  using type = T;
};
template <class T>
using non_deduced = typename identity<T>::type;

template <int M, int N, int K>
constexpr bool supported_shape = (M == 16 && N == 16 && K == 16) ||
                                 (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16);

// The tile a fragment holds: A is M x K, B is K x N, the accumulator M x N.
template <class Use, int M, int N, int K>
struct tile_shape;
template <int M, int N, int K>
struct tile_shape<w::matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct tile_shape<w::matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct tile_shape<w::accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <class T>
constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

inline float to_float(float v) { return v; }
inline float to_float(__half v) { return __half2float(v); }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
T from_float(float v);
template <>
inline float from_float<float>(float v) {
  return v;
}
template <>
inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, __half>) return "__half";
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "__nv_bfloat16";
  return "float";
}

// The arguments every lane must agree on, deposited in the warp exchange.
struct Operands {
  std::uintptr_t pointer;
  unsigned ldm;
  unsigned layout;
};
static_assert(sizeof(Operands) <= 16, "a warp exchange moves at most 16 bytes a lane");

inline std::string site(const char* what, const char* file, int line) {
  return std::string(what) + " (" + file + ":" + std::to_string(line) + ")";
}

// Checks a load's or store's pointer and ldm, then meets the rest of the warp.
template <class T>
void warp_memory_op(const void* p, unsigned ldm, unsigned layout, const char* what,
                    const char* file, int line) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % 32 != 0) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%p", p);
    fail(site(what, file, line) + ": the pointer " + buffer +
         " is not 32-byte (256-bit) aligned, as WMMA requires");
  }
  constexpr unsigned multiple = 16 / sizeof(T);
  if (ldm % multiple != 0) {
    fail(site(what, file, line) + ": ldm " + std::to_string(ldm) + " is not a multiple of " +
         std::to_string(multiple) + " elements (16 bytes) for " + type_name<T>());
  }
  const Operands mine{address, ldm, layout};
  const unsigned char* all = warp_exchange(0xffffffffu, &mine, sizeof mine, what, file, line);
  for (unsigned lane = 0; lane < 32; ++lane) {
    Operands theirs;
    std::memcpy(&theirs, all + lane * 16, sizeof theirs);
    if (theirs.pointer != mine.pointer || theirs.ldm != mine.ldm || theirs.layout != mine.layout) {
      fail(site(what, file, line) + ": the lanes of a warp disagree on the pointer, ldm or " +
           "layout (lane " + std::to_string(lane_id()) + ": ldm " + std::to_string(mine.ldm) +
           ", lane " + std::to_string(lane) + ": ldm " + std::to_string(theirs.ldm) +
           "); WMMA needs the same in every lane");
    }
  }
}

}  // namespace ember::sim::wmma_detail

namespace nvcuda::wmma {

// A warp's share of a matrix tile (Note [WMMA in the simulator]): x[r * cols + c] is element
// (r, c) of the tile in every lane.
template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(ember::sim::wmma_detail::supported_shape<M, N, K>,
                "wmma::fragment: the shape must be m16n16k16, m32n8k16 or m8n32k16");
  static_assert(!std::is_same_v<Use, accumulator> || std::is_same_v<Layout, void>,
                "wmma::fragment: an accumulator has no layout parameter");
  static_assert(std::is_same_v<Use, accumulator> || std::is_same_v<Layout, row_major> ||
                    std::is_same_v<Layout, col_major>,
                "wmma::fragment: matrix_a and matrix_b need row_major or col_major");
  static_assert(std::is_same_v<Use, accumulator>
                    ? (std::is_same_v<T, float> || std::is_same_v<T, __half>)
                    : ember::sim::wmma_detail::is_16bit<T>,
                "wmma::fragment: matrix_a/matrix_b hold __half or __nv_bfloat16, an "
                "accumulator float or __half");

 public:
  using element_type = T;
  using storage_element_type = T;
  static constexpr int rows = ember::sim::wmma_detail::tile_shape<Use, M, N, K>::rows;
  static constexpr int cols = ember::sim::wmma_detail::tile_shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];
};

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f,
                   const ember::sim::wmma_detail::non_deduced<T>& value) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = value;
}

namespace detail_sim {
// racecheck for a load or store of a rows x cols tile at p: each lane reports its slice of the
// tile (num_elements / 32 elements, as a GPU spreads a tile over the lanes), so a warp's access
// to every element is seen once, and another warp touching it in the same barrier interval is
// a hazard (Note [Racecheck] in shared.cpp).
template <class T>
void race_tile(const T* p, unsigned ldm, bool row, int rows, int cols, bool write) {
  const int per_lane = rows * cols / 32;
  const int first = static_cast<int>(ember::sim::lane_id()) * per_lane;
  for (int i = first; i < first + per_lane; ++i) {
    const int r = i / cols, c = i % cols;
    const size_t offset = row ? static_cast<size_t>(r) * ldm + c : static_cast<size_t>(c) * ldm + r;
    ember::sim::detail::race_raw(p + offset, sizeof(T), write);
  }
}

template <class Frag, class T>
void read_tile(Frag& f, const T* p, unsigned ldm, bool row) {
  for (int r = 0; r < Frag::rows; ++r) {
    for (int c = 0; c < Frag::cols; ++c) {
      f.x[r * Frag::cols + c] =
          row ? p[static_cast<size_t>(r) * ldm + c] : p[static_cast<size_t>(c) * ldm + r];
    }
  }
}
}  // namespace detail_sim

// Loads a matrix_a / matrix_b tile whose layout in memory is the fragment's.
template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f,
                      const ember::sim::wmma_detail::non_deduced<T>* p, unsigned ldm,
                      const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(!std::is_same_v<Use, accumulator>,
                "wmma::load_matrix_sync: an accumulator load takes a layout_t");
  const bool row = std::is_same_v<Layout, row_major>;
  ember::sim::wmma_detail::warp_memory_op<T>(p, ldm, row ? 0 : 1, "wmma::load_matrix_sync", file,
                                             line);
  detail_sim::race_tile(p, ldm, row, f.rows, f.cols, false);
  detail_sim::read_tile(f, p, ldm, row);
}

// Loads an accumulator tile stored with `layout`.
template <int M, int N, int K, class T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f,
                      const ember::sim::wmma_detail::non_deduced<T>* p, unsigned ldm,
                      layout_t layout, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  ember::sim::wmma_detail::warp_memory_op<T>(p, ldm, layout, "wmma::load_matrix_sync", file, line);
  detail_sim::race_tile(p, ldm, layout == mem_row_major, f.rows, f.cols, false);
  detail_sim::read_tile(f, p, ldm, layout == mem_row_major);
}

// Stores an accumulator tile with `layout`; each lane writes its slice of the tile.
template <int M, int N, int K, class T>
void store_matrix_sync(ember::sim::wmma_detail::non_deduced<T>* p,
                       const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout,
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using Frag = fragment<accumulator, M, N, K, T>;
  ember::sim::wmma_detail::warp_memory_op<T>(p, ldm, layout, "wmma::store_matrix_sync", file, line);
  constexpr int per_lane = Frag::num_elements / 32;
  const int first = static_cast<int>(ember::sim::lane_id()) * per_lane;
  for (int i = first; i < first + per_lane; ++i) {
    const int r = i / Frag::cols, c = i % Frag::cols;
    const size_t offset = layout == mem_row_major ? static_cast<size_t>(r) * ldm + c
                                                  : static_cast<size_t>(c) * ldm + r;
    ember::sim::detail::race_raw(p + offset, sizeof(T), true);
    p[offset] = f.x[i];
  }
}

// d = a * b + c for the whole tile (d may be c).
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b,
              const fragment<accumulator, M, N, K, TC>& c, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  using ember::sim::wmma_detail::to_float;
  ember::sim::warp_exchange(0xffffffffu, nullptr, 0, "wmma::mma_sync", file, line);
  float result[M * N];
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float sum = to_float(c.x[i * N + j]);
      for (int k = 0; k < K; ++k) sum += to_float(a.x[i * K + k]) * to_float(b.x[k * N + j]);
      result[i * N + j] = sum;
    }
  }
  for (int i = 0; i < M * N; ++i) d.x[i] = ember::sim::wmma_detail::from_float<TD>(result[i]);
}

}  // namespace nvcuda::wmma
