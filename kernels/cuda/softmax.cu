// CUDA kernels for softmax / log_softmax (core/ops/softmax.h): out (contiguous, the input's shape
// and dtype) = softmax or log_softmax of the input along dim, computed in opmath_t (float for
// float16 / bfloat16).
//
// Note [Online softmax]
// The CPU kernel reads a line three times (max, sum of exp(x - max), outputs). Here the first two
// passes are one: each thread keeps a running max m and the sum s of exp(x - m) over the elements
// it reads, rescaling s by exp(m_old - m_new) when the max grows, and the threads' (m, s) states
// merge the same way (warp shuffles, then shared memory across warps). A second pass writes
// exp(x - m) / s or x - m - log(s). The special values follow the CPU kernel: a line holding NaN
// or +inf, or only -inf, gives NaN everywhere (there exp(x - m) is NaN for some element, so the
// CPU's sum is NaN).
//
// Note [Softmax layouts]
// The input is made contiguous and seen as (outer, n, inner), the line being dim (n elements at
// stride inner):
// - inner == 1, n <= kWarpRowMax: a warp per row (4 rows per block of 128 threads); lanes read
//   neighbouring elements, merge with shuffles, and every lane gets the row's state back.
// - inner == 1, longer rows that fit (Note [Rows held in registers]): a block per row holds the
//   row in registers; the max and the sum are two block reductions and x is read once.
// - everything else (dim not last, or rows too long or misaligned for registers): lines split
//   across threads and blocks (Note [Softmax over lines]).
//
// Note [Softmax over lines]
// A block of kLineLanes x kLineRows threads takes W neighbouring lines (W = inner rounded up to a
// power of two, at most 32; W = 1 for rows) and a chunk of their n elements. Lane tx takes line
// tx % W, and the block's S = kLineThreads / W threads of one line split its chunk: thread `sub`
// reads elements sub, sub + S, ... So a warp reads 32 neighbouring elements at each step (32 / W
// consecutive i of W neighbouring lines), and with W = 1 16-byte vectors of a row where the row
// allows (every row 16-byte aligned, n whole vectors). Each thread issues its loads in batches
// (kLineBatch vectors, or 2 kLineBatch elements) before using any, in both passes, so that it has
// more than one load in flight. Each thread folds its elements into an online state (Note
// [Online softmax]); the S states of a line merge in shared memory in a fixed tree (slot sub
// with slot sub + h, h = S / 2, ..., 1), so every thread reads the same merged state. When outer *
// ceil(inner / W) blocks would not fill the device (few lines, long ones: softmax over dim 0, or a
// few rows too long for registers), the lines are also split into chunks along n, grid.y of them:
// softmax_lines_kernel then writes each chunk's state to a workspace (line-major), and
// softmax_lines_write_kernel merges a line's chunk states in chunk order (the same bits in every
// thread) and writes its chunk. That reads x twice (once per kernel); a single chunk reads it twice
// too, but its second read comes from the cache. Results do not depend on timing: every merge has a
// fixed order.
//
// cuDNN's softmax is the reference (core/norm_backend.h, Note [Norm backends on CUDA] in
// kernels/cuda/norm_cudnn.h): softmax_kernel asks choose_norm_cudnn which one runs.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/ops/copy.h"
#include "core/ops/softmax.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/norm_cudnn.h"
#include "kernels/cuda/online_softmax.cuh"
#include "kernels/cuda/row_cache.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int64_t kWarpRowMax = 1024;
constexpr int kWarpRowsPerBlock = 4;
// The lines layout (Note [Softmax over lines]): blocks of kLineLanes x kLineRows threads; lines
// split into chunks until the grid has kLineTargetBlocks blocks, while every thread keeps at
// least kLineMinItems items of its chunk.
constexpr int kLineLanes = 32;
constexpr int kLineRows = 8;
constexpr int kLineThreads = kLineLanes * kLineRows;
constexpr int64_t kLineTargetBlocks = 1024;
constexpr int64_t kLineMinItems = 16;
constexpr int kLineBatch = 4;  // 16-byte vectors loaded at once per thread (twice as many scalars)
constexpr int64_t kLineMaxChunks = 65535;  // gridDim.y

