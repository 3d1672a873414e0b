// Linear, convolution, pooling and reshaping layers (nn/linear.h, nn/conv.h, nn/pooling.h,
// nn/flatten.h): forward and backward against PyTorch's golden values
// (tests/golden/gen_nn_conv.py), plus what goldens cannot show: default initialisation
// statistics, printing, state_dict keys, the functional forms and error messages.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <sstream>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::check_param_grads;
using ember::testing::entries_under;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::keys;
using ember::testing::printed;
namespace F = ember::nn::functional;

namespace {

constexpr double kAtol = 1e-11, kRtol = 1e-10;

// Loads case `name`'s parameters into `m` by PyTorch's state_dict keys (a strict load, so the
// keys must be exactly the module's), runs `run` on the case's inputs, backpropagates the
// case's grad_output and compares the output and every gradient with PyTorch's.
void check_case(nn::Module& m, const std::string& name,
                const std::function<Tensor(const std::vector<Tensor>&)>& run) {
  const Golden& g = golden("nn_conv");
  INFO("case " << name);
  const std::string prefix = name + ".";
  nn::StateDict params = entries_under(g, prefix, [](const std::string& key) {
    return key.find('.') == std::string::npos && key.rfind("input", 0) != 0 &&
           key.rfind("grad_", 0) != 0 && key != "output" && key != "indices";
  });
  REQUIRE_NOTHROW(m.load_state_dict(params));
  std::vector<Tensor> inputs{g[prefix + "input"].requires_grad_()};
  if (g.has(prefix + "input2")) inputs.push_back(g[prefix + "input2"].requires_grad_());
  Tensor y = run(inputs);
  check_close(y, g[prefix + "output"], kAtol, kRtol, name + " output");
  y.backward(g[prefix + "grad_output"]);
  check_close(inputs[0].grad(), g[prefix + "grad_input"], kAtol, kRtol, name + " grad_input");
  if (inputs.size() > 1)
    check_close(inputs[1].grad(), g[prefix + "grad_input2"], kAtol, kRtol, name + " grad_input2");
  check_param_grads(m, g, prefix + "grad_", kAtol, kRtol);
}

void check_case(nn::Module& m, const std::string& name) {
  check_case(m, name, [&](const std::vector<Tensor>& x) { return m.forward(x[0]); });
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && ember::testing::values(a) == ember::testing::values(b);
}

// Bounds, mean and standard deviation of a tensor's values.
struct Stats {
  double min = INFINITY, max = -INFINITY, mean = 0, std = 0;
};
Stats stats(const Tensor& t) {
  Stats s;
  std::vector<double> v = ember::testing::values(t);
  for (double x : v) {
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean += x / static_cast<double>(v.size());
  }
  for (double x : v) s.std += (x - s.mean) * (x - s.mean) / static_cast<double>(v.size());
  s.std = std::sqrt(s.std);
  return s;
}

// U(-bound, bound): every value inside, mean ~ 0, std ~ bound / sqrt(3), and the extremes
// close to the bounds (so a too-narrow range fails too).
void check_uniform(const Tensor& t, double bound, const std::string& what) {
  INFO(what << " (" << t.numel() << " values, bound " << bound << ")");
  Stats s = stats(t);
  const double n = static_cast<double>(t.numel());
  CHECK(s.min >= -bound);
  CHECK(s.max <= bound);
  CHECK(s.min < -0.95 * bound);
  CHECK(s.max > 0.95 * bound);
  CHECK(std::abs(s.mean) < 5 * bound / std::sqrt(3 * n));
  CHECK(std::abs(s.std - bound / std::sqrt(3.0)) < 0.05 * bound);
}

}  // namespace

// ---- golden: forward and backward against PyTorch -----------------------------------------------

