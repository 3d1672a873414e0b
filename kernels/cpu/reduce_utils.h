#pragma once
// The CPU reduction engine: runs a reduction op (kernels/math/reduce.h) over a ReducePlan
// (Note [Reduce plan] in core/ops/reduce.h) on the thread pool.
//
//   Reducer<scalar_t, Op>(plan, op).run([&](int64_t o, const acc_t& acc) { out[o] = ...; });
//
// Two layouts, chosen from the plan:
// - row mode: each output reduces its own (strided) run of elements, folded into 32 lanes so
//   the compiler can keep 32 independent accumulators (8 SSE registers for float: a contiguous
//   row runs at the adder's throughput, not its latency);
// - tile mode, when consecutive outputs are consecutive in memory (reducing over a leading dim,
//   like sum(dim=0) of a row-major matrix): up to kTileWidth neighbouring outputs are folded
//   together, one contiguous load of kTileWidth elements per reduced index.
// Work is split over outputs (row mode) or tiles; when there are few of them and the reduced
// range is long, the range is also cut into fixed chunks of kChunk elements whose partial states
// are merged afterwards in a fixed order.
//
// Note [Pairwise summation]
// A float accumulator that adds 10^7 values of 0.1 one by one drifts: once the sum is large,
// every addition rounds away a part of the small addend (error ~ n * eps). Folding pairwise --
// split the range in halves, reduce each, combine the two results -- bounds the error by
// ~ log2(n) * eps. The engine folds leaves of kLeaf elements (spread over 32 lanes, so each lane
// adds only 16 values) and merges leaves, lanes, chunks and tiles in binary trees. The trees
// depend only on the shapes, never on the number of threads, so results are reproducible.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/ops/reduce.h"
#include "core/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/math/convert.h"

// Full unrolling of the lane loops, so the lanes stay in registers.
#if defined(__clang__)
#define EMBER_REDUCE_UNROLL _Pragma("unroll")
#else
#define EMBER_REDUCE_UNROLL _Pragma("GCC unroll 32")
#endif

namespace ember::kernels::cpu {

// The contiguous part of Reducer::fold_run (whole groups of L elements, one to each lane),
// compiled for AVX2 (kernels/cpu/isa.h): the same lanes and order, so the same result. Returns
// how many elements it folded.
template <int L, class Op, class scalar_t, class acc_t>
__attribute__((target("avx2"))) int64_t fold_contiguous_avx2(const Op& op, acc_t* lanes_io,
                                                             const scalar_t* p, int64_t n,
                                                             int64_t r) {
  acc_t lanes[L];  // locals: no aliasing with the input
  for (int l = 0; l < L; ++l) lanes[l] = lanes_io[l];
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l)
      lanes[l] = op.reduce(lanes[l], math::convert<typename Op::in_t>(p[i + l]), r + i + l);
  for (int l = 0; l < L; ++l) lanes_io[l] = lanes[l];
  return i;
}

// Whether Op has `acc_t block_reduce(const in_t* x, int64_t n)`, folding n <= kLeaf contiguous
// values at once (used by ops where per-element folding is slow, like Welford's division).
template <class Op, class = void>
struct has_block_reduce : std::false_type {};
template <class Op>
struct has_block_reduce<Op, std::void_t<decltype(std::declval<const Op&>().block_reduce(
                                static_cast<const typename Op::in_t*>(nullptr), int64_t{0}))>>
    : std::true_type {};

template <class scalar_t, class Op>
class Reducer {
 public:
  using acc_t = typename Op::acc_t;
  using in_t = typename Op::in_t;

  static constexpr int kLanes = 32;
  static constexpr int64_t kLeaf = 512;     // elements a row-mode leaf folds (16 per lane)
  static constexpr int kTileWidth = 64;     // outputs per tile in tile mode
  static constexpr int64_t kTileLeaf = 16;  // reduced indices a tile leaf folds sequentially
  static constexpr int64_t kChunk = 32768;  // reduced elements per task when splitting a range
  static constexpr int64_t kFewUnits = 16;  // below this many outputs/tiles, split the range

  Reducer(const ReducePlan& plan, Op op)
      : op_(op),
        in_(static_cast<const scalar_t*>(plan.input.data_ptr())),
        outer_sizes_(plan.outer_sizes),
        outer_strides_(plan.outer_strides),
        inner_sizes_(plan.inner_sizes),
        inner_strides_(plan.inner_strides),
        num_outputs_(plan.num_outputs),
        reduce_size_(plan.reduce_size) {
    EMBER_INTERNAL_ASSERT(inner_sizes_.size() <= 64, plan.op, ": too many reduced dims");
    row_len_ = outer_sizes_.back();
    tile_mode_ = outer_strides_.back() == 1 && row_len_ >= 4 && reduce_size_ > 1;
    tiles_per_row_ = tile_mode_ ? (row_len_ + kTileWidth - 1) / kTileWidth : 1;
  }

