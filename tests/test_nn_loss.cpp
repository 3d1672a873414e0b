// Losses (nn/loss.h): every case of tests/golden/gen_nn_loss.py (each reduction, class weights,
// ignore_index, label smoothing, probability targets, spatial cross-entropy, pos_weight, ...)
// forward and backward against PyTorch 1.13, through both the functional and the module form;
// plus numerical robustness (large logits, probabilities of exactly 0 and 1), the 0 / 0 means,
// buffers and printing of the modules, and the error messages.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <sstream>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::printed;
using ember::testing::values;
namespace F = ember::nn::functional;

namespace {

constexpr double kAtol = 1e-12, kRtol = 1e-10;

// One golden case's inputs and options (absent ones at PyTorch's defaults).
struct Case {
  std::string name;
  Tensor weight, pos_weight;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0, beta = 1.0, delta = 1.0;
  bool log_target = false;

  explicit Case(std::string n) : name(std::move(n)) {
    const Golden& g = golden("nn_loss");
    auto has = [&](const char* key) { return g.has(name + "." + key); };
    if (has("weight")) weight = g[name + ".weight"];
    if (has("pos_weight")) pos_weight = g[name + ".pos_weight"];
    if (has("ignore_index")) ignore_index = g[name + ".ignore_index"].item<int64_t>();
    if (has("label_smoothing")) label_smoothing = g[name + ".label_smoothing"].item<double>();
    if (has("beta")) beta = g[name + ".beta"].item<double>();
    if (has("delta")) delta = g[name + ".delta"].item<double>();
    if (has("log_target")) log_target = g[name + ".log_target"].item<int64_t>() != 0;
  }
  bool is(const char* prefix) const { return name.rfind(prefix, 0) == 0; }

  Tensor functional(const Tensor& x, const Tensor& t, const std::string& r) const {
    if (is("ce.")) return F::cross_entropy(x, t, weight, ignore_index, r, label_smoothing);
    if (is("nll.")) return F::nll_loss(x, t, weight, ignore_index, r);
    if (is("mse")) return F::mse_loss(x, t, r);
    if (is("l1")) return F::l1_loss(x, t, r);
    if (is("smooth_l1.")) return F::smooth_l1_loss(x, t, r, beta);
    if (is("huber.")) return F::huber_loss(x, t, r, delta);
    if (is("bce_logits.")) return F::binary_cross_entropy_with_logits(x, t, weight, r, pos_weight);
    if (is("bce.")) return F::binary_cross_entropy(x, t, weight, r);
    if (is("kl_div.")) return F::kl_div(x, t, r, log_target);
    FAIL("no loss for case " << name);
    return Tensor();
  }

  std::shared_ptr<nn::Loss> module(const std::string& r) const {
    if (is("ce."))
      return std::make_shared<nn::CrossEntropyLoss>(weight, ignore_index, r, label_smoothing);
    if (is("nll.")) return std::make_shared<nn::NLLLoss>(weight, ignore_index, r);
    if (is("mse")) return std::make_shared<nn::MSELoss>(r);
    if (is("l1")) return std::make_shared<nn::L1Loss>(r);
    if (is("smooth_l1.")) return std::make_shared<nn::SmoothL1Loss>(r, beta);
    if (is("huber.")) return std::make_shared<nn::HuberLoss>(r, delta);
    if (is("bce_logits.")) return std::make_shared<nn::BCEWithLogitsLoss>(weight, r, pos_weight);
    if (is("bce.")) return std::make_shared<nn::BCELoss>(weight, r);
    if (is("kl_div.")) return std::make_shared<nn::KLDivLoss>(r, log_target);
    FAIL("no loss module for case " << name);
    return nullptr;
  }
};

// Checks case `name` under every reduction the file has for it; returns how many it checked.
int check_case(const std::string& name) {
  const Golden& g = golden("nn_loss");
  const Case c(name);
  int checked = 0;
  for (const std::string r : {"none", "mean", "sum", "batchmean"}) {
    const std::string key = name + "." + r + ".";
    if (!g.has(key + "output")) continue;
    INFO("case " << name << ", reduction " << r);
    Tensor x = g[name + ".input"].requires_grad_();
    Tensor t = g[name + ".target"];
    const bool target_grad = g.has(key + "grad_target");
    if (target_grad) t.requires_grad_();

    Tensor y = c.functional(x, t, r);
    check_close(y, g[key + "output"], kAtol, kRtol, key + "output");
    (y * g[key + "grad_output"]).sum().backward();
    check_close(x.grad(), g[key + "grad_input"], kAtol, kRtol, key + "grad_input");
    if (target_grad)
      check_close(t.grad(), g[key + "grad_target"], kAtol, kRtol, key + "grad_target");

    auto m = c.module(r);
    check_close((*m)(x, t), g[key + "output"], kAtol, kRtol, key + "output (module)");
    ++checked;
  }
  return checked;
}

bool all_finite(const Tensor& t) { return t.isfinite().all().item<bool>(); }

}  // namespace