TEST_CASE("Linear and Bilinear match PyTorch", "[nn][nn_conv][golden]") {
  nn::Linear a(5, 3, true, kFloat64);
  check_case(a, "linear");
  nn::Linear b(5, 3, true, kFloat64);
  check_case(b, "linear.batched");
  nn::Linear c(4, 6, /*bias=*/false, kFloat64);
  check_case(c, "linear.nobias");
  nn::Bilinear d(3, 4, 5, true, kFloat64);
  check_case(d, "bilinear", [&](const std::vector<Tensor>& x) { return d(x[0], x[1]); });
  nn::Bilinear e(2, 3, 4, /*bias=*/false, kFloat64);
  check_case(e, "bilinear.batched_nobias",
             [&](const std::vector<Tensor>& x) { return e.forward(x[0], x[1]); });
}

TEST_CASE("Conv2d matches PyTorch: stride padding dilation groups same valid",
          "[nn][nn_conv][golden]") {
  const DType f64 = kFloat64;
  nn::Conv2d basic(3, 2, 3, 1, 0, 1, 1, true, "zeros", f64);
  check_case(basic, "conv2d.basic");
  nn::Conv2d strided(2, 3, {3, 2}, 2, {1, 2}, 1, 1, true, "zeros", f64);
  check_case(strided, "conv2d.stride_padding");
  nn::Conv2d dilated(2, 3, 3, 1, 2, 2, 1, /*bias=*/false, "zeros", f64);
  check_case(dilated, "conv2d.dilation");
  nn::Conv2d grouped(4, 4, 3, 1, 1, 1, /*groups=*/2, true, "zeros", f64);
  check_case(grouped, "conv2d.groups");
  nn::Conv2d same_even(2, 3, {4, 3}, 1, "same", {1, 2}, 1, true, "zeros", f64);
  check_case(same_even, "conv2d.same_even");
  nn::Conv2d same_odd(2, 3, 3, 1, "same", 1, 1, true, "zeros", f64);
  check_case(same_odd, "conv2d.same_odd");
  nn::Conv2d valid(2, 3, 2, 1, "valid", 1, 1, true, "zeros", f64);
  check_case(valid, "conv2d.valid");
  nn::Conv2d unbatched(2, 3, 3, {1, 2}, 1, 1, 1, true, "zeros", f64);
  check_case(unbatched, "conv2d.unbatched");
}

TEST_CASE("Conv1d matches PyTorch", "[nn][nn_conv][golden]") {
  const DType f64 = kFloat64;
  nn::Conv1d basic(3, 4, 3, 2, 1, 1, 1, true, "zeros", f64);
  check_case(basic, "conv1d.basic");
  nn::Conv1d same(3, 2, 4, 1, "same", 1, 1, true, "zeros", f64);
  check_case(same, "conv1d.same_even");
  nn::Conv1d grouped(3, 6, 2, 1, 0, /*dilation=*/2, /*groups=*/3, true, "zeros", f64);
  check_case(grouped, "conv1d.groups_dilation");
  nn::Conv1d unbatched(2, 3, 3, 1, 1, 1, 1, true, "zeros", f64);
  check_case(unbatched, "conv1d.unbatched");
}

TEST_CASE("Conv1d and Conv2d padding modes match PyTorch", "[nn][nn_conv][golden]") {
  const DType f64 = kFloat64;
  nn::Conv2d reflect(2, 3, 3, 1, {1, 2}, 1, 1, true, "reflect", f64);
  check_case(reflect, "conv2d.reflect");
  nn::Conv2d replicate(2, 3, {2, 3}, 2, 2, 1, 1, true, "replicate", f64);
  check_case(replicate, "conv2d.replicate");
  nn::Conv2d circular(2, 2, 3, 1, 1, {1, 2}, 1, true, "circular", f64);
  check_case(circular, "conv2d.circular");
  nn::Conv2d circular_same(2, 3, {4, 3}, 1, "same", 1, 1, true, "circular", f64);
  check_case(circular_same, "conv2d.circular_same");
  nn::Conv2d reflect_unbatched(2, 2, 3, 1, 1, 1, 1, true, "reflect", f64);
  check_case(reflect_unbatched, "conv2d.reflect_unbatched");
  nn::Conv1d reflect1(3, 2, 3, 1, 2, 1, 1, true, "reflect", f64);
  check_case(reflect1, "conv1d.reflect");
  nn::Conv1d circular1(2, 2, 4, 1, "same", 1, 1, true, "circular", f64);
  check_case(circular1, "conv1d.circular_same");
  nn::Conv1d replicate1(2, 3, 3, 1, 1, 1, 1, true, "replicate", f64);
  check_case(replicate1, "conv1d.replicate_unbatched");
  // The mode prints as PyTorch prints it, and bad modes are refused as PyTorch refuses them.
  CHECK(printed(reflect).find("padding_mode=reflect") != std::string::npos);
  CHECK_THROWS_WITH(nn::Conv2d(2, 3, 3, 1, 0, 1, 1, true, "mirror"),
                    Contains("padding_mode must be one of"));
  CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 3, 3, 1, 0, 0, 1, true, 1, "reflect"),
                    Contains("only \"zeros\" padding mode"));
  // reflect needs the padding to be smaller than the input.
  nn::Conv2d wide(1, 1, 3, 1, 4, 1, 1, true, "reflect");
  CHECK_THROWS_WITH(wide(randn({1, 1, 3, 3})), Contains("reflect"));
}

