// Normalization layers (nn/normalization.h): BatchNorm1d/2d over several training steps, eval
// mode, LayerNorm, GroupNorm and double backward against PyTorch's golden values
// (tests/golden/gen_nn_norm.py), plus what goldens cannot show: train/eval switching, running
// statistics bookkeeping, state_dict keys, printing, default initialisation, numerical
// soundness and error messages.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::check_param_grads;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::keys;
using ember::testing::printed;
using ember::testing::values;
namespace F = ember::nn::functional;

namespace {

constexpr double kAtol = 1e-12, kRtol = 1e-10;

// Copies "<name>.weight" / "<name>.bias" into the module through PyTorch's state_dict keys.
void load_affine(nn::Module& m, const std::string& name) {
  const Golden& g = golden("nn_norm");
  REQUIRE_NOTHROW(m.load_state_dict({{"weight", g[name + ".weight"]}, {"bias", g[name + ".bias"]}},
                                    /*strict=*/false));
}

// Runs m on "<prefix>.input", backpropagates "<prefix>.grad_output" and compares the output
// and the gradients of the input and (if any) of the parameters.
void check_step(nn::Module& m, const std::string& prefix) {
  const Golden& g = golden("nn_norm");
  INFO(prefix);
  m.zero_grad();
  Tensor x = g[prefix + ".input"].requires_grad_();
  Tensor y = m(x);
  check_close(y, g[prefix + ".output"], kAtol, kRtol, prefix + " output");
  y.backward(g[prefix + ".grad_output"]);
  check_close(x.grad(), g[prefix + ".grad_input"], kAtol, kRtol, prefix + " grad_input");
  check_param_grads(m, g, prefix + ".grad_", kAtol, kRtol);
}

void check_running(nn::BatchNorm& bn, const std::string& prefix) {
  const Golden& g = golden("nn_norm");
  check_close(bn.running_mean, g[prefix + ".running_mean"], kAtol, kRtol, prefix + " running_mean");
  check_close(bn.running_var, g[prefix + ".running_var"], kAtol, kRtol, prefix + " running_var");
  CHECK(bn.num_batches_tracked.dtype() == kInt64);
  CHECK(bn.num_batches_tracked.item<int64_t>() ==
        g[prefix + ".num_batches_tracked"].item<int64_t>());
}

// Training steps "<name>.step0..", then one eval step, as gen_nn_norm.py ran them.
void check_batch_norm_case(nn::BatchNorm& bn, const std::string& name, int steps) {
  if (bn.affine) load_affine(bn, name);
  bn.train();
  for (int i = 0; i < steps; ++i) {
    const std::string prefix = name + ".step" + std::to_string(i);
    check_step(bn, prefix);
    if (bn.track_running_stats) check_running(bn, prefix);
  }
  bn.eval();
  check_step(bn, name + ".eval");
  if (bn.track_running_stats) check_running(bn, name + ".eval");
}

// Double backward: g = d sum(y * w_out) / dx with create_graph, then d sum(g * w_in) / d(x, w).
void check_gradgrad(nn::Module& m, const std::string& name, const Tensor& weight) {
  const Golden& g = golden("nn_norm");
  INFO(name);
  Tensor x = g[name + ".input"].requires_grad_();
  Tensor y = m(x);
  Tensor gx = autograd::grad({(y * g[name + ".grad_output"]).sum()}, {x}, {}, std::nullopt,
                             /*create_graph=*/true)[0];
  REQUIRE(gx.requires_grad());
  Tensors second = autograd::grad({(gx * g[name + ".grad_grad_input"]).sum()}, {x, weight});
  check_close(second[0], g[name + ".input_grad"], kAtol, kRtol, name + " d/dx");
  check_close(second[1], g[name + ".weight_grad"], kAtol, kRtol, name + " d/dweight");
}

}  // namespace

// ---- golden values -----------------------------------------------------------------------------

TEST_CASE("BatchNorm1d (N, C) with momentum 0.1 matches PyTorch over 3 steps and eval",
          "[nn][norm][golden]") {
  nn::BatchNorm1d bn(3, 1e-5, 0.1, true, true, kFloat64);
  check_batch_norm_case(bn, "bn1d", 3);
}

