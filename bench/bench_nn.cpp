// Layers and an optimizer step, ember against libtorch's C++ frontend in the same process,
// interleaved round by round (bench_util.h), at a given thread count for both.
//
//   OPENBLAS_NUM_THREADS=1 ./build/bench/bench_nn [threads=1] [rounds=15] [iters=20]
//
// Rows (float32, batch 64):
// - Linear(784, 256): forward, then backward of a fixed output gradient (weight, bias and input
//   gradients), gradients dropped (set to none) before each iteration.
// - Conv2d(32, 64, 3) on 64 x 32 x 14 x 14 (the second conv of the Fashion-MNIST CNN):
//   forward and backward the same way.
// - Adam step over 1,001,000 parameters in three tensors (784x1000, 1000, 1000x216) whose
//   gradients are set once: one optimizer.step().

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

using ember::bench::Row;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
  ember::set_num_threads(threads);
  ember::manual_seed(0);
  namespace nn = ember::nn;

  std::vector<Row> rows;

  // ---- Linear(784, 256) ----
  auto lin = std::make_shared<nn::Linear>(784, 256);
  ember::Tensor lin_x = ember::randn({64, 784}).requires_grad_();
  ember::Tensor lin_g = ember::randn({64, 256});
  rows.push_back({"Linear(784,256) fwd+bwd, batch 64",
                  [&] {
                    lin->zero_grad();
                    lin_x.set_grad({});
                    (*lin)(lin_x).backward(lin_g);
                  },
                  {}});

  // ---- Conv2d(32, 64, 3) ----
  auto conv = std::make_shared<nn::Conv2d>(32, 64, 3);
  ember::Tensor conv_x = ember::randn({64, 32, 14, 14}).requires_grad_();
  ember::Tensor conv_g = ember::randn({64, 64, 12, 12});
  rows.push_back({"Conv2d(32,64,3) fwd+bwd, 64x32x14x14",
                  [&] {
                    conv->zero_grad();
                    conv_x.set_grad({});
                    (*conv)(conv_x).backward(conv_g);
                  },
                  {}});

  // ---- Adam over 1M parameters ----
  std::vector<ember::Tensor> adam_params = {ember::randn({784, 1000}), ember::randn({1000}),
                                            ember::randn({1000, 216})};
  for (auto& p : adam_params) {
    p.requires_grad_();
    p.set_grad(ember::randn(p.sizes()));
  }
  ember::optim::Adam adam(adam_params, ember::optim::AdamOptions(1e-3));
  rows.push_back({"Adam step, 1.0M params", [&] { adam.step(); }, {}});

#ifdef EMBER_HAVE_LIBTORCH
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::nn::Linear tlin(784, 256);
  torch::Tensor tlin_x = torch::randn({64, 784}).requires_grad_();
  torch::Tensor tlin_g = torch::randn({64, 256});
  rows[0].torch_fn = [&] {
    tlin->zero_grad(/*set_to_none=*/true);
    tlin_x.mutable_grad() = torch::Tensor();
    tlin(tlin_x).backward(tlin_g);
  };
  torch::nn::Conv2d tconv(torch::nn::Conv2dOptions(32, 64, 3));
  torch::Tensor tconv_x = torch::randn({64, 32, 14, 14}).requires_grad_();
  torch::Tensor tconv_g = torch::randn({64, 64, 12, 12});
  rows[1].torch_fn = [&] {
    tconv->zero_grad(/*set_to_none=*/true);
    tconv_x.mutable_grad() = torch::Tensor();
    tconv(tconv_x).backward(tconv_g);
  };
  std::vector<torch::Tensor> tadam_params = {torch::randn({784, 1000}), torch::randn({1000}),
                                             torch::randn({1000, 216})};
  for (auto& p : tadam_params) {
    p.requires_grad_();
    p.mutable_grad() = torch::randn(p.sizes());
  }
  torch::optim::Adam tadam(tadam_params, torch::optim::AdamOptions(1e-3));
  rows[2].torch_fn = [&] { tadam.step(); };
#endif

  std::printf("threads: %d (ember and libtorch), %d rounds x %d iterations, medians\n\n", threads,
              rounds, iters);
  ember::bench::run_rows(rows, rounds, iters, "case (float32)", "ms", 1e3, 3);
  return 0;
}
