#pragma once
// The CUDA reduction engine: runs a reduction op of kernels/math/reduce.h (the structs the CPU
// engine runs: identity / reduce / combine) over a ReducePlan (Note [Reduce plan] in
// core/ops/reduce.h) on the plan's cuda device, and hands each output's final state to a store
// functor:
//
//   gpu_reduce<scalar_t>(plan, math::SumOp<float>{}, SumStore<float>{out});
//
// Note [CUDA reduction layout]
// A block of (bx, by) threads works on a few outputs; the threads that share an output split its
// reduced range and merge their states at the end. Two layouts, picked from the plan like the
// CPU engine's row and tile modes:
// - row: the reduced elements of an output are contiguous (sum(dim=-1), a full sum). The bx
//   threads of a block row split the range -- thread t takes elements t, t + bx, t + 2 bx, ...,
//   so a warp reads 32 neighbouring elements at once (a coalesced load) -- and merge with warp
//   shuffles, then through shared memory across warps. by outputs per block.
// - column: neighbouring outputs are neighbours in memory (sum(dim=0) of a row-major matrix).
//   Thread x takes output x of the block, so a warp reads 32 neighbouring outputs' elements at
//   each reduced index; the by threads of a column split the range and merge through shared
//   memory.
// Each thread keeps kIlp independent states and loads kIlp elements per step (elements
// t, t + bx, ..., t + (kIlp-1) bx), so several loads are in flight per thread; they are merged
// in a fixed order.
//
// Note [Two-pass reductions]
// A reduction with few outputs and a long range (a full sum of 10^8 elements: one output) would
// run on one block. It is split instead into `chunks` pieces of the range, one block per (outputs,
// piece) -- grid.y is the piece -- so every SM gets work. Pass one writes each piece's state to
// a workspace; pass two merges an output's pieces in piece order and stores. Neither pass uses
// atomics, and every merge tree depends only on the shape and the device's SM count, so a
// reduction gives the same bits on every run, floats included.
//
// Accuracy: each thread folds a strided sub-sequence of ~reduce_size / (threads x kIlp x chunks)
// elements sequentially; the rest of the merge is a tree. A float32 sum of 10^7 elements thus
// adds at most a few hundred values in a row, close to the CPU's pairwise sum.
//
// Indexing is 64-bit (a reduction's input may exceed 2^31 elements); the plan's dims are copied
// into a fixed-size struct (kMaxReduceDims each for the kept and the reduced dims, after the
// plan has merged what it can).

#include <cstdint>
#include <type_traits>

#include "core/allocator.h"
#include "core/ops/reduce.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_cache.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

constexpr int kMaxReduceDims = 12;

// The plan's index spaces, as the device sees them (Note [Reduce plan]).
struct ReduceShape {
  int outer_ndim = 0, inner_ndim = 0;
  int64_t outer_sizes[kMaxReduceDims], outer_strides[kMaxReduceDims];
  int64_t inner_sizes[kMaxReduceDims], inner_strides[kMaxReduceDims];
  int64_t num_outputs = 0, reduce_size = 0;

  // Element offset of output o's first input element.
  EMBER_HOST_DEVICE int64_t outer_offset(int64_t o) const {
    int64_t off = 0;
    for (int d = outer_ndim - 1; d >= 0; --d) {
      off += (o % outer_sizes[d]) * outer_strides[d];
      o /= outer_sizes[d];
    }
    return off;
  }
  // Element offset of reduced index r from an output's first element.
  EMBER_HOST_DEVICE int64_t inner_offset(int64_t r) const {
    if (inner_ndim == 1) return r * inner_strides[0];
    int64_t off = 0;
    for (int d = inner_ndim - 1; d >= 0; --d) {
      off += (r % inner_sizes[d]) * inner_strides[d];
      r /= inner_sizes[d];
    }
    return off;
  }
};

