// Activation checkpointing (autograd/checkpoint.h): what it saves and what it costs.
//
// For a deep MLP (32 x Linear(512, 512) + Tanh, batch 256) and a conv stack (8 x Conv2d(32, 32,
// 3, padding 1) + ReLU, batch 16, 28 x 28), a training step (forward, loss, backward) without
// checkpointing and with nn::checkpoint_sequential at several segment counts, interleaved
// round by round. Prints, per row: the memory the forward leaves for backward (allocated after
// the forward minus before), the step's peak (over the same base), the median step time and its
// ratio to the plain step. With libtorch installed, the plain MLP step of libtorch's C++
// frontend runs in the same rounds, for scale. PyTorch's own checkpoint overhead on the same
// models: bench/torch_checkpoint.py.
//
//   ./build/bench/bench_checkpoint [rounds] [threads]

#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

using namespace ember;

namespace {

struct Model {
  std::string name;
  std::shared_ptr<nn::Sequential> net;
  Tensor x;
  std::vector<int64_t> segments;  // 0 = plain
};

struct Measure {
  double held_mib = 0, peak_mib = 0;
};

Measure step(const Model& m, int64_t segments, bool measure) {
  m.net->zero_grad();
  const int64_t base = memory_allocated(kCPU);
  if (measure) reset_peak_memory_stats(kCPU);
  Tensor y = segments == 0 ? (*m.net)(m.x) : nn::checkpoint_sequential(*m.net, segments, m.x);
  const int64_t held = memory_allocated(kCPU) - base;
  (y * y).mean().backward();
  Measure out;
  if (measure) {
    out.held_mib = static_cast<double>(held) / (1 << 20);
    out.peak_mib = static_cast<double>(max_memory_allocated(kCPU) - base) / (1 << 20);
  }
  return out;
}

Model mlp() {
  Model m{"MLP 32 x (Linear 512 + Tanh), batch 256",
          std::make_shared<nn::Sequential>(),
          randn({256, 512}),
          {0, 2, 4, 8, 16}};
  for (int i = 0; i < 32; ++i) {
    m.net->push_back(std::make_shared<nn::Linear>(512, 512));
    m.net->push_back(std::make_shared<nn::Tanh>());
  }
  return m;
}

Model convs() {
  Model m{"8 x (Conv2d 32->32 3x3 + ReLU), batch 16, 28x28",
          std::make_shared<nn::Sequential>(),
          randn({16, 32, 28, 28}),
          {0, 2, 4}};
  for (int i = 0; i < 8; ++i) {
    m.net->push_back(std::make_shared<nn::Conv2d>(32, 32, 3, 1, 1));
    m.net->push_back(std::make_shared<nn::ReLU>());
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  set_num_threads(threads);
  manual_seed(0);
  std::vector<Model> models = {mlp(), convs()};

  std::vector<std::function<void()>> fns;
  for (const Model& m : models)
    for (int64_t s : m.segments) fns.push_back([&m, s] { step(m, s, false); });
#ifdef EMBER_HAVE_LIBTORCH
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::nn::Sequential tnet;
  for (int i = 0; i < 32; ++i) {
    tnet->push_back(torch::nn::Linear(512, 512));
    tnet->push_back(torch::nn::Tanh());
  }
  const torch::Tensor tx = torch::randn({256, 512});
  fns.push_back([&] {
    tnet->zero_grad(/*set_to_none=*/true);
    const torch::Tensor ty = tnet->forward(tx);
    (ty * ty).mean().backward();
  });
#endif
  const std::vector<double> t = bench::interleaved(fns, rounds, 1);

  std::printf("threads: %d, %d rounds, medians; memory over the step's base, CPU allocator\n\n",
              threads, rounds);
  std::printf("| model | segments | held for backward MiB | peak MiB | step ms | / plain |\n");
  std::printf("|---|---|---|---|---|---|\n");
  size_t k = 0;
  for (const Model& m : models) {
    const double plain = t[k];
    for (int64_t s : m.segments) {
      const Measure me = step(m, s, true);
      std::printf("| %s | %s | %.1f | %.1f | %.2f | %.2f |\n", m.name.c_str(),
                  s == 0 ? "none" : std::to_string(s).c_str(), me.held_mib, me.peak_mib, t[k] * 1e3,
                  t[k] / plain);
      ++k;
    }
  }
#ifdef EMBER_HAVE_LIBTORCH
  std::printf("\nlibtorch, the plain MLP step: %.2f ms; ember plain / libtorch plain: %.2f\n",
              t[k] * 1e3, t[0] / t[k]);
#endif
  return 0;
}
