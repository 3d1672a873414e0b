// CUDA kernels of the fused layer_norm and batch_norm (core/ops/norm.h, Note [Fused layer_norm]).
// layer_norm's x is M rows of N contiguous elements; statistics and arithmetic in opmath_t
// (float for float16 / bfloat16). batch_norm takes a block per channel of x (N, C, L), with the
// same Welford fold and merge, then the write pass; its backward sums g and g xhat per channel
// (dw, db) and writes dx in a second pass of the same block.
//
// Forward: rows of up to kWarpRowMax elements take a warp each (kRowsPerBlock rows per block),
// longer rows a block of kBlockThreads: held in registers where they fit (layer_norm_cached_kernel,
// Note [Rows held in registers]), else folded as they stream by. Each thread folds its elements (i,
// i + stride, ...) into a Welford state (kernels/math/reduce.h's WelfordOp: stable when the mean
// dwarfs the spread); the states merge down to lane 0 with shuffles (and through shared memory
// across warps), in a fixed order, and are broadcast back, so every thread normalises with the same
// mean and rstd. Backward: the same layouts for dx, with the row sums of w g and w g xhat merged
// the same way; dw and db are column sums over the rows: a block of 32 columns x kColRows
// row-strides, merged in shared memory in a fixed tree. No atomics: every run gives the same bits.
//
// cuDNN's batch_norm forward is the reference (core/norm_backend.h, Note [Norm backends on
// CUDA] in kernels/cuda/norm_cudnn.h): batch_norm_cuda asks choose_norm_cudnn which one runs.

#include <cstdint>
#include <sstream>

#include "core/dtype.h"
#include "core/ops/copy.h"
#include "core/ops/norm.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/norm_cudnn.h"
#include "kernels/cuda/row_cache.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"
#include "kernels/math/reduce.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int64_t kWarpRowMax = 1024;
constexpr int kRowsPerBlock = 4;
constexpr int kBlockThreads = 512;
constexpr int kWarps = kBlockThreads / 32;
constexpr int kColRows = 16;

template <class V>
__device__ __forceinline__ V broadcast_lane0(const V& v) {
  return detail::shuffle_words(v, [](unsigned w) { return __shfl_sync(0xffffffffu, w, 0, 32); });
}

// A pair of sums, merged by addition.
template <class A>
struct Sums {
  A a, b;
};

struct WelfordMerge {
  template <class S>
  __device__ __forceinline__ S operator()(const S& x, const S& y) const {
    return math::WelfordOp<decltype(x.mean)>{}.combine(x, y);
  }
};
struct SumsMerge {
  template <class S>
  __device__ __forceinline__ S operator()(const S& x, const S& y) const {
    return {x.a + y.a, x.b + y.b};
  }
};

// The warp's lanes' states merged into lane 0's (lower lanes on the left), then given to all.
template <class S, class Merge>
__device__ __forceinline__ S warp_all(S s, Merge merge) {
  for (int d = 16; d > 0; d /= 2) s = merge(s, shfl_down_any(0xffffffffu, s, d, 32));
  return broadcast_lane0(s);
}

// The block's states merged (warp by warp, then the warps' results in order), given to all.
template <class S, class Merge, class Shared>
__device__ __forceinline__ S block_all(S s, Merge merge, S identity, Shared partial) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  s = warp_all(s, merge);
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  s = lane < kWarps ? partial[lane] : identity;
  return warp_all(s, merge);
}

// Which affine element goes with element j of row `row`: j itself (layer_norm), or for
// group_norm (rows of (n, group), each C / G channels of L elements) the element's channel.
struct Affine {
  int64_t groups = 0;  // 0: layer_norm
  int64_t channels_per_group = 0;
  int64_t inner = 1;
  __device__ __forceinline__ int64_t index(int64_t row, int64_t j) const {
    return groups == 0 ? j : (row % groups) * channels_per_group + j / inner;
  }
};