TEST_CASE("ConvTranspose2d matches PyTorch", "[nn][nn_conv][golden]") {
  const DType f64 = kFloat64;
  nn::ConvTranspose2d basic(2, 3, 3, 1, 0, 0, 1, true, 1, "zeros", f64);
  check_case(basic, "conv_transpose2d.basic");
  nn::ConvTranspose2d grouped(4, 4, 3, /*stride=*/2, /*padding=*/1, /*output_padding=*/1,
                              /*groups=*/2, true, 1, "zeros", f64);
  check_case(grouped, "conv_transpose2d.stride_groups");
  // output_padding 1 with stride 1 in the width (allowed: dilation 2).
  nn::ConvTranspose2d dilated(2, 3, {3, 2}, {2, 1}, {1, 0}, {1, 1}, 1, /*bias=*/false, {1, 2},
                              "zeros", f64);
  check_case(dilated, "conv_transpose2d.dilation");
  nn::ConvTranspose2d unbatched(2, 2, 2, 2, 0, 0, 1, true, 1, "zeros", f64);
  check_case(unbatched, "conv_transpose2d.unbatched");
  nn::ConvTranspose2d sized(2, 3, 3, 3, 1, 0, 1, true, 1, "zeros", f64);
  check_case(sized, "conv_transpose2d.output_size", [&](const std::vector<Tensor>& x) {
    return sized.forward(x[0], {8, 11});
  });
}

TEST_CASE("MaxPool2d AvgPool2d and AdaptiveAvgPool2d match PyTorch", "[nn][nn_conv][golden]") {
  nn::MaxPool2d max_basic(2);
  check_case(max_basic, "max_pool2d.basic");
  nn::MaxPool2d max_indices(3, 2, 1, 1, /*return_indices=*/true);
  Tensor indices;
  check_case(max_indices, "max_pool2d.stride_padding", [&](const std::vector<Tensor>& x) {
    auto [values, idx] = max_indices.forward_with_indices(x[0]);
    indices = idx;
    return values;
  });
  CHECK(indices.dtype() == kInt64);
  CHECK(same_values(indices, golden("nn_conv")["max_pool2d.stride_padding.indices"]));
  nn::MaxPool2d max_ceil({3, 2}, {2, 1}, 1, {2, 1}, false, /*ceil_mode=*/true);
  check_case(max_ceil, "max_pool2d.ceil_dilation");

  nn::AvgPool2d avg_basic(2);
  check_case(avg_basic, "avg_pool2d.basic");
  nn::AvgPool2d avg_include(3, 2, 1, /*ceil_mode=*/true);
  check_case(avg_include, "avg_pool2d.ceil_include_pad");
  nn::AvgPool2d avg_exclude(3, 2, 1, /*ceil_mode=*/true, /*count_include_pad=*/false);
  check_case(avg_exclude, "avg_pool2d.ceil_exclude_pad");
  nn::AvgPool2d avg_divisor({2, 3}, {1, 2}, 1, false, true, /*divisor_override=*/4);
  check_case(avg_divisor, "avg_pool2d.divisor");

  nn::AdaptiveAvgPool2d uneven({3, 2});  // 7x5 -> 3x2: overlapping windows
  check_case(uneven, "adaptive_avg_pool2d.uneven");
  nn::AdaptiveAvgPool2d even({3, 2});
  check_case(even, "adaptive_avg_pool2d.even");
  nn::AdaptiveAvgPool2d upsample({5, 4});
  check_case(upsample, "adaptive_avg_pool2d.upsample");
  nn::AdaptiveAvgPool2d global(1);
  check_case(global, "adaptive_avg_pool2d.global");
  nn::AdaptiveAvgPool2d unbatched(4);
  check_case(unbatched, "adaptive_avg_pool2d.unbatched");
}

