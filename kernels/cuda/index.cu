// CUDA kernels for the indexing ops (core/ops/index.h): gather (index_select, gather, take,
// advanced indexing, embedding), scatter with its reductions (scatter, scatter_add,
// scatter_reduce, index_add, index_put_), advanced-indexing offsets, row-wise index_select,
// nonzero (and so masked_select and bool-mask indexing), and one_hot (core/ops/softmax.h).
// Every index value is checked on the device (Note [Index checks on the device] in
// kernels/cuda/indexing.cuh).
//
// Note [Scatter on CUDA]
// The scatter iteration (Note [Indexed iteration]) gives every position of self's lines to one
// iteration position, and the kernel walks loop.steps indices at each. Two kernels:
// - scatter_loop_kernel: one thread per iteration position walks its indices in order, as the
//   CPU's ScatterLoop does. Positions write disjoint lines of self, so nothing races, the last
//   index wins for plain scatter and sums are added in index order: the CPU's result, bit for
//   bit. index_put_ with accumulate=true (loop.grain == INT64_MAX: its positions may write the
//   same element) runs this kernel with a single thread.
// - scatter_atomic_kernel: one thread per (position, step) adds alpha * src into self with
//   atomicAdd. Used for sums (scatter_add, scatter_reduce "sum"/"mean", index_add, index_put_
//   accumulate) of float16, bfloat16, float32, float64, int32 and int64 unless deterministic
//   algorithms are on (Note [Deterministic algorithms] in core/determinism.h); the float results
//   then depend on the order the threads run in. Integer sums are exact either way.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/determinism.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/softmax.h"
#include "kernels/cuda/indexing.cuh"
#include "kernels/cuda/scan.cuh"
#include "kernels/cuda/sync_debug.h"
#include "kernels/math/binary.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65536;  // grid-stride kernels launch at most this many blocks

__device__ __forceinline__ int64_t load_index(const char* p) {
  return *reinterpret_cast<const int64_t*>(p);
}

// ---- gather ----------------------------------------------------------------------------------

// iter = (out, self restrided, index int64): out[e] = self[e + index[e] * axis.stride].
// n positions (32-bit indexing); E: an unsigned integer of the element's size.
template <class E>
__global__ void gather_kernel(int32_t n, OperandData<3> data, OffsetCalculator<3> calc,
                              DeviceAxis axis, DeviceCheckSlot* err) {
  const int32_t p = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (p >= n) return;
  int32_t off[3];
  calc.offsets(p, off);
  int64_t i;
  if (!check_index(load_index(data.ptr[2] + off[2]), axis, err, &i)) return;
  *reinterpret_cast<E*>(data.ptr[0] + off[0]) =
      *reinterpret_cast<const E*>(data.ptr[1] + off[1] + i * axis.stride);
}

void gather_cuda(TensorIter& iter, const IndexAxis& axis) {
  DeviceGuard guard(iter.device());
  const Stream stream = current_stream(iter.device());
  IndexCheck check(stream);
  dispatch_element_size(iter.tensor(0).element_size(), axis.op, [&](auto elem) {
    using E = decltype(elem);
    for_each_32bit(iter, [&](const TensorIter& sub) {
      const auto n = static_cast<int32_t>(sub.numel());
      launch_kernel("gather_kernel", &gather_kernel<E>, dim3(blocks_for(n, kThreads)),
                    dim3(kThreads), 0, stream, n, operand_data<3>(sub),
                    make_offset_calculator<3>(sub), device_axis(axis), check.slot());
    });
  });
  check.defer(axis, "gather_kernel");
}