// The second pass over one line: y[i * step] from x[i * step], i in [begin, n) by `stride`.
template <class T, class A, bool kLog>
__device__ __forceinline__ void write_line(const T* x, T* y, int64_t n, int64_t begin,
                                           int64_t stride, int64_t step, Online<A> s) {
  if (kLog) {
    const A shift = s.max + std::log(s.sum);
    for (int64_t i = begin; i < n; i += stride)
      y[i * step] = convert<T>(convert<A>(x[i * step]) - shift);
  } else {
    const A inv = A(1) / s.sum;
    for (int64_t i = begin; i < n; i += stride)
      y[i * step] = convert<T>(std::exp(convert<A>(x[i * step]) - s.max) * inv);
  }
}

// x, y: (rows, n) contiguous; a warp per row.
template <class T, bool kLog>
__global__ void softmax_warp_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  using A = opmath_t<T>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
  // A warp past the last row still shuffles (full mask) but reads and writes nothing.
  const bool live = row < rows;
  const T* xr = x + (live ? row : 0) * n;
  Online<A> s = Online<A>::empty();
  if (live)
    for (int64_t i = lane; i < n; i += 32) s.add(convert<A>(xr[i]));
  s = online_warp_merge(s);
  s.finish();
  if (live) write_line<T, A, kLog>(xr, y + row * n, n, lane, 32, 1, s);
}

// x, y: (rows, n) contiguous, 16-byte aligned rows of whole vectors; a block of kThreads per
// row, the row in registers (Note [Rows held in registers]): its max, then the sum of
// exp(x - max), then the outputs, with x read once. A row holding NaN or +inf, or only -inf,
// gives NaN everywhere, as the other kernels do (exp(x - max) is NaN for some element).
template <class T, bool kLog, int kThreads, int kVecs>
__global__ void softmax_cached_kernel(const T* x, T* y, int64_t n) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(A, partial, kThreads / 32);
  const int64_t row = blockIdx.x;
  RowCache<T, A, kVecs, kThreads> c;
  c.load(x + row * n, n);
  A m = -std::numeric_limits<A>::infinity();
  c.for_each(n, [&](int, int, A v) { m = NanMax{}(m, v); });
  m = block_all_reduce<kThreads>(m, NanMax{}, partial);
  A s = A(0);
  c.for_each(n, [&](int k, int e, A v) {
    const A ex = std::exp(v - m);
    s += ex;
    if (!kLog) c.v[k][e] = ex;
  });
  s = block_all_reduce<kThreads>(s, Plus{}, partial);
  if (kLog) {
    const A shift = m + std::log(s);
    c.for_each(n, [&](int k, int e, A v) { c.v[k][e] = v - shift; });
  } else {
    const A inv = A(1) / s;
    c.for_each(n, [&](int k, int e, A v) { c.v[k][e] = v * inv; });
  }
  c.store(y + row * n, n);
}

// Where a block of the lines layout works (Note [Softmax over lines]): x, y (outer, n, inner)
// contiguous; with kVec (inner == 1) n counts 16-byte vectors, not elements.
struct LineGeometry {
  int64_t n, inner;
  int64_t strips;  // blocks per outer index: ceil(inner / width)
  int width;       // W, a power of two: lanes per group of neighbouring lines
  int64_t chunk;   // elements (vectors) of n per block; gridDim.y chunks
};

// This thread's place in the lines layout: its line (o, j), the thread's slot among the line's
// S threads, and the range [begin, end) of the chunk.
struct LineThread {
  int64_t offset;  // of x[o, 0, j], in items
  int64_t line;    // o * inner + j
  bool live;       // j < inner
  int sub, S, slot;
  int64_t begin, end;

