// cuDNN softmax and batch_norm (kernels/cuda/norm_cudnn.h, Note [Norm backends on CUDA]): the
// legacy cuDNN 9 API on kernels/cuda/cudnn_common.h's handles; a softmax is (rows, n, 1, 1) in
// CUDNN_SOFTMAX_MODE_INSTANCE, a batch_norm's x (N, C, L, 1) with (1, C, 1, 1) statistics in
// CUDNN_BATCHNORM_SPATIAL.

#include "kernels/cuda/norm_cudnn.h"

#include <cstdio>
#include <limits>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/norm_backend.h"
#include "core/profiler.h"
#include "kernels/cuda/cudnn_common.h"
#include "kernels/cuda/runtime.h"

#if defined(EMBER_CUDA_REAL)
#include <cudnn.h>

#include "core/ops/factory.h"
#endif

namespace ember::kernels::cuda {

namespace {

constexpr int kTimedRuns = 3;
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

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

[[noreturn]] void no_cudnn(const char* op) {
  EMBER_ERROR(op,
              ": the cudnn norm backend (EMBER_NORM=cudnn or set_norm_backend) needs a real CUDA "
              "build with cuDNN (EMBER_CUDA=real); this build runs the CUDA simulator");
}

}  // namespace

bool choose_norm_cudnn(const char* op, const std::function<std::string()>& key_of, bool supported,
                       const Stream& stream, const std::function<void()>& run_ember,
                       const std::function<void()>& run_cudnn) {
  switch (norm_backend()) {
    case NormBackend::ember:
      return false;
    case NormBackend::cudnn:
      if (!cudnn_available()) no_cudnn(op);
      return supported;
    case NormBackend::automatic:
      break;
  }
  if (!cudnn_available() || !supported) return false;
  const std::string key = key_of();
  static std::mutex mu;
  static std::map<std::string, bool> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  run_ember();
  run_cudnn();
  const double ember_ms = time_ms(stream, run_ember), cudnn_ms = time_ms(stream, run_cudnn);
  const bool use = cudnn_ms < ember_ms;
  std::fprintf(stderr, "ember norm auto: %s -> %s (ember %.4f ms, cudnn %.4f ms)\n", key.c_str(),
               use ? "cudnn" : "ember", ember_ms, cudnn_ms);
  profiler::mark("norm autotune: " + key + " -> " + (use ? "cudnn" : "ember"));
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = use;
  return use;
}

bool cudnn_softmax_supported(const Tensor& input, int64_t dim) {
  const DType dt = input.dtype();
  if (dt != kFloat32 && dt != kFloat16 && dt != kBFloat16) return false;
  if (input.dim() == 0 || dim != input.dim() - 1 || !input.is_contiguous()) return false;
  const int64_t n = input.size(dim), rows = n == 0 ? 0 : input.numel() / n;
  return rows > 0 && input.numel() <= kIntMax;
}

bool cudnn_batch_norm_supported(const Tensor& x, const Tensor& running_mean,
                                const Tensor& running_var, int64_t N, int64_t C, int64_t L,
                                bool training, double eps) {
#if defined(EMBER_CUDA_REAL)
  if (x.dtype() != kFloat32 || !x.is_contiguous() || eps < CUDNN_BN_MIN_EPSILON) return false;
  if (running_mean.defined() != running_var.defined()) return false;
  if (training ? N * L < 2 : !running_mean.defined()) return false;
  return N > 0 && C > 0 && L > 0 && x.numel() <= kIntMax;
#else
  (void)x, (void)running_mean, (void)running_var, (void)N, (void)C, (void)L, (void)training,
      (void)eps;
  return true;  // unused: without cuDNN, cudnn is an error and auto runs ember
#endif
}

#if defined(EMBER_CUDA_REAL)

namespace {

cudnnDataType_t cudnn_dtype(DType dt) {
  if (dt == kFloat16) return CUDNN_DATA_HALF;
  if (dt == kBFloat16) return CUDNN_DATA_BFLOAT16;
  return CUDNN_DATA_FLOAT;
}

// A 4-d NCHW tensor descriptor, destroyed with the scope.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w, const char* op) {
    auto i = [](int64_t v) { return static_cast<int>(v); };
    cudnn_check(cudnnCreateTensorDescriptor(&d), op, "cudnnCreateTensorDescriptor");
    cudnn_check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, i(n), i(c), i(h), i(w)), op,
                "cudnnSetTensor4dDescriptor");
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

}  // namespace

void cudnn_softmax_forward(const Tensor& out, const Tensor& input, bool log) {
  const char* op = log ? "log_softmax (cudnn)" : "softmax (cudnn)";
  DeviceGuard guard(input.device());
  const Stream stream = current_stream(input.device());
  cudnnHandle_t h = cudnn_handle(input.device(), stream, op);
  const int64_t n = input.size(input.dim() - 1);
  TensorDesc d(cudnn_dtype(input.dtype()), input.numel() / n, n, 1, 1, op);
  const float one = 1, zero = 0;  // float scaling factors for float and the 16-bit types
  cudnn_check(cudnnSoftmaxForward(h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                  CUDNN_SOFTMAX_MODE_INSTANCE, &one, d.d, input.data_ptr(), &zero,
                                  d.d, out.data_ptr()),
              op, "cudnnSoftmaxForward");
}

void cudnn_batch_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                              const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var, int64_t N,
                              int64_t C, int64_t L, bool training, double momentum_factor,
                              double eps) {
  const char* op = training ? "batch_norm (cudnn, training)" : "batch_norm (cudnn, eval)";
  DeviceGuard guard(x.device());
  const Stream stream = current_stream(x.device());
  cudnnHandle_t h = cudnn_handle(x.device(), stream, op);
  TensorDesc xd(CUDNN_DATA_FLOAT, N, C, L, 1, op);
  TensorDesc sd(CUDNN_DATA_FLOAT, 1, C, 1, 1, op);
  // cuDNN always takes a scale and a bias.
  const Tensor w = weight.defined() ? weight : ones({C}, x.options());
  const Tensor b = bias.defined() ? bias : zeros({C}, x.options());
  auto ptr = [](const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; };
  const float one = 1, zero = 0;
  if (training) {
    cudnn_check(cudnnBatchNormalizationForwardTraining(
                    h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.d, x.data_ptr(), xd.d, y.data_ptr(),
                    sd.d, w.data_ptr(), b.data_ptr(), momentum_factor, ptr(running_mean),
                    ptr(running_var), eps, mean.data_ptr(), rstd.data_ptr()),
                op, "cudnnBatchNormalizationForwardTraining");
  } else {
    cudnn_check(
        cudnnBatchNormalizationForwardInference(
            h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.d, x.data_ptr(), xd.d, y.data_ptr(), sd.d,
            w.data_ptr(), b.data_ptr(), running_mean.data_ptr(), running_var.data_ptr(), eps),
        op, "cudnnBatchNormalizationForwardInference");
  }
}

#else  // no cuDNN in this build

void cudnn_softmax_forward(const Tensor&, const Tensor&, bool log) {
  no_cudnn(log ? "log_softmax" : "softmax");
}
void cudnn_batch_norm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                              int64_t, int64_t, bool, double, double) {
  no_cudnn("batch_norm");
}

#endif

}  // namespace ember::kernels::cuda