// x, y: (M, N); mean, rstd: (M); w, b: (N) or null (or per channel, aff). kBlockRow: a block
// per row, else a warp.
template <class T, bool kBlockRow>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, opmath_t<T>* mean,
                                  opmath_t<T>* rstd, int64_t M, int64_t N, opmath_t<T> eps,
                                  Affine aff) {
  using A = opmath_t<T>;
  using Op = math::WelfordOp<A>;
  using S = math::WelfordState<A>;
  EMBER_SHARED_ARRAY(S, partial, kWarps);
  (void)partial;  // used by block rows only
  const int64_t row = kBlockRow
                          ? static_cast<int64_t>(blockIdx.x)
                          : static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int first = kBlockRow ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % 32;
  const int stride = kBlockRow ? kBlockThreads : 32;
  const bool live = row < M;  // a warp past the last row only joins the shuffles
  const T* xr = x + (live ? row : 0) * N;
  const Op op;
  S s = op.identity();
  if (live)
    for (int64_t j = first; j < N; j += stride) s = op.reduce(s, convert<A>(xr[j]), j);
  if constexpr (kBlockRow)
    s = block_all(s, WelfordMerge{}, op.identity(), partial);
  else
    s = warp_all(s, WelfordMerge{});
  if (!live) return;
  const A m = s.mean;
  const A r = A(1) / std::sqrt(s.m2 / static_cast<A>(N) + eps);
  if (first == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  T* yr = y + row * N;
  for (int64_t j = first; j < N; j += stride) {
    A v = (convert<A>(xr[j]) - m) * r;
    if (w) v = v * convert<A>(w[aff.index(row, j)]);
    if (b) v = v + convert<A>(b[aff.index(row, j)]);
    yr[j] = convert<T>(v);
  }
}

// The forward of layer_norm (no groups) for rows that fit (Note [Rows held in registers]): a
// block of kThreads per row holds it in registers, the mean is a block sum, the variance a block
// sum of squared deviations from it (the two-pass form: as stable as Welford's, without a
// division per element), and y is written from the registers, vector by vector with that
// vector's w and b (read as 16-byte vectors when they are needed, not held across the row).
template <class T, int kThreads, int kVecs>
__global__ void layer_norm_cached_kernel(const T* x, const T* w, const T* b, T* y,
                                         opmath_t<T>* mean, opmath_t<T>* rstd, int64_t N,
                                         opmath_t<T> eps) {
  using A = opmath_t<T>;
  using Cache = RowCache<T, A, kVecs, kThreads>;
  EMBER_SHARED_ARRAY(A, partial, kThreads / 32);
  const int64_t row = blockIdx.x;
  Cache c;
  c.load(x + row * N, N);
  A sum = A(0);
  c.for_each(N, [&](int, int, A v) { sum += v; });
  const A m = block_all_reduce<kThreads>(sum, Plus{}, partial) / static_cast<A>(N);
  A sq = A(0);
  c.for_each(N, [&](int, int, A v) { sq += (v - m) * (v - m); });
  const A var = block_all_reduce<kThreads>(sq, Plus{}, partial) / static_cast<A>(N);
  const A r = A(1) / std::sqrt(var + eps);
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  const auto* wv = reinterpret_cast<const Vec16<T>*>(w);
  const auto* bv = reinterpret_cast<const Vec16<T>*>(b);
  auto* yv = reinterpret_cast<Vec16<T>*>(y + row * N);
  const int64_t nv = N / Cache::V;
  for_constant<kVecs>([&](auto k) {
    const int64_t i = Cache::index(k);
    if (i >= nv) return;
    Vec16<T> wk{}, bk{}, out;  // zeroed for the host compiler: read only when w, b are given
    if (w) wk = wv[i];
    if (b) bk = bv[i];
    for_constant<Cache::V>([&](auto e) {
      A o = (c.v[k][e] - m) * r;
      if (w) o = o * convert<A>(wk.v[e]);
      if (b) o = o + convert<A>(bk.v[e]);
      out.v[e] = convert<T>(o);
    });
    yv[i] = out;
  });
}

// dx = rstd (w g - mean(w g) - xhat mean(w g xhat)) per row; layouts as the forward.
template <class T, bool kBlockRow>
__global__ void layer_norm_dx_kernel(const T* g, const T* x, const opmath_t<T>* mean,
                                     const opmath_t<T>* rstd, const T* w, T* dx, int64_t M,
                                     int64_t N, Affine aff) {
  using A = opmath_t<T>;
  using S = Sums<A>;
  EMBER_SHARED_ARRAY(S, partial, kWarps);
  (void)partial;  // used by block rows only
  const int64_t row = kBlockRow
                          ? static_cast<int64_t>(blockIdx.x)
                          : static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int first = kBlockRow ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % 32;
  const int stride = kBlockRow ? kBlockThreads : 32;
  const bool live = row < M;
  const int64_t base = (live ? row : 0) * N;
  const A m = mean[live ? row : 0], r = rstd[live ? row : 0];
  S s{A(0), A(0)};
  if (live) {
    for (int64_t j = first; j < N; j += stride) {
      const A wg =
          w ? convert<A>(g[base + j]) * convert<A>(w[aff.index(row, j)]) : convert<A>(g[base + j]);
      s.a += wg;
      s.b += wg * ((convert<A>(x[base + j]) - m) * r);
    }
  }
  if constexpr (kBlockRow)
    s = block_all(s, SumsMerge{}, S{A(0), A(0)}, partial);
  else
    s = warp_all(s, SumsMerge{});
  if (!live) return;
  const A inv_n = A(1) / static_cast<A>(N);
  const A mean_wg = s.a * inv_n, mean_wgx = s.b * inv_n;
  for (int64_t j = first; j < N; j += stride) {
    const A wg =
        w ? convert<A>(g[base + j]) * convert<A>(w[aff.index(row, j)]) : convert<A>(g[base + j]);
    const A xhat = (convert<A>(x[base + j]) - m) * r;
    dx[base + j] = convert<T>(r * (wg - mean_wg - xhat * mean_wgx));
  }
}

// dw[j] = sum_i g[i, j] xhat[i, j], db[j] = sum_i g[i, j]; a block of (32, kColRows) threads
// takes 32 columns, thread (x, y) rows y, y + kColRows, ...
template <class T>
__global__ void layer_norm_dwdb_kernel(const T* g, const T* x, const opmath_t<T>* mean,
                                       const opmath_t<T>* rstd, T* dw, T* db, int64_t M,
                                       int64_t N) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(A, sw, kColRows, 32);
  EMBER_SHARED_ARRAY(A, sb, kColRows, 32);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t j = static_cast<int64_t>(blockIdx.x) * 32 + tx;
  A aw = A(0), ab = A(0);
  if (j < N) {
    for (int64_t i = ty; i < M; i += kColRows) {
      const A gi = convert<A>(g[i * N + j]);
      aw += gi * ((convert<A>(x[i * N + j]) - mean[i]) * rstd[i]);
      ab += gi;
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  for (int h = kColRows / 2; h > 0; h /= 2) {
    __syncthreads();
    if (ty < h) {
      sw[ty][tx] = sw[ty][tx] + sw[ty + h][tx];
      sb[ty][tx] = sb[ty][tx] + sb[ty + h][tx];
    }
  }
  if (ty == 0 && j < N) {
    if (dw) dw[j] = convert<T>(sw[0][tx]);
    if (db) db[j] = convert<T>(sb[0][tx]);
  }
}

template <class T>
const T* cptr(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// The forward over M rows of N (a warp or a block per row).
template <class T>
void rows_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps,
                  Affine aff, const char* op) {
  using A = opmath_t<T>;
  const Stream stream = current_stream(x.device());
  if (N <= kWarpRowMax) {
    uses_collectives(&layer_norm_kernel<T, false>);
    launch_kernel("layer_norm_kernel", &layer_norm_kernel<T, false>,
                  dim3(blocks_for(M, kRowsPerBlock)), dim3(32 * kRowsPerBlock), 0, stream,
                  cptr<T>(x), cptr<T>(weight), cptr<T>(bias), mptr<T>(y), mptr<A>(mean),
                  mptr<A>(rstd), M, N, static_cast<A>(eps), aff);
  } else if (aff.groups == 0 && row_shape<T>(N).threads > 0 &&
             rows_fit_vectors<T>(N, {x.data_ptr(), y.data_ptr(), cptr<T>(weight), cptr<T>(bias)})) {
    EMBER_CHECK(M <= INT32_MAX, op, ": ", M, " rows; the CUDA kernel takes up to 2^31 - 1");
    dispatch_row_shape(row_shape<T>(N), [&](auto threads, auto vecs) {
      constexpr int kThreads = decltype(threads)::value;
      const auto kernel = &layer_norm_cached_kernel<T, kThreads, decltype(vecs)::value>;
      uses_collectives(kernel);
      launch_kernel("layer_norm_kernel", kernel, dim3(static_cast<unsigned>(M)), dim3(kThreads), 0,
                    stream, cptr<T>(x), cptr<T>(weight), cptr<T>(bias), mptr<T>(y), mptr<A>(mean),
                    mptr<A>(rstd), N, static_cast<A>(eps));
    });
  } else {
    EMBER_CHECK(M <= INT32_MAX, op, ": ", M, " rows; the CUDA kernel takes up to 2^31 - 1");
    uses_collectives(&layer_norm_kernel<T, true>);
    launch_kernel("layer_norm_kernel", &layer_norm_kernel<T, true>, dim3(static_cast<unsigned>(M)),
                  dim3(kBlockThreads), 0, stream, cptr<T>(x), cptr<T>(weight), cptr<T>(bias),
                  mptr<T>(y), mptr<A>(mean), mptr<A>(rstd), M, N, static_cast<A>(eps), aff);
  }
}

// dx over M rows of N.
template <class T>
void rows_dx(const Tensor& grad_input, const Tensor& grad_out, const Tensor& x, const Tensor& mean,
             const Tensor& rstd, const Tensor& weight, int64_t M, int64_t N, Affine aff,
             const char* op) {
  using A = opmath_t<T>;
  const Stream stream = current_stream(x.device());
  const T *g = cptr<T>(grad_out), *xp = cptr<T>(x), *w = cptr<T>(weight);
  const A *m = cptr<A>(mean), *r = cptr<A>(rstd);
  if (N <= kWarpRowMax) {
    uses_collectives(&layer_norm_dx_kernel<T, false>);
    launch_kernel("layer_norm_dx_kernel", &layer_norm_dx_kernel<T, false>,
                  dim3(blocks_for(M, kRowsPerBlock)), dim3(32 * kRowsPerBlock), 0, stream, g, xp, m,
                  r, w, mptr<T>(grad_input), M, N, aff);
  } else {
    EMBER_CHECK(M <= INT32_MAX, op, ": ", M, " rows; the CUDA kernel takes up to 2^31 - 1");
    uses_collectives(&layer_norm_dx_kernel<T, true>);
    launch_kernel("layer_norm_dx_kernel", &layer_norm_dx_kernel<T, true>,
                  dim3(static_cast<unsigned>(M)), dim3(kBlockThreads), 0, stream, g, xp, m, r, w,
                  mptr<T>(grad_input), M, N, aff);
  }
}

void layer_norm_cuda(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                     const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps) {
  DeviceGuard guard(x.device());
  EMBER_DISPATCH_FLOATING(x.dtype(), "layer_norm", [&] {
    rows_forward<scalar_t>(y, mean, rstd, x, weight, bias, M, N, eps, Affine{}, "layer_norm");
  });
}

void layer_norm_backward_cuda(const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                              int64_t M, int64_t N) {
  DeviceGuard guard(x.device());
  const Stream stream = current_stream(x.device());
  EMBER_DISPATCH_FLOATING(x.dtype(), "layer_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    if (grad_input.defined())
      rows_dx<T>(grad_input, grad_out, x, mean, rstd, weight, M, N, Affine{},
                 "layer_norm_backward");
    if (grad_weight.defined() || grad_bias.defined()) {
      uses_collectives(&layer_norm_dwdb_kernel<T>);
      launch_kernel("layer_norm_dwdb_kernel", &layer_norm_dwdb_kernel<T>, dim3(blocks_for(N, 32)),
                    dim3(32, kColRows), 0, stream, cptr<T>(grad_out), cptr<T>(x), cptr<A>(mean),
                    cptr<A>(rstd), mptr<T>(grad_weight), mptr<T>(grad_bias), M, N);
    }
  });
}

// ---- batch_norm: a block of kBlockThreads per channel ---------------------------------------

// Element k < N * L of channel c of x (N, C, L).
__device__ __forceinline__ int64_t channel_offset(int64_t k, int64_t c, int64_t C, int64_t L) {
  return ((k / L) * C + c) * L + k % L;
}

// y from x (N, C, L); mean, rstd (C) out; rm, rv: running statistics (null when absent).
template <class T>
__global__ void batch_norm_kernel(const T* x, const T* w, const T* b, T* rm, T* rv, T* y,
                                  opmath_t<T>* mean, opmath_t<T>* rstd, int64_t N, int64_t C,
                                  int64_t L, bool training, opmath_t<T> f, opmath_t<T> eps) {
  using A = opmath_t<T>;
  using Op = math::WelfordOp<A>;
  using S = math::WelfordState<A>;
  EMBER_SHARED_ARRAY(S, partial, kWarps);
  const int64_t c = blockIdx.x, count = N * L;
  const int tid = static_cast<int>(threadIdx.x);
  A m, r;
  if (training) {
    const Op op;
    S s = op.identity();
    for (int64_t k = tid; k < count; k += kBlockThreads)
      s = op.reduce(s, convert<A>(x[channel_offset(k, c, C, L)]), k);
    s = block_all(s, WelfordMerge{}, op.identity(), partial);
    m = s.mean;
    r = A(1) / std::sqrt(s.m2 / static_cast<A>(count) + eps);
    if (tid == 0 && rm) {
      rm[c] = convert<T>((A(1) - f) * convert<A>(rm[c]) + f * m);
      rv[c] = convert<T>((A(1) - f) * convert<A>(rv[c]) + f * (s.m2 / static_cast<A>(count - 1)));
    }
  } else {
    m = convert<A>(rm[c]);
    r = A(1) / std::sqrt(convert<A>(rv[c]) + eps);
  }
  if (tid == 0) {
    mean[c] = m;
    rstd[c] = r;
  }
  const A scale = w ? r * convert<A>(w[c]) : r, shift = b ? convert<A>(b[c]) : A(0);
  for (int64_t k = tid; k < count; k += kBlockThreads) {
    const int64_t o = channel_offset(k, c, C, L);
    y[o] = convert<T>((convert<A>(x[o]) - m) * scale + shift);
  }
}

// dx (training: w rstd (g - mean(g) - xhat mean(g xhat)); eval: g w rstd), dw = sum(g xhat),
// db = sum(g) per channel; any output may be null.
template <class T>
__global__ void batch_norm_backward_kernel(const T* g, const T* x, const opmath_t<T>* mean,
                                           const opmath_t<T>* rstd, const T* w, T* dx, T* dw, T* db,
                                           int64_t N, int64_t C, int64_t L, bool training) {
  using A = opmath_t<T>;
  using S = Sums<A>;
  EMBER_SHARED_ARRAY(S, partial, kWarps);
  const int64_t c = blockIdx.x, count = N * L;
  const int tid = static_cast<int>(threadIdx.x);
  const A m = mean[c], r = rstd[c], wc = w ? convert<A>(w[c]) : A(1);
  S s{A(0), A(0)};
  for (int64_t k = tid; k < count; k += kBlockThreads) {
    const int64_t o = channel_offset(k, c, C, L);
    const A gi = convert<A>(g[o]);
    s.a += gi;
    s.b += gi * ((convert<A>(x[o]) - m) * r);
  }
  s = block_all(s, SumsMerge{}, S{A(0), A(0)}, partial);
  if (tid == 0) {
    if (dw) dw[c] = convert<T>(s.b);
    if (db) db[c] = convert<T>(s.a);
  }
  if (!dx) return;
  const A inv_n = A(1) / static_cast<A>(count);
  const A mean_g = s.a * inv_n, mean_gx = s.b * inv_n;
  for (int64_t k = tid; k < count; k += kBlockThreads) {
    const int64_t o = channel_offset(k, c, C, L);
    const A gi = convert<A>(g[o]);
    const A v =
        training ? wc * r * (gi - mean_g - (convert<A>(x[o]) - m) * r * mean_gx) : gi * wc * r;
    dx[o] = convert<T>(v);
  }
}

// mean[c] = rm[c], rstd[c] = 1 / sqrt(rv[c] + eps): eval's statistics beside cuDNN's forward.
template <class T>
__global__ void batch_norm_eval_stats_kernel(const T* rm, const T* rv, opmath_t<T>* mean,
                                             opmath_t<T>* rstd, int64_t C, opmath_t<T> eps) {
  using A = opmath_t<T>;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  mean[c] = convert<A>(rm[c]);
  rstd[c] = A(1) / std::sqrt(convert<A>(rv[c]) + eps);
}

void batch_norm_ember(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                      const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, int64_t N, int64_t C, int64_t L, bool training,
                      double f, double eps, const Stream& stream) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    uses_collectives(&batch_norm_kernel<T>);
    launch_kernel("batch_norm_kernel", &batch_norm_kernel<T>, dim3(static_cast<unsigned>(C)),
                  dim3(kBlockThreads), 0, stream, cptr<T>(x), cptr<T>(weight), cptr<T>(bias),
                  mptr<T>(running_mean), mptr<T>(running_var), mptr<T>(y), mptr<A>(mean),
                  mptr<A>(rstd), N, C, L, training, static_cast<A>(f), static_cast<A>(eps));
  });
}

