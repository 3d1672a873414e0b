// Autocast (autograd/autocast.h): which ops run in which dtype, that gradients reach float32
// leaves in float32, the weight cast cache, nesting, and bad arguments.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/autocast.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

TEST_CASE("autocast: products run in the lower precision, reductions in float32", "[autocast]") {
  manual_seed(1);
  Tensor x = randn({8, 16}), w = randn({4, 16}).requires_grad_(), b = randn({4}).requires_grad_();
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  {
    autocast::AutocastGuard amp(DeviceType::CPU);
    CHECK(autocast::is_enabled(DeviceType::CPU));
    CHECK(autocast::get_dtype(DeviceType::CPU) == kBFloat16);
    CHECK_FALSE(autocast::is_enabled(DeviceType::CUDA));
    Tensor y = linear(x, w, b);
    CHECK(y.dtype() == kBFloat16);
    CHECK(matmul(x, w.t()).dtype() == kBFloat16);
    CHECK(mm(x, w.t()).dtype() == kBFloat16);
    CHECK(softmax(y, 1).dtype() == kFloat32);
    CHECK(log_softmax(y, 1).dtype() == kFloat32);
    CHECK(relu(y).dtype() == kBFloat16);            // not on a list: its input's dtype
    CHECK((y + ones({8, 4})).dtype() == kFloat32);  // promotion as always
    Tensor loss = nn::functional::cross_entropy(y, tensor<int64_t>({0, 1, 2, 3, 0, 1, 2, 3}));
    CHECK(loss.dtype() == kFloat32);
    // float64 and integer tensors are never cast.
    CHECK(matmul(x.to(kFloat64), w.t().detach().to(kFloat64)).dtype() == kFloat64);
    CHECK(matmul(ones({2, 2}, kInt64), ones({2, 2}, kInt64)).dtype() == kInt64);
    loss.backward();
  }
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  // Gradients reach the float32 leaves in float32, close to the float32 computation's.
  REQUIRE(w.grad().dtype() == kFloat32);
  REQUIRE(b.grad().dtype() == kFloat32);
  Tensor w32 = w.detach().clone().requires_grad_(), b32 = b.detach().clone().requires_grad_();
  nn::functional::cross_entropy(linear(x, w32, b32), tensor<int64_t>({0, 1, 2, 3, 0, 1, 2, 3}))
      .backward();
  const double scale = abs(w32.grad()).max().to(kFloat64).item<double>();
  CHECK(max_difference(w.grad(), w32.grad()) < 0.05 * scale);  // bfloat16: 8 mantissa bits
  CHECK(max_difference(b.grad(), b32.grad()) < 0.05 * scale);
}

TEST_CASE("autocast: float16 on cpu, and a region for cuda leaves cpu tensors alone",
          "[autocast]") {
  Tensor x = randn({3, 5}), w = randn({5, 2});
  {
    autocast::AutocastGuard amp(DeviceType::CPU, kFloat16);
    CHECK(matmul(x, w).dtype() == kFloat16);
    // Nested: turned off inside, back on after.
    {
      autocast::AutocastGuard off(DeviceType::CPU, std::nullopt, /*enabled=*/false);
      CHECK(matmul(x, w).dtype() == kFloat32);
    }
    CHECK(matmul(x, w).dtype() == kFloat16);
  }
  {
    autocast::AutocastGuard amp(DeviceType::CUDA);
    CHECK(autocast::get_dtype(DeviceType::CUDA) == kFloat16);
    CHECK(matmul(x, w).dtype() == kFloat32);  // cpu tensors: not this region's device type
  }
  CHECK(matmul(x, w).dtype() == kFloat32);
}

