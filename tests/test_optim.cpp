// optim: every optimizer step by step against PyTorch's trajectories (tests/golden/gen_optim.py),
// state_dict keys and round trips mid-run (through a safetensors file image), validation
// messages, and the fused loop against staged layouts, other dtypes and large tensors.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "golden.h"
#include "optim_golden.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::values;

namespace {

constexpr int kSteps = 6;
constexpr double kGroup0Lr = 0.03;

// The configs of gen_optim.py.
std::vector<OptimConfig> configs() {
  using namespace optim;
  return {
      {"sgd_plain", maker<SGD>(SGDOptions(0.1))},
      {"sgd_momentum", maker<SGD>(SGDOptions(0.1).momentum(0.9))},
      {"sgd_nesterov", maker<SGD>(SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01))},
      {"sgd_dampening", maker<SGD>(SGDOptions(0.1).momentum(0.9).dampening(0.3))},
      {"sgd_weight_decay", maker<SGD>(SGDOptions(0.1).weight_decay(0.1))},
      {"sgd_maximize", maker<SGD>(SGDOptions(0.1).momentum(0.5).maximize(true))},
      {"adam", maker<Adam>(AdamOptions(0.01))},
      {"adam_amsgrad_wd",
       maker<Adam>(AdamOptions(0.01).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1).amsgrad(true))},
      {"adam_maximize", maker<Adam>(AdamOptions(0.01).maximize(true))},
      {"adamw", maker<AdamW>(AdamWOptions(0.01).weight_decay(0.1))},
      {"adamw_amsgrad", maker<AdamW>(AdamWOptions(0.01).amsgrad(true))},
      {"rmsprop", maker<RMSprop>(RMSpropOptions(0.01))},
      {"rmsprop_centered_momentum",
       maker<RMSprop>(
           RMSpropOptions(0.01).alpha(0.9).momentum(0.8).centered(true).weight_decay(0.05))},
      {"adagrad",
       maker<Adagrad>(
           AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.02).initial_accumulator_value(0.1))},
  };
}

const OptimGolden kGolden{"optim"};

}  // namespace

TEST_CASE("optimizers follow PyTorch's trajectories, two groups, a skipped gradient",
          "[optim][golden]") {
  for (const OptimConfig& c : configs()) {
    INFO(c.name);
    std::vector<Tensor> ps = kGolden.initial_params();
    auto opt = c.make(two_groups(ps, kGroup0Lr));
    for (int t = 0; t < kSteps; ++t) {
      kGolden.set_grads(ps, t);
      opt->step();
      kGolden.check_step(c.name, ps, t, 1e-13, 1e-12);
    }
    // The final state: PyTorch's names, dtypes (Adam's step float32, RMSprop's int64) and values.
    const TensorDict sd = opt->state_dict();
    const std::string prefix = c.name + ".state.";
    int64_t expected_entries = 0;
    for (const auto& [key, want] : golden("optim").file().tensors) {
      if (key.rfind(prefix, 0) != 0) continue;
      ++expected_entries;
      const std::string ours = "state." + key.substr(prefix.size());
      const Tensor* got = find(sd, ours);
      INFO(ours);
      REQUIRE(got != nullptr);
      CHECK(got->dtype() == want.dtype());
      check_close(*got, want, 1e-13, 1e-12, ours);
    }
    int64_t ours = 0;
    for (const auto& kv : sd) ours += kv.first.rfind("state.", 0) == 0;
    CHECK(ours == expected_entries);
  }
}