// ---- scatter ---------------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// The CPU's combines (kernels/cpu/index.cpp), on the device.
template <class T>
struct AssignCombine {
  __device__ T operator()(T, T s) const { return s; }
};
template <class T>
struct SumCombine {
  opmath_t<T> alpha;
  __device__ T operator()(T d, T s) const {
    using M = opmath_t<T>;
    return math::convert<T>(static_cast<M>(d) + alpha * static_cast<M>(s));
  }
};
template <class T>
struct ProdCombine {
  __device__ T operator()(T d, T s) const {
    using M = opmath_t<T>;
    return math::convert<T>(static_cast<M>(d) * static_cast<M>(s));
  }
};
template <class T, bool Max>
struct MaxMinCombine {  // NaN wins: once self is NaN it stays, and a NaN src replaces self
  __device__ T operator()(T d, T s) const {
    using M = opmath_t<T>;
    const M a = static_cast<M>(d), b = static_cast<M>(s);
    return (is_nan(b) || (Max ? b > a : b < a)) ? s : d;
  }
};

// The scatter loop's strides as a kernel parameter.
struct DeviceLoop {
  int64_t steps;
  int64_t src_stride;
  int64_t index_stride;
};

// Thread t walks positions [t * per_thread, (t + 1) * per_thread) of the n positions of
// iter = (self restrided [written], src, index), each over loop.steps indices in order.
template <class T, class Combine>
__global__ void scatter_loop_kernel(int32_t n, int32_t per_thread, OperandData<3> data,
                                    OffsetCalculator<3> calc, DeviceAxis axis, DeviceLoop loop,
                                    Combine combine, DeviceCheckSlot* err) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t begin = t * per_thread;
  const int64_t end = begin + per_thread < n ? begin + per_thread : n;
  for (int64_t p = begin; p < end; ++p) {
    int32_t off[3];
    calc.offsets(static_cast<int32_t>(p), off);
    char* self = data.ptr[0] + off[0];
    const char* src = data.ptr[1] + off[1];
    const char* index = data.ptr[2] + off[2];
    for (int64_t j = 0; j < loop.steps; ++j) {
      int64_t i;
      if (!check_index(load_index(index + j * loop.index_stride), axis, err, &i)) continue;
      T* dst = reinterpret_cast<T*>(self + i * axis.stride);
      *dst = combine(*dst, *reinterpret_cast<const T*>(src + j * loop.src_stride));
    }
  }
}

// atomicAdd of v into *p for the dtypes that have one.
template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, Half>) {
    __half_raw raw;
    raw.x = v.x;
    atomicAdd(reinterpret_cast<__half*>(p), __half(raw));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    __nv_bfloat16_raw raw;
    raw.x = v.x;
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __nv_bfloat16(raw));
  } else if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v));
  } else if constexpr (std::is_same_v<T, int64_t>) {  // two's complement: unsigned add wraps
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);  // float, double
  }
}

template <class T>
constexpr bool has_atomic_add =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
    std::is_same_v<T, BFloat16> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

// One thread per (position, step) of n positions: self[index] += alpha * src with atomicAdd
// (Note [Scatter on CUDA]). Grid-stride over n * loop.steps; position-fastest so neighbouring
// threads touch neighbouring positions.
template <class T>
__global__ void scatter_atomic_kernel(int32_t n, OperandData<3> data, OffsetCalculator<3> calc,
                                      DeviceAxis axis, DeviceLoop loop, opmath_t<T> alpha,
                                      DeviceCheckSlot* err) {
  const int64_t total = static_cast<int64_t>(n) * loop.steps;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const auto p = static_cast<int32_t>(t % n);
    const int64_t j = t / n;
    int32_t off[3];
    calc.offsets(p, off);
    int64_t i;
    if (!check_index(load_index(data.ptr[2] + off[2] + j * loop.index_stride), axis, err, &i))
      continue;
    using M = opmath_t<T>;
    const T v = math::convert<T>(alpha * static_cast<M>(*reinterpret_cast<const T*>(
                                             data.ptr[1] + off[1] + j * loop.src_stride)));
    atomic_add(reinterpret_cast<T*>(data.ptr[0] + off[0] + i * axis.stride), v);
  }
}

