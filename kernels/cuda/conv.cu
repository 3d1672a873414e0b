// CUDA kernels for conv2d's forward and backward (conv2d_fn, conv2d_backward_fn in
// core/ops/conv.h): every product is one implicit-GEMM kernel.
//
// Note [Implicit GEMM convolution]
// conv2d of group g is the product  out (N * OH * OW, Og) = A (N * OH * OW, K) @ B (K, Og)  with
// K = Cg * KH * KW, A the im2col matrix of the input (row m = (n, oh, ow), column k = (c, i, j)
// holds input[n, g * Cg + c, oh * sh - ph + i * dh, ow * sw - pw + j * dw], 0 in the padding)
// and B[k, o] = weight[g * Og + o, c, i, j]. The kernel never stores A: a block computes a
// 64 x 64 tile of the product, and for each step of 16 along K its 256 threads gather the
// (16, 64) slice of A straight from the input (the bounds test is the padding) and the (16, 64)
// slice of B into shared memory; each thread then accumulates a 4 x 4 sub-tile in registers
// (rows tx + 16 a, columns ty + 16 b, so that neighbouring threads store neighbouring output
// positions). The three products of the convolution differ only in how A and B are gathered
// and where the result goes, so one kernel template takes a "problem" with four device
// functions (row / a: the thread's row of A decoded once, then its element at k; col / b: the
// same for B; store):
// - forward: rows (n, oh, ow), columns o, depth (c, i, j); bias added at the store;
// - grad_input, the transposed product: rows (n, ih, iw), columns c, depth (o, i, j) with
//   A[(n, ih, iw), (o, i, j)] = grad_out[n, o, oh, ow] where oh * sh = ih + ph - i * dh (0 when
//   that has no integer solution in range) and B = weight[o, c, i, j]: col2im never happens;
// - grad_weight: rows (c, i, j), columns o, depth (n, oh, ow) -- the reduction runs over the
//   batch and every position, so the depth is split into chunks ("split-K"), each block writing
//   its partial (O, K) product to a scratch slice, and a second kernel sums the slices in slice
//   order. The split depends only on the shapes.
// grad_bias is a block per output channel summing over (n, oh, ow) in a fixed tree. Each output
// element is written by one thread after a fixed-order sum, so every kernel here is
// deterministic (no atomics) and core/determinism.h has nothing to switch. Groups are the grid's
// z dimension (times the split for grad_weight). float32 and float64 (core computes the 16-bit
// types in float32); the sums run in the input's dtype, in a different order than the CPU's
// GEMM, so results match the CPU to rounding, not bit for bit.
//
// Note [Conv backends on CUDA]
// conv2d_cuda and conv2d_backward_cuda ask core/conv_backend.h which implementation runs each
// pass (forward, grad_input, grad_weight): ember's kernels above, or cuDNN
// (kernels/cuda/conv_cudnn.h; the bias is always ember's: added after cuDNN's forward, and
// grad_bias is bias_grad_kernel). In `auto` the first call of a pass for one shape, dtype and
// deterministic setting runs both once to warm up, then times kTimedRuns of each between events,
// caches the faster under that key and prints one line to stderr.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "core/allocator.h"
#include "core/conv_backend.h"
#include "core/determinism.h"
#include "core/ops/conv.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/conv_cudnn.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;            // 16 x 16 threads, each a 4 x 4 sub-tile
constexpr int kTileM = 64, kTileN = 64;  // the block's tile of the product
constexpr int kTileK = 16;               // the depth of one shared-memory step
constexpr int64_t kMinSplitDepth = 256;  // grad_weight: depth per split at least this
constexpr int64_t kTargetBlocks = 256;   // grad_weight: split until about this many blocks
constexpr int64_t kMaxGridYZ = 65535;

// The shapes of one convolution, as kernel parameters.
struct ConvGeom {
  int64_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, Cg, Og;
  __host__ __device__ int64_t HW() const { return H * W; }
  __host__ __device__ int64_t L() const { return OH * OW; }
  __host__ __device__ int64_t KK() const { return KH * KW; }
};

