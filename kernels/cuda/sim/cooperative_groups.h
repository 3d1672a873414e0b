#pragma once
// The subset of CUDA's cooperative groups that ember's kernels use, for the simulator: what
// <cooperative_groups.h>, <cooperative_groups/reduce.h> and <cooperative_groups/scan.h> give a
// kernel, in the same namespace, so `namespace cg = cooperative_groups;` code compiles with both
// compilers.
//
//   cg::thread_block block = cg::this_thread_block();
//   cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
//   float total = cg::reduce(warp, v, cg::plus<float>());   // every lane gets the sum
//   block.sync();
//
// Supplied: this_thread_block() (sync, thread_rank, size/num_threads, group_index,
// thread_index, group_dim/dim_threads); tiled_partition<N>(block or tile) for N in 1, 2, 4, 8,
// 16, 32, with thread_rank, size/num_threads, meta_group_rank, meta_group_size, sync, shfl,
// shfl_down, shfl_up, shfl_xor, any, all, ballot; reduce, inclusive_scan and exclusive_scan over
// a tile with plus, less, greater, bit_and, bit_or, bit_xor; sync(group).
// Not supplied: grid_group and this_grid() (grid-wide sync needs a cooperative launch),
// coalesced_threads(), labeled_partition, the dynamic tiled_partition(block, n), match_any /
// match_all, memcpy_async, reduce over a whole thread_block.
//
// Note [Tiles in the simulator]
// A tile of N threads is N consecutive thread ranks inside one warp (N divides 32), as on a GPU.
// Its collectives are the warp intrinsics of warp_ops.h with the tile's lane mask and width N,
// so they inherit their checks: a tile whose lanes do not all reach the same collective, or a
// partial tile (the block size is not a multiple of N, so the mask names lanes that do not
// exist) is a synccheck error naming the call site (__builtin_FILE/LINE default arguments
// evaluated where the call is written). A GPU gives undefined results for both.

// The qualifiers before any CUDA header (qualifiers.h says why).
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <vector_types.h>

#include <cstring>
#include <type_traits>

#include "kernels/cuda/sim/barrier.h"
#include "kernels/cuda/sim/thread_state.h"
#include "kernels/cuda/sim/warp.h"
#include "kernels/cuda/sim/warp_ops.h"

namespace cooperative_groups {

// The whole block of the calling thread.
class thread_block {
 public:
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    ::ember::sim::detail::block_barrier(::ember::sim::detail::BarrierKind::plain, 0,
                                        "cooperative_groups::thread_block::sync", file, line);
  }
  unsigned thread_rank() const { return ::ember::sim::thread_rank(); }
  unsigned size() const { return block().threads; }
  unsigned num_threads() const { return block().threads; }
  dim3 group_index() const {
    const uint3 b = block().block_idx;
    return dim3(b.x, b.y, b.z);
  }
  dim3 thread_index() const {
    const uint3 t = ::ember::sim::detail::current_thread("thread_block").thread_idx;
    return dim3(t.x, t.y, t.z);
  }
  dim3 group_dim() const { return block().block_dim; }
  dim3 dim_threads() const { return block().block_dim; }

 private:
  static const ::ember::sim::detail::BlockState& block() {
    return *::ember::sim::detail::current_thread("cooperative_groups::thread_block").block;
  }
};

inline thread_block this_thread_block() { return thread_block(); }

template <unsigned Size, class Parent = void>
class thread_block_tile;

// A tile of Size threads (Note [Tiles in the simulator]). thread_block_tile<N, Parent>, what
// tiled_partition returns, converts to this parent-erased thread_block_tile<N>.
template <unsigned Size>
class thread_block_tile<Size, void> {
  static_assert(Size == 1 || Size == 2 || Size == 4 || Size == 8 || Size == 16 || Size == 32,
                "thread_block_tile: the size must be 1, 2, 4, 8, 16 or 32");

 public:
  static constexpr unsigned num_threads() { return Size; }
  static constexpr unsigned size() { return Size; }
  unsigned thread_rank() const { return ::ember::sim::lane_id() % Size; }
  unsigned meta_group_rank() const { return meta_rank_; }
  unsigned meta_group_size() const { return meta_size_; }

  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    __syncwarp(mask(), file, line);
  }
  template <class T>
  T shfl(T var, int src_rank, const char* file = __builtin_FILE(),
         int line = __builtin_LINE()) const {
    return __shfl_sync(mask(), var, src_rank, Size, file, line);
  }
  template <class T>
  T shfl_down(T var, unsigned delta, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) const {
    return __shfl_down_sync(mask(), var, delta, Size, file, line);
  }
  template <class T>
  T shfl_up(T var, unsigned delta, const char* file = __builtin_FILE(),
            int line = __builtin_LINE()) const {
    return __shfl_up_sync(mask(), var, delta, Size, file, line);
  }
  template <class T>
  T shfl_xor(T var, unsigned lane_mask, const char* file = __builtin_FILE(),
             int line = __builtin_LINE()) const {
    return __shfl_xor_sync(mask(), var, static_cast<int>(lane_mask), Size, file, line);
  }
  int any(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __any_sync(mask(), predicate, file, line);
  }
  int all(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return __all_sync(mask(), predicate, file, line);
  }
  // Bit i is the predicate of the tile's thread i.
  unsigned ballot(int predicate, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) const {
    return __ballot_sync(mask(), predicate, file, line) >> base_lane();
  }

 protected:
  thread_block_tile(unsigned meta_rank, unsigned meta_size)
      : meta_rank_(meta_rank), meta_size_(meta_size) {}

 private:
  static unsigned base_lane() { return ::ember::sim::lane_id() / Size * Size; }
  // The tile's lanes within its warp.
  static unsigned mask() {
    const unsigned lanes = Size == 32 ? 0xffffffffu : ((1u << Size) - 1u);
    return lanes << base_lane();
  }

  unsigned meta_rank_;
  unsigned meta_size_;
};

