#pragma once
// Timing helpers shared by the benchmarks: a monotonic clock, medians, and a routine that
// interleaves the contenders round by round so that machine noise hits them alike.

#include <algorithm>
#include <chrono>
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

// One comparison of an ember/libtorch benchmark table: the two contenders of a case.
struct Row {
  std::string name;
  std::function<void()> ember_fn;
  std::function<void()> torch_fn;  // empty without libtorch
};

}  // namespace ember::bench
