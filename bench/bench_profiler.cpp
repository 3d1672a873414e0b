// What the profiler costs (core/profiler.h): the same work with no profiler, with one recording
// ops and kernels, and with one also recording input shapes and memory, alternating within every
// round (the profiler is started before and stopped after each timed run; building the report is
// not timed). Two workloads: `a + b` on 8 float32 elements (one op, one kernel: the worst case,
// all overhead) and one training step of the MLP (784-256-128-10, batch 64, SGD). Medians in
// microseconds, and each row's ratio to the unprofiled row. What a profiler costs when none runs
// is measured by bench/compare_builds.py against a build without it (bench/RESULTS.md).
//
//   ./build/bench/bench_profiler [rounds=15] [iters=2000]

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

using namespace ember;

namespace {

struct Mode {
  const char* name;
  bool profile;
  profiler::ProfilerOptions options;
};

void run_case(const char* title, const std::function<void()>& work, int rounds, int iters) {
  profiler::ProfilerOptions full;
  full.record_shapes = true;
  full.profile_memory = true;
  const std::vector<Mode> modes = {{"no profiler", false, {}},
                                   {"profiler (ops, kernels)", true, {}},
                                   {"profiler (+ shapes, memory)", true, full}};
  std::vector<std::vector<double>> times(modes.size());
  for (int i = 0; i < std::max(1, iters / 10); ++i) work();
  size_t events = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t m = 0; m < modes.size(); ++m) {
      profiler::Profiler prof(modes[m].options);
      if (modes[m].profile) prof.start();
      const double t0 = bench::now_seconds();
      for (int i = 0; i < iters; ++i) work();
      times[m].push_back((bench::now_seconds() - t0) / iters);
      if (modes[m].profile) {
        const profiler::Result res = prof.stop();
        if (m == 1) events = res.events().size() / static_cast<size_t>(iters);
      }
    }
  }
  const double base = bench::median(times[0]);
  std::printf("\n%s (%zu events per call with the profiler)\n\n", title, events);
  std::printf("| mode | median us | ratio to no profiler |\n|---|---|---|\n");
  for (size_t m = 0; m < modes.size(); ++m) {
    const double t = bench::median(times[m]);
    std::printf("| %s | %.3f | %.2f |\n", modes[m].name, t * 1e6, t / base);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 2000;
  set_num_threads(1);

  Tensor a = ones({8}), b = ones({8});
  volatile float sink = 0;
  run_case(
      "a + b, 8 x float32",
      [&] {
        Tensor c = a + b;
        sink = sink + static_cast<float>(c.numel());
      },
      rounds, iters);

  manual_seed(0);
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(256, 128), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, 10)});
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Tensor x = randn({64, 784}), y = randint(0, 10, {64});
  run_case(
      "MLP training step, batch 64, 1 thread",
      [&] {
        opt.zero_grad();
        Tensor loss = nn::functional::cross_entropy((*model)(x), y);
        loss.backward();
        opt.step();
      },
      rounds, std::max(1, iters / 20));
  return 0;
}