  // Calls store(o, acc) exactly once for every output o, from any thread.
  template <class Store>
  void run(Store store) const {
    if (num_outputs_ == 0) return;
    if (reduce_size_ == 0) {
      for (int64_t o = 0; o < num_outputs_; ++o) store(o, op_.identity());
      return;
    }
    const int64_t units = tile_mode_ ? (num_outputs_ / row_len_) * tiles_per_row_ : num_outputs_;
    const int64_t width = tile_mode_ ? kTileWidth : 1;
    const int64_t chunks = (units < kFewUnits && reduce_size_ >= 2 * kChunk)
                               ? (reduce_size_ + kChunk - 1) / kChunk
                               : 1;
    if (chunks == 1) {
      const int64_t grain = std::max<int64_t>(1, kGrainSize / (width * reduce_size_));
      parallel_for(0, units, grain, [&](int64_t begin, int64_t end) {
        acc_t acc[kTileWidth];
        for (int64_t u = begin; u < end; ++u) {
          int64_t n = reduce_unit(u, 0, reduce_size_, acc);
          for (int64_t j = 0; j < n; ++j) store(first_output(u) + j, acc[j]);
        }
      });
      return;
    }
    // Few units, long range: one task per (unit, chunk), then merge each unit's chunks.
    // (not a std::vector: acc_t may be bool)
    std::unique_ptr<acc_t[]> partial(new acc_t[static_cast<size_t>(units * chunks * width)]);
    parallel_for(0, units * chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t u = t / chunks, c = t % chunks;
        int64_t r0 = c * kChunk, r1 = std::min(reduce_size_, r0 + kChunk);
        reduce_unit(u, r0, r1, &partial[static_cast<size_t>(t * width)]);
      }
    });
    for (int64_t u = 0; u < units; ++u) {
      int64_t n = unit_width(u);
      for (int64_t j = 0; j < n; ++j) {
        acc_t acc =
            merge_chunks(&partial[static_cast<size_t>(u * chunks * width + j)], width, 0, chunks);
        store(first_output(u) + j, acc);
      }
    }
  }

 private:
  static in_t load(scalar_t v) { return math::convert<in_t>(v); }

  // ---- units: one output (row mode) or one tile of neighbouring outputs (tile mode) --------
  int64_t first_output(int64_t u) const {
    if (!tile_mode_) return u;
    return (u / tiles_per_row_) * row_len_ + (u % tiles_per_row_) * kTileWidth;
  }
  int64_t unit_width(int64_t u) const {
    if (!tile_mode_) return 1;
    return std::min<int64_t>(kTileWidth, row_len_ - (u % tiles_per_row_) * kTileWidth);
  }
  // Input offset (elements) of output o's first element.
  int64_t outer_offset(int64_t o) const {
    int64_t off = 0;
    for (int64_t d = static_cast<int64_t>(outer_sizes_.size()) - 1; d >= 0 && o > 0; --d) {
      off += (o % outer_sizes_[d]) * outer_strides_[d];
      o /= outer_sizes_[d];
    }
    return off;
  }
  // Reduces unit u over [r0, r1) into acc[0, width); returns the width.
  int64_t reduce_unit(int64_t u, int64_t r0, int64_t r1, acc_t* acc) const {
    const scalar_t* base = in_ + outer_offset(first_output(u));
    if (!tile_mode_) {
      acc[0] = pairwise_row(base, r0, r1);
      return 1;
    }
    int64_t w = unit_width(u);
    pairwise_tile(base, w, r0, r1, acc);
    return w;
  }

  // ---- the reduced index space --------------------------------------------------------------
  // Multi-index and offset of reduced index r (inner dims, last fastest).
  struct Cursor {
    int64_t idx[64];
    int64_t offset;
  };
  Cursor cursor_at(int64_t r) const {
    Cursor c;
    c.offset = 0;
    for (int64_t d = static_cast<int64_t>(inner_sizes_.size()) - 1; d >= 0; --d) {
      c.idx[d] = r % inner_sizes_[d];
      r /= inner_sizes_[d];
      c.offset += c.idx[d] * inner_strides_[d];
    }
    return c;
  }
  // Advances c by n steps that stay within the last dim, or exactly reach its end.
  void advance(Cursor& c, int64_t n) const {
    int64_t d = static_cast<int64_t>(inner_sizes_.size()) - 1;
    c.idx[d] += n;
    c.offset += n * inner_strides_[d];
    while (d > 0 && c.idx[d] == inner_sizes_[d]) {
      c.offset -= c.idx[d] * inner_strides_[d];
      c.idx[d] = 0;
      --d;
      ++c.idx[d];
      c.offset += inner_strides_[d];
    }
  }

  // ---- row mode ------------------------------------------------------------------------------
  acc_t pairwise_row(const scalar_t* base, int64_t r0, int64_t r1) const {
    if (r1 - r0 <= kLeaf) return leaf_row(base, r0, r1);
    int64_t half = ((r1 - r0) / 2 + kLanes - 1) / kLanes * kLanes;
    acc_t lo = pairwise_row(base, r0, r0 + half);
    return op_.combine(lo, pairwise_row(base, r0 + half, r1));
  }

  acc_t leaf_row(const scalar_t* base, int64_t r0, int64_t r1) const {
    const int64_t last = static_cast<int64_t>(inner_sizes_.size()) - 1;
    const int64_t s = inner_strides_[last];
    if constexpr (has_block_reduce<Op>::value) {
      Cursor c = cursor_at(r0);
      // The op folds a whole leaf at once from a buffer (Welford: mean, then squared deviations).
      in_t buf[kLeaf];
      int64_t k = 0;
      for (int64_t r = r0; r < r1;) {
        int64_t n = std::min(r1 - r, inner_sizes_[last] - c.idx[last]);
        const scalar_t* p = base + c.offset;
        for (int64_t i = 0; i < n; ++i) buf[k + i] = load(p[i * s]);
        k += n;
        r += n;
        advance(c, n);
      }
      return op_.block_reduce(buf, k);
    } else {
      acc_t lanes[kLanes];
      for (auto& l : lanes) l = op_.identity();
      if (last == 0) {
        // One reduced dim: the leaf is one strided run, no cursor to compute (its divisions
        // cost as much as folding a leaf of floats). The same lanes, in the same order.
        fold_run(lanes, base + r0 * s, s, r1 - r0, r0);
      } else {
        Cursor c = cursor_at(r0);
        for (int64_t r = r0; r < r1;) {
          int64_t n = std::min(r1 - r, inner_sizes_[last] - c.idx[last]);
          fold_run(lanes, base + c.offset, s, n, r);
          r += n;
          advance(c, n);
        }
      }
      // Merge the lanes in a tree, halving: lane l takes lane l + 16, then l + 8, ... (each round
      // one vector operation for a sum, in registers: the loops have constant bounds).
      EMBER_REDUCE_UNROLL
      for (int half = kLanes / 2; half >= 1; half /= 2) {
        EMBER_REDUCE_UNROLL
        for (int l = 0; l < half; ++l) lanes[l] = op_.combine(lanes[l], lanes[l + half]);
      }
      return lanes[0];
    }
  }

  // Folds p[0], p[s], ..., p[(n-1)s] (reduced indices r, r+1, ...) into the lanes: element i
  // goes to lane i % 32, and a tail of fewer than 32 to lane 0, so every lane sees increasing
  // indices. The lanes are copied to locals so the compiler knows they don't alias the input.
  void fold_run(acc_t* lanes_io, const scalar_t* p, int64_t s, int64_t n, int64_t r) const {
    acc_t lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = lanes_io[l];
    int64_t i = 0;
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half> ||
                  std::is_same_v<scalar_t, BFloat16>) {
      if (s == 1 && use_avx2()) i = fold_contiguous_avx2<kLanes>(op_, lanes, p, n, r);
    }
    if (s == 1) {
      for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lanes[l] = op_.reduce(lanes[l], load(p[i + l]), r + i + l);
    } else {
      for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l)
          lanes[l] = op_.reduce(lanes[l], load(p[(i + l) * s]), r + i + l);
    }
    for (; i < n; ++i) lanes[0] = op_.reduce(lanes[0], load(p[i * s]), r + i);
    for (int l = 0; l < kLanes; ++l) lanes_io[l] = lanes[l];
  }

  // ---- tile mode: w neighbouring outputs (stride 1 apart) --------------------------------------
  void pairwise_tile(const scalar_t* base, int64_t w, int64_t r0, int64_t r1, acc_t* acc) const {
    if (r1 - r0 <= kTileLeaf) {
      leaf_tile(base, w, r0, r1, acc);
      return;
    }
    int64_t half = (r1 - r0) / 2;
    pairwise_tile(base, w, r0, r0 + half, acc);
    acc_t hi[kTileWidth];
    pairwise_tile(base, w, r0 + half, r1, hi);
    for (int64_t j = 0; j < w; ++j) acc[j] = op_.combine(acc[j], hi[j]);
  }

  void leaf_tile(const scalar_t* base, int64_t w, int64_t r0, int64_t r1, acc_t* acc_out) const {
    acc_t acc[kTileWidth];  // a local copy: no aliasing with the input
    for (int64_t j = 0; j < w; ++j) acc[j] = op_.identity();
    Cursor c = cursor_at(r0);
    for (int64_t r = r0; r < r1; ++r) {
      const scalar_t* p = base + c.offset;
      if (w == kTileWidth) {
        for (int j = 0; j < kTileWidth; ++j) acc[j] = op_.reduce(acc[j], load(p[j]), r);
      } else {
        for (int64_t j = 0; j < w; ++j) acc[j] = op_.reduce(acc[j], load(p[j]), r);
      }
      advance(c, 1);
    }
    for (int64_t j = 0; j < w; ++j) acc_out[j] = acc[j];
  }

  // Pairwise merge of the states at p[i * stride], i in [c0, c1).
  acc_t merge_chunks(const acc_t* p, int64_t stride, int64_t c0, int64_t c1) const {
    if (c1 - c0 == 1) return p[c0 * stride];
    int64_t mid = c0 + (c1 - c0) / 2;
    return op_.combine(merge_chunks(p, stride, c0, mid), merge_chunks(p, stride, mid, c1));
  }

  Op op_;
  const scalar_t* in_;
  const Shape& outer_sizes_;
  const Shape& outer_strides_;
  const Shape& inner_sizes_;
  const Shape& inner_strides_;
  int64_t num_outputs_, reduce_size_;
  int64_t row_len_ = 1, tiles_per_row_ = 1;
  bool tile_mode_ = false;
};