template <class T, class Combine>
void launch_scatter_loop(const TensorIter& sub, const IndexAxis& axis, const DeviceLoop& loop,
                         bool serial, const Combine& combine, const Stream& stream,
                         DeviceCheckSlot* err) {
  const auto n = static_cast<int32_t>(sub.numel());
  const int32_t per_thread = serial ? n : 1;
  const int64_t threads_needed = (n + per_thread - 1) / per_thread;
  const int threads = serial ? 1 : kThreads;
  launch_kernel("scatter_loop_kernel", &scatter_loop_kernel<T, Combine>,
                dim3(blocks_for(threads_needed, threads)), dim3(threads), 0, stream, n, per_thread,
                operand_data<3>(sub), make_offset_calculator<3>(sub), device_axis(axis), loop,
                combine, err);
}

// Launches scatter_atomic_kernel and returns true if T has an atomicAdd; false otherwise.
template <class T>
bool launch_scatter_atomic(const TensorIter& sub, const IndexAxis& axis, const DeviceLoop& loop,
                           const Scalar& alpha, const Stream& stream, DeviceCheckSlot* err) {
  if constexpr (has_atomic_add<T>) {
    const int64_t total = sub.numel() * loop.steps;
    const unsigned blocks = std::min<unsigned>(blocks_for(total, kThreads), kMaxBlocks);
    launch_kernel("scatter_atomic_kernel", &scatter_atomic_kernel<T>, dim3(blocks), dim3(kThreads),
                  0, stream, static_cast<int32_t>(sub.numel()), operand_data<3>(sub),
                  make_offset_calculator<3>(sub), device_axis(axis), loop, alpha.to<opmath_t<T>>(),
                  err);
    return true;
  } else {
    (void)sub, (void)axis, (void)loop, (void)alpha, (void)stream, (void)err;
    return false;
  }
}

void scatter_cuda(TensorIter& iter, const IndexAxis& axis, const ScatterLoop& loop,
                  ScatterReduce reduce, const Scalar& alpha) {
  DeviceGuard guard(iter.device());
  const Stream stream = current_stream(iter.device());
  IndexCheck check(stream);
  const DeviceLoop dloop{loop.steps, loop.src_stride, loop.index_stride};
  // index_put_ accumulate: positions may write the same element of self.
  const bool colliding = loop.grain == std::numeric_limits<int64_t>::max();
  const bool deterministic = are_deterministic_algorithms_enabled();
  const char* kernel = "scatter_loop_kernel";
  EMBER_DISPATCH_ALL(iter.dtype(0), axis.op, [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    for_each_32bit(iter, [&](const TensorIter& sub) {
      if (reduce == ScatterReduce::Sum && !deterministic && (colliding || loop.steps > 1) &&
          launch_scatter_atomic<T>(sub, axis, dloop, alpha, stream, check.slot())) {
        kernel = "scatter_atomic_kernel";
        return;
      }
      switch (reduce) {
        case ScatterReduce::Assign:
          return launch_scatter_loop<T>(sub, axis, dloop, colliding, AssignCombine<T>{}, stream,
                                        check.slot());
        case ScatterReduce::Sum:
          return launch_scatter_loop<T>(sub, axis, dloop, colliding, SumCombine<T>{alpha.to<M>()},
                                        stream, check.slot());
        case ScatterReduce::Prod:
          return launch_scatter_loop<T>(sub, axis, dloop, colliding, ProdCombine<T>{}, stream,
                                        check.slot());
        case ScatterReduce::Max:
          return launch_scatter_loop<T>(sub, axis, dloop, colliding, MaxMinCombine<T, true>{},
                                        stream, check.slot());
        case ScatterReduce::Min:
          return launch_scatter_loop<T>(sub, axis, dloop, colliding, MaxMinCombine<T, false>{},
                                        stream, check.slot());
      }
    });
  });
  check.defer(axis, kernel);
}