// cuDNN's forward (float32 only: cudnn_batch_norm_supported), with eval's mean and rstd.
void batch_norm_cudnn(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                      const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, int64_t N, int64_t C, int64_t L, bool training,
                      double f, double eps, const Stream& stream) {
  cudnn_batch_norm_forward(y, mean, rstd, x, weight, bias, running_mean, running_var, N, C, L,
                           training, f, eps);
  if (training) return;
  launch_kernel("batch_norm_eval_stats_kernel", &batch_norm_eval_stats_kernel<float>,
                dim3(blocks_for(C, kBlockThreads)), dim3(kBlockThreads), 0, stream,
                cptr<float>(running_mean), cptr<float>(running_var), mptr<float>(mean),
                mptr<float>(rstd), C, static_cast<float>(eps));
}

void batch_norm_cuda(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                     const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, int64_t N, int64_t C, int64_t L, bool training,
                     double f, double eps) {
  EMBER_CHECK(C <= INT32_MAX, "batch_norm: ", C, " channels; the CUDA kernel takes up to 2^31 - 1");
  const Device device = x.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  // auto's timing runs move clones of the running statistics (Note [Norm backends on CUDA]).
  Tensor rm, rv;
  auto scratch = [&] {
    if (!rm.defined() && running_mean.defined()) rm = native::clone(running_mean);
    if (!rv.defined() && running_var.defined()) rv = native::clone(running_var);
  };
  auto time_ember = [&] {
    scratch();
    batch_norm_ember(y, mean, rstd, x, weight, bias, rm, rv, N, C, L, training, f, eps, stream);
  };
  auto time_cudnn = [&] {
    scratch();
    batch_norm_cudnn(y, mean, rstd, x, weight, bias, rm, rv, N, C, L, training, f, eps, stream);
  };
  auto key = [&] {
    std::ostringstream k;
    k << "batch_norm " << (training ? "training " : "eval ") << dtype_name(x.dtype()) << " N=" << N
      << " C=" << C << " L=" << L << (weight.defined() ? "" : " no-weight")
      << (bias.defined() ? "" : " no-bias") << (running_mean.defined() ? "" : " no-running");
    return k.str();
  };
  const bool supported =
      cudnn_batch_norm_supported(x, running_mean, running_var, N, C, L, training, eps);
  if (choose_norm_cudnn("batch_norm", key, supported, stream, time_ember, time_cudnn)) {
    batch_norm_cudnn(y, mean, rstd, x, weight, bias, running_mean, running_var, N, C, L, training,
                     f, eps, stream);
  } else {
    batch_norm_ember(y, mean, rstd, x, weight, bias, running_mean, running_var, N, C, L, training,
                     f, eps, stream);
  }
}

