// softmax, log_softmax, layer_norm and cross-entropy on the CPU: the CPU side of
// bench_norm_cuda's rows (bench/gpu.sh --device cpu), in GB/s of bytes read + written, side by
// side with a memcpy of the same bytes and with libtorch's C++ frontend in the same process,
// interleaved round by round (bench_util.h), at one thread count for both.
//
//   OPENBLAS_NUM_THREADS=1 ./build/bench/bench_norm [threads=1] [rows=4096] [cols=4096]
//                                                   [rounds=9]
//
// Rows, for float32 and bfloat16 (bytes counted as the GPU table counts them):
// - softmax rows: softmax over the last dim (reads x, writes y: 2 x the bytes of x);
// - softmax long rows: the same bytes as 16 rows of rows * cols / 16 elements;
// - log_softmax dim 0: over the first dim of the (rows, cols) matrix (a column per output);
// - layer_norm over the last dim, weight and bias (2 x);
// - layer_norm fwd+bwd: the same with autograd, then backward of a fixed output gradient
//   (5 x: the forward reads x and writes y, the backward reads x and the gradient, writes dx);
// - cross_entropy fwd: mean loss over the rows against int64 targets (1 x: reads the logits);
// - cross_entropy fwd+bwd: the same with autograd, then backward (3 x: the forward reads the
//   logits, the backward reads them again and writes their gradient).
// memcpy's GB/s counts its reads and writes the same way ("copy (reference)").

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

using namespace ember;
namespace F = ember::nn::functional;