TEST_CASE("cross_entropy matches PyTorch", "[nn][golden]") {
  for (const char* name :
       {"ce.basic", "ce.weight", "ce.ignore", "ce.ignore_class", "ce.smooth",
        "ce.smooth_weight_ignore", "ce.smooth_ignore", "ce.probs", "ce.probs_weight_smooth",
        "ce.probs_spatial", "ce.spatial", "ce.spatial_smooth", "ce.unbatched", "ce.large_logits"}) {
    CHECK(check_case(name) == 3);
  }
}

TEST_CASE("nll_loss matches PyTorch", "[nn][golden]") {
  for (const char* name : {"nll.basic", "nll.weight_ignore", "nll.spatial"})
    CHECK(check_case(name) == 3);
}

TEST_CASE("regression losses match PyTorch", "[nn][golden]") {
  for (const char* name : {"mse", "l1", "smooth_l1.1", "smooth_l1.0.5", "smooth_l1.0", "huber.1",
                           "huber.0.3", "huber.2.5"})
    CHECK(check_case(name) == 3);
}

TEST_CASE("binary cross-entropy losses match PyTorch", "[nn][golden]") {
  for (const char* name :
       {"bce.basic", "bce.weight", "bce.edges", "bce_logits.basic", "bce_logits.weight",
        "bce_logits.pos_weight", "bce_logits.both", "bce_logits.large"})
    CHECK(check_case(name) == 3);
}

TEST_CASE("kl_div matches PyTorch", "[nn][golden]") {
  for (const char* name : {"kl_div.probs", "kl_div.zeros", "kl_div.log_target"})
    CHECK(check_case(name) == 4);
}

TEST_CASE("losses stay finite for large logits", "[nn]") {
  // float32 logits of 1e4: log_softmax and the log-sum-exp form of BCE-with-logits never
  // exponentiate a large number.
  Tensor logits = tensor<float>({1e4f, -1e4f, 0.0f, 5e3f, -1e4f, 1e4f}, {2, 3}).requires_grad_();
  Tensor ce = F::cross_entropy(logits, tensor<int64_t>({1, 0}), {}, -100, "mean", 0.1);
  CHECK(all_finite(ce));
  // Row 0: log-probabilities (0, -2e4, -1e4), target 1; row 1: (-5e3, -2e4, 0), target 0.
  CHECK(ce.item<double>() == Approx(0.9 * (2e4 + 5e3) / 2 + 0.1 / 3 * (3e4 + 2.5e4) / 2));
  ce.backward();
  CHECK(all_finite(logits.grad()));

  Tensor z = tensor<float>({1e4f, -1e4f, 50.0f, -50.0f}).requires_grad_();
  Tensor t = tensor<float>({0.0f, 1.0f, 1.0f, 0.0f});
  Tensor l = F::binary_cross_entropy_with_logits(z, t, {}, "none");
  REQUIRE(all_finite(l));
  CHECK(values(l)[0] == Approx(1e4));
  CHECK(values(l)[1] == Approx(1e4));
  CHECK(values(l)[2] < 1e-20);
  l.sum().backward();
  std::vector<double> g = values(z.grad());  // sigmoid(x) - t
  CHECK(g[0] == 1.0);
  CHECK(g[1] == -1.0);
  CHECK(g[2] == Approx(0.0).margin(1e-12));
  CHECK(g[3] == Approx(0.0).margin(1e-12));
}

TEST_CASE("binary_cross_entropy at probabilities 0 and 1 (float32)", "[nn]") {
  Tensor x = tensor<float>({0.0f, 1.0f, 0.0f, 1.0f}).requires_grad_();
  Tensor t = tensor<float>({0.0f, 1.0f, 1.0f, 0.0f});
  Tensor l = F::binary_cross_entropy(x, t, {}, "none");
  CHECK(values(l) == std::vector<double>{0.0, 0.0, 100.0, 100.0});  // log clamped at -100
  l.sum().backward();
  std::vector<double> g = values(x.grad());
  CHECK(g[0] == 0.0);
  CHECK(g[1] == 0.0);
  CHECK(g[2] == Approx(-1e12).epsilon(1e-6));  // (x - t) / max(x (1 - x), 1e-12)
  CHECK(g[3] == Approx(1e12).epsilon(1e-6));
}