TEST_CASE("optimizer state_dict round trip mid-run continues PyTorch's trajectory",
          "[optim][golden]") {
  for (const OptimConfig& c : configs()) {
    INFO(c.name);
    std::vector<Tensor> ps = kGolden.initial_params();
    auto opt = c.make(two_groups(ps, kGroup0Lr));
    for (int t = 0; t < 3; ++t) {
      kGolden.set_grads(ps, t);
      opt->step();
    }
    const TensorDict saved = through_safetensors(opt->state_dict());

    // A fresh optimizer over copies of the parameters, built with the default lr for both
    // groups: the loaded param_groups must bring group 0's lr back.
    std::vector<Tensor> fresh;
    for (const Tensor& p : ps) fresh.push_back(p.detach().clone().requires_grad_());
    auto resumed = c.make({optim::ParamGroup({fresh[0], fresh[1]}), optim::ParamGroup({fresh[2]})});
    resumed->load_state_dict(saved);
    CHECK(resumed->param_groups()[0].lr() == kGroup0Lr);
    for (int t = 3; t < kSteps; ++t) {
      kGolden.set_grads(ps, t);
      kGolden.set_grads(fresh, t);
      opt->step();  // the original goes on: state_dict() was a snapshot
      resumed->step();
      kGolden.check_step(c.name, ps, t, 1e-13, 1e-12);
      kGolden.check_step(c.name, fresh, t, 1e-13, 1e-12);
    }
  }
}

TEST_CASE("optimizer state_dict: the documented flat key scheme", "[optim]") {
  Tensor w = ones({2, 2}).requires_grad_();
  Tensor b = zeros({2}).requires_grad_();
  Tensor u = zeros({3}).requires_grad_();
  optim::Adam opt({optim::ParamGroup({w, b}, {{"lr", 0.5}}), optim::ParamGroup({u})},
                  optim::AdamOptions(1e-3).amsgrad(true));
  w.set_grad(ones({2, 2}));
  u.set_grad(ones({3}));  // b has no gradient: no state
  opt.step();
  std::vector<std::string> keys;
  for (const auto& kv : opt.state_dict()) keys.push_back(kv.first);
  const std::vector<std::string> expected = {"state.0.step",
                                             "state.0.exp_avg",
                                             "state.0.exp_avg_sq",
                                             "state.0.max_exp_avg_sq",
                                             "state.2.step",
                                             "state.2.exp_avg",
                                             "state.2.exp_avg_sq",
                                             "state.2.max_exp_avg_sq",
                                             "param_groups.0.amsgrad",
                                             "param_groups.0.betas0",
                                             "param_groups.0.betas1",
                                             "param_groups.0.eps",
                                             "param_groups.0.lr",
                                             "param_groups.0.maximize",
                                             "param_groups.0.weight_decay",
                                             "param_groups.0.params",
                                             "param_groups.1.amsgrad",
                                             "param_groups.1.betas0",
                                             "param_groups.1.betas1",
                                             "param_groups.1.eps",
                                             "param_groups.1.lr",
                                             "param_groups.1.maximize",
                                             "param_groups.1.weight_decay",
                                             "param_groups.1.params"};
  CHECK(keys == expected);
  const TensorDict sd = opt.state_dict();
  CHECK(find(sd, "state.0.step")->dtype() == kFloat32);
  CHECK(find(sd, "state.0.step")->dim() == 0);
  CHECK(find(sd, "state.0.step")->item<double>() == 1.0);
  CHECK(find(sd, "param_groups.0.lr")->dtype() == kFloat64);
  CHECK(find(sd, "param_groups.0.lr")->dim() == 0);
  CHECK(find(sd, "param_groups.0.lr")->item<double>() == 0.5);
  CHECK(find(sd, "param_groups.1.lr")->item<double>() == 1e-3);
  CHECK(find(sd, "param_groups.1.amsgrad")->item<double>() == 1.0);
  CHECK(find(sd, "param_groups.0.params")->dtype() == kInt64);
  CHECK(values(*find(sd, "param_groups.0.params")) == std::vector<double>{0, 1});
  CHECK(values(*find(sd, "param_groups.1.params")) == std::vector<double>{2});
  // A snapshot: stepping again does not change a dict taken before.
  const double before = values(*find(sd, "state.0.exp_avg"))[0];
  w.set_grad(ones({2, 2}));
  opt.step();
  CHECK(values(*find(sd, "state.0.exp_avg"))[0] == before);
  // A step counter saved in another dtype is kept as saved and still counts.
  TensorDict other_step = opt.state_dict();
  for (auto& kv : other_step)
    if (kv.first == "state.2.step") kv.second = scalar_tensor(5.0, kFloat64);
  opt.load_state_dict(other_step);
  u.set_grad(ones({3}));
  opt.step();
  CHECK(opt.state(u).at("step").dtype() == kFloat64);
  CHECK(opt.state(u).at("step").item<double>() == 6.0);
  // A scheduler's entries in the groups are saved too.
  opt.param_groups()[0].set("initial_lr", 0.5);
  CHECK(find(opt.state_dict(), "param_groups.0.initial_lr") != nullptr);
}

