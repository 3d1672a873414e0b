// cuDNN convolutions (kernels/cuda/conv_cudnn.h): the legacy cuDNN 9 convolution API with a
// handle per thread and stream (kernels/cuda/cudnn_common.h), NCHW descriptors, cross-correlation,
// FMA math (no TF32, so float32 is float32 like ember's kernels), groups, and the algorithm cuDNN's
// heuristic (cudnnGet*Algorithm_v7) ranks first among those that are supported -- and, in
// deterministic mode (core/determinism.h), deterministic -- asked once per problem (Note [cuDNN
// algorithm cache]). The workspace comes from ember's caching allocator.

#include "kernels/cuda/conv_cudnn.h"

#include "core/error.h"

#if defined(EMBER_CUDA_REAL)
#include <cudnn.h>

#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/allocator.h"
#include "core/determinism.h"
#include "core/stream.h"
#include "kernels/cuda/cudnn_common.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::kernels::cuda {

#if defined(EMBER_CUDA_REAL)

namespace {

// The shared helpers (kernels/cuda/cudnn_common.h) under this file's short names.
constexpr auto& check = cudnn_check;
constexpr auto& handle_for = cudnn_handle;

// The descriptors of one convolution: x (N, C, H, W), w (O, C / groups, kh, kw),
// y (N, O, out_h, out_w).
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  const char* op;
  std::string key;  // the problem, for the algorithm cache (Note [cuDNN algorithm cache])

  Descriptors(int64_t N, int64_t C, int64_t O, const Window2d& g, int64_t groups, bool is_double,
              const char* op_name)
      : op(op_name) {
    std::ostringstream k;
    k << op_name << " " << N << " " << C << " " << O << " " << groups << " " << is_double << " "
      << g.kh << " " << g.kw << " " << g.sh << " " << g.sw << " " << g.ph << " " << g.pw << " "
      << g.dh << " " << g.dw << " " << g.in_h << " " << g.in_w << " " << g.out_h << " " << g.out_w
      << " det " << are_deterministic_algorithms_enabled();
    key = k.str();
    const cudnnDataType_t dt = is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    auto i = [](int64_t v) { return static_cast<int>(v); };
    check(cudnnCreateTensorDescriptor(&x), op, "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&y), op, "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&w), op, "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), op, "cudnnCreateConvolutionDescriptor");
    check(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, dt, i(N), i(C), i(g.in_h), i(g.in_w)),
          op, "cudnnSetTensor4dDescriptor");
    check(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, dt, i(N), i(O), i(g.out_h), i(g.out_w)),
          op, "cudnnSetTensor4dDescriptor");
    check(
        cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NCHW, i(O), i(C / groups), i(g.kh), i(g.kw)),
        op, "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(conv, i(g.ph), i(g.pw), i(g.sh), i(g.sw), i(g.dh),
                                          i(g.dw), CUDNN_CROSS_CORRELATION, dt),
          op, "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(conv, i(groups)), op, "cudnnSetConvolutionGroupCount");
    check(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), op, "cudnnSetConvolutionMathType");
  }
  ~Descriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// The first algorithm of cuDNN's ranking that ran its checks, and is deterministic where
// deterministic algorithms are on.
template <class Perf>
auto pick(const Perf* perf, int count, const char* op) -> decltype(perf[0].algo) {
  const bool det = are_deterministic_algorithms_enabled();
  for (int k = 0; k < count; ++k)
    if (perf[k].status == CUDNN_STATUS_SUCCESS &&
        (!det || perf[k].determinism == CUDNN_DETERMINISTIC))
      return perf[k].algo;
  EMBER_ERROR(op, ": cuDNN has no ", det ? "deterministic " : "", "algorithm for this convolution");
}

// Note [cuDNN algorithm cache]
// cudnnGet*Algorithm_v7 runs cuDNN's heuristics, which took longer than a small convolution
// itself (about 0.3 ms a call on an H200: bench_conv_cuda's CNN layers ran 3-17x slower through
// cuDNN than through ember before this cache). The choice depends only on the problem (pass,
// shapes, geometry, dtype, deterministic mode: Descriptors::key), so it is asked once per problem
// and kept for the process, as PyTorch keeps its per-shape choices.
template <class Algo, class Query>
Algo cached_algo(const std::string& key, Query query) {
  static std::mutex mutex;
  static std::unordered_map<std::string, int> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return static_cast<Algo>(it->second);
  }
  const Algo algo = query();
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, static_cast<int>(algo));
  return algo;
}