template <unsigned Size, class Parent>
class thread_block_tile : public thread_block_tile<Size, void> {
 public:
  thread_block_tile(unsigned meta_rank, unsigned meta_size)
      : thread_block_tile<Size, void>(meta_rank, meta_size) {}
};

// The tile of `Size` threads the caller belongs to; meta_group_rank is the tile's index in the
// parent, meta_group_size the number of tiles in it (the last one partial when the parent's
// size is not a multiple of Size).
template <unsigned Size>
thread_block_tile<Size, thread_block> tiled_partition(const thread_block& parent) {
  return thread_block_tile<Size, thread_block>(parent.thread_rank() / Size,
                                               (parent.size() + Size - 1) / Size);
}
template <unsigned Size, unsigned ParentSize, class ParentParent>
thread_block_tile<Size, thread_block_tile<ParentSize, ParentParent>> tiled_partition(
    const thread_block_tile<ParentSize, ParentParent>& parent) {
  static_assert(Size <= ParentSize, "tiled_partition: a tile of a tile must not be larger");
  return thread_block_tile<Size, thread_block_tile<ParentSize, ParentParent>>(
      parent.thread_rank() / Size, ParentSize / Size);
}

inline void sync(const thread_block& g, const char* file = __builtin_FILE(),
                 int line = __builtin_LINE()) {
  g.sync(file, line);
}
template <unsigned Size, class Parent>
void sync(const thread_block_tile<Size, Parent>& g, const char* file = __builtin_FILE(),
          int line = __builtin_LINE()) {
  g.sync(file, line);
}

// ---- the operators of cooperative_groups/functional.h
// --------------------------------------------
template <class T>
struct plus {
  T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T>
struct less {  // reduces to the minimum
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <class T>
struct greater {  // reduces to the maximum
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

// The reduction of `value` over the tile with `op`, returned to every thread of it: a butterfly
// of shfl_xor, so every lane combines the same operands and gets the same bits (op must be
// commutative and associative; the order of a float sum differs from a sequential one).
template <unsigned Size, class T, class Op>
auto reduce(const thread_block_tile<Size, void>& tile, T value, Op op,
            const char* file = __builtin_FILE(), int line = __builtin_LINE())
    -> std::decay_t<decltype(op(value, value))> {
  using R = std::decay_t<decltype(op(value, value))>;
  R v = static_cast<R>(value);
  for (unsigned offset = Size / 2; offset > 0; offset /= 2) {
    v = op(v, tile.shfl_xor(v, offset, file, line));
  }
  return v;
}

// Thread i gets op(value_0, ..., value_i) (Hillis-Steele over shfl_up).
template <unsigned Size, class T, class Op>
T inclusive_scan(const thread_block_tile<Size, void>& tile, T value, Op op,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  const unsigned rank = tile.thread_rank();
  for (unsigned offset = 1; offset < Size; offset *= 2) {
    const T other = tile.shfl_up(value, offset, file, line);
    if (rank >= offset) value = op(other, value);
  }
  return value;
}
template <unsigned Size, class T>
T inclusive_scan(const thread_block_tile<Size, void>& tile, T value,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return inclusive_scan(tile, value, plus<T>(), file, line);
}
// Thread i gets op(value_0, ..., value_{i-1}); thread 0 gets T() (CUDA leaves it undefined
// unless op is plus, where it is 0).
template <unsigned Size, class T, class Op>
T exclusive_scan(const thread_block_tile<Size, void>& tile, T value, Op op,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  const T inclusive = inclusive_scan(tile, value, op, file, line);
  const T shifted = tile.shfl_up(inclusive, 1, file, line);
  return tile.thread_rank() == 0 ? T() : shifted;
}
template <unsigned Size, class T>
T exclusive_scan(const thread_block_tile<Size, void>& tile, T value,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return exclusive_scan(tile, value, plus<T>(), file, line);
}

}  // namespace cooperative_groups