  __device__ __forceinline__ explicit LineThread(const LineGeometry& g) {
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const int col = tx % g.width;
    S = kLineThreads / g.width;
    sub = tx / g.width + (kLineLanes / g.width) * ty;
    slot = tx + kLineLanes * ty;  // == sub * W + col
    const int64_t o = static_cast<int64_t>(blockIdx.x) / g.strips;
    const int64_t j = (static_cast<int64_t>(blockIdx.x) % g.strips) * g.width + col;
    live = j < g.inner;
    line = o * g.inner + j;
    offset = o * g.n * g.inner + j;
    begin = static_cast<int64_t>(blockIdx.y) * g.chunk;
    end = begin + g.chunk < g.n ? begin + g.chunk : g.n;
  }
};

// Item i of a line: an element, or with kVec (rows of inner == 1) V elements of one vector.
template <class T, bool kVec>
struct LineItems {
  static constexpr int V = kVec ? Vec16<T>::V : 1;
  using Item = std::conditional_t<kVec, Vec16<T>, T>;
  const T* x;
  T* y;
  int64_t inner;

  __device__ __forceinline__ Item load(int64_t i) const {
    if constexpr (kVec)
      return reinterpret_cast<const Vec16<T>*>(x)[i];
    else
      return x[i * inner];
  }
  __device__ __forceinline__ static opmath_t<T> at(const Item& v, int e) {
    if constexpr (kVec)
      return convert<opmath_t<T>>(v.v[e]);
    else
      return static_cast<void>(e), convert<opmath_t<T>>(v);
  }
  // y's item i from x's item v through f(value).
  template <class F>
  __device__ __forceinline__ void store(int64_t i, const Item& v, F&& f) const {
    if constexpr (kVec) {
      Vec16<T> w;
      for_constant<V>([&](auto e) { w.v[e] = convert<T>(f(at(v, e))); });
      reinterpret_cast<Vec16<T>*>(y)[i] = w;
    } else {
      y[i * inner] = convert<T>(f(at(v, 0)));
    }
  }
};

// f(i, item i) for the items i = first, first + stride, ... below end, their loads issued
// kLineBatch at a time before any is used (x and y may alias as far as the compiler knows, so it
// would not move a load above the previous item's store itself): bytes in flight per thread.
template <class T, bool kVec, class F>
__device__ __forceinline__ void for_items(const LineItems<T, kVec>& items, int64_t first,
                                          int64_t end, int64_t stride, F&& f) {
  constexpr int kBatch = kVec ? kLineBatch : 2 * kLineBatch;  // 64 bytes of vectors, 8 scalars
  int64_t i = first;
  for (; i + (kBatch - 1) * stride < end; i += kBatch * stride) {
    typename LineItems<T, kVec>::Item v[kBatch];
    for_constant<kBatch>([&](auto b) { v[b] = items.load(i + b * stride); });
    for_constant<kBatch>([&](auto b) { f(i + b * stride, v[b]); });
  }
  for (; i < end; i += stride) f(i, items.load(i));
}

// The online state of items [first, end) by `stride`.
template <class T, bool kVec>
__device__ __forceinline__ Online<opmath_t<T>> fold_items(const LineItems<T, kVec>& items,
                                                          int64_t first, int64_t end,
                                                          int64_t stride) {
  using A = opmath_t<T>;
  Online<A> s = Online<A>::empty();
  for_items(items, first, end, stride, [&](int64_t, const auto& v) {
    for_constant<LineItems<T, kVec>::V>([&](auto e) { s.add(items.at(v, e)); });
  });
  return s;
}