// How a launch is laid out (Note [CUDA reduction layout]).
struct ReduceLayout {
  bool column = false;
  int bx = 1, by = 1;  // block shape
  int64_t outputs_per_block = 1;
  int64_t chunks = 1;      // pieces of the reduced range (grid.y, Note [Two-pass reductions])
  int64_t chunk_size = 0;  // reduced elements per piece (a multiple of 16 when chunks > 1)
  bool vec = false;        // row layout over 16-byte aligned contiguous ranges: vector loads
  // The threads sharing one output, and this thread's place among them.
  EMBER_HOST_DEVICE int split_threads() const { return column ? by : bx; }
};

constexpr int kIlp = 4;

// ---- moving states between threads --------------------------------------------------------------

// Merges the states of the `width` (a power of two <= 32) consecutive lanes of each group of a
// warp; lane 0 of the group ends with the group's state. Lane l merges lane l + d after lane l's
// own: lower indices stay on the left of combine().
// mask: the warp's lanes that exist (all 32 unless the block is smaller than a warp).
template <class Op, class A>
__device__ __forceinline__ A warp_combine(const Op& op, A acc, int width, unsigned mask) {
  for (int d = width / 2; d > 0; d /= 2) acc = op.combine(acc, shfl_down_any(mask, acc, d, width));
  return acc;
}

// ---- the kernels ----------------------------------------------------------------------------