ConvGeom make_geom(const Tensor& input_like, int64_t O, const Window2d& g, int64_t groups) {
  ConvGeom q{};
  q.N = input_like.size(0);
  q.C = input_like.size(1);
  q.H = g.in_h;
  q.W = g.in_w;
  q.O = O;
  q.OH = g.out_h;
  q.OW = g.out_w;
  q.KH = g.kh;
  q.KW = g.kw;
  q.sh = g.sh;
  q.sw = g.sw;
  q.ph = g.ph;
  q.pw = g.pw;
  q.dh = g.dh;
  q.dw = g.dw;
  q.Cg = q.C / groups;
  q.Og = O / groups;
  return q;
}

// ---- the problems of Note [Implicit GEMM convolution] ----------------------------------------

// A decoded row of A or column of B: a base offset, two coordinates and whether it exists.
struct Line {
  int64_t base, u, v;
  bool valid;
};

// out (N, O, OH, OW) = conv2d(x (N, C, H, W), w (O, Cg, KH, KW)) + bias.
template <class T>
struct ForwardProblem {
  const T* x;
  const T* w;
  const T* bias;  // or null
  T* y;
  ConvGeom q;

  __device__ Line row(int64_t grp, int64_t m, int64_t rows) const {
    if (m >= rows) return {0, 0, 0, false};
    const int64_t n = m / q.L(), l = m % q.L();
    const int64_t oh = l / q.OW, ow = l % q.OW;
    return {(n * q.C + grp * q.Cg) * q.HW(), oh * q.sh - q.ph, ow * q.sw - q.pw, true};
  }
  __device__ T a(const Line& r, int64_t k) const {
    if (!r.valid) return T(0);
    const int64_t c = k / q.KK(), ij = k % q.KK();
    const int64_t ih = r.u + (ij / q.KW) * q.dh, iw = r.v + (ij % q.KW) * q.dw;
    if (ih < 0 || ih >= q.H || iw < 0 || iw >= q.W) return T(0);
    return x[r.base + c * q.HW() + ih * q.W + iw];
  }
  __device__ Line col(int64_t grp, int64_t o, int64_t cols) const {
    if (o >= cols) return {0, 0, 0, false};
    return {(grp * q.Og + o) * q.Cg * q.KK(), 0, 0, true};
  }
  __device__ T b(const Line& c, int64_t k) const { return c.valid ? w[c.base + k] : T(0); }
  __device__ void store(int64_t grp, int64_t /*split*/, int64_t m, int64_t o, T v) const {
    const int64_t n = m / q.L(), l = m % q.L(), oc = grp * q.Og + o;
    y[(n * q.O + oc) * q.L() + l] = bias != nullptr ? v + bias[oc] : v;
  }
};

// grad_input (N, C, H, W) from grad_out gy (N, O, OH, OW) and w (O, Cg, KH, KW).
template <class T>
struct GradInputProblem {
  const T* gy;
  const T* w;
  T* gx;
  ConvGeom q;

  __device__ Line row(int64_t grp, int64_t m, int64_t rows) const {
    if (m >= rows) return {0, 0, 0, false};
    const int64_t n = m / q.HW(), rem = m % q.HW();
    return {(n * q.O + grp * q.Og) * q.L(), rem / q.W + q.ph, rem % q.W + q.pw, true};
  }
  __device__ T a(const Line& r, int64_t k) const {
    if (!r.valid) return T(0);
    const int64_t o = k / q.KK(), ij = k % q.KK();
    const int64_t th = r.u - (ij / q.KW) * q.dh, tw = r.v - (ij % q.KW) * q.dw;
    if (th < 0 || tw < 0 || th % q.sh != 0 || tw % q.sw != 0) return T(0);
    const int64_t oh = th / q.sh, ow = tw / q.sw;
    if (oh >= q.OH || ow >= q.OW) return T(0);
    return gy[r.base + o * q.L() + oh * q.OW + ow];
  }
  __device__ Line col(int64_t grp, int64_t c, int64_t cols) const {
    if (c >= cols) return {0, 0, 0, false};
    return {(grp * q.Og * q.Cg + c) * q.KK(), 0, 0, true};
  }
  __device__ T b(const Line& c, int64_t k) const {
    if (!c.valid) return T(0);
    const int64_t o = k / q.KK(), ij = k % q.KK();
    return w[c.base + o * q.Cg * q.KK() + ij];
  }
  __device__ void store(int64_t grp, int64_t /*split*/, int64_t m, int64_t c, T v) const {
    const int64_t n = m / q.HW(), rem = m % q.HW();
    gx[(n * q.C + grp * q.Cg + c) * q.HW() + rem] = v;
  }
};

