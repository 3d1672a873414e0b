// nn::utils::clip_grad_norm_ and clip_grad_value_ against PyTorch (tests/golden/gen_optim.py).

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::kInf;
using ember::testing::values;

namespace {

// Three parameters holding the golden gradients.
std::vector<Tensor> params_with_golden_grads() {
  std::vector<Tensor> ps;
  for (int k = 0; k < 3; ++k) {
    Tensor g = golden("optim")["clip.grads." + std::to_string(k)];
    Tensor p = zeros(g.sizes(), kFloat64).requires_grad_();
    p.set_grad(g);
    ps.push_back(p);
  }
  return ps;
}

}  // namespace

TEST_CASE("clip_grad_norm_ matches PyTorch for p = 2, 1, inf, 3, 0.5", "[nn][clip_grad][golden]") {
  struct Case {
    const char* name;
    double max_norm, norm_type;
  };
  for (const Case& c :
       {Case{"p2", 1.0, 2.0}, Case{"p1", 2.0, 1.0}, Case{"inf", 0.5, INFINITY},
        Case{"p3", 1.0, 3.0}, Case{"p0_5", 4.0, 0.5}, Case{"p2_no_clip", 100.0, 2.0}}) {
    INFO(c.name);
    std::vector<Tensor> ps = params_with_golden_grads();
    Tensor total = nn::utils::clip_grad_norm_(ps, c.max_norm, c.norm_type);
    const std::string prefix = std::string("clip.") + c.name + ".";
    CHECK(total.dim() == 0);
    CHECK(total.dtype() == kFloat64);
    check_close(total, golden("optim")[prefix + "total_norm"], 1e-14, 1e-13, prefix + "total_norm");
    for (int k = 0; k < 3; ++k) {
      const std::string key = prefix + "grads." + std::to_string(k);
      check_close(ps[k].grad(), golden("optim")[key], 1e-14, 1e-13, key);
    }
  }
}

TEST_CASE("clip_grad_norm_: no gradients, one tensor, float32, non-finite norms",
          "[nn][clip_grad]") {
  Tensor a = ones({2}).requires_grad_();
  Tensor none = nn::utils::clip_grad_norm_(std::vector<Tensor>{a}, 1.0);
  CHECK(none.item<double>() == 0.0);
  CHECK(none.dtype() == kFloat32);

  a.set_grad(tensor<float>({3.0f, 4.0f}));
  Tensor total = nn::utils::clip_grad_norm_(a, 1.0);
  CHECK(total.dtype() == kFloat32);
  CHECK(total.item<double>() == Approx(5.0));
  CHECK(values(a.grad())[0] == Approx(0.6).epsilon(1e-6));
  CHECK(values(a.grad())[1] == Approx(0.8).epsilon(1e-6));

  // Other norms PyTorch accepts: 0 counts the non-zeros, -inf takes the smallest |g|.
  Tensor b = zeros({3}, kFloat64).requires_grad_();
  b.set_grad(tensor<double>({0.0, -2.0, 3.0}));
  CHECK(nn::utils::clip_grad_norm_(b, 100.0, 0.0).item<double>() == 2.0);
  CHECK(nn::utils::clip_grad_norm_(b, 100.0, -INFINITY).item<double>() == 0.0);

  Tensor c = zeros({3}, kFloat64).requires_grad_();
  c.set_grad(tensor<double>({1.0, kInf, 2.0}));
  CHECK_THROWS_WITH(nn::utils::clip_grad_norm_(c, 1.0, 2.0, /*error_if_nonfinite=*/true),
                    Contains("The total norm of order 2 for gradients from `parameters` is "
                             "non-finite, so it cannot be clipped"));
  CHECK(values(c.grad()) == std::vector<double>{1.0, kInf, 2.0});  // untouched
  // Without the check the gradients are scaled by max_norm / inf = 0, as in PyTorch.
  Tensor t = nn::utils::clip_grad_norm_(c, 1.0);
  CHECK(std::isinf(t.item<double>()));
  const std::vector<double> g = values(c.grad());
  CHECK(g[0] == 0.0);
  CHECK(std::isnan(g[1]));
  CHECK(g[2] == 0.0);
}

TEST_CASE("clip_grad_value_ clamps every gradient element", "[nn][clip_grad]") {
  Tensor a = zeros({4}, kFloat64).requires_grad_();
  Tensor b = zeros({2}, kFloat64).requires_grad_();  // no gradient: skipped
  a.set_grad(tensor<double>({-3.0, -0.5, 0.25, 7.0}));
  nn::utils::clip_grad_value_(std::vector<Tensor>{a, b}, 1.0);
  CHECK(values(a.grad()) == std::vector<double>{-1.0, -0.5, 0.25, 1.0});
  CHECK_FALSE(b.grad().defined());
  nn::utils::clip_grad_value_(a, 0.5);
  CHECK(values(a.grad()) == std::vector<double>{-0.5, -0.5, 0.25, 0.5});
}
