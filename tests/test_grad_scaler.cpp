// GradScaler (optim/grad_scaler.h): the scale's growth and backoff, skipped steps, unscale_,
// PyTorch's ordering rules and messages, state_dict, and float16 training with autocast.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/autocast.h"
#include "optim/grad_scaler.h"
#include "optim/sgd.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {
double max_abs(const Tensor& t) { return abs(t).max().to(kFloat64).item<double>(); }

// loss = sum(w * c): the gradient of w is c.
Tensor loss_of(const Tensor& w, const Tensor& c) { return (w * c).sum(); }
}  // namespace

TEST_CASE("GradScaler: scaled gradients, unscale_, growth and backoff", "[amp]") {
  Tensor w = ones({3}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  amp::GradScaler scaler(amp::GradScalerOptions()
                             .init_scale(4.0)
                             .growth_factor(2.0)
                             .backoff_factor(0.25)
                             .growth_interval(3));
  const Tensor c = tensor<float>({1.0f, -2.0f, 0.5f});
  auto iteration = [&](const Tensor& coeff) {
    opt.zero_grad();
    scaler.scale(loss_of(w, coeff)).backward();
    const bool stepped = scaler.step(opt);
    scaler.update();
    return stepped;
  };
  // The scaled loss's gradients carry the scale; unscale_ takes it off.
  opt.zero_grad();
  Tensor scaled = scaler.scale(loss_of(w, c));
  CHECK(scaled.item<float>() == Approx(4.0 * (1.0 - 2.0 + 0.5)));
  scaled.backward();
  CHECK(values(w.grad()) == std::vector<double>{4.0, -8.0, 2.0});
  scaler.unscale_(opt);
  CHECK(values(w.grad()) == std::vector<double>{1.0, -2.0, 0.5});
  CHECK(scaler.step(opt));
  CHECK(values(w) == std::vector<double>{0.5, 2.0, 0.75});
  scaler.update();
  CHECK(scaler.get_scale() == 4.0);
  CHECK(scaler.get_growth_tracker() == 1);
  // Two more clean steps: the third in a row doubles the scale.
  CHECK(iteration(c));
  CHECK(scaler.get_scale() == 4.0);
  CHECK(scaler.get_growth_tracker() == 2);
  CHECK(iteration(c));
  CHECK(scaler.get_scale() == 8.0);
  CHECK(scaler.get_growth_tracker() == 0);
  // An inf gradient: the step is skipped, the parameter untouched, the scale backs off.
  const std::vector<double> before = values(w);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_FALSE(iteration(tensor<float>({1.0f, inf, 0.5f})));
  CHECK(values(w) == before);
  CHECK(scaler.get_scale() == 2.0);
  CHECK(scaler.get_growth_tracker() == 0);
  // NaN likewise.
  CHECK_FALSE(iteration(tensor<float>({std::nanf(""), 1.0f, 1.0f})));
  CHECK(values(w) == before);
  CHECK(scaler.get_scale() == 0.5);
  // update(new_scale) sets it.
  CHECK(iteration(c));
  scaler.update(1024.0);  // no steps since the last update: only the value changes
  CHECK(scaler.get_scale() == 1024.0);
}

TEST_CASE("GradScaler: with a power-of-two scale, training is bit for bit unscaled training",
          "[amp]") {
  manual_seed(11);
  nn::Linear a(6, 5), b(6, 5);
  {
    autograd::NoGradGuard no_grad;
    b.weight.copy_(a.weight);
    b.bias.copy_(a.bias);
  }
  optim::SGD opt_a(a.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_b(b.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(2));
  for (int step = 0; step < 6; ++step) {
    Tensor x = randn({4, 6}), y = randn({4, 5});
    opt_a.zero_grad();
    nn::functional::mse_loss(a.forward(x), y).backward();
    opt_a.step();
    opt_b.zero_grad();
    scaler.scale(nn::functional::mse_loss(b.forward(x), y)).backward();
    REQUIRE(scaler.step(opt_b));
    scaler.update();
  }
  CHECK(scaler.get_scale() == 8192.0);  // grew at steps 2, 4 and 6
  CHECK(values(a.weight) == values(b.weight));
  CHECK(values(a.bias) == values(b.bias));
}

TEST_CASE("GradScaler: float16 gradients that underflow without it survive with it", "[amp]") {
  // Note [Why scale the loss]: a gradient of 1e-8 is below float16's smallest subnormal.
  manual_seed(2);
  Tensor x = randn({8, 4}), w = randn({3, 4}).requires_grad_();
  auto tiny_loss = [&] {
    autocast::AutocastGuard amp(DeviceType::CPU, kFloat16);
    return matmul(x, w.t()).to(kFloat32).sum() * 1e-8;
  };
  tiny_loss().backward();
  CHECK(values(w.grad()) == std::vector<double>(12, 0.0));  // underflowed in float16
  w.set_grad(Tensor());
  optim::SGD opt({w}, optim::SGDOptions(1.0));
  amp::GradScaler scaler;  // 2^16
  scaler.scale(tiny_loss()).backward();
  scaler.unscale_(opt);
  Tensor want = x.sum({0}).expand({3, 4}) * 1e-8;  // d/dw of 1e-8 * sum(x w^T)
  CHECK(max_abs(w.grad() - want) < 1e-2 * max_abs(want));
  CHECK(max_abs(w.grad()) > 0);
}

TEST_CASE("GradScaler: PyTorch's ordering rules, and bad arguments", "[amp]") {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler;
  CHECK_THROWS_WITH(scaler.update(), Contains("no inf checks were recorded prior to update"));
  CHECK_THROWS_WITH(scaler.step(opt), Contains("no inf checks were recorded for this optimizer"));
  scaler.scale(w.sum()).backward();
  scaler.unscale_(opt);
  CHECK_THROWS_WITH(scaler.unscale_(opt), Contains("already been called on this optimizer"));
  CHECK(scaler.step(opt));
  CHECK_THROWS_WITH(scaler.step(opt), Contains("step() has already been called"));
  CHECK_THROWS_WITH(scaler.unscale_(opt), Contains("after step()"));
  scaler.update();
  // float16 gradients are refused.
  Tensor h = ones({2}, kFloat16).requires_grad_();
  optim::SGD opt_h({h}, optim::SGDOptions(0.1));
  (h.to(kFloat32).sum()).backward();
  CHECK_THROWS_WITH(scaler.unscale_(opt_h), Contains("float16 gradients"));
  // Constructor and setter checks.
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().growth_factor(1.0)),
                    Contains("growth_factor"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().backoff_factor(1.5)),
                    Contains("backoff_factor"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().growth_interval(0)),
                    Contains("growth_interval"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().init_scale(1e40)), Contains("scale"));
  CHECK_THROWS_WITH(scaler.update(-1.0), Contains("scale"));
  CHECK_THROWS_WITH(scaler.scale(ones({2}, kInt64)), Contains("floating-point"));
}