DataPtr workspace(size_t bytes, const Stream& stream) {
  return get_allocator(DeviceType::CUDA)->allocate(bytes > 0 ? bytes : 1, stream);
}

}  // namespace

void cudnn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& y, const Window2d& g,
                          int64_t groups) {
  const char* op = "conv2d (cudnn)";
  DeviceGuard guard(x.device());
  const Stream stream = current_stream(x.device());
  cudnnHandle_t h = handle_for(x.device(), stream, op);
  const bool dbl = x.dtype() == kFloat64;
  Descriptors d(x.size(0), x.size(1), w.size(0), g, groups, dbl, op);
  const auto algo = cached_algo<cudnnConvolutionFwdAlgo_t>(d.key, [&] {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
          op, "cudnnGetConvolutionForwardAlgorithm_v7");
    return pick(perf, count, op);
  });
  size_t bytes = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes), op,
        "cudnnGetConvolutionForwardWorkspaceSize");
  DataPtr ws = workspace(bytes, stream);
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  check(cudnnConvolutionForward(h, one, d.x, x.data_ptr(), d.w, w.data_ptr(), d.conv, algo,
                                ws.get(), bytes, zero, d.y, y.data_ptr()),
        op, "cudnnConvolutionForward");
}

void cudnn_conv2d_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx,
                                const Window2d& g, int64_t groups) {
  const char* op = "conv2d_backward (cudnn, input gradient)";
  DeviceGuard guard(gy.device());
  const Stream stream = current_stream(gy.device());
  cudnnHandle_t h = handle_for(gy.device(), stream, op);
  const bool dbl = gy.dtype() == kFloat64;
  Descriptors d(gx.size(0), gx.size(1), w.size(0), g, groups, dbl, op);
  const auto algo = cached_algo<cudnnConvolutionBwdDataAlgo_t>(d.key, [&] {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              h, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf),
          op, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    return pick(perf, count, op);
  });
  size_t bytes = 0;
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, &bytes), op,
        "cudnnGetConvolutionBackwardDataWorkspaceSize");
  DataPtr ws = workspace(bytes, stream);
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  check(cudnnConvolutionBackwardData(h, one, d.w, w.data_ptr(), d.y, gy.data_ptr(), d.conv, algo,
                                     ws.get(), bytes, zero, d.x, gx.data_ptr()),
        op, "cudnnConvolutionBackwardData");
}

void cudnn_conv2d_backward_filter(const Tensor& gy, const Tensor& x, const Tensor& gw,
                                  const Window2d& g, int64_t groups) {
  const char* op = "conv2d_backward (cudnn, weight gradient)";
  DeviceGuard guard(gy.device());
  const Stream stream = current_stream(gy.device());
  cudnnHandle_t h = handle_for(gy.device(), stream, op);
  const bool dbl = gy.dtype() == kFloat64;
  Descriptors d(x.size(0), x.size(1), gw.size(0), g, groups, dbl, op);
  const auto algo = cached_algo<cudnnConvolutionBwdFilterAlgo_t>(d.key, [&] {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              h, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf),
          op, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    return pick(perf, count, op);
  });
  size_t bytes = 0;
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo, &bytes), op,
        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  DataPtr ws = workspace(bytes, stream);
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  check(cudnnConvolutionBackwardFilter(h, one, d.x, x.data_ptr(), d.y, gy.data_ptr(), d.conv, algo,
                                       ws.get(), bytes, zero, d.w, gw.data_ptr()),
        op, "cudnnConvolutionBackwardFilter");
}

#else  // no cuDNN in this build

namespace {
[[noreturn]] void no_cudnn(const char* op) {
  EMBER_ERROR(op,
              ": the cudnn conv backend (EMBER_CONV=cudnn or set_conv_backend) needs a real "
              "CUDA build with cuDNN (EMBER_CUDA=real); this build runs the CUDA simulator");
}
}  // namespace

void cudnn_conv2d_forward(const Tensor&, const Tensor&, const Tensor&, const Window2d&, int64_t) {
  no_cudnn("conv2d");
}
void cudnn_conv2d_backward_data(const Tensor&, const Tensor&, const Tensor&, const Window2d&,
                                int64_t) {
  no_cudnn("conv2d_backward");
}
void cudnn_conv2d_backward_filter(const Tensor&, const Tensor&, const Tensor&, const Window2d&,
                                  int64_t) {
  no_cudnn("conv2d_backward");
}

#endif

}  // namespace ember::kernels::cuda
