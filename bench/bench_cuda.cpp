// Memory-bound CUDA kernels against the device's own copy: element-wise add, a multiplication by
// a number, a float32 -> float16 cast, a sum reduction and a transposing copy, in GB/s of bytes
// read + written, side by side with a device-to-device copy of the same size (cudaMemcpyAsync),
// each timed with CUDA events as the median of rounds that interleave the contenders. The issue's
// target on an H200: every kernel >= 85% of the copy's bandwidth. Simulator timings never stand for
// GPU speed: with EMBER_CUDA=sim this only checks that the program runs.
//
//   ./build-real/bench/bench_cuda [elements, default 2^28]

#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_cuda_util.h"
#include "bench_util.h"
#include "core/cuda.h"

using namespace ember;

int main(int argc, char** argv) {
  if (!cuda::is_available()) {
    std::printf("bench_cuda: no CUDA device (%s)\n",
                cuda_is_built() ? "none usable on this machine" : "built with EMBER_CUDA=off");
    return 0;
  }
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : (int64_t{1} << 28);
  const DeviceProperties props = cuda::get_device_properties(0);
  std::printf("device: %s (sm_%d%d)%s, %lld elements\n", props.name.c_str(), props.major,
              props.minor, props.is_simulated ? " -- simulated: timings mean nothing" : "",
              static_cast<long long>(n));
  const Device dev = Device::cuda(0);
  const TensorOptions f32 = TensorOptions(kFloat32).device(dev);
  Tensor a = ones({n}, f32), b = ones({n}, f32), out = empty({n}, f32);
  Tensor half_out = empty({n}, TensorOptions(kFloat16).device(dev));
  Tensor copy_dst = empty({n}, f32);
  Tensor sum_out;

  struct Case {
    std::string name;
    double bytes;  // read + written per call
    std::function<void()> fn;
  };
  const double fbytes = static_cast<double>(n) * 4;
  std::vector<Case> cases = {
      {"copy d2d (reference)", 2 * fbytes, [&] { copy_dst.copy_(a); }},
      {"add  out = a + b", 3 * fbytes, [&] { out = a + b; }},
      // The number reaches the kernel as an argument (Note [CPU scalars on a device]).
      {"scale out = a * 2", 2 * fbytes, [&] { out = a * 2; }},
      {"cast f32 -> f16", fbytes + fbytes / 2, [&] { half_out.copy_(a); }},
  };
  bool have_sum = true;
  try {
    sum_out = a.sum();
  } catch (const Error& e) {
    have_sum = false;
    std::printf("sum: skipped (%s)\n", e.what());
  }
  if (have_sum) cases.push_back({"sum  a.sum()", fbytes, [&] { sum_out = a.sum(); }});
  // A square matrix of the same bytes, transposed into a contiguous copy (Note [Transposing
  // copies] in kernels/cuda/copy.cu).
  const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  const Tensor square = a.narrow(0, 0, side * side).view({side, side});
  Tensor transposed = empty({side, side}, f32);
  const double tbytes = 2.0 * static_cast<double>(side * side) * 4;
  cases.push_back({"transpose .t().contiguous", tbytes, [&] { transposed.copy_(square.t()); }});

  std::vector<std::function<void()>> fns;
  fns.reserve(cases.size());
  for (const Case& c : cases) fns.push_back(c.fn);
  const std::vector<double> ms = bench::time_on_device(fns, 15, 10);
  const double copy_gbs = cases[0].bytes / (ms[0] * 1e-3) / 1e9;
  std::printf("%-24s %10s %10s %12s\n", "kernel", "ms", "GB/s", "vs copy");
  for (size_t k = 0; k < cases.size(); ++k) {
    const double gbs = cases[k].bytes / (ms[k] * 1e-3) / 1e9;
    std::printf("%-24s %10.4f %10.1f %11.1f%%\n", cases[k].name.c_str(), ms[k], gbs,
                100.0 * gbs / copy_gbs);
  }
  return 0;
}