TEST_CASE("Flatten and Unflatten match PyTorch", "[nn][nn_conv][golden]") {
  nn::Flatten flatten;
  check_case(flatten, "flatten");
  nn::Unflatten unflatten(1, {3, 4});
  check_case(unflatten, "unflatten");
}

TEST_CASE("the functional forms give the modules' results", "[nn][nn_conv][golden]") {
  const Golden& g = golden("nn_conv");
  Tensor x = g["conv2d.same_even.input"];
  Tensor y =
      F::conv2d(x, g["conv2d.same_even.weight"], g["conv2d.same_even.bias"], {1}, "same", {1, 2});
  check_close(y, g["conv2d.same_even.output"], kAtol, kRtol, "F::conv2d same");
  y = F::conv1d(g["conv1d.basic.input"], g["conv1d.basic.weight"], g["conv1d.basic.bias"], {2},
                {1});
  check_close(y, g["conv1d.basic.output"], kAtol, kRtol, "F::conv1d");
  y = F::conv_transpose2d(g["conv_transpose2d.stride_groups.input"],
                          g["conv_transpose2d.stride_groups.weight"],
                          g["conv_transpose2d.stride_groups.bias"], {2}, {1}, {1}, 2);
  check_close(y, g["conv_transpose2d.stride_groups.output"], kAtol, kRtol, "F::conv_transpose2d");
  y = F::linear(g["linear.input"], g["linear.weight"], g["linear.bias"]);
  check_close(y, g["linear.output"], kAtol, kRtol, "F::linear");
  y = F::bilinear(g["bilinear.input"], g["bilinear.input2"], g["bilinear.weight"],
                  g["bilinear.bias"]);
  check_close(y, g["bilinear.output"], kAtol, kRtol, "F::bilinear");
  auto [values, indices] =
      F::max_pool2d_with_indices(g["max_pool2d.stride_padding.input"], {3}, {2}, {1});
  check_close(values, g["max_pool2d.stride_padding.output"], 0, 0, "F::max_pool2d_with_indices");
  CHECK(same_values(indices, g["max_pool2d.stride_padding.indices"]));
  y = F::adaptive_avg_pool2d(g["adaptive_avg_pool2d.uneven.input"], {3, 2});
  check_close(y, g["adaptive_avg_pool2d.uneven.output"], kAtol, kRtol, "F::adaptive_avg_pool2d");
  y = F::avg_pool2d(g["avg_pool2d.ceil_exclude_pad.input"], {3}, {2}, {1}, true, false);
  check_close(y, g["avg_pool2d.ceil_exclude_pad.output"], kAtol, kRtol, "F::avg_pool2d");
  y = F::flatten(g["flatten.input"], 1);
  check_close(y, g["flatten.output"], 0, 0, "F::flatten");
}

// ---- what goldens cannot show ------------------------------------------------------------------

