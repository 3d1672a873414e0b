// Memory-bound kernels in GB/s against memcpy of the same number of bytes, at 10^6 and 10^7
// float32 elements, with the pool's threads (EMBER_NUM_THREADS) and with 1 thread:
//   add: c = a + b  moves 12 bytes per element (two reads, one write)
//   sum: a.sum()    moves 4 bytes per element
// memcpy's GB/s counts its reads and writes the same way, so the ratio is a share of what the
// memory system gives one copy loop.
//
//   ./build/bench/bench_elementwise [rounds=15]

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  int pool = ember::num_threads();
  std::printf("| kernel | elements | threads | GB/s | memcpy GB/s (same bytes) | ratio |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int threads : {1, pool}) {
    ember::set_num_threads(threads);
    for (int64_t n : {int64_t{1000000}, int64_t{10000000}}) {
      ember::Tensor a = ember::ones({n}), b = ember::ones({n});
      ember::Tensor c = a + b;
      volatile float sink = 0;
      // memcpy of 12n bytes (6n read + 6n written) and of 4n bytes for the sum's traffic.
      std::vector<char> src(6 * n), dst(6 * n), src4(2 * n), dst4(2 * n);
      std::memset(src.data(), 1, src.size());
      std::memset(src4.data(), 1, src4.size());
      int iters = n >= 10000000 ? 3 : 20;
      auto t = ember::bench::interleaved(
          {[&] { c = a + b; }, [&] { std::memcpy(dst.data(), src.data(), src.size()); },
           [&] { sink = sink + a.sum().item<float>(); },
           [&] { std::memcpy(dst4.data(), src4.data(), src4.size()); }},
          rounds, iters);
      double add_gbs = 12.0 * n / t[0] / 1e9, cpy12 = 12.0 * n / t[1] / 1e9;
      double sum_gbs = 4.0 * n / t[2] / 1e9, cpy4 = 4.0 * n / t[3] / 1e9;
      std::printf("| add | %lld | %d | %.1f | %.1f | %.2f |\n", static_cast<long long>(n), threads,
                  add_gbs, cpy12, add_gbs / cpy12);
      std::printf("| sum | %lld | %d | %.1f | %.1f | %.2f |\n", static_cast<long long>(n), threads,
                  sum_gbs, cpy4, sum_gbs / cpy4);
    }
  }
  return 0;
}