void scatter_mean_cuda(TensorIter& iter) {
  DeviceGuard guard(iter.device());
  EMBER_DISPATCH_NUMERIC(iter.dtype(0), "scatter_reduce",
                         [&] { gpu_kernel(iter, math::ScatterMeanOp<scalar_t>{}); });
}

// ---- advanced-indexing offsets ---------------------------------------------------------------

// iter = (offset out, offset in, index), all int64: out = in + checked(index) * axis.stride.
__global__ void index_offsets_kernel(int32_t n, OperandData<3> data, OffsetCalculator<3> calc,
                                     DeviceAxis axis, DeviceCheckSlot* err) {
  const int32_t p = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (p >= n) return;
  int32_t off[3];
  calc.offsets(p, off);
  int64_t i;
  if (!check_index(load_index(data.ptr[2] + off[2]), axis, err, &i)) return;
  *reinterpret_cast<int64_t*>(data.ptr[0] + off[0]) =
      load_index(data.ptr[1] + off[1]) + i * axis.stride;
}

void index_offsets_cuda(TensorIter& iter, const IndexAxis& axis) {
  DeviceGuard guard(iter.device());
  const Stream stream = current_stream(iter.device());
  IndexCheck check(stream);
  for_each_32bit(iter, [&](const TensorIter& sub) {
    const auto n = static_cast<int32_t>(sub.numel());
    launch_kernel("index_offsets_kernel", &index_offsets_kernel, dim3(blocks_for(n, kThreads)),
                  dim3(kThreads), 0, stream, n, operand_data<3>(sub),
                  make_offset_calculator<3>(sub), device_axis(axis), check.slot());
  });
  check.defer(axis, "index_offsets_kernel");
}

// ---- index_select of whole rows ----------------------------------------------------------------

// out: [outer, n, row_words], self: [outer, axis.size, row_words] of W words, both contiguous.
// Block b copies rows b, b + gridDim.x, ... (row p = (o, j): self row index[j] of block o);
// its threads stride over the row's words.
template <class W>
__global__ void index_select_rows_kernel(W* out, const W* self, const int64_t* index, int64_t n,
                                         int64_t rows, int64_t row_words, DeviceAxis axis,
                                         DeviceCheckSlot* err) {
  for (int64_t p = blockIdx.x; p < rows; p += gridDim.x) {
    const int64_t o = p / n, j = p % n;
    int64_t i;
    if (!check_index(index[j], axis, err, &i)) continue;
    const W* src = self + (o * axis.size + i) * row_words;
    W* dst = out + p * row_words;
    for (int64_t w = threadIdx.x; w < row_words; w += blockDim.x) dst[w] = src[w];
  }
}

void index_select_rows_cuda(char* out, const char* self, const int64_t* index, int64_t n,
                            int64_t outer, int64_t row_bytes, const IndexAxis& axis) {
  const Device device = Device::cuda(current_device(DeviceType::CUDA));
  const Stream stream = current_stream(device);
  IndexCheck check(stream);
  const int64_t rows = outer * n;
  const int w = common_word({reinterpret_cast<uintptr_t>(out), reinterpret_cast<uintptr_t>(self),
                             static_cast<uintptr_t>(row_bytes)});
  const int64_t row_words = row_bytes / w;
  const int threads = static_cast<int>(std::min<int64_t>(kThreads, (row_words + 31) / 32 * 32));
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks));
  dispatch_word(w, [&](auto word) {
    using W = decltype(word);
    launch_kernel("index_select_rows_kernel", &index_select_rows_kernel<W>, dim3(blocks),
                  dim3(threads), 0, stream, reinterpret_cast<W*>(out),
                  reinterpret_cast<const W*>(self), index, n, rows, row_words, device_axis(axis),
                  check.slot());
  });
  check.defer(axis, "index_select_rows_kernel");
}

