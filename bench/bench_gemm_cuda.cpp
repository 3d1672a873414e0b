// ember's CUDA GEMM against cuBLAS (Note [GEMM backends] in core/cuda_gemm.h): SGEMM and
// bfloat16 GEMM (WMMA, float32 accumulation) at 1024, 2048, 4096 and 8192 in GFLOP/s and as a
// ratio to cuBLAS, then every rung of the ladder (Note [The GEMM ladder] in
// kernels/cuda/gemm.cuh) at 4096, llm.c dev/cuda style. Each contender is validated against
// cuBLAS first, then timed with events as the median of several runs. Real GPUs only: a
// simulated or CPU-only build prints "skipped". Targets on an H200: SGEMM >= 0.9x cuBLAS,
// bfloat16 >= 0.7x with WMMA, >= 0.9x with wgmma (rung 9, checked here against rung 8).
//
//   ./build-gpu/bench/bench_gemm_cuda [max size, default 8192] [section...]
//
// Sections, all by default: sizes (ember vs cuBLAS at each size), ladder (rungs 1-8 at 4096),
// tunings (rungs 7 and 8 under set_gemm_tuning), wgmma (rung 9 vs rung 8 and cuBLAS).
// bench/gpu.sh runs wgmma in a process of its own: rung 9 was written without a GPU, and a kernel
// that faults leaves its process's CUDA context unusable, which would lose the other tables.

#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/cuda.h"
#include "core/cuda_gemm.h"

using namespace ember;

namespace {

// Median milliseconds of one call of fn (after a warm-up), over `rounds` event-timed runs.
double time_ms(const std::function<void()>& fn, int rounds) {
  fn();
  cuda::synchronize();
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    Event start(DeviceType::CUDA, true), stop(DeviceType::CUDA, true);
    start.record();
    fn();
    stop.record();
    stop.synchronize();
    ms.push_back(start.elapsed_ms(stop));
  }
  return bench::median(ms);
}

// Runs matmul(a, b) with the backend / variant given; returns its median ms.
double run(const Tensor& a, const Tensor& b, cuda::GemmBackend backend, int variant, int rounds,
           Tensor* result = nullptr) {
  cuda::set_gemm_backend(backend);
  cuda::set_gemm_variant(variant);
  Tensor out;
  const double ms = time_ms([&] { out = matmul(a, b); }, rounds);
  if (result != nullptr) *result = out;
  cuda::set_gemm_variant(0);
  return ms;
}

double gflops(int64_t n, double ms) { return 2.0 * n * n * n / (ms * 1e-3) / 1e9; }

// Max |x - y| / max |y|.
double rel_error(const Tensor& x, const Tensor& y) {
  const Tensor xf = x.to(kFloat32), yf = y.to(kFloat32);
  return (xf - yf).abs().max().item<float>() / std::max(1e-30f, yf.abs().max().item<float>());
}

}  // namespace