// grad_weight (O, Cg, KH, KW), transposed as rows (c, i, j) by columns o, from x (N, C, H, W)
// and gy (N, O, OH, OW); split s of the depth goes to dst + s * O * Cg * KH * KW.
template <class T>
struct GradWeightProblem {
  const T* x;
  const T* gy;
  T* dst;
  ConvGeom q;

  __device__ Line row(int64_t grp, int64_t kr, int64_t rows) const {
    if (kr >= rows) return {0, 0, 0, false};
    const int64_t c = kr / q.KK(), ij = kr % q.KK();
    return {(grp * q.Cg + c) * q.HW(), (ij / q.KW) * q.dh - q.ph, (ij % q.KW) * q.dw - q.pw, true};
  }
  __device__ T a(const Line& r, int64_t depth) const {
    if (!r.valid) return T(0);
    const int64_t n = depth / q.L(), l = depth % q.L();
    const int64_t ih = (l / q.OW) * q.sh + r.u, iw = (l % q.OW) * q.sw + r.v;
    if (ih < 0 || ih >= q.H || iw < 0 || iw >= q.W) return T(0);
    return x[n * q.C * q.HW() + r.base + ih * q.W + iw];
  }
  __device__ Line col(int64_t grp, int64_t o, int64_t cols) const {
    if (o >= cols) return {0, 0, 0, false};
    return {(grp * q.Og + o) * q.L(), 0, 0, true};
  }
  __device__ T b(const Line& c, int64_t depth) const {
    if (!c.valid) return T(0);
    const int64_t n = depth / q.L(), l = depth % q.L();
    return gy[n * q.O * q.L() + c.base + l];
  }
  __device__ void store(int64_t grp, int64_t split, int64_t kr, int64_t o, T v) const {
    const int64_t K = q.Cg * q.KK();
    dst[split * q.O * K + (grp * q.Og + o) * K + kr] = v;
  }
};

// ---- the kernel ------------------------------------------------------------------------------

// One (kTileM, kTileN) tile of problem p's product (rows, cols) over its depth range
// [split * depth_chunk, min(depth, (split + 1) * depth_chunk)). blockIdx.z = split * groups + g.
template <class T, class P>
__global__ void implicit_gemm_kernel(P p, int64_t rows, int64_t cols, int64_t depth, int64_t groups,
                                     int64_t depth_chunk) {
  EMBER_SHARED_ARRAY(T, As, kTileK, kTileM);
  EMBER_SHARED_ARRAY(T, Bs, kTileK, kTileN);
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t grp = blockIdx.z % groups, split = blockIdx.z / groups;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTileM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTileN;
  const int64_t k_begin = split * depth_chunk;
  const int64_t k_end = depth < k_begin + depth_chunk ? depth : k_begin + depth_chunk;

  // The loads: this thread fetches row lm of A's slice at depths lk, lk + 4, ... and column ln
  // of B's slice likewise; its row and column are decoded once.
  constexpr int kStepA = kThreads / kTileM, kStepB = kThreads / kTileN;
  const int lm = tid % kTileM, lk = tid / kTileM;
  const int ln = tid % kTileN, lkb = tid / kTileN;
  const Line arow = p.row(grp, m0 + lm, rows);
  const Line bcol = p.col(grp, n0 + ln, cols);

  const int tx = tid % 16, ty = tid / 16;
  T acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = T(0);

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kTileK) {
    for (int kk = lk; kk < kTileK; kk += kStepA)
      As[kk][lm] = k0 + kk < k_end ? p.a(arow, k0 + kk) : T(0);
    for (int kk = lkb; kk < kTileK; kk += kStepB)
      Bs[kk][ln] = k0 + kk < k_end ? p.b(bcol, k0 + kk) : T(0);
    __syncthreads();
    for (int kk = 0; kk < kTileK; ++kk) {
      T av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][tx + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][ty + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + tx + 16 * i;
    if (m >= rows) continue;
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + ty + 16 * j;
      if (n < cols) p.store(grp, split, m, n, acc[i][j]);
    }
  }
}