namespace detail {

// This thread's output and its place among the threads splitting that output's range.
struct ThreadRole {
  int64_t output;
  int split;  // 0 .. split_threads - 1
};

__device__ __forceinline__ ThreadRole thread_role(const ReduceLayout& layout) {
  if (layout.column)
    return {static_cast<int64_t>(blockIdx.x) * layout.bx + threadIdx.x,
            static_cast<int>(threadIdx.y)};
  return {static_cast<int64_t>(blockIdx.x) * layout.by + threadIdx.y,
          static_cast<int>(threadIdx.x)};
}

// Folds this thread's share of output o's range piece [r0, r1) into one state.
template <class scalar_t, class Op>
__device__ __forceinline__ typename Op::acc_t fold_share(const Op& op, const scalar_t* in,
                                                         const ReduceShape& shape, int64_t o,
                                                         int64_t r0, int64_t r1, int split,
                                                         int threads) {
  using A = typename Op::acc_t;
  using In = typename Op::in_t;
  const scalar_t* base = in + shape.outer_offset(o);
  A acc[kIlp];
  for (int k = 0; k < kIlp; ++k) acc[k] = op.identity();
  const int64_t step = static_cast<int64_t>(threads) * kIlp;
  int64_t r = r0 + split;
  // Whole steps: kIlp loads in flight, one per state; state k sees increasing indices.
  for (; r + (kIlp - 1) * static_cast<int64_t>(threads) < r1; r += step) {
    In x[kIlp];
    for (int k = 0; k < kIlp; ++k)
      x[k] = math::convert<In>(base[shape.inner_offset(r + k * static_cast<int64_t>(threads))]);
    for (int k = 0; k < kIlp; ++k) acc[k] = op.reduce(acc[k], x[k], r + k * int64_t{threads});
  }
  // The tail: fewer than kIlp elements left. acc is indexed by unrolled constants only, so it
  // stays in registers (a run-time index would put it in local memory).
  for (int k = 0; k < kIlp; ++k) {
    const int64_t rk = r + k * static_cast<int64_t>(threads);
    if (rk < r1) acc[k] = op.reduce(acc[k], math::convert<In>(base[shape.inner_offset(rk)]), rk);
  }
  for (int k = 1; k < kIlp; ++k) acc[0] = op.combine(acc[0], acc[k]);
  return acc[0];
}

// Note [Vector loads in reductions]
// When every output's range is contiguous and starts 16-byte aligned (layout.vec: the input
// pointer, the kept strides and the piece size allow it), a thread loads 16 bytes at a time
// (4 floats, 8 halves): thread t takes vectors t, t + bx, ... of its piece, kIlp vectors in
// flight, and folds each vector's elements in order into the state of its slot. A contiguous
// sum then moves as many bytes per load instruction as a copy does. The few elements after the
// piece's last whole vector are folded one by one. The merge order is still fixed by the shape
// and the SM count alone (Note [Two-pass reductions]).
template <class scalar_t, class Op>
__device__ __forceinline__ typename Op::acc_t fold_share_vec(const Op& op, const scalar_t* in,
                                                             const ReduceShape& shape, int64_t o,
                                                             int64_t r0, int64_t r1, int split,
                                                             int threads) {
  using A = typename Op::acc_t;
  using In = typename Op::in_t;
  using Vec = Vec16<scalar_t>;
  constexpr int V = Vec::V;
  const scalar_t* base = in + shape.outer_offset(o);
  const Vec* vbase = reinterpret_cast<const Vec*>(base + r0);
  const int64_t nvec = (r1 - r0) / V;
  A acc[kIlp];
  for (int k = 0; k < kIlp; ++k) acc[k] = op.identity();
  const int64_t t = threads;
  int64_t i = split;
  for (; i + (kIlp - 1) * t < nvec; i += t * kIlp) {
    Vec x[kIlp];
    for (int k = 0; k < kIlp; ++k) x[k] = vbase[i + k * t];
    for (int k = 0; k < kIlp; ++k) {
      const int64_t first = r0 + (i + k * t) * V;
      for (int e = 0; e < V; ++e)
        acc[k] = op.reduce(acc[k], math::convert<In>(x[k].v[e]), first + e);
    }
  }
  for (int k = 0; k < kIlp; ++k) {
    const int64_t j = i + k * t;
    if (j < nvec) {
      const Vec x = vbase[j];
      for (int e = 0; e < V; ++e)
        acc[k] = op.reduce(acc[k], math::convert<In>(x.v[e]), r0 + j * V + e);
    }
  }
  for (int64_t r = r0 + nvec * V + split; r < r1; r += t)
    acc[0] = op.reduce(acc[0], math::convert<In>(base[r]), r);
  for (int k = 1; k < kIlp; ++k) acc[0] = op.combine(acc[0], acc[k]);
  return acc[0];
}

// Merges the states of the threads that share an output (Note [CUDA reduction layout]); the
// thread with split 0 returns the merged state. smem: bx * by states.
template <class Op, class A, class SharedA>
__device__ __forceinline__ A block_combine(const Op& op, A acc, const ReduceLayout& layout,
                                           SharedA smem) {
  const int tid = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  if (!layout.column) {
    // Row: the bx threads of a row are consecutive lanes. Inside each warp first...
    const int width = layout.bx < 32 ? layout.bx : 32;
    const int threads = layout.bx * layout.by;
    acc = warp_combine(op, acc, width, threads >= 32 ? 0xffffffffu : (1u << threads) - 1);
    if (layout.bx <= 32) return acc;
    // ...then warp 0 of the row merges the row's warp results (bx / 32 <= 32 of them).
    const int warps = layout.bx / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    if (lane == 0) smem[threadIdx.y * warps + warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < warps ? smem[threadIdx.y * warps + lane] : op.identity();
      acc = warp_combine(op, acc, 32, 0xffffffffu);
    }
    return acc;
  }
  // Column: the by threads of a column are a tree over threadIdx.y through shared memory.
  smem[tid] = acc;
  for (int s = layout.by / 2; s > 0; s /= 2) {
    __syncthreads();
    if (static_cast<int>(threadIdx.y) < s) {
      acc = op.combine(acc, smem[tid + s * layout.bx]);
      smem[tid] = acc;
    }
  }
  return acc;
}

}  // namespace detail