TEST_CASE("optimizer load_state_dict rejects mismatched dicts with clear errors", "[optim]") {
  auto make = [](std::vector<Tensor>& ps) {
    ps = {randn({2, 3}, kFloat64).requires_grad_(), randn({3}, kFloat64).requires_grad_()};
    return std::make_unique<optim::Adam>(
        std::vector<optim::ParamGroup>{optim::ParamGroup({ps[0]}), optim::ParamGroup({ps[1]})});
  };
  std::vector<Tensor> ps;
  auto opt = make(ps);
  for (const Tensor& p : ps) p.set_grad(ones_like(p));
  opt->step();
  const TensorDict good = opt->state_dict();

  std::vector<Tensor> other;
  auto target = make(other);
  auto without = [&](const std::string& prefix) {
    TensorDict d;
    for (const auto& kv : good)
      if (kv.first.rfind(prefix, 0) != 0) d.push_back(kv);
    return d;
  };
  auto with = [&](const std::string& key, const Tensor& t) {
    TensorDict d = good;
    for (auto& kv : d)
      if (kv.first == key) kv.second = t;
    return d;
  };

  CHECK_THROWS_WITH(target->load_state_dict(without("param_groups.1.")),
                    Contains("different number of parameter groups") &&
                        Contains("1 in the state dict, 2 in the optimizer"));
  CHECK_THROWS_WITH(target->load_state_dict(with("param_groups.1.params", tensor<int64_t>({1, 2}))),
                    Contains("doesn't match the size of optimizer's group"));
  CHECK_THROWS_WITH(target->load_state_dict(with("state.0.exp_avg", zeros({3, 2}, kFloat64))),
                    Contains("state.0.exp_avg has shape [3, 2] but parameter 0 has shape [2, 3]"));
  CHECK_THROWS_WITH(target->load_state_dict(without("param_groups.0.betas1")),
                    Contains("param_groups.0.betas1 is missing"));
  TensorDict extra = good;
  extra.emplace_back("momentum", zeros({}));
  CHECK_THROWS_WITH(target->load_state_dict(extra), Contains("unexpected key \"momentum\""));
  TensorDict stray = good;
  stray.emplace_back("state.7.exp_avg", zeros({3}, kFloat64));
  CHECK_THROWS_WITH(target->load_state_dict(stray), Contains("state.7 belongs to no parameter"));
  CHECK_THROWS_WITH(target->load_state_dict(with("param_groups.0.lr", zeros({2}))),
                    Contains("param_groups.0.lr\" must hold one number"));

  // Nothing changed by the failed loads; a good load then works.
  CHECK(target->state(other[0]).empty());
  target->load_state_dict(good);
  CHECK(values(target->state(other[0]).at("exp_avg")) == values(opt->state(ps[0]).at("exp_avg")));
  // An SGD dict is not an Adam dict.
  optim::SGD sgd(
      std::vector<optim::ParamGroup>{optim::ParamGroup({ps[0]}), optim::ParamGroup({ps[1]})},
      optim::SGDOptions(0.1));
  CHECK_THROWS_WITH(target->load_state_dict(sgd.state_dict()),
                    Contains("Adam.load_state_dict") && Contains("is missing"));
}