template <class T, class P>
void launch_implicit_gemm(const char* name, const P& p, int64_t rows, int64_t cols, int64_t depth,
                          int64_t groups, int64_t splits, int64_t depth_chunk,
                          const Stream& stream) {
  const int64_t gx = (rows + kTileM - 1) / kTileM, gy = (cols + kTileN - 1) / kTileN;
  EMBER_CHECK(gx <= INT32_MAX && gy <= kMaxGridYZ && groups * splits <= kMaxGridYZ, name,
              ": the product (", rows, " x ", cols, ", ", groups, " groups) exceeds the grid");
  launch_kernel(name, &implicit_gemm_kernel<T, P>,
                dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                     static_cast<unsigned>(groups * splits)),
                dim3(kThreads), 0, stream, p, rows, cols, depth, groups, depth_chunk);
}

// gw[e] = sum over s < splits of partial[s * n + e], in split order.
template <class T>
__global__ void sum_splits_kernel(const T* partial, T* gw, int64_t n, int64_t splits) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n) return;
  T s = partial[e];
  for (int64_t k = 1; k < splits; ++k) s += partial[k * n + e];
  gw[e] = s;
}

// gb[o] = sum over (n, l) of gy[n, o, l]: block o, a strided sum per thread, then a tree.
template <class T>
__global__ void bias_grad_kernel(const T* gy, T* gb, int64_t N, int64_t O, int64_t L) {
  EMBER_SHARED_ARRAY(T, part, kThreads);
  const int64_t o = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  T s = T(0);
  for (int64_t e = tid; e < N * L; e += kThreads) s += gy[((e / L) * O + o) * L + e % L];
  part[tid] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (tid < half) part[tid] += part[tid + half];
    __syncthreads();
  }
  if (tid == 0) gb[o] = part[0];
}

// y[n, o, l] += bias[o] over y (N, O, L); n elements.
template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, int64_t n, int64_t O, int64_t L) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < n) y[e] += bias[e / L % O];
}

// ---- Note [Conv backends on CUDA] ------------------------------------------------------------

constexpr int kTimedRuns = 3;

// Milliseconds per run of `run` on `stream`, timed with events.
double time_ms(const Stream& stream, const std::function<void()>& run) {
  NativeStream ns = native_stream(stream);
  NativeEvent start = event_create(stream.device().index, true);
  NativeEvent end = event_create(stream.device().index, true);
  event_record(start, ns);
  for (int r = 0; r < kTimedRuns; ++r) run();
  event_record(end, ns);
  event_synchronize(end);
  const double ms = event_elapsed_ms(start, end) / kTimedRuns;
  event_destroy(start);
  event_destroy(end);
  return ms;
}

