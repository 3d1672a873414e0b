// nn::init: the distributions' statistics, fans and gains, orthogonality, errors.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::values;

namespace {
double mean_of(const Tensor& t) { return t.to(kFloat64).mean().item<double>(); }
double std_of(const Tensor& t) { return t.to(kFloat64).std().item<double>(); }
double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }
}  // namespace

TEST_CASE("init: fans, gains and the Kaiming / Xavier statistics", "[nn][init]") {
  Tensor w = empty({256, 128, 3, 3}).requires_grad_();  // a parameter: a leaf that requires grad
  CHECK(nn::init::fans(w) == std::pair<int64_t, int64_t>{128 * 9, 256 * 9});
  CHECK(nn::init::calculate_gain("relu") == Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain("tanh") == Approx(5.0 / 3.0));
  CHECK(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)) == Approx(std::sqrt(1.0 / 3.0)));
  CHECK_THROWS_WITH(nn::init::calculate_gain("swish"), Contains("unsupported nonlinearity"));

  Generator gen(7);
  nn::init::kaiming_normal_(w, 0.0, "fan_in", "relu", &gen);
  CHECK(!w.grad_fn());  // filled under no_grad: still a leaf
  CHECK(std::abs(mean_of(w)) < 0.002);
  CHECK(std_of(w) == Approx(std::sqrt(2.0 / (128 * 9))).epsilon(0.02));

  nn::init::kaiming_uniform_(w, std::sqrt(5.0), "fan_in", "leaky_relu", &gen);  // Linear's default
  const double bound = std::sqrt(3.0) * std::sqrt(1.0 / 3.0) / std::sqrt(128.0 * 9);
  CHECK(max_abs(w) <= bound);
  CHECK(max_abs(w) > 0.99 * bound);
  CHECK(std_of(w) == Approx(bound / std::sqrt(3.0)).epsilon(0.02));

  Tensor fc = empty({300, 200});
  nn::init::xavier_uniform_(fc, 1.0, &gen);
  CHECK(max_abs(fc) <= std::sqrt(6.0 / 500.0));
  nn::init::xavier_normal_(fc, 2.0, &gen);
  CHECK(std_of(fc) == Approx(2.0 * std::sqrt(2.0 / 500.0)).epsilon(0.03));
  CHECK_THROWS_WITH(nn::init::xavier_uniform_(empty({5})), Contains("fewer than 2 dimensions"));
  CHECK_THROWS_WITH(nn::init::kaiming_normal_(fc, 0.0, "fan_avg"), Contains("mode"));
}

TEST_CASE("init: uniform, normal, trunc_normal, constants", "[nn][init]") {
  Generator gen(3);
  Tensor t = empty({100000});
  nn::init::uniform_(t, -1.0, 3.0, &gen);
  CHECK(t.min().item<double>() >= -1.0);
  CHECK(t.max().item<double>() < 3.0);
  CHECK(mean_of(t) == Approx(1.0).epsilon(0.02));
  nn::init::normal_(t, 2.0, 0.5, &gen);
  CHECK(mean_of(t) == Approx(2.0).epsilon(0.01));
  CHECK(std_of(t) == Approx(0.5).epsilon(0.02));
  nn::init::trunc_normal_(t, 0.0, 1.0, -0.5, 1.0, &gen);
  CHECK(t.min().item<double>() >= -0.5);
  CHECK(t.max().item<double>() <= 1.0);
  // The mean of N(0,1) truncated to [-0.5, 1]: (phi(-0.5) - phi(1)) / (Phi(1) - Phi(-0.5)).
  const double phi_a = std::exp(-0.125) / std::sqrt(2 * M_PI),
               phi_b = std::exp(-0.5) / std::sqrt(2 * M_PI);
  const double mass = 0.5 * (std::erf(1 / std::sqrt(2.0)) - std::erf(-0.5 / std::sqrt(2.0)));
  CHECK(mean_of(t) == Approx((phi_a - phi_b) / mass).margin(0.01));
  nn::init::constant_(t, 0.25);
  CHECK(t.min().item<double>() == 0.25);
  nn::init::ones_(t);
  nn::init::zeros_(t);
  CHECK(max_abs(t) == 0.0);
}

TEST_CASE("init: orthogonal_ gives orthonormal rows or columns", "[nn][init]") {
  Generator gen(11);
  for (Shape shape : {Shape{6, 4}, Shape{4, 6}, Shape{3, 2, 2}}) {
    INFO("shape " << shape_str(shape));
    Tensor w = empty(shape, kFloat64);
    nn::init::orthogonal_(w, 2.0, &gen);
    Tensor m = w.reshape({shape[0], -1});
    Tensor gram = m.size(0) >= m.size(1) ? m.t().matmul(m) : m.matmul(m.t());
    Tensor expect = eye(gram.size(0), std::nullopt, kFloat64) * 4.0;  // gain^2
    CHECK(max_abs(gram - expect) < 1e-10);
  }
}
