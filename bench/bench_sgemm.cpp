// SGEMM throughput: ember's matmul (float32, square n x n) against OpenBLAS's cblas_sgemm in the
// same process, at n = 256, 512, 1024, 2048 with 1 and 2 threads. ember's pool is resized with
// ember::set_num_threads, OpenBLAS's with openblas_set_num_threads, so both use the same number
// of cores. Each n first validates ember's product against OpenBLAS's, then times both
// interleaved (median of the rounds) and reports GFLOP/s (2 n^3 flops per product), the ratio,
// and the share of the machine's peak:
//
//   peak = threads x FMA units (2) x float lanes (16 with AVX-512, 8 with AVX2) x 2 x clock,
//
// with the clock from /proc/cpuinfo ("cpu MHz", or cpufreq's maximum when readable). That is
// often the base clock: the clock measured with a chain of dependent additions is printed too,
// and turbo above the base clock pushes the share past 1.
//
//   OPENBLAS_NUM_THREADS=1 ./build/bench/bench_sgemm [rounds=5]

#include <cblas.h>
#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/cpu/gemm.h"

// Present in OpenBLAS, absent from other CBLAS implementations: looked up weakly.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" char* openblas_get_corename() __attribute__((weak));

namespace {

struct CpuInfo {
  double ghz = 0;
  int lanes = 4;  // float32 lanes of the widest FMA vector
  std::string isa = "SSE";
};

CpuInfo read_cpu_info() {
  CpuInfo info;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  bool avx2 = false, fma = false, avx512 = false;
  while (std::getline(f, line)) {
    if (info.ghz == 0 && line.rfind("cpu MHz", 0) == 0) {
      info.ghz = std::atof(line.substr(line.find(':') + 1).c_str()) / 1000.0;
    } else if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      while (words >> w) {
        avx2 |= w == "avx2";
        fma |= w == "fma";
        avx512 |= w == "avx512f";
      }
      break;  // every core lists the same flags
    }
  }
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (max_freq >> khz && khz / 1e6 > info.ghz) info.ghz = khz / 1e6;
  if (avx512) {
    info.lanes = 16;
    info.isa = "AVX-512";
  } else if (avx2 && fma) {
    info.lanes = 8;
    info.isa = "AVX2+FMA";
  }
  return info;
}

// The clock the core actually runs at (turbo included), from a chain of dependent integer
// additions: one per cycle on every x86-64 core. 0 where it cannot be measured.
double measured_ghz() {
#if defined(__x86_64__)
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t x = 0, n = 20000000;
    const double t0 = ember::bench::now_seconds();
    asm volatile(
        "1:\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "dec %1\n\tjnz 1b"
        : "+r"(x), "+r"(n));
    const double t = ember::bench::now_seconds() - t0;
    best = std::max(best, 8.0 * 20000000.0 / t / 1e9);
  }
  return best;
#else
  return 0;
