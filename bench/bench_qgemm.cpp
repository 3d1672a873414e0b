// int8 GEMM throughput: ember's exact u8 x s8 -> int32 GEMM (kernels/cpu/qgemm.h) on every
// kernel this CPU runs, against ember's float32 GEMM (kernels/cpu/gemm.h, what an unquantized
// layer runs) on the same (m, n, k), with 1 and 2 threads (ember::set_num_threads). The shapes
// are those of the quantized Fashion-MNIST models: the MLP's linear layers at batch 256, the
// CNN's convolutions as GEMMs (batch 256: 28 x 28 positions, 1 x 3 x 3 -> 32 channels; 14 x 14
// positions, 32 x 3 x 3 -> 64 channels), and squares.
//
// C(m, n) = A(m, k) . B(n, k)^T: A uint8 activations (zero point 128), B int8 weights packed once
// beforehand (the float32 GEMM packs its B on every call, as it does in a layer). Each shape
// first checks every kernel's int32 result bit for bit against the scalar kernel, then times
// all contenders interleaved (median of the rounds) and prints GOP/s (2 m n k operations per
// product) and each int8 kernel's speed over float32's. The scalar kernel is timed only on the
// smaller shapes.
//
//   ./build/bench/bench_qgemm [rounds=7]

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/parallel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/qgemm.h"

namespace {

namespace cpu = ember::kernels::cpu;

struct Shape {
  const char* what;
  int64_t m, n, k;
};

const Shape kShapes[] = {
    {"mlp 784-256", 256, 256, 784},
    {"mlp 256-128", 256, 128, 256},
    {"mlp 128-10", 256, 10, 128},
    {"conv1 as gemm", 256 * 28 * 28, 32, 9},
    {"conv2 as gemm", 256 * 14 * 14, 64, 288},
    {"square 512", 512, 512, 512},
    {"square 1024", 1024, 1024, 1024},
};

constexpr double kScalarMaxWork = 1 << 27;  // m * n * k above which the scalar kernel is not timed

// Calls per timed batch: about 20 ms of the slowest contender.
int iterations(const std::function<void()>& slowest) {
  slowest();
  const double t0 = ember::bench::now_seconds();
  slowest();
  const double t = ember::bench::now_seconds() - t0;
  return static_cast<int>(std::clamp(0.02 / std::max(t, 1e-9), 1.0, 1000.0));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int threads_before = ember::num_threads();
  const std::string default_kernel = cpu::qgemm_kernel_name();
  std::vector<std::string> kernels;
  for (const char* name : {"avx512vnni", "avxvnni", "avx2", "scalar"})
    if (cpu::set_qgemm_kernel(name)) kernels.push_back(name);
  cpu::set_qgemm_kernel("default");
  std::printf(
      "int8 GEMM (u8 x s8 -> int32, exact) vs float32 GEMM, %d rounds; float32 kernel %s,"
      " default int8 kernel %s\n\n",
      rounds, cpu::gemm_kernel_name(), default_kernel.c_str());
  std::printf("| shape | m x n x k | threads | float32 GFLOP/s |");
  for (const auto& k : kernels) std::printf(" %s GOP/s | %s / f32 |", k.c_str(), k.c_str());
  std::printf("\n|---|---|---|---|");
  for (size_t i = 0; i < kernels.size(); ++i) std::printf("---|---|");
  std::printf("\n");

  std::mt19937_64 rng(2024);
  const int32_t zp = 128;
  bool all_valid = true;
  for (const Shape& s : kShapes) {
    const int64_t m = s.m, n = s.n, k = s.k;
    std::vector<uint8_t> a(static_cast<size_t>(m * k));
    std::vector<int8_t> w(static_cast<size_t>(n * k));
    std::uniform_int_distribution<int> ua(0, 255), uw(-128, 127);
    for (auto& x : a) x = static_cast<uint8_t>(ua(rng));
    for (auto& x : w) x = static_cast<int8_t>(uw(rng));
    std::vector<float> af(a.size()), wf(w.size()), cf(static_cast<size_t>(m * n));
    for (size_t i = 0; i < a.size(); ++i) af[i] = static_cast<float>(a[i] - zp);
    for (size_t i = 0; i < w.size(); ++i) wf[i] = static_cast<float>(w[i]);

    // Validation: every kernel against the scalar one, bit for bit.
    std::vector<cpu::PackedQWeight> packs;
    for (const auto& name : kernels) {
      cpu::set_qgemm_kernel(name.c_str());
      packs.push_back(cpu::pack_qweight(w.data(), n, k));
    }
    cpu::set_qgemm_kernel("default");
    std::vector<int32_t> want(static_cast<size_t>(m * n)), got(want.size());
    cpu::qgemm_u8s8(m, a.data(), k, zp, packs.back(), want.data(), n);  // scalar is last
    for (size_t q = 0; q + 1 < packs.size(); ++q) {
      std::fill(got.begin(), got.end(), 0);
      cpu::qgemm_u8s8(m, a.data(), k, zp, packs[q], got.data(), n);
      if (got != want) {
        std::printf("VALIDATION FAILED: %s on %s\n", kernels[q].c_str(), s.what);
        all_valid = false;
      }
    }

    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    for (int threads : {1, 2}) {
      ember::set_num_threads(threads);
      std::vector<std::function<void()>> fns;
      fns.push_back([&] {
        cpu::gemm(m, n, k, 1.0f, af.data(), k, 1, wf.data(), 1, k, 0.0f, cf.data(), n, 1);
      });
      std::vector<bool> timed;
      for (size_t q = 0; q < packs.size(); ++q) {
        timed.push_back(kernels[q] != "scalar" || work <= kScalarMaxWork);
        if (!timed.back()) continue;
        fns.push_back([&, q] { cpu::qgemm_u8s8(m, a.data(), k, zp, packs[q], got.data(), n); });
      }
      const int iters =
          iterations(timed.back() && kernels.back() == "scalar" ? fns.back() : fns.front());
      const std::vector<double> t = ember::bench::interleaved(fns, rounds, iters);
      const double ops = 2.0 * work;
      std::printf("| %s | %lld x %lld x %lld | %d | %.1f |", s.what, static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), threads, ops / t[0] / 1e9);
      size_t at = 1;
      for (size_t q = 0; q < packs.size(); ++q) {
        if (!timed[q]) {
          std::printf(" - | - |");
          continue;
        }
        std::printf(" %.1f | %.2f |", ops / t[at] / 1e9, t[0] / t[at]);
        ++at;
      }
      std::printf("\n");
    }
  }
  ember::set_num_threads(threads_before);
  return all_valid ? 0 : 1;
}