void batch_norm_backward_cuda(const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                              int64_t N, int64_t C, int64_t L, bool training) {
  EMBER_CHECK(C <= INT32_MAX, "batch_norm_backward: ", C,
              " channels; the CUDA kernel takes up to 2^31 - 1");
  const Device device = x.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  EMBER_DISPATCH_FLOATING(x.dtype(), "batch_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    uses_collectives(&batch_norm_backward_kernel<T>);
    launch_kernel("batch_norm_backward_kernel", &batch_norm_backward_kernel<T>,
                  dim3(static_cast<unsigned>(C)), dim3(kBlockThreads), 0, stream, cptr<T>(grad_out),
                  cptr<T>(x), cptr<A>(mean), cptr<A>(rstd), cptr<T>(weight), mptr<T>(grad_input),
                  mptr<T>(grad_weight), mptr<T>(grad_bias), N, C, L, training);
  });
}

// ---- group_norm: layer_norm's row kernels over (N * G) rows, per-channel affine -------------

// dw[c] = sum g xhat, db[c] = sum g over channel c's N * L elements; xhat with the statistics
// of row (n, c / (C / G)). A block of kBlockThreads per channel.
template <class T>
__global__ void group_norm_dwdb_kernel(const T* g, const T* x, const opmath_t<T>* mean,
                                       const opmath_t<T>* rstd, T* dw, T* db, int64_t N, int64_t C,
                                       int64_t L, int64_t G) {
  using A = opmath_t<T>;
  using S = Sums<A>;
  EMBER_SHARED_ARRAY(S, partial, kWarps);
  const int64_t c = blockIdx.x, count = N * L, group = c / (C / G);
  S s{A(0), A(0)};
  for (int64_t k = threadIdx.x; k < count; k += kBlockThreads) {
    const int64_t n = k / L, o = (n * C + c) * L + k % L, row = n * G + group;
    const A gi = convert<A>(g[o]);
    s.a += gi;
    s.b += gi * ((convert<A>(x[o]) - mean[row]) * rstd[row]);
  }
  s = block_all(s, SumsMerge{}, S{A(0), A(0)}, partial);
  if (threadIdx.x == 0) {
    if (dw) dw[c] = convert<T>(s.b);
    if (db) db[c] = convert<T>(s.a);
  }
}