// Pass one (or the only pass): block (x, y) reduces piece y of its outputs' ranges. With one
// piece the result is stored; otherwise it goes to partial[y * num_outputs + o].
template <class scalar_t, class Op, class Store>
__global__ void reduce_kernel(const scalar_t* in, ReduceShape shape, ReduceLayout layout, Op op,
                              Store store, typename Op::acc_t* partial) {
  using A = typename Op::acc_t;
  EMBER_DYNAMIC_SHARED(A, smem);
  const detail::ThreadRole role = detail::thread_role(layout);
  const bool live = role.output < shape.num_outputs;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * layout.chunk_size;
  const int64_t r1 =
      r0 + layout.chunk_size < shape.reduce_size ? r0 + layout.chunk_size : shape.reduce_size;
  // Threads past the last output fold nothing but still take part in the block's merge.
  A acc = !live        ? op.identity()
          : layout.vec ? detail::fold_share_vec(op, in, shape, role.output, r0, r1, role.split,
                                                layout.split_threads())
                       : detail::fold_share(op, in, shape, role.output, r0, r1, role.split,
                                            layout.split_threads());
  acc = detail::block_combine(op, acc, layout, smem);
  if (!live || role.split != 0) return;
  if (layout.chunks == 1) {
    store(role.output, acc);
  } else {
    partial[blockIdx.y * shape.num_outputs + role.output] = acc;
  }
}

// Pass two: output o merges its pieces in piece order and stores.
template <class Op, class Store>
__global__ void reduce_pieces_kernel(const typename Op::acc_t* partial, int64_t num_outputs,
                                     int64_t chunks, Op op, Store store) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= num_outputs) return;
  typename Op::acc_t acc = partial[o];
  for (int64_t c = 1; c < chunks; ++c) acc = op.combine(acc, partial[c * num_outputs + o]);
  store(o, acc);
}

namespace detail {

inline int pow2_at_least(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

ReduceShape reduce_shape(const ReducePlan& plan);
// Whether every output's piece of its range is contiguous and starts 16-byte aligned, for
// elements of `elem` bytes at `data` (Note [Vector loads in reductions]).
bool vector_loads_fit(const ReduceShape& shape, const ReduceLayout& layout, const void* data,
                      size_t elem);
// The layout for plan on a device with `sms` multiprocessors (Note [CUDA reduction layout]).
ReduceLayout reduce_layout(const ReduceShape& shape, int sms);

}  // namespace detail

// Reduces plan.input (of scalar_t, on a cuda device) with op and calls store(o, state) on the
// device once for every output o (Note [CUDA reduction layout], [Two-pass reductions]).
template <class scalar_t, class Op, class Store>
void gpu_reduce(const ReducePlan& plan, const Op& op, const Store& store) {
  using A = typename Op::acc_t;
  const ReduceShape shape = detail::reduce_shape(plan);
  if (shape.num_outputs == 0) return;
  const Device device = plan.input.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  ReduceLayout layout = detail::reduce_layout(shape, multiprocessor_count(device.index));
  layout.vec = detail::vector_loads_fit(shape, layout, plan.input.data_ptr(), sizeof(scalar_t));
  const dim3 grid(static_cast<unsigned>((shape.num_outputs + layout.outputs_per_block - 1) /
                                        layout.outputs_per_block),
                  static_cast<unsigned>(layout.chunks));
  const dim3 block(static_cast<unsigned>(layout.bx), static_cast<unsigned>(layout.by));
  const size_t shared = sizeof(A) * static_cast<size_t>(layout.bx * layout.by);
  const auto* in = static_cast<const scalar_t*>(plan.input.data_ptr());
  if (layout.chunks == 1) {
    launch_kernel(plan.op, &reduce_kernel<scalar_t, Op, Store>, grid, block, shared, stream, in,
                  shape, layout, op, store, static_cast<A*>(nullptr));
    return;
  }
  // The workspace comes from the caching allocator on this stream: freeing it after the second
  // launch is safe, since a later use of the block is ordered after this stream's work.
  DataPtr workspace =
      get_allocator(DeviceType::CUDA)
          ->allocate(sizeof(A) * static_cast<size_t>(layout.chunks * shape.num_outputs), stream);
  auto* partial = static_cast<A*>(workspace.get());
  launch_kernel(plan.op, &reduce_kernel<scalar_t, Op, Store>, grid, block, shared, stream, in,
                shape, layout, op, store, partial);
  constexpr int kThreads = 128;
  launch_kernel(plan.op, &reduce_pieces_kernel<Op, Store>,
                dim3(blocks_for(shape.num_outputs, kThreads)), dim3(kThreads), 0, stream, partial,
                shape.num_outputs, layout.chunks, op, store);
}

}  // namespace ember::kernels::cuda