TEST_CASE("BatchNorm1d (N, C, L) with momentum None (cumulative average) matches PyTorch",
          "[nn][norm][golden]") {
  nn::BatchNorm1d bn(3, 1e-5, std::nullopt, true, true, kFloat64);
  check_batch_norm_case(bn, "bn1d_cma", 3);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 3);
}

TEST_CASE("BatchNorm2d matches PyTorch, with and without running statistics",
          "[nn][norm][golden]") {
  nn::BatchNorm2d bn(4, 1e-5, 0.1, true, true, kFloat64);
  check_batch_norm_case(bn, "bn2d", 2);
  nn::BatchNorm2d plain(2, 1e-5, 0.1, /*affine=*/false, /*track_running_stats=*/false, kFloat64);
  check_batch_norm_case(plain, "bn2d_nostats", 2);
}

TEST_CASE("LayerNorm over the last 1 and 2 dims matches PyTorch", "[nn][norm][golden]") {
  nn::LayerNorm last1({5}, 1e-5, true, kFloat64);
  load_affine(last1, "ln_last1");
  check_step(last1, "ln_last1");
  nn::LayerNorm last2({3, 5}, 1e-5, true, kFloat64);
  load_affine(last2, "ln_last2");
  check_step(last2, "ln_last2");
  nn::LayerNorm plain({6}, 1e-5, false, kFloat64);
  check_step(plain, "ln_noaffine");
}

TEST_CASE("GroupNorm matches PyTorch", "[nn][norm][golden]") {
  nn::GroupNorm gn3(2, 6, 1e-5, true, kFloat64);
  load_affine(gn3, "gn_3d");
  check_step(gn3, "gn_3d");
  nn::GroupNorm gn4(3, 6, 1e-5, true, kFloat64);
  load_affine(gn4, "gn_4d");
  check_step(gn4, "gn_4d");
}

TEST_CASE("normalization double backward matches PyTorch", "[nn][norm][golden]") {
  nn::BatchNorm2d bn(3, 1e-5, 0.1, true, true, kFloat64);
  load_affine(bn, "bn2d_gradgrad");
  check_gradgrad(bn, "bn2d_gradgrad", bn.weight);
  nn::LayerNorm ln({3, 4}, 1e-5, true, kFloat64);
  load_affine(ln, "ln_gradgrad");
  check_gradgrad(ln, "ln_gradgrad", ln.weight);
  nn::GroupNorm gn(2, 4, 1e-5, true, kFloat64);
  load_affine(gn, "gn_gradgrad");
  check_gradgrad(gn, "gn_gradgrad", gn.weight);
}

// ---- train / eval and running statistics --------------------------------------------------------

TEST_CASE("BatchNorm uses batch statistics in training and running ones in eval", "[nn][norm]") {
  nn::BatchNorm1d bn(2, 1e-5, 0.5, /*affine=*/false, true, kFloat64);
  Tensor x = tensor(std::vector<double>{1, 10, 3, 30}, {2, 2});  // channel 0: 1, 3; 1: 10, 30
  SECTION("training: standardised by the batch, running stats moved by momentum 0.5") {
    Tensor y = bn(x);
    // Batch mean 2 / 20, biased variance 1 / 100: y = -1, +1 (up to eps).
    auto v = values(y);
    CHECK(v[0] == Approx(-1).epsilon(1e-5));
    CHECK(v[2] == Approx(1).epsilon(1e-5));
    CHECK(v[1] == Approx(-1).epsilon(1e-5));
    // running = 0.5 * init + 0.5 * batch; the variance is the unbiased one (2 and 200).
    CHECK(values(bn.running_mean) == std::vector<double>{1.0, 10.0});
    CHECK(values(bn.running_var) == std::vector<double>{1.5, 100.5});
    CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
    CHECK_FALSE(bn.running_mean.requires_grad());
  }
  SECTION("eval: the running statistics, which stay unchanged") {
    bn.eval();
    Tensor y = bn(x);
    // running_mean 0, running_var 1: y = x / sqrt(1 + eps).
    auto v = values(y);
    CHECK(v[1] == Approx(10.0 / std::sqrt(1.0 + 1e-5)).epsilon(1e-12));
    CHECK(values(bn.running_mean) == std::vector<double>{0.0, 0.0});
    CHECK(bn.num_batches_tracked.item<int64_t>() == 0);
    bn.train();
    bn(x);
    CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  }
}

