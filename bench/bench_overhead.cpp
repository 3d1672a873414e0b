// Per-op overhead: `a + b` and the in-place `a.add_(b)` on 8-element float32 tensors, in
// microseconds per op, ember against libtorch (when built with it) in the same process,
// interleaved; each ember row's ratio is to libtorch's same op. Target: ember <= 0.5x libtorch.
// The in-place row includes the overlap checks every written-to tensor gets (Note [Writes over
// overlapping memory] in core/mem_overlap.h), as libtorch's does.
//
//   ./build/bench/bench_overhead [rounds=31] [iters=20000]

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
  int iters = argc > 2 ? std::atoi(argv[2]) : 20000;

  ember::Tensor ea = ember::ones({8}), eb = ember::ones({8});
  std::vector<std::function<void()>> fns;
  std::vector<const char*> names;
  volatile float sink = 0;
  fns.push_back([&] {
    ember::Tensor c = ea + eb;
    sink = sink + static_cast<float>(c.numel());
  });
  names.push_back("ember a + b");
  fns.push_back([&] { ea.add_(eb); });
  names.push_back("ember a.add_(b)");
#ifdef EMBER_HAVE_LIBTORCH
  torch::set_num_threads(1);
  torch::Tensor ta = torch::ones({8}), tb = torch::ones({8});
  fns.push_back([&] {
    torch::Tensor c = ta + tb;
    sink = sink + static_cast<float>(c.numel());
  });
  names.push_back("libtorch a + b");
  fns.push_back([&] { ta.add_(tb); });
  names.push_back("libtorch a.add_(b)");
#endif
  std::vector<double> t = ember::bench::interleaved(fns, rounds, iters);
  std::printf("| op (8 x float32) | median us/op | ratio to libtorch |\n|---|---|---|\n");
  const size_t n_ember = 2;  // the ember rows come first, libtorch's same ops after them
  for (size_t i = 0; i < t.size(); ++i) {
    const size_t ref = i % n_ember + n_ember;
    std::printf("| %s | %.3f | %s |\n", names[i], t[i] * 1e6,
                ref < t.size() ? std::to_string(t[i] / t[ref]).substr(0, 5).c_str() : "n/a");
  }
  return 0;
}