TEST_CASE("layers are initialised as PyTorch initialises them", "[nn][nn_conv]") {
  manual_seed(7);
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); so is the bias.
  nn::Linear linear(400, 300);
  check_uniform(linear.weight, 1 / std::sqrt(400.0), "Linear weight");
  check_uniform(linear.bias, 1 / std::sqrt(400.0), "Linear bias");
  CHECK(linear.weight.dtype() == kFloat32);
  CHECK(linear.weight.requires_grad());

  nn::Conv2d conv(16, 64, 3);  // fan_in = 16 * 3 * 3
  check_uniform(conv.weight, 1 / std::sqrt(144.0), "Conv2d weight");
  check_uniform(conv.bias, 1 / std::sqrt(144.0), "Conv2d bias");
  nn::Conv2d grouped(16, 512, 3, 1, 0, 1, /*groups=*/4);  // fan_in = 16 / 4 * 9
  check_uniform(grouped.weight, 1 / std::sqrt(36.0), "grouped Conv2d weight");
  nn::Conv1d conv1d(8, 256, 5);  // fan_in = 40
  check_uniform(conv1d.weight, 1 / std::sqrt(40.0), "Conv1d weight");
  check_uniform(conv1d.bias, 1 / std::sqrt(40.0), "Conv1d bias");
  // ConvTranspose2d: weight (in, out / groups, kh, kw), fan_in = out / groups * kh * kw.
  nn::ConvTranspose2d deconv(64, 8, 3);
  CHECK(deconv.weight.sizes() == Shape{64, 8, 3, 3});
  check_uniform(deconv.weight, 1 / std::sqrt(72.0), "ConvTranspose2d weight");
  nn::Bilinear bilinear(20, 30, 40);  // U(-1/sqrt(in1), 1/sqrt(in1)) for weight and bias
  check_uniform(bilinear.weight, 1 / std::sqrt(20.0), "Bilinear weight");
  CHECK(stats(bilinear.bias).max <= 1 / std::sqrt(20.0));
  CHECK(stats(bilinear.bias).min >= -1 / std::sqrt(20.0));

  // The default generator drives it: the same seed, the same weights.
  manual_seed(3);
  nn::Linear a(6, 4);
  manual_seed(3);
  nn::Linear b(6, 4);
  CHECK(same_values(a.weight, b.weight));
  CHECK(same_values(a.bias, b.bias));
  CHECK_FALSE(same_values(a.weight, nn::Linear(6, 4).weight));

  // dtype and zero-size layers (PyTorch leaves zero-element tensors alone).
  nn::Conv2d f64(2, 3, 3, 1, 0, 1, 1, true, "zeros", kFloat64);
  CHECK(f64.weight.dtype() == kFloat64);
  CHECK(f64.bias.dtype() == kFloat64);
  nn::Linear empty_in(0, 3);
  CHECK(empty_in.weight.sizes() == Shape{3, 0});
  CHECK(stats(empty_in.bias).max == 0.0);
}

