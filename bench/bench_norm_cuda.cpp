// softmax, layer_norm and the fused cross-entropy (forward, and its backward kernel) on a cuda
// device in GB/s of bytes read + written, side by side with a device-to-device copy of the same
// size, each the median of rounds timed with CUDA events (rounds interleave the contenders). The
// issue's target on an H200: each kernel >= 80% of the copy's bandwidth. Real GPUs only: on the
// simulator, or without a device, it prints "skipped" (simulator timings never stand for GPU
// speed).
//
//   ./build-gpu/bench/bench_norm_cuda [rows, default 16384] [cols, default 4096]

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_cuda_util.h"
#include "bench_util.h"
#include "core/cuda.h"
#include "core/ops/cross_entropy.h"

using namespace ember;
namespace F = ember::nn::functional;

using bench::BandwidthCase;

int main(int argc, char** argv) {
  if (!cuda::is_available() || cuda::is_simulated()) {
    std::printf("bench_norm_cuda: skipped (%s)\n", !cuda_is_built() ? "built with EMBER_CUDA=off"
                                                   : cuda::is_simulated()
                                                       ? "simulated device: timings mean nothing"
                                                       : "no CUDA device on this machine");
    return 0;
  }
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 16384;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 4096;
  const DeviceProperties props = cuda::get_device_properties(0);
  std::printf("device: %s (sm_%d%d), rows %lld x cols %lld\n", props.name.c_str(), props.major,
              props.minor, static_cast<long long>(rows), static_cast<long long>(cols));
  autograd::NoGradGuard no_grad;
  const Device dev = Device::cuda(0);
  std::vector<BandwidthCase> cases;
  for (DType dt : {kFloat32, kBFloat16}) {
    const TensorOptions o = TensorOptions(dt).device(dev);
    const double bytes = static_cast<double>(rows * cols) * static_cast<double>(itemsize(dt));
    const std::string tag = std::string(" ") + dtype_name(dt);
    Tensor x = randn({rows, cols}, TensorOptions(kFloat32).device(dev)).to(dt);
    Tensor copy_dst = empty({rows, cols}, o);
    Tensor w = ones({cols}, o), b = zeros({cols}, o);
    Tensor target = randint(0, cols, {rows}, TensorOptions(kInt64).device(dev));
    Tensor y;
    // The long-row case: the same bytes as 64 rows of rows * cols / 64.
    Tensor x_long = x.reshape({64, -1});
    cases.push_back(
        {"copy d2d (reference)" + tag, 2 * bytes, [=]() mutable { copy_dst.copy_(x); }});
    cases.push_back({"softmax rows" + tag, 2 * bytes, [=]() mutable { y = x.softmax(-1); }});
    cases.push_back(
        {"softmax long rows" + tag, 2 * bytes, [=]() mutable { y = x_long.softmax(-1); }});
    cases.push_back(
        {"log_softmax dim 0" + tag, 2 * bytes, [=]() mutable { y = x.log_softmax(0); }});
    cases.push_back({"layer_norm" + tag, 2 * bytes,
                     [=]() mutable { y = F::layer_norm(x, {cols}, w, b, 1e-5); }});
    cases.push_back(
        {"cross_entropy fwd" + tag, bytes, [=]() mutable { y = F::cross_entropy(x, target); }});
    // The backward kernel alone (reads x, writes dx), from the forward's lse.
    const native::CrossEntropyRows ce = native::cross_entropy_rows(x, target, {}, -100, 0.0);
    const Tensor grad_rows =
        full({rows}, 1.0 / static_cast<double>(rows), TensorOptions(ce.lse.dtype()).device(dev));
    cases.push_back({"cross_entropy bwd" + tag, 2 * bytes, [=]() mutable {
                       y = native::cross_entropy_rows_backward(grad_rows, x, target, {}, ce.lse,
                                                               -100, 0.0);
                     }});
  }
  std::vector<std::function<void()>> fns;
  fns.reserve(cases.size());
  for (const BandwidthCase& c : cases) fns.push_back(c.ember_fn);
  const std::vector<double> ms = bench::time_on_device(fns, 15, 10);
  std::printf("%-32s %10s %10s %12s\n", "kernel", "ms", "GB/s", "vs copy");
  double copy_gbs = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const double gbs = cases[k].bytes / (ms[k] * 1e-3) / 1e9;
    if (cases[k].name.rfind("copy", 0) == 0) copy_gbs = gbs;
    std::printf("%-32s %10.4f %10.1f %11.1f%%\n", cases[k].name.c_str(), ms[k], gbs,
                100.0 * gbs / copy_gbs);
  }
  return 0;
}