TEST_CASE("autocast: a conv net's forward and backward on cpu in bfloat16", "[autocast]") {
  manual_seed(3);
  nn::Conv2d conv(1, 4, 3, /*stride=*/1, /*padding=*/1);
  nn::Linear fc(4 * 6 * 6, 3);
  Tensor x = randn({2, 1, 6, 6});
  Tensor target = tensor<int64_t>({0, 2});
  auto loss_of = [&] {
    Tensor h = relu(conv.forward(x));
    return nn::functional::cross_entropy(fc.forward(h.flatten(1)), target);
  };
  Tensor ref = loss_of();
  ref.backward();
  Tensor conv_grad = conv.weight.grad().clone();
  conv.weight.set_grad(Tensor());
  fc.weight.set_grad(Tensor());
  Tensor loss;
  {
    autocast::AutocastGuard amp(DeviceType::CPU);
    loss = loss_of();
  }
  CHECK(loss.dtype() == kFloat32);
  CHECK(std::abs(loss.item<float>() - ref.item<float>()) < 0.05 * std::abs(ref.item<float>()));
  loss.backward();
  REQUIRE(conv.weight.grad().dtype() == kFloat32);
  const double scale = abs(conv_grad).max().to(kFloat64).item<double>();
  CHECK(max_difference(conv.weight.grad(), conv_grad) < 0.05 * scale);
}

TEST_CASE("autocast: a parameter is cast once per region (the weight cache)", "[autocast]") {
  Tensor w = randn({4, 4}).requires_grad_();
  Tensor x = randn({2, 4});
  {
    autocast::AutocastGuard amp(DeviceType::CPU);
    CHECK(autocast::cache_size() == 0);
    Tensor y1 = matmul(x, w), y2 = matmul(x, w);
    CHECK(autocast::cache_size() == 1);  // w; x is not a parameter
    // Two forward/backward passes through the one cached cast accumulate both gradients.
    (y1.sum() + y2.sum()).backward();
    Tensor g1 = w.grad().clone();
    matmul(x, w).sum().backward();
    CHECK(max_difference(w.grad(), g1 * 1.5) <
          1e-2 * (1 + abs(g1).max().to(kFloat64).item<double>()));
    // An in-place change of the parameter refreshes its cast.
    {
      autograd::NoGradGuard no_grad;
      w.mul_(0);
    }
    CHECK(matmul(x, w).abs().sum().item<float>() == 0.0f);
    // Without the cache nothing is kept.
    {
      autocast::AutocastGuard nocache(DeviceType::CPU, std::nullopt, true, /*cache=*/false);
      autocast::clear_cache();
      (void)matmul(x, w);
      CHECK(autocast::cache_size() == 0);
    }
    (void)matmul(x, w);
    CHECK(autocast::cache_size() == 1);
  }
  CHECK(autocast::cache_size() == 0);  // the outermost region emptied it
}

TEST_CASE("autocast: bad dtypes are errors naming autocast", "[autocast]") {
  CHECK_THROWS_WITH(autocast::AutocastGuard(DeviceType::CPU, kFloat32),
                    Contains("autocast") && Contains("float16 or bfloat16") && Contains("float32"));
  CHECK_THROWS_WITH(autocast::AutocastGuard(DeviceType::CUDA, kInt64), Contains("int64"));
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  CHECK_FALSE(autocast::any_enabled());
}

TEST_CASE("autocast: products on a cuda device in float16", "[autocast][cuda]") {
  if (!cuda::is_available()) {
    WARN("skipped: no CUDA device");
    return;
  }
  manual_seed(5);
  Tensor x = randn({16, 32}), w = randn({8, 32});
  Tensor xc = x.cuda(), wc = w.cuda().requires_grad_();
  Tensor loss;
  {
    autocast::AutocastGuard amp(DeviceType::CUDA);
    Tensor y = linear(xc, wc);
    CHECK(y.dtype() == kFloat16);
    CHECK(matmul(x, w.t()).dtype() == kFloat32);  // cpu tensors are left alone
    loss = nn::functional::cross_entropy(y, tensor<int64_t>(std::vector<int64_t>(16, 1)).cuda());
    CHECK(loss.dtype() == kFloat32);
  }
  loss.backward();
  REQUIRE(wc.grad().dtype() == kFloat32);
  Tensor w32 = w.clone().requires_grad_();
  nn::functional::cross_entropy(linear(x, w32), tensor<int64_t>(std::vector<int64_t>(16, 1)))
      .backward();
  const double scale = abs(w32.grad()).max().to(kFloat64).item<double>();
  CHECK(max_difference(wc.grad().cpu(), w32.grad()) < 0.01 * scale);
}