// y's items [first, end) by `stride` from x's and the line's finished state s.
template <class T, bool kLog, bool kVec>
__device__ __forceinline__ void write_items(const LineItems<T, kVec>& items, int64_t first,
                                            int64_t end, int64_t stride, Online<opmath_t<T>> s) {
  using A = opmath_t<T>;
  if (kLog) {
    const A shift = s.max + std::log(s.sum);
    for_items(items, first, end, stride,
              [&](int64_t i, const auto& v) { items.store(i, v, [&](A a) { return a - shift; }); });
  } else {
    const A inv = A(1) / s.sum;
    for_items(items, first, end, stride, [&](int64_t i, const auto& v) {
      items.store(i, v, [&](A a) { return std::exp(a - s.max) * inv; });
    });
  }
}

// x, y: (outer, n, inner) contiguous (Note [Softmax over lines]); a block of (kLineLanes,
// kLineRows) threads per W lines and chunk. One chunk (gridDim.y == 1): the lines' outputs.
// Several: each line's chunk state in states[line * gridDim.y + chunk], for
// softmax_lines_write_kernel.
template <class T, bool kLog, bool kVec>
__global__ void softmax_lines_kernel(const T* x, T* y, LineGeometry g,
                                     Online<opmath_t<T>>* states) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(Online<A>, partial, kLineThreads);
  const LineThread t(g);
  const int64_t at = t.offset * LineItems<T, kVec>::V;
  const LineItems<T, kVec> items{x + at, y + at, g.inner};
  Online<A> s = t.live ? fold_items(items, t.begin + t.sub, t.end, t.S) : Online<A>::empty();
  partial[t.slot] = s;
  for (int h = t.S / 2; h > 0; h /= 2) {
    __syncthreads();
    if (t.sub < h)
      partial[t.slot] = Online<A>::merge(partial[t.slot], partial[t.slot + h * g.width]);
  }
  __syncthreads();
  s = partial[t.slot - t.sub * g.width];  // slot 0 of this line
  if (!t.live) return;
  if (gridDim.y > 1) {
    if (t.sub == 0) states[t.line * gridDim.y + blockIdx.y] = s;
    return;
  }
  s.finish();
  write_items<T, kLog>(items, t.sub, g.n, t.S, s);
}

// The second kernel of chunked lines: each thread merges its line's chunk states in chunk
// order and writes its share of the block's chunk.
template <class T, bool kLog, bool kVec>
__global__ void softmax_lines_write_kernel(const T* x, T* y, LineGeometry g,
                                           const Online<opmath_t<T>>* states) {
  using A = opmath_t<T>;
  const LineThread t(g);
  if (!t.live) return;
  const Online<A>* ls = states + t.line * gridDim.y;
  Online<A> s = ls[0];
  for (unsigned c = 1; c < gridDim.y; ++c) s = Online<A>::merge(s, ls[c]);
  s.finish();
  const int64_t at = t.offset * LineItems<T, kVec>::V;
  const LineItems<T, kVec> items{x + at, y + at, g.inner};
  write_items<T, kLog>(items, t.begin + t.sub, t.end, t.S, s);
}