TEST_CASE("layers print as PyTorch prints them", "[nn][nn_conv]") {
  CHECK(printed(nn::Identity()) == "Identity()");
  CHECK(printed(nn::Linear(784, 256)) == "Linear(in_features=784, out_features=256, bias=True)");
  CHECK(printed(nn::Linear(3, 2, false)) == "Linear(in_features=3, out_features=2, bias=False)");
  CHECK(printed(nn::Bilinear(3, 4, 5)) ==
        "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)");
  CHECK(printed(nn::Conv1d(3, 8, 3)) == "Conv1d(3, 8, kernel_size=(3,), stride=(1,))");
  CHECK(printed(nn::Conv1d(3, 8, 3, 2, 1, 2, 1, false)) ==
        "Conv1d(3, 8, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), bias=False)");
  CHECK(printed(nn::Conv1d(4, 8, 3, 1, "same")) ==
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same)");
  CHECK(printed(nn::Conv2d(3, 8, 3, 1, "same")) ==
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)");
  CHECK(printed(nn::Conv2d(3, 8, 3)) == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))");
  CHECK(printed(nn::Conv2d(3, 8, {3, 2}, 2, {1, 0}, 2, 1, false)) ==
        "Conv2d(3, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 0), dilation=(2, 2), "
        "bias=False)");
  CHECK(printed(nn::Conv2d(4, 8, 3, 1, "valid", 1, 2)) ==
        "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=valid, groups=2)");
  CHECK(printed(nn::ConvTranspose2d(3, 8, 3)) ==
        "ConvTranspose2d(3, 8, kernel_size=(3, 3), stride=(1, 1))");
  CHECK(printed(nn::ConvTranspose2d(4, 8, 3, 2, 1, 1, 2, false, 2)) ==
        "ConvTranspose2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
        "dilation=(2, 2), output_padding=(1, 1), groups=2, bias=False)");
  CHECK(printed(nn::MaxPool2d(2)) ==
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(printed(nn::MaxPool2d({3, 2}, 1, 1, 2, true, true)) ==
        "MaxPool2d(kernel_size=(3, 2), stride=1, padding=1, dilation=2, ceil_mode=True)");
  CHECK(printed(nn::AvgPool2d(2)) == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  CHECK(printed(nn::AvgPool2d(3, 2, 1, true, false, 4)) ==
        "AvgPool2d(kernel_size=3, stride=2, padding=1)");
  CHECK(printed(nn::AdaptiveAvgPool2d({3, 2})) == "AdaptiveAvgPool2d(output_size=(3, 2))");
  CHECK(printed(nn::AdaptiveAvgPool2d(4)) == "AdaptiveAvgPool2d(output_size=4)");
  CHECK(printed(nn::Flatten()) == "Flatten(start_dim=1, end_dim=-1)");
  CHECK(printed(nn::Flatten(0, 2)) == "Flatten(start_dim=0, end_dim=2)");
  CHECK(printed(nn::Unflatten(1, {2, 5})) == "Unflatten(dim=1, unflattened_size=(2, 5))");

  nn::Sequential net{std::make_shared<nn::Conv2d>(1, 4, 3, 1, "same"),
                     std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(4 * 14 * 14, 10)};
  CHECK(printed(net) ==
        "Sequential(\n"
        "  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)\n"
        "  (1): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  (2): Flatten(start_dim=1, end_dim=-1)\n"
        "  (3): Linear(in_features=784, out_features=10, bias=True)\n"
        ")");
  // And it runs: (N, 1, 28, 28) -> (N, 10).
  CHECK(net.forward(randn({2, 1, 28, 28})).sizes() == Shape{2, 10});
}

TEST_CASE("layers' state_dict keys are PyTorch's", "[nn][nn_conv]") {
  using Keys = std::vector<std::string>;
  CHECK(keys(nn::Linear(3, 2).state_dict()) == Keys{"weight", "bias"});
  CHECK(keys(nn::Linear(3, 2, false).state_dict()) == Keys{"weight"});
  CHECK(keys(nn::Bilinear(3, 2, 4).state_dict()) == Keys{"weight", "bias"});
  CHECK(keys(nn::Conv2d(3, 2, 3, 1, 0, 1, 1, false).state_dict()) == Keys{"weight"});
  CHECK(keys(nn::ConvTranspose2d(3, 2, 3).state_dict()) == Keys{"weight", "bias"});
  CHECK(nn::MaxPool2d(2).state_dict().empty());
  CHECK(nn::AdaptiveAvgPool2d(1).state_dict().empty());
  nn::Sequential net{std::make_shared<nn::Conv1d>(2, 3, 3), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(3, 1)};
  CHECK(keys(net.state_dict()) == Keys{"0.weight", "0.bias", "2.weight", "2.bias"});
  nn::Bilinear bl(3, 2, 4);
  CHECK(bl.weight.sizes() == Shape{4, 3, 2});
}

TEST_CASE("layer edge cases: Identity and unbatched inputs and make_shared arguments",
          "[nn][nn_conv]") {
  Tensor x = randn({2, 3});
  nn::Identity id;
  CHECK(id(x).is_same(x));
  // make_shared forwards plain numbers and strings to the window arguments.
  auto conv = std::make_shared<nn::Conv2d>(3, 8, 4, 1, "same");
  CHECK(conv->forward(randn({2, 3, 7, 6})).sizes() == Shape{2, 8, 7, 6});
  CHECK(conv->forward(randn({3, 7, 6})).sizes() == Shape{8, 7, 6});
  auto deconv = std::make_shared<nn::ConvTranspose2d>(8, 3, 4, 2, 1);
  CHECK(deconv->forward(randn({2, 8, 5, 5})).sizes() == Shape{2, 3, 10, 10});
  CHECK(deconv->forward(randn({2, 8, 5, 5}), {11, 11}).sizes() == Shape{2, 3, 11, 11});
  auto pool = std::make_shared<nn::MaxPool2d>(3, 2, 1);
  CHECK(pool->forward(randn({3, 8, 8})).sizes() == Shape{3, 4, 4});
  // Linear on a 1-D input and on several leading dims.
  nn::Linear fc(3, 2);
  CHECK(fc(randn({3})).sizes() == Shape{2});
  CHECK(fc(randn({4, 5, 3})).sizes() == Shape{4, 5, 2});
  // Adaptive pooling with divisible sizes is plain average pooling.
  Tensor img = randn({2, 3, 8, 6});
  check_close(F::adaptive_avg_pool2d(img, {4, 3}), F::avg_pool2d(img, {2}), 1e-6, 1e-6,
              "adaptive = avg_pool2d");
  // A module converted to float64 computes in float64.
  nn::Conv1d c1(2, 2, 3);
  c1.to(kFloat64);
  CHECK(c1.forward(randn({1, 2, 5}, kFloat64)).dtype() == kFloat64);
  // Flatten of a non-contiguous input copies; Unflatten with -1.
  Tensor t = randn({2, 3, 4}).transpose(1, 2);
  CHECK(nn::Flatten().forward(t).sizes() == Shape{2, 12});
  CHECK(nn::Unflatten(-1, {2, -1}).forward(randn({3, 8})).sizes() == Shape{3, 2, 4});
}

TEST_CASE("layers report bad input with the layer and the shapes", "[nn][nn_conv]") {
  nn::Linear fc(5, 2);
  CHECK_THROWS_WITH(fc(randn({4, 3})),
                    Contains("Linear: input of shape [4, 3] has 3 features, expected "
                             "in_features=5"));
  CHECK_THROWS_WITH(fc(scalar_tensor(1.0)), Contains("Linear"));
  nn::Bilinear bl(3, 4, 5);
  CHECK_THROWS_WITH(bl(randn({2, 3}), randn({2, 3})), Contains("in2_features=4"));
  CHECK_THROWS_WITH(bl(randn({2})), Contains("Bilinear"));  // one input: the base forward
  CHECK_THROWS_WITH(F::bilinear(randn({2, 3}), randn({3, 4}), randn({5, 3, 4})),
                    Contains("same leading dims"));

  nn::Conv2d conv(3, 8, 3);
  CHECK_THROWS_WITH(conv(randn({2, 4, 8, 8})),
                    Contains("Conv2d: expected input of shape [2, 4, 8, 8] to have 3 channels"));
  CHECK_THROWS_WITH(conv(randn({8, 8})), Contains("Conv2d: expected a 3-D (unbatched) or 4-D"));
  CHECK_THROWS_WITH(conv(randn({1, 3, 2, 2})), Contains("conv2d"));  // kernel larger than input
  CHECK_THROWS_WITH(nn::Conv2d(3, 8, 3, 2, "same"),
                    Contains("padding=\"same\" is not supported for strided convolutions"));
  CHECK_THROWS_WITH(nn::Conv2d(3, 8, 3, 1, "full"), Contains("invalid padding string \"full\""));
  CHECK_THROWS_WITH(nn::Conv2d(3, 8, 3, 1, 0, 1, 2), Contains("in_channels (3) must be divisible"));
  CHECK_THROWS_WITH(nn::Conv2d(3, 8, {3, 3, 3}), Contains("kernel_size must be one value or 2"));
  CHECK_THROWS_WITH(F::conv2d(randn({1, 2, 5, 5}), randn({3, 2, 3, 3}), {}, {2}, "same"),
                    Contains("strided"));
  CHECK_THROWS_WITH(F::conv2d(randn({1, 2, 5, 5}), randn({3, 2, 3, 3}), {}, {1}, "wide"),
                    Contains("\"valid\" or \"same\""));

  nn::Conv1d c1(2, 4, 3);
  CHECK_THROWS_WITH(c1(randn({1, 2, 3, 3})), Contains("Conv1d: expected a 2-D"));
  CHECK_THROWS_WITH(F::conv1d(randn({1, 3, 6}), randn({4, 2, 3})),
                    Contains("conv1d: given groups=1, weight of shape [4, 2, 3]"));
  CHECK_THROWS_WITH(F::conv1d(randn({1, 2, 6}), randn({4, 2, 3}), {}, {1, 1}),
                    Contains("conv1d: stride must be one value"));

  CHECK_THROWS_WITH(nn::ConvTranspose2d(2, 2, 3, 1, 0, /*output_padding=*/1),
                    Contains("output_padding [1, 1] must be smaller than either stride"));
  CHECK_THROWS_WITH(F::conv_transpose2d(randn({1, 3, 4, 4}), randn({2, 2, 3, 3})),
                    Contains("conv_transpose2d: weight of shape [2, 2, 3, 3]"));
  CHECK_THROWS_WITH(F::conv_transpose2d(randn({1, 2, 1, 1}), randn({2, 2, 1, 1}), {}, {1}, {1}),
                    Contains("non-positive output size"));
  nn::ConvTranspose2d deconv(2, 2, 3, 2);
  CHECK_THROWS_WITH(deconv.forward(randn({1, 2, 4, 4}), {20, 9}),
                    Contains("requested an output size of [20, 9]"));

  nn::MaxPool2d with_indices(2, {}, 0, 1, /*return_indices=*/true);
  CHECK_THROWS_WITH(with_indices(randn({1, 1, 4, 4})), Contains("forward_with_indices"));
  CHECK(std::get<1>(with_indices.forward_with_indices(randn({1, 1, 4, 4}))).sizes() ==
        Shape{1, 1, 2, 2});
  CHECK_THROWS_WITH(nn::MaxPool2d({2, 2, 2}), Contains("MaxPool2d: kernel_size"));
  CHECK(printed(nn::AvgPool2d({3, 2})) ==
        "AvgPool2d(kernel_size=(3, 2), stride=(3, 2), padding=0)");
  CHECK_THROWS_WITH(nn::MaxPool2d(2, 2, 2)(randn({1, 1, 4, 4})), Contains("max_pool2d"));
  CHECK_THROWS_WITH(nn::AdaptiveAvgPool2d({0, 2}), Contains("output_size must be positive"));
  CHECK_THROWS_WITH(F::adaptive_avg_pool2d(randn({4, 4}), {2}),
                    Contains("adaptive_avg_pool2d: expected a 3-D"));
  CHECK_THROWS_WITH(F::adaptive_avg_pool2d(randn({1, 2, 0, 4}), {2}),
                    Contains("non-empty channel and spatial dims"));
  CHECK_THROWS_WITH(nn::Unflatten(1, {2, 4})(randn({3, 7})), Contains("unflatten"));
}

TEST_CASE("layers run in float32 and in the 16-bit types", "[nn][nn_conv]") {
  manual_seed(11);
  Tensor x = randn({2, 3, 6, 5});
  nn::Conv2d conv(3, 4, 2, 1, "same");
  Tensor y32 = conv(x);
  conv.to(kFloat64);
  Tensor y64 = conv(x.to(kFloat64));
  CHECK(y32.dtype() == kFloat32);
  check_close(y32, y64, 1e-5, 1e-5, "Conv2d float32");
  // conv_transpose2d and adaptive pooling in bfloat16 / float16 track float64.
  Tensor w = randn({3, 2, 3, 3});
  Tensor ref = F::conv_transpose2d(x.to(kFloat64), w.to(kFloat64), {}, {2}, {1}, {1});
  Tensor half = F::conv_transpose2d(x.to(kFloat16), w.to(kFloat16), {}, {2}, {1}, {1});
  CHECK(half.dtype() == kFloat16);
  check_close(half, ref, 2e-2, 2e-2, "conv_transpose2d float16");
  Tensor pooled = F::adaptive_avg_pool2d(x.to(kBFloat16), {4, 3});
  CHECK(pooled.dtype() == kBFloat16);
  check_close(pooled, F::adaptive_avg_pool2d(x.to(kFloat64), {4, 3}), 2e-2, 2e-2,
              "adaptive_avg_pool2d bfloat16");
}