int main(int argc, char** argv) {
  int64_t max_n = 8192;
  const std::set<std::string> known = {"sizes", "ladder", "tunings", "wgmma"};
  std::set<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const long long size = std::strtoll(argv[i], &end, 10);
    if (known.count(argv[i]) != 0) {
      sections.insert(argv[i]);
    } else if (*end == '\0' && size > 0) {
      max_n = size;
    } else {
      std::fprintf(stderr,
                   "bench_gemm_cuda: unknown argument '%s' (a size, or sections among sizes, "
                   "ladder, tunings, wgmma)\n",
                   argv[i]);
      return 2;
    }
  }
  if (sections.empty()) sections = known;
  if (!cuda::is_available() || cuda::is_simulated()) {
    std::printf("bench_gemm_cuda: skipped (%s)\n",
                cuda::is_simulated() ? "the simulator's timings never stand for GPU speed"
                                     : "no CUDA device");
    return 0;
  }
  const auto wanted = [&](const char* name) { return sections.count(name) != 0; };
  std::printf("GEMM on %s (C = A @ B, row-major, GFLOP/s; ratio = ember / cuBLAS)\n",
              cuda::get_device_properties().name.c_str());
  if (wanted("sizes"))
    std::printf("%-10s %6s %12s %12s %7s %10s\n", "dtype", "n", "ember", "cublas", "ratio",
                "rel.err");
  for (DType dt : {kFloat32, kBFloat16}) {
    if (!wanted("sizes")) break;
    for (int64_t n : {1024, 2048, 4096, 8192}) {
      if (n > max_n) continue;
      const Tensor a = randn({n, n}).to(dt).cuda(), b = randn({n, n}).to(dt).cuda();
      const int rounds = n >= 8192 ? 3 : 7;
      Tensor ref, mine;
      const double cublas_ms = run(a, b, cuda::GemmBackend::cublas, 0, rounds, &ref);
      const double ember_ms = run(a, b, cuda::GemmBackend::ember, 0, rounds, &mine);
      std::printf("%-10s %6lld %12.0f %12.0f %7.2f %10.2e\n", dtype_name(dt),
                  static_cast<long long>(n), gflops(n, ember_ms), gflops(n, cublas_ms),
                  cublas_ms / ember_ms, rel_error(mine, ref));
    }
  }
  const int64_t n = std::min<int64_t>(4096, max_n);
  if (wanted("ladder")) {
    std::printf("\nthe ladder at %lld (Note [The GEMM ladder]; rung 9 in the wgmma section)\n",
                static_cast<long long>(n));
    std::printf("%-10s %-28s %12s %7s %10s\n", "dtype", "variant", "GFLOP/s", "ratio", "rel.err");
  }
  const char* names[] = {"",
                         "1 naive",
                         "2 shared-memory tiles",
                         "3 register blocking",
                         "4 float4 loads",
                         "5 double buffering",
                         "6 WMMA tensor cores",
                         "7 warp tiles",
                         "8 WMMA pipelined"};
  for (DType dt : {kFloat32, kBFloat16}) {
    if (!wanted("ladder")) break;
    const Tensor a = randn({n, n}).to(dt).cuda(), b = randn({n, n}).to(dt).cuda();
    Tensor ref;
    const double cublas_ms = run(a, b, cuda::GemmBackend::cublas, 0, 5, &ref);
    std::printf("%-10s %-28s %12.0f %7.2f %10s\n", dtype_name(dt), "cuBLAS", gflops(n, cublas_ms),
                1.0, "-");
    const std::vector<int> rungs =
        dt == kFloat32 ? std::vector<int>{1, 2, 3, 4, 5, 7} : std::vector<int>{1, 2, 3, 4, 5, 6, 8};
    for (int v : rungs) {
      Tensor mine;
      const double ms = run(a, b, cuda::GemmBackend::ember, v, v == 1 ? 3 : 5, &mine);
      std::printf("%-10s %-28s %12.0f %7.2f %10.2e\n", dtype_name(dt), names[v], gflops(n, ms),
                  cublas_ms / ms, rel_error(mine, ref));
    }
  }
  // The tunings of rungs 7 and 8 (set_gemm_tuning in core/cuda_gemm.h), side by side at n, so
  // one GPU run shows which to make the default.
  if (wanted("tunings")) {
    std::printf(
        "\ntunings at %lld (min_blocks: blocks per SM compiled for; stages: rung 8's ring)\n",
        static_cast<long long>(n));
    std::printf("%-10s %-28s %12s %7s %10s\n", "dtype", "rung / tuning", "GFLOP/s", "ratio",
                "rel.err");
  }
  for (DType dt : {kFloat32, kBFloat16}) {
    if (!wanted("tunings")) break;
    const Tensor a = randn({n, n}).to(dt).cuda(), b = randn({n, n}).to(dt).cuda();
    Tensor ref;
    const double cublas_ms = run(a, b, cuda::GemmBackend::cublas, 0, 5, &ref);
    const int rung = dt == kFloat32 ? 7 : 8;
    for (int min_blocks : {1, 2}) {
      for (int stages : {2, 3, 4}) {
        if (rung == 7 && stages != 4) continue;  // rung 7 has no ring
        cuda::set_gemm_tuning({min_blocks, stages});
        Tensor mine;
        const double ms = run(a, b, cuda::GemmBackend::ember, rung, 5, &mine);
        char label[64];
        std::snprintf(label, sizeof label, "%d min_blocks=%d%s", rung, min_blocks,
                      rung == 8 ? (" stages=" + std::to_string(stages)).c_str() : "");
        std::printf("%-10s %-28s %12.0f %7.2f %10.2e\n", dtype_name(dt), label, gflops(n, ms),
                    cublas_ms / ms, rel_error(mine, ref));
      }
    }
  }
  cuda::set_gemm_tuning({});
  // Rung 9 (wgmma) checked against rung 8 (WMMA) and cuBLAS on the GPU, both B layouts: "NN"
  // (B row-major, copied K-major first) and "NT" (B = W^T of a row-major W, as Linear's forward:
  // no copy). Lines start "wgmma" (bench/gpu.sh's short table).
  if (wanted("wgmma")) {
    std::printf("\nwgmma (rung 9) against rung 8 and cuBLAS, bfloat16 (max|9-8| / max|8|)\n");
    std::printf("%-6s %-3s %6s %10s %10s %10s %10s %10s\n", "", "B", "n", "9 GFLOP/s", "9/cuBLAS",
                "8/cuBLAS", "rel.err", "|9-8|");
  }
  for (int64_t size : {4096, 8192}) {
    if (size > max_n || !wanted("wgmma")) continue;
    const Tensor a = randn({size, size}).to(kBFloat16).cuda();
    const Tensor w = randn({size, size}).to(kBFloat16).cuda();
    for (const bool nt : {false, true}) {
      const Tensor b = nt ? w.t() : w;
      Tensor ref, eight, nine;
      const double cublas_ms = run(a, b, cuda::GemmBackend::cublas, 0, 5, &ref);
      const double eight_ms = run(a, b, cuda::GemmBackend::ember, 8, 5, &eight);
      double nine_ms = 0;
      try {
        nine_ms = run(a, b, cuda::GemmBackend::ember, 9, 5, &nine);
      } catch (const Error& e) {
        cuda::set_gemm_variant(0);
        std::printf("wgmma  %-3s %6lld not here: %s\n", nt ? "NT" : "NN",
                    static_cast<long long>(size), e.what());
        continue;
      }
      std::printf("wgmma  %-3s %6lld %10.0f %10.2f %10.2f %10.2e %10.2e\n", nt ? "NT" : "NN",
                  static_cast<long long>(size), gflops(size, nine_ms), cublas_ms / nine_ms,
                  cublas_ms / eight_ms, rel_error(nine, ref), rel_error(nine, eight));
    }
  }
  cuda::set_gemm_backend(cuda::GemmBackend::ember);
  return 0;
}
