#pragma once
// Timing helpers shared by the benchmarks: a monotonic clock, medians, and a routine that
// interleaves the contenders round by round so that machine noise hits them alike.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ember::bench {

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs each contender `iters` times per round for `rounds` rounds, alternating contenders
// within every round; returns the median seconds per call of each.
inline std::vector<double> interleaved(const std::vector<std::function<void()>>& fns, int rounds,
                                       int iters) {
  std::vector<std::vector<double>> times(fns.size());
  for (auto& f : fns)
    for (int i = 0; i < std::max(1, iters / 10); ++i) f();  // warm up
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < fns.size(); ++k) {
      double t0 = now_seconds();
      for (int i = 0; i < iters; ++i) fns[k]();
      times[k].push_back((now_seconds() - t0) / iters);
    }
  }
  std::vector<double> med;
  med.reserve(times.size());
  for (auto& t : times) med.push_back(median(t));
  return med;
}

// One row of a bandwidth table (bench_norm, bench_norm_cuda): the bytes a call reads and writes,
// ember's contender and, where there is one, libtorch's.
struct BandwidthCase {
  std::string name;
  double bytes;
  std::function<void()> ember_fn;
  std::function<void()> torch_fn = {};  // empty: no libtorch, or no libtorch op for the dtype
};

// One comparison of an ember/libtorch benchmark table: the two contenders of a case.
struct Row {
  std::string name;
  std::function<void()> ember_fn;
  std::function<void()> torch_fn;  // empty without libtorch
};

// Times every row's contenders interleaved (interleaved()) and prints a markdown table:
// | header_case | ember <unit> | libtorch <unit> | ember / libtorch |, times scaled by `scale`
// (1e6 for microseconds) and printed with `digits` decimals.
inline void run_rows(const std::vector<Row>& rows, int rounds, int iters, const char* header_case,
                     const char* unit, double scale, int digits) {
  std::vector<std::function<void()>> fns;
  for (const Row& r : rows) {
    fns.push_back(r.ember_fn);
    if (r.torch_fn) fns.push_back(r.torch_fn);
  }
  std::vector<double> t = interleaved(fns, rounds, iters);
  std::printf("| %s | ember %s | libtorch %s | ember / libtorch |\n|---|---|---|---|\n",
              header_case, unit, unit);
  size_t k = 0;
  for (const Row& r : rows) {
    const double e = t[k++];
    if (r.torch_fn) {
      const double tt = t[k++];
      std::printf("| %s | %.*f | %.*f | %.2f |\n", r.name.c_str(), digits, e * scale, digits,
                  tt * scale, e / tt);
    } else {
      std::printf("| %s | %.*f | n/a | n/a |\n", r.name.c_str(), digits, e * scale);
    }
  }
}

}  // namespace ember::bench