TEST_CASE("optimizer hyperparameters are validated with PyTorch's messages", "[optim]") {
  std::vector<Tensor> ps{zeros({2}).requires_grad_()};
  using namespace optim;
  CHECK_THROWS_WITH(SGD(ps, SGDOptions(-1)), Contains("Invalid learning rate: -1"));
  CHECK_THROWS_WITH(SGD(ps, SGDOptions(0.1).momentum(-0.5)),
                    Contains("Invalid momentum value: -0.5"));
  CHECK_THROWS_WITH(SGD(ps, SGDOptions(0.1).weight_decay(-1)),
                    Contains("Invalid weight_decay value: -1"));
  CHECK_THROWS_WITH(SGD(ps, SGDOptions(0.1).nesterov(true)),
                    Contains("Nesterov momentum requires a momentum and zero dampening"));
  CHECK_THROWS_WITH(SGD(ps, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
                    Contains("Nesterov momentum requires a momentum and zero dampening"));
  CHECK_THROWS_WITH(Adam(ps, AdamOptions(-0.1)), Contains("Adam: Invalid learning rate: -0.1"));
  CHECK_THROWS_WITH(Adam(ps, AdamOptions().betas({1.0, 0.999})),
                    Contains("Invalid beta parameter at index 0: 1"));
  CHECK_THROWS_WITH(Adam(ps, AdamOptions().betas({0.9, -0.1})),
                    Contains("Invalid beta parameter at index 1: -0.1"));
  CHECK_THROWS_WITH(AdamW(ps, AdamWOptions().eps(-1e-8)), Contains("Invalid epsilon value"));
  CHECK_THROWS_WITH(RMSprop(ps, RMSpropOptions().alpha(-0.5)),
                    Contains("Invalid alpha value: -0.5"));
  CHECK_THROWS_WITH(Adagrad(ps, AdagradOptions().lr_decay(-1)),
                    Contains("Invalid lr_decay value: -1"));
  CHECK_THROWS_WITH(Adagrad(ps, AdagradOptions().initial_accumulator_value(-1)),
                    Contains("Invalid initial_accumulator_value value: -1"));
  // Group options are checked too.
  Adam adam(ps);
  CHECK_THROWS_WITH(adam.add_param_group(ParamGroup({zeros({1}).requires_grad_()}, {{"lr", -2}})),
                    Contains("Invalid learning rate: -2"));
  CHECK(adam.param_groups().size() == 1);
  // Parameters.
  CHECK_THROWS_WITH(Adam(std::vector<Tensor>{}), Contains("optimizer got an empty parameter list"));
  CHECK_THROWS_WITH(adam.add_param_group(ParamGroup({ps[0]})),
                    Contains("some parameters appear in more than one parameter group"));
  Tensor leaf = zeros({2}).requires_grad_();
  CHECK_THROWS_WITH(Adam(std::vector<Tensor>{leaf * 2}),
                    Contains("can't optimize a non-leaf Tensor"));
  CHECK_THROWS_WITH(Adam(std::vector<Tensor>{zeros({2}, kInt64)}),
                    Contains("can only optimize floating-point tensors") && Contains("int64"));
  CHECK_THROWS_WITH(Adam(std::vector<Tensor>{leaf, leaf}), Contains("the same tensor"));
  // Defaults are PyTorch's.
  AdamW adamw(std::vector<Tensor>{leaf});
  CHECK(adamw.defaults().at("weight_decay") == 1e-2);
  CHECK(adamw.defaults().at("lr") == 1e-3);
  RMSprop rms(std::vector<Tensor>{zeros({1}).requires_grad_()});
  CHECK(rms.defaults().at("alpha") == 0.99);
  CHECK(rms.defaults().at("lr") == 1e-2);
  Adagrad ada(std::vector<Tensor>{zeros({1}).requires_grad_()});
  CHECK(ada.defaults().at("eps") == 1e-10);
  CHECK_THROWS_WITH(ada.param_groups()[0].get("momentum"),
                    Contains("no option \"momentum\"") && Contains("lr_decay"));
}

TEST_CASE("optimizer step and zero_grad: no graph, versions, skipped parameters, errors",
          "[optim]") {
  Tensor a = ones({3}).requires_grad_();
  Tensor b = ones({2}).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{a, b}, optim::SGDOptions(0.5));
  a.set_grad(full({3}, 2.0));
  const uint32_t va = a.version(), vb = b.version();
  opt.step();
  CHECK(values(a) == std::vector<double>{0, 0, 0});
  CHECK(values(b) == std::vector<double>{1, 1});  // no gradient: untouched
  CHECK(a.version() > va);
  CHECK(b.version() == vb);
  CHECK(a.is_leaf());
  CHECK(a.requires_grad());
  CHECK(a.grad_fn() == nullptr);

  opt.zero_grad(/*set_to_none=*/false);
  REQUIRE(a.grad().defined());
  CHECK(values(a.grad()) == std::vector<double>{0, 0, 0});
  CHECK_FALSE(b.grad().defined());
  opt.zero_grad();
  CHECK_FALSE(a.grad().defined());

  // The closure form evaluates the loss with grad enabled and returns it.
  Tensor w = full({2}, 3.0, kFloat64).requires_grad_();
  optim::SGD sgd(std::vector<Tensor>{w}, optim::SGDOptions(0.1));
  Tensor loss;
  {
    autograd::NoGradGuard no_grad;  // step(closure) enables grad for the closure
    loss = sgd.step([&] {
      sgd.zero_grad();
      Tensor l = (w * w).sum();
      l.backward();
      return l;
    });
  }
  CHECK(loss.item<double>() == 18.0);
  CHECK(values(w) == std::vector<double>{2.4, 2.4});  // w - 0.1 * 2w

  // add_param_group after construction: the new group's own lr is used.
  Tensor c = ones({1}, kFloat64).requires_grad_();
  sgd.add_param_group(optim::ParamGroup({c}, {{"lr", 1.0}}));
  c.set_grad(ones({1}, kFloat64));
  sgd.step();
  CHECK(values(c) == std::vector<double>{0.0});
  CHECK(sgd.param_groups()[1].get("momentum") == 0.0);  // the defaults filled in
  CHECK_THROWS_WITH(sgd.state(ones({1})), Contains("not a parameter of this optimizer"));
}

