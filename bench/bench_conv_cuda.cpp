// conv2d forward and backward on a GPU: ember's implicit-GEMM kernels (kernels/cuda/conv.cu)
// against cuDNN (core/conv_backend.h), float32, on the Fashion-MNIST CNN's two layers
// (examples/models.h, batch 64) and two ResNet-50 layers (batch 32 at 56 x 56: 256 -> 64 1x1 and
// 64 -> 64 3x3). Each pass is timed with CUDA events as the median of rounds that interleave the
// two backends; the table gives milliseconds, ember's GFLOP/s and cuDNN's time over ember's (>= 1:
// ember is as fast). Backward is the input and weight gradients together. Needs a real GPU:
// elsewhere (no device, or the simulator) it prints "skipped".
//
//   ./build-gpu/bench/bench_conv_cuda [rounds, default 15]

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench_cuda_util.h"
#include "bench_util.h"
#include "core/conv_backend.h"
#include "core/cuda.h"

using namespace ember;

namespace {

struct Layer {
  const char* name;
  int64_t N, C, H, W, O, k, stride, pad;
};

}  // namespace

int main(int argc, char** argv) {
  if (!cuda::is_available() || cuda::is_simulated()) {
    std::printf(
        "bench_conv_cuda: skipped (%s)\n",
        cuda::is_available() ? "the CUDA simulator: timings would mean nothing" : "no CUDA device");
    return 0;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const Device dev = Device::cuda(0);
  const std::vector<Layer> layers = {
      {"cnn conv1 1->32 3x3 28x28", 64, 1, 28, 28, 32, 3, 1, 1},
      {"cnn conv2 32->64 3x3 14x14", 64, 32, 14, 14, 64, 3, 1, 1},
      {"resnet50 256->64 1x1 56x56", 32, 256, 56, 56, 64, 1, 1, 0},
      {"resnet50 64->64 3x3 56x56", 32, 64, 56, 56, 64, 3, 1, 1},
  };
  std::printf("conv2d float32 on %s, median of %d rounds\n",
              cuda::get_device_properties(0).name.c_str(), rounds);
  std::printf("%-28s %-8s %10s %10s %10s %12s\n", "layer", "pass", "ember ms", "cudnn ms",
              "ember GF/s", "cudnn/ember");
  for (const Layer& l : layers) {
    Generator gen(1);
    Tensor x = randn({l.N, l.C, l.H, l.W}, kFloat32, &gen).to(dev);
    Tensor w = randn({l.O, l.C, l.k, l.k}, kFloat32, &gen).to(dev);
    Tensor b = randn({l.O}, kFloat32, &gen).to(dev);
    Tensor y = native::conv2d(x, w, b, {l.stride}, {l.pad}, {1}, 1);
    Tensor gy = randn(y.sizes(), kFloat32, &gen).to(dev);
    const double flops =
        2.0 * static_cast<double>(y.numel()) * static_cast<double>(l.C * l.k * l.k);
    auto with = [](ConvBackend be, const std::function<void()>& f) {
      return [be, f] {
        set_conv_backend(be);
        f();
      };
    };
    auto fwd = [&] { native::conv2d(x, w, b, {l.stride}, {l.pad}, {1}, 1); };
    auto bwd = [&] {
      native::conv2d_backward(gy, x, w, {l.stride}, {l.pad}, {1}, 1, {true, true, false});
    };
    for (int pass = 0; pass < 2; ++pass) {
      const auto& f = pass == 0 ? std::function<void()>(fwd) : std::function<void()>(bwd);
      const std::vector<double> ms = bench::time_on_device(
          {with(ConvBackend::ember, f), with(ConvBackend::cudnn, f)}, rounds, 3);
      const double work = pass == 0 ? flops : 2 * flops;
      std::printf("%-28s %-8s %10.4f %10.4f %10.1f %12.2f\n", l.name,
                  pass == 0 ? "forward" : "backward", ms[0], ms[1], work / ms[0] / 1e6,
                  ms[1] / ms[0]);
    }
  }
  set_conv_backend(ConvBackend::ember);
  return 0;
}
