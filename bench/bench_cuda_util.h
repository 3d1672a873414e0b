#pragma once
// What the CUDA benchmarks share (bench/bench_*cuda.cpp): timing on the device.

#include <functional>
#include <vector>

#include "bench_util.h"
#include "core/cuda.h"
#include "core/stream.h"

namespace ember::bench {

// Median milliseconds per call of each contender, timed on the device with events: after one
// warm-up call each (which also fills the caching allocator), `rounds` rounds that run every
// contender `iters` times in turn, so a slow moment of the machine hits all of them alike.
inline std::vector<double> time_on_device(const std::vector<std::function<void()>>& fns, int rounds,
                                          int iters) {
  std::vector<std::vector<double>> ms(fns.size());
  for (auto& m : ms) m.reserve(static_cast<size_t>(rounds));
  for (const auto& f : fns) f();
  cuda::synchronize();
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < fns.size(); ++k) {
      Event start(DeviceType::CUDA, true), stop(DeviceType::CUDA, true);
      start.record();
      for (int i = 0; i < iters; ++i) fns[k]();
      stop.record();
      stop.synchronize();
      ms[k].push_back(start.elapsed_ms(stop) / iters);
    }
  }
  std::vector<double> med;
  med.reserve(ms.size());
  for (auto& m : ms) med.push_back(median(m));
  return med;
}

}  // namespace ember::bench