namespace {

using bench::BandwidthCase;

#ifdef EMBER_HAVE_LIBTORCH
// The libtorch contender, if it runs for this dtype (libtorch 1.13's CPU kernels do not all
// take bfloat16); one call here is also the warm-up.
std::function<void()> if_supported(std::function<void()> fn) {
  try {
    fn();
    return fn;
  } catch (const std::exception&) {
    return {};
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 4096;
  const int64_t cols = argc > 3 ? std::atoll(argv[3]) : 4096;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 9;
  set_num_threads(threads);
  manual_seed(0);
  std::vector<BandwidthCase> cases;
  std::vector<std::vector<char>> copy_buffers;
  for (DType dt : {kFloat32, kBFloat16}) {
    const double bytes = static_cast<double>(rows * cols) * static_cast<double>(itemsize(dt));
    const std::string tag = std::string(" ") + dtype_name(dt);
    const Tensor x = randn({rows, cols}).to(dt);
    const Tensor x_long = x.reshape({16, -1});
    const Tensor w = ones({cols}, TensorOptions(dt)), b = zeros({cols}, TensorOptions(dt));
    const Tensor target = randint(0, cols, {rows}, TensorOptions(kInt64));
    Tensor x_grad = x.detach().requires_grad_();  // shared by the fwd+bwd rows
    copy_buffers.emplace_back(static_cast<size_t>(bytes));
    copy_buffers.emplace_back(static_cast<size_t>(bytes));
    char* src = copy_buffers[copy_buffers.size() - 2].data();
    char* dst = copy_buffers.back().data();
    std::memset(src, 1, static_cast<size_t>(bytes));
    const size_t n = static_cast<size_t>(bytes);
    cases.push_back({"copy (reference)" + tag, 2 * bytes, [=] { std::memcpy(dst, src, n); }, {}});
    cases.push_back({"softmax rows" + tag, 2 * bytes, [=] { (void)x.softmax(-1); }, {}});
    cases.push_back({"softmax long rows" + tag, 2 * bytes, [=] { (void)x_long.softmax(-1); }, {}});
    cases.push_back({"log_softmax dim 0" + tag, 2 * bytes, [=] { (void)x.log_softmax(0); }, {}});
    cases.push_back(
        {"layer_norm" + tag, 2 * bytes, [=] { (void)F::layer_norm(x, {cols}, w, b, 1e-5); }, {}});
    const Tensor y_grad = randn({rows, cols}).to(dt);
    const Tensor w_grad = w.detach().requires_grad_(), b_grad = b.detach().requires_grad_();
    cases.push_back({"layer_norm fwd+bwd" + tag,
                     5 * bytes,
                     [=]() mutable {
                       x_grad.set_grad({});
                       w_grad.set_grad({});
                       b_grad.set_grad({});
                       F::layer_norm(x_grad, {cols}, w_grad, b_grad, 1e-5).backward(y_grad);
                     },
                     {}});
    cases.push_back({"cross_entropy fwd" + tag,
                     bytes,
                     [=] {
                       autograd::NoGradGuard no_grad;
                       (void)F::cross_entropy(x, target);
                     },
                     {}});
    cases.push_back({"cross_entropy fwd+bwd" + tag,
                     3 * bytes,
                     [=]() mutable {
                       x_grad.set_grad({});
                       F::cross_entropy(x_grad, target).backward();
                     },
                     {}});
#ifdef EMBER_HAVE_LIBTORCH
    {
      torch::set_num_threads(threads);
      const auto tdt = dt == kFloat32 ? torch::kFloat32 : torch::kBFloat16;
      const torch::Tensor tx = torch::randn({rows, cols}).to(tdt);
      const torch::Tensor tx_long = tx.reshape({16, -1});
      const torch::Tensor tw = torch::ones({cols}, tdt), tb = torch::zeros({cols}, tdt);
      const torch::Tensor ttarget = torch::randint(0, cols, {rows}, torch::kInt64);
      torch::Tensor tx_grad = tx.detach().requires_grad_();
      const torch::Tensor ty_grad = torch::randn({rows, cols}).to(tdt);
      torch::Tensor tw_grad = tw.detach().requires_grad_(), tb_grad = tb.detach().requires_grad_();
      const size_t k = cases.size() - 7;  // the seven rows after the copy
      cases[k].torch_fn = if_supported([=] { (void)torch::softmax(tx, -1); });
      cases[k + 1].torch_fn = if_supported([=] { (void)torch::softmax(tx_long, -1); });
      cases[k + 2].torch_fn = if_supported([=] { (void)torch::log_softmax(tx, 0); });
      cases[k + 3].torch_fn =
          if_supported([=] { (void)torch::layer_norm(tx, {cols}, tw, tb, 1e-5); });
      cases[k + 4].torch_fn = if_supported([=]() mutable {
        tx_grad.mutable_grad() = torch::Tensor();
        tw_grad.mutable_grad() = torch::Tensor();
        tb_grad.mutable_grad() = torch::Tensor();
        torch::layer_norm(tx_grad, {cols}, tw_grad, tb_grad, 1e-5).backward(ty_grad);
      });
      cases[k + 5].torch_fn = if_supported([=] {
        torch::NoGradGuard no_grad;
        (void)torch::nn::functional::cross_entropy(tx, ttarget);
      });
      cases[k + 6].torch_fn = if_supported([=]() mutable {
        tx_grad.mutable_grad() = torch::Tensor();
        torch::nn::functional::cross_entropy(tx_grad, ttarget).backward();
      });
    }
#endif
  }

  std::vector<std::function<void()>> fns;
  std::vector<int> torch_index(cases.size(), -1);
  for (size_t k = 0; k < cases.size(); ++k) {
    fns.push_back(cases[k].ember_fn);
    if (cases[k].torch_fn) {
      torch_index[k] = static_cast<int>(fns.size());
      fns.push_back(cases[k].torch_fn);
    }
  }
  const std::vector<double> t = bench::interleaved(fns, rounds, 3);

  std::printf("threads: %d (ember and libtorch), rows %lld x cols %lld, %d rounds x 3, medians\n\n",
              threads, static_cast<long long>(rows), static_cast<long long>(cols), rounds);
  std::printf(
      "| kernel | ember GB/s | ember vs copy | libtorch GB/s | libtorch vs copy | "
      "ember / libtorch (time) |\n|---|---|---|---|---|---|\n");
  double copy_gbs = 0;
  size_t f = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const double te = t[f++];
    const double gbs = cases[k].bytes / te / 1e9;
    if (cases[k].name.rfind("copy", 0) == 0) copy_gbs = gbs;
    std::printf("| %s | %.1f | %.1f%% |", cases[k].name.c_str(), gbs, 100.0 * gbs / copy_gbs);
    if (torch_index[k] >= 0) {
      const double tt = t[f++];
      const double tgbs = cases[k].bytes / tt / 1e9;
      std::printf(" %.1f | %.1f%% | %.2f |\n", tgbs, 100.0 * tgbs / copy_gbs, te / tt);
    } else {
      std::printf(" n/a | n/a | n/a |\n");
    }
  }
  return 0;
}
