// Autograd overhead on tiny tensors, ember against libtorch in the same process, interleaved.
//
//   ./build/bench/bench_autograd [rounds=31] [iters=5000]
//
// Rows (8-element float32 tensors; x, a, b are leaves that require grad):
// - fwd+bwd:   ((x * b).exp() + a).sum().backward()        target: ember <= 0.5x libtorch
// - add:       a + b with requires_grad (records one node)  target: ember <= 0.5x libtorch
// - no_grad / InferenceMode: a forward of views and element-wise ops on tensors that require
//   grad, under each mode: InferenceMode skips the view bookkeeping, so it should be cheaper.

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

using ember::bench::Row;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 5000;
  volatile float sink = 0;

  ember::Tensor ex = ember::rand({8}).requires_grad_(), eb = ember::rand({8}).requires_grad_(),
                ea = ember::rand({8}).requires_grad_(), ew = ember::rand({2, 4}).requires_grad_();
  auto ember_views = [&] {
    ember::Tensor v = ew.t().unsqueeze(0).squeeze(0).t().reshape({8});
    ember::Tensor y = (v * ex + ea.narrow(0, 0, 8)).exp();
    sink = sink + static_cast<float>(y.numel());
  };
  std::vector<Row> rows;
  rows.push_back({"fwd+bwd ((x*b).exp()+a).sum()",
                  [&] {
                    ember::Tensor loss = ((ex * eb).exp() + ea).sum();
                    loss.backward();
                  },
                  {}});
  rows.push_back({"a + b, requires_grad",
                  [&] {
                    ember::Tensor c = ea + eb;
                    sink = sink + static_cast<float>(c.numel());
                  },
                  {}});
  rows.push_back({"views+ops under no_grad",
                  [&] {
                    ember::NoGradGuard g;
                    ember_views();
                  },
                  {}});
  rows.push_back({"views+ops under InferenceMode",
                  [&] {
                    ember::InferenceMode g;
                    ember_views();
                  },
                  {}});
#ifdef EMBER_HAVE_LIBTORCH
  torch::set_num_threads(1);
  torch::Tensor tx = torch::rand({8}).requires_grad_(), tb = torch::rand({8}).requires_grad_(),
                ta = torch::rand({8}).requires_grad_(), tw = torch::rand({2, 4}).requires_grad_();
  auto torch_views = [&] {
    torch::Tensor v = tw.t().unsqueeze(0).squeeze(0).t().reshape({8});
    torch::Tensor y = (v * tx + ta.narrow(0, 0, 8)).exp();
    sink = sink + static_cast<float>(y.numel());
  };
  rows[0].torch_fn = [&] {
    torch::Tensor loss = ((tx * tb).exp() + ta).sum();
    loss.backward();
  };
  rows[1].torch_fn = [&] {
    torch::Tensor c = ta + tb;
    sink = sink + static_cast<float>(c.numel());
  };
  rows[2].torch_fn = [&] {
    torch::NoGradGuard g;
    torch_views();
  };
  rows[3].torch_fn = [&] {
    c10::InferenceMode g;
    torch_views();
  };
#endif
  ember::bench::run_rows(rows, rounds, iters, "case (8 x float32)", "us", 1e6, 3);
  return 0;
}