TEST_CASE("BatchNorm without tracked statistics normalises by the batch in eval too",
          "[nn][norm]") {
  nn::BatchNorm1d bn(2, 1e-5, 0.1, true, /*track_running_stats=*/false, kFloat64);
  CHECK_FALSE(bn.running_mean.defined());
  bn.eval();
  Tensor y = bn(tensor(std::vector<double>{1, 10, 3, 30}, {2, 2}));
  CHECK(values(y)[0] == Approx(-1).epsilon(1e-5));
}

TEST_CASE("batch_norm updates running statistics in place, without a graph", "[nn][norm]") {
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
  Tensor nbt = zeros({}, kInt64);
  Tensor x = randn({8, 3}, kFloat64).requires_grad_();
  const uint32_t version = rm.version();
  Tensor y = F::batch_norm(x, rm, rv, {}, {}, /*training=*/true, std::nullopt, 1e-5, nbt);
  // Cumulative average after one batch: the batch's own statistics.
  check_close(rm, x.detach().mean({0}), 1e-14, 1e-12, "running_mean");
  check_close(rv, x.detach().var({0}, 1), 1e-14, 1e-12, "running_var (unbiased)");
  CHECK(nbt.item<int64_t>() == 1);
  CHECK(rm.version() > version);
  CHECK_FALSE(rm.requires_grad());
  CHECK(y.requires_grad());
  CHECK_THROWS_WITH(F::batch_norm(x, rm, rv, {}, {}, true, std::nullopt, 1e-5),
                    Contains("num_batches_tracked"));
  // An empty batch leaves the statistics alone.
  Tensor before = rm.clone();
  CHECK(F::batch_norm(zeros({0, 3}, kFloat64), rm, rv, {}, {}, true).numel() == 0);
  CHECK(values(rm) == values(before));
}

// ---- numerics and dtypes -----------------------------------------------------------------------

TEST_CASE("normalization is numerically sound for a large mean in float32", "[nn][norm]") {
  // Values 1e4 + N(0, 1): E[x^2] - E[x]^2 would lose every digit of the variance in float32.
  Tensor base = randn({4, 64}, kFloat64);
  Tensor x = (base + 1e4).to(kFloat32);
  Tensor ref = base - base.mean({1}, true);
  ref = ref / (ref * ref).mean({1}, true).sqrt();
  Tensor y = F::layer_norm(x, {64});
  check_close(y, ref, 2e-3, 2e-3, "layer_norm float32 around 1e4");
  Tensor yb = F::batch_norm(x.t(), {}, {}, {}, {}, true, 0.1, 0.0);  // (64, 4): per column
  check_close(yb.t(), ref, 2e-3, 2e-3, "batch_norm float32 around 1e4");
}

TEST_CASE("normalization of float16 and bfloat16 computes in float32", "[nn][norm]") {
  Tensor x = randn({4, 3, 5}, kFloat32);
  Tensor ref = F::group_norm(x, 3, ones({3}), zeros({3}));
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor y = F::group_norm(x.to(dt), 3, ones({3}, dt), zeros({3}, dt));
    CHECK(y.dtype() == dt);
    check_close(y, ref, dt == kFloat16 ? 4e-3 : 3e-2, 1e-2, "group_norm reduced precision");
  }
  nn::BatchNorm1d bn(3);
  bn.to(kFloat16);
  CHECK(bn.running_mean.dtype() == kFloat16);
  CHECK(bn.num_batches_tracked.dtype() == kInt64);  // to(dtype) leaves integer buffers alone
  Tensor y = bn(x.to(kFloat16));
  CHECK(y.dtype() == kFloat16);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
}

// ---- module plumbing ---------------------------------------------------------------------------