// Whether `pass` of this convolution runs cuDNN: the backend's answer, timed once per key in
// `auto` (where cuDNN is not built, ember).
bool choose_cudnn(const char* pass, DType dtype, int64_t N, int64_t C, int64_t O, const Window2d& g,
                  int64_t groups, const Stream& stream, const std::function<void()>& run_ember,
                  const std::function<void()>& run_cudnn) {
  switch (conv_backend()) {
    case ConvBackend::ember:
      return false;
    case ConvBackend::cudnn:
      return true;
    case ConvBackend::automatic:
      break;
  }
  if (!cudnn_available()) return false;
  std::ostringstream key;
  key << pass << " " << dtype_name(dtype) << " N=" << N << " C=" << C << " H=" << g.in_h
      << " W=" << g.in_w << " O=" << O << " k=" << g.kh << "x" << g.kw << " s=" << g.sh << ","
      << g.sw << " p=" << g.ph << "," << g.pw << " d=" << g.dh << "," << g.dw << " g=" << groups
      << (are_deterministic_algorithms_enabled() ? " deterministic" : "");
  static std::mutex mu;
  static std::map<std::string, bool> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key.str());
    if (it != cache.end()) return it->second;
  }
  run_ember();
  run_cudnn();
  const double ember_ms = time_ms(stream, run_ember), cudnn_ms = time_ms(stream, run_cudnn);
  const bool use = cudnn_ms < ember_ms;
  std::fprintf(stderr, "ember conv auto: %s -> %s (ember %.4f ms, cudnn %.4f ms)\n",
               key.str().c_str(), use ? "cudnn" : "ember", ember_ms, cudnn_ms);
  profiler::mark("conv autotune: " + key.str() + " -> " + (use ? "cudnn" : "ember"));
  std::lock_guard<std::mutex> lock(mu);
  cache[key.str()] = use;
  return use;
}

template <class T>
void conv2d_typed(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Window2d& g, int64_t groups) {
  const ConvGeom q = make_geom(input, weight.size(0), g, groups);
  const Stream stream = current_stream(input.device());
  ForwardProblem<T> p{input.data_ptr<T>(), weight.data_ptr<T>(),
                      bias.defined() ? bias.data_ptr<T>() : nullptr, out.data_ptr<T>(), q};
  const int64_t depth = q.Cg * q.KK();
  auto run_ember = [&] {
    launch_implicit_gemm<T>("conv2d_forward_kernel", p, q.N * q.L(), q.Og, depth, groups, 1, depth,
                            stream);
  };
  auto run_cudnn = [&] {
    cudnn_conv2d_forward(input, weight, out, g, groups);
    if (bias.defined()) {
      const int64_t n = out.numel();
      launch_kernel("conv2d_add_bias_kernel", &add_bias_kernel<T>, dim3(blocks_for(n, kThreads)),
                    dim3(kThreads), 0, stream, out.data_ptr<T>(), bias.data_ptr<T>(), n, q.O,
                    q.L());
    }
  };
  if (choose_cudnn("forward", input.dtype(), q.N, q.C, q.O, g, groups, stream, run_ember,
                   run_cudnn)) {
    run_cudnn();
  } else {
    run_ember();
  }
}

void conv2d_cuda(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                 const Window2d& g, int64_t groups) {
  DeviceGuard guard(input.device());
  switch (input.dtype()) {
    case kFloat32:
      return conv2d_typed<float>(input, weight, bias, out, g, groups);
    case kFloat64:
      return conv2d_typed<double>(input, weight, bias, out, g, groups);
    default:
      EMBER_ERROR("conv2d: the CUDA kernel takes float32 or float64, got ",
                  dtype_name(input.dtype()));
  }
}