TEST_CASE("GradScaler: a disabled scaler passes everything through", "[amp]") {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(false));
  Tensor loss = w.sum();
  CHECK(scaler.scale(loss).unsafe_impl() == loss.unsafe_impl());
  CHECK(scaler.get_scale() == 1.0);
  loss.backward();
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(values(w) == std::vector<double>{0.5, 0.5});
  CHECK(scaler.state_dict().empty());
  amp::GradScaler enabled;
  CHECK_THROWS_WITH(enabled.load_state_dict(scaler.state_dict()),
                    Contains("saved from a disabled GradScaler"));
}

TEST_CASE("GradScaler: state_dict round trip, and loaded values are checked", "[amp]") {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  amp::GradScaler a(amp::GradScalerOptions().init_scale(256.0).growth_interval(5));
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    a.scale(w.sum()).backward();
    a.step(opt);
    a.update();
  }
  TensorDict d = a.state_dict();
  REQUIRE(d.size() == 5);
  CHECK(d[0].first == "scale");
  CHECK(d[0].second.dtype() == kFloat32);
  CHECK(d[4].first == "_growth_tracker");
  CHECK(d[4].second.item<int64_t>() == 3);
  amp::GradScaler b;
  b.load_state_dict(d);
  CHECK(b.get_scale() == 256.0);
  CHECK(b.get_growth_interval() == 5);
  CHECK(b.get_growth_tracker() == 3);
  auto with = [&](const std::string& key, const Tensor& v) {
    TensorDict bad = d;
    for (auto& [k, t] : bad)
      if (k == key) t = v;
    return bad;
  };
  amp::GradScaler c;
  CHECK_THROWS_WITH(c.load_state_dict(with("scale", full({}, NAN, TensorOptions(kFloat32)))),
                    Contains("scale"));
  CHECK_THROWS_WITH(
      c.load_state_dict(with("growth_factor", full({}, 0.5, TensorOptions(kFloat64)))),
      Contains("growth_factor"));
  CHECK_THROWS_WITH(c.load_state_dict(with("_growth_tracker", full({}, 7, TensorOptions(kInt64)))),
                    Contains("_growth_tracker"));
  CHECK_THROWS_WITH(
      c.load_state_dict(with("growth_interval", full({}, 2.5, TensorOptions(kFloat64)))),
      Contains("growth_interval") && Contains("integer"));
  TensorDict missing(d.begin(), d.begin() + 4);
  CHECK_THROWS_WITH(c.load_state_dict(missing), Contains("missing key \"_growth_tracker\""));
  CHECK(c.get_scale() == 65536.0);  // unchanged by the failed loads
}