#endif
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::vector<int64_t> sizes = {256, 512, 1024, 2048};
  const CpuInfo cpu = read_cpu_info();
  const double peak_per_core = 2.0 * cpu.lanes * 2.0 * cpu.ghz;  // GFLOP/s, 2 FMA units
  std::printf("ember GEMM micro-kernel: %s; OpenBLAS core: %s\n",
              ember::kernels::cpu::gemm_kernel_name(),
              openblas_get_corename ? openblas_get_corename() : "(unknown)");
  std::printf(
      "peak estimate: %.2f GHz x %s (%d float lanes) x 2 FMA units x 2 = %.1f GFLOP/s per "
      "core\n",
      cpu.ghz, cpu.isa.c_str(), cpu.lanes, peak_per_core);
  std::printf(
      "(clock from /proc/cpuinfo; measured with a chain of dependent additions: %.2f GHz, "
      "so shares of peak above 1 mean turbo)\n\n",
      measured_ghz());

  struct Row {
    std::string name;
    std::vector<double> values;
  };
  std::vector<Row> rows;
  bool all_valid = true;
  for (int threads : {1, 2}) {
    ember::set_num_threads(threads);
    if (openblas_set_num_threads) openblas_set_num_threads(threads);
    Row ember_row{"ember matmul, " + std::to_string(threads) + "T (GFLOP/s)", {}};
    Row kernel_row{"ember gemm into a preallocated C, " + std::to_string(threads) + "T (GFLOP/s)",
                   {}};
    Row blas_row{"OpenBLAS sgemm, " + std::to_string(threads) + "T (GFLOP/s)", {}};
    Row ratio_row{"ember / OpenBLAS, " + std::to_string(threads) + "T", {}};
    Row peak_row{"ember share of peak, " + std::to_string(threads) + "T", {}};
    for (int64_t n : sizes) {
      std::vector<float> av = random_values(n * n, 1), bv = random_values(n * n, 2);
      std::vector<float> c(static_cast<size_t>(n * n));
      ember::Tensor a = ember::from_blob(av.data(), {n, n}, ember::kFloat32);
      ember::Tensor b = ember::from_blob(bv.data(), {n, n}, ember::kFloat32);
      auto run_blas = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                    static_cast<int>(n), static_cast<int>(n), 1.0f, av.data(), static_cast<int>(n),
                    bv.data(), static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
      };
      ember::Tensor out;
      auto run_ember = [&] { out = a.matmul(b); };
      // The raw GEMM of kernels/cpu/gemm.h into C's buffer: the kernel without the Tensor API
      // (allocation of the result, dispatch).
      std::vector<float> c_raw(static_cast<size_t>(n * n));
      auto run_kernel = [&] {
        ember::kernels::cpu::gemm(n, n, n, 1.0f, av.data(), n, 1, bv.data(), n, 1, 0.0f,
                                  c_raw.data(), n, 1);
      };

      // Validate before timing: |ember - OpenBLAS| within float32 rounding of n-term sums.
      run_blas();
      run_ember();
      const float* e = out.data_ptr<float>();
      double worst = 0;
      for (int64_t i = 0; i < n * n; ++i) worst = std::max(worst, double(std::abs(e[i] - c[i])));
      const double tol = 1e-6 * static_cast<double>(n);
      if (!(worst <= tol)) {
        std::printf(
            "VALIDATION FAILED at n = %lld, %d thread(s): max |ember - OpenBLAS| = %g > %g\n",
            static_cast<long long>(n), threads, worst, tol);
        all_valid = false;
      }

      const int iters = n <= 256 ? 20 : n <= 512 ? 5 : 1;
      std::vector<double> t =
          ember::bench::interleaved({run_ember, run_blas, run_kernel}, rounds, iters);
      const double flops =
          2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
      const double ge = flops / t[0] / 1e9, gb = flops / t[1] / 1e9;
      ember_row.values.push_back(ge);
      kernel_row.values.push_back(flops / t[2] / 1e9);
      blas_row.values.push_back(gb);
      ratio_row.values.push_back(ge / gb);
      peak_row.values.push_back(ge / (peak_per_core * threads));
    }
    rows.push_back(ember_row);
    rows.push_back(kernel_row);
    rows.push_back(blas_row);
    rows.push_back(ratio_row);
    rows.push_back(peak_row);
  }

  std::printf("| variant |");
  for (int64_t n : sizes) std::printf(" n = %lld |", static_cast<long long>(n));
  std::printf("\n|---|");
  for (size_t i = 0; i < sizes.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("| %s |", r.name.c_str());
    const bool ratio = r.name.find("GFLOP/s") == std::string::npos;
    for (double v : r.values) std::printf(ratio ? " %.2f |" : " %.1f |", v);
    std::printf("\n");
  }
  if (!all_valid) {
    std::printf(
        "\nember's result did not match OpenBLAS's; the timings above are not meaningful\n");
    return 1;
  }
  return 0;
}