template <class T>
void conv2d_backward_typed(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                           const Tensor& grad_input, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Window2d& g, int64_t groups) {
  const Stream stream = current_stream(grad_out.device());
  // input may be undefined (no weight gradient): its shape is grad_input's or implied.
  const int64_t N = grad_out.size(0), O = grad_out.size(1), C = weight.size(1) * groups;
  ConvGeom q = make_geom(grad_out, O, g, groups);
  q.C = C;
  q.Cg = weight.size(1);
  q.N = N;
  const T* gy = grad_out.data_ptr<T>();
  if (grad_input.defined()) {
    GradInputProblem<T> p{gy, weight.data_ptr<T>(), grad_input.data_ptr<T>(), q};
    const int64_t depth = q.Og * q.KK();
    auto run_ember = [&] {
      launch_implicit_gemm<T>("conv2d_grad_input_kernel", p, N * q.HW(), q.Cg, depth, groups, 1,
                              depth, stream);
    };
    auto run_cudnn = [&] { cudnn_conv2d_backward_data(grad_out, weight, grad_input, g, groups); };
    if (choose_cudnn("grad_input", grad_out.dtype(), N, C, O, g, groups, stream, run_ember,
                     run_cudnn)) {
      run_cudnn();
    } else {
      run_ember();
    }
  }
  auto grad_weight_ember = [&] {
    const int64_t rows = q.Cg * q.KK(), depth = N * q.L();
    const int64_t tiles = ((rows + kTileM - 1) / kTileM) * ((q.Og + kTileN - 1) / kTileN) * groups;
    int64_t splits = std::min<int64_t>((kTargetBlocks + tiles - 1) / tiles,
                                       (depth + kMinSplitDepth - 1) / kMinSplitDepth);
    splits = std::clamp<int64_t>(splits, 1, kMaxGridYZ / groups);
    int64_t chunk = (depth + splits - 1) / splits;
    chunk = (chunk + kTileK - 1) / kTileK * kTileK;
    splits = (depth + chunk - 1) / chunk;
    DataPtr scratch;
    T* dst = grad_weight.data_ptr<T>();
    const int64_t n = grad_weight.numel();
    if (splits > 1) {
      scratch = get_allocator(DeviceType::CUDA)
                    ->allocate(static_cast<size_t>(splits * n) * sizeof(T), stream);
      dst = static_cast<T*>(scratch.get());
    }
    GradWeightProblem<T> p{input.data_ptr<T>(), gy, dst, q};
    launch_implicit_gemm<T>("conv2d_grad_weight_kernel", p, rows, q.Og, depth, groups, splits,
                            chunk, stream);
    if (splits > 1) {
      launch_kernel("conv2d_sum_splits_kernel", &sum_splits_kernel<T>,
                    dim3(blocks_for(n, kThreads)), dim3(kThreads), 0, stream,
                    static_cast<const T*>(dst), grad_weight.data_ptr<T>(), n, splits);
    }
  };
  if (grad_weight.defined()) {
    auto run_cudnn = [&] { cudnn_conv2d_backward_filter(grad_out, input, grad_weight, g, groups); };
    if (choose_cudnn("grad_weight", grad_out.dtype(), N, C, O, g, groups, stream, grad_weight_ember,
                     run_cudnn)) {
      run_cudnn();
    } else {
      grad_weight_ember();
    }
  }
  if (grad_bias.defined()) {
    launch_kernel("conv2d_grad_bias_kernel", &bias_grad_kernel<T>, dim3(static_cast<unsigned>(O)),
                  dim3(kThreads), 0, stream, gy, grad_bias.data_ptr<T>(), N, O, q.L());
  }
}

void conv2d_backward_cuda(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                          const Tensor& grad_input, const Tensor& grad_weight,
                          const Tensor& grad_bias, const Window2d& g, int64_t groups) {
  DeviceGuard guard(grad_out.device());
  switch (grad_out.dtype()) {
    case kFloat32:
      return conv2d_backward_typed<float>(grad_out, input, weight, grad_input, grad_weight,
                                          grad_bias, g, groups);
    case kFloat64:
      return conv2d_backward_typed<double>(grad_out, input, weight, grad_input, grad_weight,
                                           grad_bias, g, groups);
    default:
      EMBER_ERROR("conv2d_backward: the CUDA kernel takes float32 or float64, got ",
                  dtype_name(grad_out.dtype()));
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(conv2d_stub, DeviceType::CUDA, conv2d_cuda);
EMBER_REGISTER_KERNEL(conv2d_backward_stub, DeviceType::CUDA, conv2d_backward_cuda);

}  // namespace ember::kernels::cuda