TEST_CASE("losses: 0 / 0 means are NaN, as in PyTorch 1.13", "[nn]") {
  Tensor x = randn({3, 4}, kFloat64);
  Tensor all_ignored = tensor<int64_t>({-100, -100, -100});
  CHECK(std::isnan(F::nll_loss(x, all_ignored).item<double>()));
  CHECK(std::isnan(F::cross_entropy(x, all_ignored, {}, -100, "mean", 0.2).item<double>()));
  CHECK(F::cross_entropy(x, all_ignored, {}, -100, "sum").item<double>() == 0.0);
  CHECK(values(F::cross_entropy(x, all_ignored, {}, -100, "none")) ==
        std::vector<double>{0.0, 0.0, 0.0});
  Tensor empty = zeros({0, 4}, kFloat64);
  CHECK(std::isnan(F::cross_entropy(empty, zeros({0}, kInt64)).item<double>()));
  CHECK(std::isnan(F::cross_entropy(empty, empty).item<double>()));
  CHECK(std::isnan(F::mse_loss(zeros({0}), zeros({0})).item<double>()));
  CHECK(F::mse_loss(zeros({0}), zeros({0}), "sum").item<double>() == 0.0);
}

TEST_CASE("kl_div batchmean divides by the batch size", "[nn]") {
  Tensor x = log_softmax(randn({4, 6}, kFloat64), 1);
  Tensor t = softmax(randn({4, 6}, kFloat64), 1);
  const double sum = F::kl_div(x, t, "sum").item<double>();
  CHECK(F::kl_div(x, t, "batchmean").item<double>() == Approx(sum / 4));
  CHECK(F::kl_div(x, t, "mean").item<double>() == Approx(sum / 24));
  CHECK(F::kl_div(x, t.log(), "sum", /*log_target=*/true).item<double>() == Approx(sum));
}

TEST_CASE("loss modules: buffers, state_dict keys, printing", "[nn]") {
  Tensor w = tensor<float>({1.0f, 2.0f, 0.5f});
  nn::CrossEntropyLoss ce(w);
  REQUIRE(ce.state_dict().size() == 1);
  CHECK(ce.state_dict()[0].first == "weight");
  CHECK(ce.parameters().empty());
  CHECK(nn::CrossEntropyLoss().state_dict().empty());
  nn::BCEWithLogitsLoss bce(w, "sum", tensor<float>({3.0f, 1.0f, 1.0f}));
  nn::StateDict sd = bce.state_dict();
  REQUIRE(sd.size() == 2);
  CHECK(sd[0].first == "weight");
  CHECK(sd[1].first == "pos_weight");
  CHECK(bce.reduction() == "sum");
  // Buffers follow to(): the loss then takes float64 inputs.
  ce.to(kFloat64);
  CHECK(ce.weight.dtype() == kFloat64);
  CHECK(all_finite(ce(randn({2, 3}, kFloat64), tensor<int64_t>({0, 2}))));

  CHECK(printed(ce) == "CrossEntropyLoss()");
  CHECK(printed(nn::MSELoss()) == "MSELoss()");
  CHECK(printed(nn::KLDivLoss("batchmean")) == "KLDivLoss()");

  // Held through the base class.
  std::shared_ptr<nn::Loss> loss = std::make_shared<nn::L1Loss>();
  CHECK((*loss)(tensor<float>({1.0f, 3.0f}), tensor<float>({2.0f, 1.0f})).item<float>() == 1.5f);
  CHECK_THROWS_WITH(loss->forward(tensor<float>({1.0f})), Contains("L1Loss"));
}