TEST_CASE("normalization modules use PyTorch's state_dict keys and printing", "[nn][norm]") {
  nn::BatchNorm2d bn(4);
  CHECK(keys(bn.state_dict()) == std::vector<std::string>{"weight", "bias", "running_mean",
                                                          "running_var", "num_batches_tracked"});
  CHECK(keys(bn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(bn.num_batches_tracked.dim() == 0);
  CHECK(printed(bn) ==
        "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  nn::BatchNorm1d cma(3, 1e-3, std::nullopt, false, false);
  CHECK(keys(cma.state_dict()).empty());
  CHECK(printed(cma) ==
        "BatchNorm1d(3, eps=0.001, momentum=None, affine=False, track_running_stats=False)");
  nn::LayerNorm ln({3, 4});
  CHECK(keys(ln.state_dict()) == std::vector<std::string>{"weight", "bias"});
  CHECK(ln.weight.sizes() == Shape{3, 4});
  CHECK(printed(ln) == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True)");
  CHECK(printed(nn::LayerNorm({4}, 1e-6, false)) ==
        "LayerNorm((4,), eps=1e-06, elementwise_affine=False)");
  nn::GroupNorm gn(2, 6);
  CHECK(keys(gn.state_dict()) == std::vector<std::string>{"weight", "bias"});
  CHECK(printed(gn) == "GroupNorm(2, 6, eps=1e-05, affine=True)");
  // Inside a container, the keys get the child's prefix as in PyTorch.
  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::BatchNorm1d>(2));
  CHECK(keys(seq.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "0.running_mean",
                                                           "0.running_var",
                                                           "0.num_batches_tracked"});
}

TEST_CASE("normalization modules start as PyTorch's: weight 1, bias 0, mean 0, var 1",
          "[nn][norm]") {
  nn::BatchNorm1d bn(5);
  CHECK(values(bn.weight) == std::vector<double>(5, 1.0));
  CHECK(values(bn.bias) == std::vector<double>(5, 0.0));
  CHECK(values(bn.running_mean) == std::vector<double>(5, 0.0));
  CHECK(values(bn.running_var) == std::vector<double>(5, 1.0));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 0);
  CHECK(bn.weight.requires_grad());
  CHECK_FALSE(bn.running_var.requires_grad());
  bn.train();
  bn(randn({4, 5}));
  bn.reset_running_stats();
  CHECK(values(bn.running_var) == std::vector<double>(5, 1.0));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 0);
  nn::GroupNorm gn(1, 3);
  CHECK(values(gn.weight) == std::vector<double>(3, 1.0));
  nn::LayerNorm ln({2});
  CHECK(values(ln.bias) == std::vector<double>(2, 0.0));
}

// ---- errors ------------------------------------------------------------------------------------

TEST_CASE("normalization layers reject bad input with clear errors", "[nn][norm]") {
  nn::BatchNorm2d bn2(3);
  CHECK_THROWS_WITH(bn2(randn({2, 3, 4})), Contains("BatchNorm2d: expected 4D input"));
  CHECK_THROWS_WITH(bn2(randn({2, 4, 3, 3})), Contains("expected input with 3 channels"));
  nn::BatchNorm1d bn1(3);
  CHECK_THROWS_WITH(bn1(randn({2, 3, 4, 5})), Contains("BatchNorm1d: expected 2D or 3D input"));
  CHECK_THROWS_WITH(
      bn1(randn({1, 3})),
      Contains("Expected more than 1 value per channel when training") && Contains("[1, 3]"));
  bn1.eval();
  CHECK_NOTHROW(bn1(randn({1, 3})));  // fine in eval mode
  CHECK_THROWS_WITH(F::batch_norm(randn({2, 3}), {}, {}, {}, {}, /*training=*/false),
                    Contains("evaluation mode"));
  CHECK_THROWS_WITH(F::batch_norm(randn({4, 3}), {}, {}, ones({4}), {}, true),
                    Contains("batch_norm: weight should have shape [3]"));
  CHECK_THROWS_WITH(F::batch_norm(randn({4}), {}, {}, {}, {}, true),
                    Contains("batch_norm: expected input of shape (N, C, *)"));
  CHECK_THROWS_WITH(F::layer_norm(randn({2, 3}), {4}),
                    Contains("layer_norm: Given normalized_shape=[4], expected input with shape "
                             "[*, 4], but got input of size [2, 3]"));
  CHECK_THROWS_WITH(F::layer_norm(randn({2, 4}), {4}, ones({3})),
                    Contains("weight should have shape normalized_shape=[4]"));
  CHECK_THROWS_WITH(F::group_norm(randn({2, 3}), 2),
                    Contains("group_norm: Expected number of channels in input to be divisible "
                             "by num_groups"));
  CHECK_THROWS_WITH(nn::GroupNorm(4, 6), Contains("GroupNorm: num_channels must be divisible"));
  CHECK_THROWS_WITH(F::layer_norm(ones({2, 3}, kInt64), {3}),
                    Contains("layer_norm: expected a floating-point input"));
}