// The lines layout's launches (Note [Softmax over lines]).
template <class T, bool kLog>
void softmax_lines(const char* op, const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                   const Stream& stream) {
  using A = opmath_t<T>;
  const bool vec = inner == 1 && rows_fit_vectors<T>(n, {x, y});
  LineGeometry g{};
  g.inner = inner;
  g.n = vec ? n / Vec16<T>::V : n;
  g.width = 1;
  while (g.width < kLineLanes && g.width < inner) g.width *= 2;
  g.strips = (inner + g.width - 1) / g.width;
  const int64_t blocks = outer * g.strips;
  EMBER_CHECK(blocks <= INT32_MAX, op, ": ", outer, " x ", inner,
              " lines; too many for a CUDA softmax");
  const int64_t S = kLineThreads / g.width;
  const int64_t most = (g.n + S * kLineMinItems - 1) / (S * kLineMinItems);
  int64_t chunks = std::min((kLineTargetBlocks + blocks - 1) / blocks, most);
  chunks = std::clamp<int64_t>(chunks, 1, kLineMaxChunks);
  g.chunk = (g.n + chunks - 1) / chunks;
  chunks = (g.n + g.chunk - 1) / g.chunk;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(chunks));
  const dim3 block(kLineLanes, kLineRows);
  auto run = [&](auto kvec) {
    constexpr bool kVec = decltype(kvec)::value;
    const auto kernel = &softmax_lines_kernel<T, kLog, kVec>;
    uses_collectives(kernel);
    if (chunks == 1) {
      launch_kernel(op, kernel, grid, block, 0, stream, x, y, g, nullptr);
      return;
    }
    DataPtr states =
        get_allocator(DeviceType::CUDA)
            ->allocate(static_cast<size_t>(outer * inner * chunks) * sizeof(Online<A>), stream);
    auto* sp = static_cast<Online<A>*>(states.get());
    launch_kernel(op, kernel, grid, block, 0, stream, x, y, g, sp);
    launch_kernel(op, &softmax_lines_write_kernel<T, kLog, kVec>, grid, block, 0, stream, x, y, g,
                  static_cast<const Online<A>*>(sp));
  };
  if (vec)
    run(std::true_type{});
  else
    run(std::false_type{});
}

template <class T, bool kLog>
void softmax_launch(const Tensor& out, const Tensor& in, int64_t dim) {
  const char* op = kLog ? "log_softmax" : "softmax";
  const int64_t nd = in.dim();
  const int64_t n = nd == 0 ? 1 : in.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= in.size(d);
  for (int64_t d = dim + 1; d < nd; ++d) inner *= in.size(d);
  const Device device = in.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  if (outer * n * inner == 0) return;
  if (inner == 1 && n <= kWarpRowMax) {
    uses_collectives(&softmax_warp_kernel<T, kLog>);
    launch_kernel(op, &softmax_warp_kernel<T, kLog>, dim3(blocks_for(outer, kWarpRowsPerBlock)),
                  dim3(32 * kWarpRowsPerBlock), 0, stream, x, y, outer, n);
  } else if (inner == 1 && row_shape<T>(n).threads > 0 && rows_fit_vectors<T>(n, {x, y})) {
    EMBER_CHECK(outer <= INT32_MAX, op, ": ", outer, " rows; a CUDA softmax takes up to 2^31 - 1");
    dispatch_row_shape(row_shape<T>(n), [&](auto threads, auto vecs) {
      constexpr int kThreads = decltype(threads)::value;
      const auto kernel = &softmax_cached_kernel<T, kLog, kThreads, decltype(vecs)::value>;
      uses_collectives(kernel);
      launch_kernel(op, kernel, dim3(static_cast<unsigned>(outer)), dim3(kThreads), 0, stream, x, y,
                    n);
    });
  } else {
    softmax_lines<T, kLog>(op, x, y, outer, n, inner, stream);
  }
}

void softmax_kernel(const Tensor& out, const Tensor& input, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  auto run_ember = [&] {
    // out is new and contiguous; a strided input is read through a contiguous copy.
    const Tensor in = input.is_contiguous() ? input : native::contiguous(input);
    EMBER_DISPATCH_FLOATING(in.dtype(), op, [&] {
      if (log)
        softmax_launch<scalar_t, true>(out, in, dim);
      else
        softmax_launch<scalar_t, false>(out, in, dim);
    });
  };
  auto run_cudnn = [&] { cudnn_softmax_forward(out, input, log); };
  auto key = [&] {
    std::ostringstream k;
    k << op << " " << dtype_name(input.dtype()) << " " << shape_str(input.sizes())
      << " dim=" << dim;
    return k.str();
  };
  if (choose_norm_cudnn(op, key, cudnn_softmax_supported(input, dim),
                        current_stream(input.device()), run_ember, run_cudnn)) {
    run_cudnn();
  } else {
    run_ember();
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(softmax_stub, DeviceType::CUDA, softmax_kernel);

}  // namespace ember::kernels::cuda