TEST_CASE("Adagrad makes its state when parameters are added, as PyTorch", "[optim]") {
  Tensor p = zeros({2, 2}, kFloat64).requires_grad_();
  optim::Adagrad opt(std::vector<Tensor>{p},
                     optim::AdagradOptions().initial_accumulator_value(0.25));
  const optim::ParamState& st = opt.state(p);
  REQUIRE(st.has("sum"));
  CHECK(values(st.at("sum")) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
  CHECK(st.at("step").dtype() == kFloat32);
  CHECK(st.at("step").item<double>() == 0.0);
  CHECK_THROWS_WITH(st.at("exp_avg"), Contains("no entry \"exp_avg\"") && Contains("sum"));
}

TEST_CASE("optimizers: staged layouts give the fused path's exact results", "[optim]") {
  // A non-contiguous parameter (a transposed leaf) and a non-contiguous gradient take the
  // staging path; a contiguous twin takes the direct one. Same formula, same bits.
  for (const OptimConfig& c : configs()) {
    INFO(c.name);
    Tensor base = randn({4, 3}, kFloat64);
    Tensor strided = base.t().detach().requires_grad_();  // [3, 4], strides (1, 3)
    REQUIRE_FALSE(strided.is_contiguous());
    Tensor twin = strided.detach().contiguous().requires_grad_();
    auto opt_a = c.make({optim::ParamGroup({strided})});
    auto opt_b = c.make({optim::ParamGroup({twin})});
    for (int t = 0; t < 4; ++t) {
      Tensor g = randn({4, 3}, kFloat64).t();
      strided.set_grad(g);
      twin.set_grad(g.contiguous());
      opt_a->step();
      opt_b->step();
    }
    CHECK_FALSE(strided.is_contiguous());
    CHECK(values(strided) == values(twin));
  }
}

TEST_CASE("optimizers: large tensors (parallel chunks) and float32 / 16-bit parameters",
          "[optim]") {
  // Adam on 100k elements (several parallel_for chunks) against the formula written with
  // tensor ops.
  const int64_t n = 100000;
  Tensor p = randn({n}, kFloat64).requires_grad_();
  Tensor ref = p.detach().clone();
  Tensor m = zeros({n}, kFloat64), v = zeros({n}, kFloat64);
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  optim::Adam opt(std::vector<Tensor>{p}, optim::AdamOptions(lr).weight_decay(wd));
  for (int t = 1; t <= 3; ++t) {
    Tensor g = randn({n}, kFloat64);
    p.set_grad(g);
    opt.step();
    Tensor gd = g + ref * wd;
    m = m * b1 + gd * (1 - b1);
    v = v * b2 + gd * gd * (1 - b2);
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    ref = ref - (m / (v.sqrt() / std::sqrt(bc2) + eps)) * (lr / bc1);
  }
  check_close(p, ref, 1e-13, 1e-12, "Adam over 100k elements");

  // float32 and the 16-bit floats follow the float64 trajectory within their precision.
  for (DType dt : {kFloat32, kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    Tensor init = randn({5000}, kFloat64);
    Tensor p64 = init.clone().requires_grad_();
    Tensor plow = init.to(dt).requires_grad_();
    optim::Adam a64(std::vector<Tensor>{p64}, optim::AdamOptions(1e-2));
    optim::Adam alow(std::vector<Tensor>{plow}, optim::AdamOptions(1e-2));
    for (int t = 0; t < 3; ++t) {
      Tensor g = randn({5000}, kFloat64);
      p64.set_grad(g);
      plow.set_grad(g.to(dt));
      a64.step();
      alow.step();
    }
    CHECK(plow.dtype() == dt);
    CHECK(alow.state(plow).at("exp_avg").dtype() == dt);
    const double tol = dt == kFloat32 ? 1e-5 : (dt == kFloat16 ? 1e-2 : 5e-2);
    check_close(plow, p64, tol, tol, "low-precision Adam");
  }

  // A state tensor that no longer matches its parameter is an error, not garbage.
  Tensor q = zeros({3}).requires_grad_();
  optim::SGD sgd(std::vector<Tensor>{q}, optim::SGDOptions(0.1).momentum(0.9));
  q.set_grad(ones({3}));
  sgd.step();
  sgd.state(q)["momentum_buffer"] = zeros({3}, kFloat64);
  q.set_grad(ones({3}));
  CHECK_THROWS_WITH(sgd.step(), Contains("SGD: a state tensor has dtype float64"));
}

TEST_CASE("optimizers train a small least-squares problem inside nn::Module", "[optim]") {
  struct Model : nn::Module {
    Model() : Module("Model") { w = register_parameter("w", zeros({3, 1}, kFloat64)); }
    Tensor w;
  };
  manual_seed(7);
  Tensor x = randn({64, 3}, kFloat64);
  Tensor w_true = tensor<double>({1.5, -2.0, 0.5}).reshape({3, 1});
  Tensor y = x.matmul(w_true);
  for (int which = 0; which < 5; ++which) {
    INFO("optimizer " << which);
    auto model = std::make_shared<Model>();
    std::unique_ptr<optim::Optimizer> opt;
    switch (which) {
      case 0:
        opt =
            std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
        break;
      case 1:
        opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(0.1));
        break;
      case 2:
        opt = std::make_unique<optim::AdamW>(model->parameters(),
                                             optim::AdamWOptions(0.1).weight_decay(0));
        break;
      case 3:
        opt = std::make_unique<optim::RMSprop>(model->parameters(), optim::RMSpropOptions(0.01));
        break;
      default:
        opt = std::make_unique<optim::Adagrad>(model->parameters(), optim::AdagradOptions(0.5));
        break;
    }
    double first = 0, last = 0;
    for (int it = 0; it < 300; ++it) {
      opt->zero_grad();
      Tensor loss = (x.matmul(model->w) - y).pow(2.0).mean();
      loss.backward();
      opt->step();
      (it == 0 ? first : last) = loss.item<double>();
    }
    CHECK(last < first * 1e-3);
  }
}