TEST_CASE("loss error messages", "[nn]") {
  Tensor x = randn({3, 5});
  Tensor t = tensor<int64_t>({0, 1, 2});
  SECTION("reduction") {
    CHECK_THROWS_WITH(F::cross_entropy(x, t, {}, -100, "avg"),
                      Contains("cross_entropy") && Contains("reduction") && Contains("avg"));
    CHECK_THROWS_WITH(F::mse_loss(x, x, "batchmean"), Contains("mse_loss"));
    CHECK_NOTHROW(F::kl_div(x, x, "batchmean"));
    CHECK_THROWS_WITH(nn::NLLLoss({}, -100, "Mean"), Contains("NLLLoss") && Contains("Mean"));
  }
  SECTION("target out of range names the loss, the class and C") {
    CHECK_THROWS_WITH(F::cross_entropy(x, tensor<int64_t>({0, 7, 1})),
                      Contains("cross_entropy") && Contains("target 7") && Contains("C=5"));
    CHECK_THROWS_WITH(F::nll_loss(x, tensor<int64_t>({0, -1, 1})),
                      Contains("nll_loss") && Contains("target -1") && Contains("C=5"));
    CHECK_THROWS_WITH(
        F::cross_entropy(randn({2, 3, 4}), tensor<int64_t>({0, 1, 2, 3, 0, 1, 2, 0}, {2, 4})),
        Contains("target 3") && Contains("C=3"));
    CHECK_NOTHROW(F::cross_entropy(x, tensor<int64_t>({0, 7, 1}), {}, /*ignore_index=*/7));
  }
  SECTION("shape mismatches show both shapes") {
    CHECK_THROWS_WITH(F::cross_entropy(randn({4, 5}), t), Contains("[4, 5]") && Contains("[3]"));
    CHECK_THROWS_WITH(F::nll_loss(randn({2, 3, 4}), tensor<int64_t>({0, 1})),
                      Contains("[2, 3, 4]") && Contains("[2, 4]") && Contains("[2]"));
    CHECK_THROWS_WITH(F::mse_loss(randn({3, 4}), randn({4, 3})),
                      Contains("mse_loss") && Contains("[3, 4]") && Contains("[4, 3]"));
    CHECK_THROWS_WITH(F::l1_loss(randn({3}), randn({3, 1})), Contains("[3, 1]"));
    CHECK_THROWS_WITH(F::cross_entropy(x, randn({3, 4})),
                      Contains("cross_entropy") && Contains("[3, 5]") && Contains("[3, 4]"));
    CHECK_THROWS_WITH(F::cross_entropy(x, t, randn({4})), Contains("weight") && Contains("C=5"));
    CHECK_THROWS_WITH(F::binary_cross_entropy_with_logits(x, rand({3, 5}), randn({2, 5})),
                      Contains("weight") && Contains("[2, 5]") && Contains("[3, 5]"));
    CHECK_THROWS_WITH(F::binary_cross_entropy_with_logits(x, rand({3, 5}), {}, "mean", randn({4})),
                      Contains("pos_weight") && Contains("[4]"));
  }
  SECTION("values and options") {
    CHECK_THROWS_WITH(F::binary_cross_entropy(tensor<float>({0.5f, 1.5f}), tensor<float>({1, 0})),
                      Contains("binary_cross_entropy") && Contains("between 0 and 1"));
    CHECK_THROWS_WITH(F::cross_entropy(x, softmax(x, 1), {}, 2),
                      Contains("ignore_index") && Contains("probability"));
    CHECK_THROWS_WITH(F::cross_entropy(x, t, {}, -100, "mean", 1.5), Contains("label_smoothing"));
    CHECK_THROWS_WITH(F::huber_loss(x, x, "mean", 0.0),
                      Contains("huber_loss") && Contains("delta"));
    CHECK_THROWS_WITH(F::smooth_l1_loss(x, x, "mean", -1.0), Contains("beta"));
    CHECK_THROWS_WITH(F::cross_entropy(tensor<int64_t>({1, 2}), tensor<int64_t>({0})),
                      Contains("floating"));
    CHECK_THROWS_WITH(F::cross_entropy(x, tensor<float>({0, 1, 2})), Contains("[3]"));
    CHECK_THROWS_WITH(F::mse_loss(x, x.to(kFloat64)), Contains("float64"));
    CHECK_THROWS_WITH(F::cross_entropy(scalar_tensor(1.0), t), Contains("0-dim"));
  }
}

TEST_CASE("kl_div's gradients are 0 where the target is 0, as nn/loss.h says", "[nn]") {
  // PyTorch 1.13 gives a NaN target gradient there; ember's term is the constant 0.
  Tensor x = tensor(std::vector<double>{-1.0, -2.0, -0.5}).requires_grad_();
  Tensor t = tensor(std::vector<double>{0.0, 0.3, 0.7}).requires_grad_();
  F::kl_div(x, t, "sum").backward();
  const std::vector<double> gt = values(t.grad()), gx = values(x.grad());
  CHECK(gt[0] == 0.0);
  CHECK(gx[0] == 0.0);
  // Elsewhere: d/dt = log t + 1 - x, d/dx = -t (PyTorch's values).
  CHECK(gt[1] == Approx(std::log(0.3) + 1.0 + 2.0));
  CHECK(gt[2] == Approx(std::log(0.7) + 1.0 + 0.5));
  CHECK(gx[1] == Approx(-0.3));
}