void group_norm_cuda(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                     const Tensor& weight, const Tensor& bias, int64_t N, int64_t C, int64_t L,
                     int64_t G, double eps) {
  DeviceGuard guard(x.device());
  EMBER_DISPATCH_FLOATING(x.dtype(), "group_norm", [&] {
    rows_forward<scalar_t>(y, mean, rstd, x, weight, bias, N * G, C / G * L, eps,
                           Affine{G, C / G, L}, "group_norm");
  });
}

void group_norm_backward_cuda(const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                              int64_t N, int64_t C, int64_t L, int64_t G) {
  EMBER_CHECK(C <= INT32_MAX, "group_norm_backward: ", C,
              " channels; the CUDA kernel takes up to 2^31 - 1");
  DeviceGuard guard(x.device());
  const Stream stream = current_stream(x.device());
  EMBER_DISPATCH_FLOATING(x.dtype(), "group_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    if (grad_input.defined())
      rows_dx<T>(grad_input, grad_out, x, mean, rstd, weight, N * G, C / G * L, Affine{G, C / G, L},
                 "group_norm_backward");
    if (grad_weight.defined() || grad_bias.defined()) {
      uses_collectives(&group_norm_dwdb_kernel<T>);
      launch_kernel("group_norm_dwdb_kernel", &group_norm_dwdb_kernel<T>,
                    dim3(static_cast<unsigned>(C)), dim3(kBlockThreads), 0, stream,
                    cptr<T>(grad_out), cptr<T>(x), cptr<A>(mean), cptr<A>(rstd),
                    mptr<T>(grad_weight), mptr<T>(grad_bias), N, C, L, G);
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(group_norm_stub, DeviceType::CUDA, group_norm_cuda);
EMBER_REGISTER_KERNEL(group_norm_backward_stub, DeviceType::CUDA, group_norm_backward_cuda);
EMBER_REGISTER_KERNEL(batch_norm_stub, DeviceType::CUDA, batch_norm_cuda);
EMBER_REGISTER_KERNEL(batch_norm_backward_stub, DeviceType::CUDA, batch_norm_backward_cuda);
EMBER_REGISTER_KERNEL(layer_norm_stub, DeviceType::CUDA, layer_norm_cuda);
EMBER_REGISTER_KERNEL(layer_norm_backward_stub, DeviceType::CUDA, layer_norm_backward_cuda);

}  // namespace ember::kernels::cuda