// Note [Line groups]
// Scans and softmax work on lines: every index of the other dims, walking `dim`. When `dim` is
// not the last dim, neighbouring lines along the last dim are usually neighbours in memory, so
// they are handed out in groups of up to `group` lines and processed together: each step along
// `dim` then touches one short contiguous run of the group instead of one element in each of
// many cache lines.
//
// for_each_line_group(in, out, dim, group, fn) calls fn(in_offset, out_offset, width) for every
// group, in parallel: line j < width of the group starts at in_offset + j * in.stride(-1) (and
// out_offset + j * out.stride(-1)) and steps by in.stride(dim) (out.stride(dim)). When dim is the
// last dim (or the tensor has at most one dim) every group is a single line.
template <class F>
void for_each_line_group(const Tensor& in, const Tensor& out, int64_t dim, int64_t group, F fn) {
  const int64_t nd = in.dim();
  const int64_t len = nd == 0 ? 1 : in.size(dim);
  const bool grouped = nd >= 2 && dim != nd - 1;
  const int64_t last = grouped ? in.size(nd - 1) : 1;
  const int64_t width = grouped ? std::max<int64_t>(1, std::min(group, last)) : 1;
  const int64_t groups_per_row = grouped ? (last + width - 1) / width : 1;
  Shape sizes, in_strides, out_strides;  // the other dims (without dim, and the last if grouped)
  for (int64_t d = 0; d < nd - (grouped ? 1 : 0); ++d) {
    if (d == dim) continue;
    sizes.push_back(in.size(d));
    in_strides.push_back(in.stride(d));
    out_strides.push_back(out.stride(d));
  }
  const int64_t groups = shape_numel(sizes) * groups_per_row;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, len * width));
  const int64_t in_l = grouped ? in.stride(nd - 1) : 0, out_l = grouped ? out.stride(nd - 1) : 0;
  parallel_for(0, groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t j0 = (g % groups_per_row) * width;
      int64_t rem = g / groups_per_row, in_off = j0 * in_l, out_off = j0 * out_l;
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
        const int64_t i = rem % sizes[d];
        rem /= sizes[d];
        in_off += i * in_strides[d];
        out_off += i * out_strides[d];
      }
      fn(in_off, out_off, std::min(width, last - j0));
    }
  });
}

// Convenience: reduce and store through a callable.
template <class scalar_t, class Op, class Store>
void reduce_with(const ReducePlan& plan, Op op, Store store) {
  Reducer<scalar_t, Op>(plan, op).run(store);
}

}  // namespace ember::kernels::cpu