// ---- nonzero ---------------------------------------------------------------------------------
// Three passes keep the output in row-major order: count the non-zeros of each tile of
// kTile = kScanThreads * kItems elements, scan the tile counts into tile offsets (one block),
// then each tile scans its threads' counts and writes the coordinates at its offset. Thread t
// of a tile looks at the kItems consecutive elements [t * kItems, (t + 1) * kItems).

constexpr int kScanThreads = 256;
constexpr int kItems = 8;
constexpr int64_t kTile = kScanThreads * kItems;
constexpr int kMaxNonzeroDims = 16;

struct NonzeroShape {
  int ndim;
  int64_t sizes[kMaxNonzeroDims];
};

// How many of this thread's kItems elements are non-zero; bit k of *mask says element k is.
template <class T>
__device__ __forceinline__ int count_items(const T* self, int64_t numel, int64_t first,
                                           unsigned* mask) {
  int count = 0;
  *mask = 0;
  for (int k = 0; k < kItems; ++k) {
    const int64_t e = first + k;
    if (e < numel && math::convert<bool>(self[e])) {
      *mask |= 1u << k;
      ++count;
    }
  }
  return count;
}

// counts[b] = the non-zeros of tile b.
template <class T>
__global__ void nonzero_count_kernel(const T* self, int64_t numel, int64_t* counts) {
  unsigned mask;
  const int64_t first = blockIdx.x * kTile + static_cast<int64_t>(threadIdx.x) * kItems;
  const int64_t c = count_items(self, numel, first, &mask);
  int64_t total;
  block_exclusive_scan(c, &total);
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// offsets[b] = counts[0] + ... + counts[b - 1] for b <= tiles (offsets[tiles]: the total), in
// one block walking the tiles kScanThreads at a time with a running carry.
__global__ void nonzero_scan_kernel(const int64_t* counts, int64_t tiles, int64_t* offsets) {
  int64_t carry = 0;
  for (int64_t base = 0; base < tiles; base += kScanThreads) {
    const int64_t b = base + threadIdx.x;
    const int64_t c = b < tiles ? counts[b] : 0;
    int64_t total;
    const int64_t before = block_exclusive_scan(c, &total);
    if (b < tiles) offsets[b] = carry + before;
    carry += total;
  }
  if (threadIdx.x == 0) offsets[tiles] = carry;
}

// out[r, :] = the coordinates of the r-th non-zero element (row-major).
template <class T>
__global__ void nonzero_write_kernel(const T* self, int64_t numel, const int64_t* offsets,
                                     NonzeroShape shape, int64_t* out) {
  unsigned mask;
  const int64_t first = blockIdx.x * kTile + static_cast<int64_t>(threadIdx.x) * kItems;
  const int64_t c = count_items(self, numel, first, &mask);
  int64_t total;
  int64_t row = offsets[blockIdx.x] + block_exclusive_scan(c, &total);
  for (int k = 0; k < kItems; ++k) {
    if (!(mask & (1u << k))) continue;
    int64_t rem = first + k;
    int64_t* coords = out + row * shape.ndim;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      coords[d] = rem % shape.sizes[d];
      rem /= shape.sizes[d];
    }
    ++row;
  }
}

void nonzero_cuda(const Tensor& self, Tensor& out) {
  const char* op = "nonzero";
  const int64_t numel = self.numel(), ndim = self.dim();
  const TensorOptions long_opts = TensorOptions(kInt64).device(self.device());
  if (numel == 0) {
    out = empty({0, ndim}, long_opts);
    return;
  }
  EMBER_CHECK(ndim <= kMaxNonzeroDims, op, ": ", ndim, " dims; the CUDA kernel takes up to ",
              kMaxNonzeroDims);
  const HostWait wait(op, self.device().index);  // the size read back: Note [Sync debug mode]
  DeviceGuard guard(self.device());
  const Stream stream = current_stream(self.device());
  const int64_t tiles = (numel + kTile - 1) / kTile;
  EMBER_CHECK(tiles <= std::numeric_limits<int32_t>::max(), op, ": ", numel,
              " elements is too many for the CUDA kernel");
  Tensor counts = empty({tiles}, long_opts);
  Tensor offsets = empty({tiles + 1}, long_opts);
  NonzeroShape shape{static_cast<int>(ndim), {}};
  for (int64_t d = 0; d < ndim; ++d) shape.sizes[d] = self.size(d);
  EMBER_DISPATCH_ALL(self.dtype(), op, [&] {
    const auto* p = static_cast<const scalar_t*>(self.data_ptr());
    launch_kernel("nonzero_count_kernel", &nonzero_count_kernel<scalar_t>,
                  dim3(static_cast<unsigned>(tiles)), dim3(kScanThreads), 0, stream, p, numel,
                  counts.data_ptr<int64_t>());
    launch_kernel("nonzero_scan_kernel", &nonzero_scan_kernel, dim3(1), dim3(kScanThreads), 0,
                  stream, static_cast<const int64_t*>(counts.data_ptr<int64_t>()), tiles,
                  offsets.data_ptr<int64_t>());
    int64_t total = 0;
    memcpy_async(&total, offsets.data_ptr<int64_t>() + tiles, sizeof(total), native_stream(stream),
                 op);
    stream_synchronize(native_stream(stream), op);
    raise_failed_checks(op);  // the host reads a device value (Note [Deferred device checks])
    out = empty({total, ndim}, long_opts);
    if (total == 0 || ndim == 0) return;
    launch_kernel("nonzero_write_kernel", &nonzero_write_kernel<scalar_t>,
                  dim3(static_cast<unsigned>(tiles)), dim3(kScanThreads), 0, stream, p, numel,
                  static_cast<const int64_t*>(offsets.data_ptr<int64_t>()), shape,
                  out.data_ptr<int64_t>());
  });
}

// ---- one_hot ---------------------------------------------------------------------------------

// out[i, indices[i]] = 1 for the n indices (out zeroed, [n, classes] contiguous).
__global__ void one_hot_kernel(int64_t* out, const int64_t* indices, int64_t n, DeviceAxis axis,
                               DeviceCheckSlot* err) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int64_t c;
    if (check_index(indices[i], axis, err, &c)) out[i * axis.size + c] = 1;
  }
}

void one_hot_cuda(const Tensor& out, const Tensor& indices, int64_t num_classes) {
  DeviceGuard guard(out.device());
  const Stream stream = current_stream(out.device());
  // one_hot checked the values already (through amin/amax); this is the device's own guard.
  const IndexAxis axis{num_classes, 1, false, indices.dim(), "one_hot"};
  IndexCheck check(stream);
  const int64_t n = indices.numel();
  launch_kernel("one_hot_kernel", &one_hot_kernel,
                dim3(std::min<unsigned>(blocks_for(n, kThreads), kMaxBlocks)), dim3(kThreads), 0,
                stream, static_cast<int64_t*>(out.data_ptr()),
                static_cast<const int64_t*>(indices.data_ptr()), n, device_axis(axis),
                check.slot());
  check.defer(axis, "one_hot_kernel");
}

}  // namespace

EMBER_REGISTER_KERNEL(gather_stub, DeviceType::CUDA, gather_cuda);
EMBER_REGISTER_KERNEL(scatter_stub, DeviceType::CUDA, scatter_cuda);
EMBER_REGISTER_KERNEL(scatter_mean_stub, DeviceType::CUDA, scatter_mean_cuda);
EMBER_REGISTER_KERNEL(index_offsets_stub, DeviceType::CUDA, index_offsets_cuda);
EMBER_REGISTER_KERNEL(index_select_rows_stub, DeviceType::CUDA, index_select_rows_cuda);
EMBER_REGISTER_KERNEL(nonzero_stub, DeviceType::CUDA, nonzero_cuda);
EMBER_REGISTER_KERNEL(one_hot_stub, DeviceType::CUDA, one_hot_cuda);

}  // namespace ember::kernels::cuda
