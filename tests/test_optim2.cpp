// optim, the optimizers added for issue 12 (NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop, LBFGS)
// against PyTorch 1.13's trajectories (tests/golden/gen_optim2.py), their state_dict round trips
// and constructor checks; and, for every optimizer, Note [Validating loaded state]: each loaded
// field perturbed (0, -1, NaN, inf, 1e300) is refused with an error naming it exactly when the
// constructor would refuse it, and accepted otherwise. Also Note [zero_grad sets to None].

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "golden.h"
#include "optim_golden.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::golden;

namespace {

constexpr int kSteps = 8;
constexpr double kGroup0Lr = 0.03;

// The element-wise configs of gen_optim2.py.
std::vector<OptimConfig> configs() {
  using namespace optim;
  return {
      {"nadam", maker<NAdam>(NAdamOptions(0.01))},
      {"nadam_wd",
       maker<NAdam>(
           NAdamOptions(0.01).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1).momentum_decay(0.01))},
      {"radam", maker<RAdam>(RAdamOptions(0.01))},
      {"radam_rectified", maker<RAdam>(RAdamOptions(0.01).betas({0.9, 0.9}).weight_decay(0.05))},
      {"adamax", maker<Adamax>(AdamaxOptions(0.01))},
      {"adamax_wd_maximize",
       maker<Adamax>(
           AdamaxOptions(0.01).betas({0.8, 0.9}).eps(1e-4).weight_decay(0.1).maximize(true))},
      {"adadelta", maker<Adadelta>(AdadeltaOptions(1.0))},
      {"adadelta_wd_maximize",
       maker<Adadelta>(AdadeltaOptions(0.5).rho(0.8).eps(1e-4).weight_decay(0.1).maximize(true))},
      {"asgd", maker<ASGD>(ASGDOptions(0.01))},
      {"asgd_averaging",
       maker<ASGD>(
           ASGDOptions(0.05).lambd(0.01).alpha(0.5).t0(3).weight_decay(0.1).maximize(true))},
      {"rprop", maker<Rprop>(RpropOptions(0.01))},
      {"rprop_clamped_maximize",
       maker<Rprop>(RpropOptions(0.01).etas({0.3, 1.5}).step_sizes({0.005, 0.02}).maximize(true))},
  };
}

const OptimGolden kGolden{"optim2"};

// Every "<name>.state.*" golden entry is in sd, with its value (and dtype, if check_dtype); and
// sd has no other state entries.
void check_state(const std::string& name, const TensorDict& sd, double tol, bool check_dtype) {
  const std::string prefix = name + ".state.";
  int64_t expected = 0;
  for (const auto& [key, want] : golden("optim2").file().tensors) {
    if (key.rfind(prefix, 0) != 0) continue;
    ++expected;
    const std::string ours = "state." + key.substr(prefix.size());
    INFO(ours);
    const Tensor* got = find(sd, ours);
    REQUIRE(got != nullptr);
    if (check_dtype) CHECK(got->dtype() == want.dtype());
    check_close(*got, want, tol, tol, ours);
  }
  int64_t ours = 0;
  for (const auto& kv : sd) ours += kv.first.rfind("state.", 0) == 0;
  CHECK(ours == expected);
}

// ---- LBFGS problems (gen_optim2.py) ---------------------------------------------------------

struct LbfgsCase {
  std::string name;
  std::string problem;  // "rosen" or "reg"
  int steps;
  optim::LBFGSOptions options;
};

std::vector<LbfgsCase> lbfgs_cases() {
  using optim::LBFGSOptions;
  return {
      {"lbfgs_rosen", "rosen", 4, LBFGSOptions(1).max_iter(5).history_size(3)},
      {"lbfgs_rosen_wolfe", "rosen", 4,
       LBFGSOptions(1).max_iter(6).history_size(3).line_search_fn("strong_wolfe")},
      {"lbfgs_reg", "reg", 3, LBFGSOptions(0.5).max_iter(4).history_size(2)},
      {"lbfgs_reg_wolfe", "reg", 3,
       LBFGSOptions(1).max_iter(5).max_eval(9).history_size(3).line_search_fn("strong_wolfe")},
  };
}

std::vector<Tensor> lbfgs_params(const std::string& problem) {
  const auto& g = golden("optim2");
  if (problem == "rosen") return {g["rosen.x0"].requires_grad_()};
  return {g["reg.W0"].requires_grad_(), g["reg.b0"].requires_grad_()};
}

Tensor lbfgs_loss(const std::string& problem, const std::vector<Tensor>& ps) {
  if (problem == "rosen") {  // (1 - x0)^2 + 100 (x1 - x0^2)^2
    const Tensor a = ps[0].select(0, 0), b = ps[0].select(0, 1);
    return (1.0 - a).pow(2) + 100.0 * (b - a.pow(2)).pow(2);
  }
  static const Tensor X = golden("optim2")["reg.X"], Y = golden("optim2")["reg.Y"];
  return (matmul(X, ps[0]) + ps[1] - Y).pow(2).mean();
}

std::function<Tensor()> lbfgs_closure(optim::Optimizer& opt, const std::string& problem,
                                      const std::vector<Tensor>& ps) {
  return [&opt, problem, ps] {
    opt.zero_grad();
    Tensor loss = lbfgs_loss(problem, ps);
    loss.backward();
    return loss;
  };
}

}  // namespace

TEST_CASE("NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop follow PyTorch's trajectories",
          "[optim][golden]") {
  for (const OptimConfig& c : configs()) {
    INFO(c.name);
    std::vector<Tensor> ps = kGolden.initial_params();
    auto opt = c.make(two_groups(ps, kGroup0Lr));
    for (int t = 0; t < kSteps; ++t) {
      kGolden.set_grads(ps, t);
      opt->step();
      kGolden.check_step(c.name, ps, t, 1e-12, 1e-12);
    }
    check_state(c.name, opt->state_dict(), 1e-12, /*check_dtype=*/true);
  }
}

TEST_CASE("new optimizers: a state_dict round trip mid-run continues the trajectory exactly",
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
    std::vector<Tensor> fresh;
    for (const Tensor& p : ps) fresh.push_back(p.detach().clone().requires_grad_());
    auto resumed = c.make({optim::ParamGroup({fresh[0], fresh[1]}), optim::ParamGroup({fresh[2]})});
    resumed->load_state_dict(saved);
    CHECK(resumed->param_groups()[0].lr() == kGroup0Lr);
    for (int t = 3; t < kSteps; ++t) {
      kGolden.set_grads(ps, t);
      kGolden.set_grads(fresh, t);
      opt->step();
      resumed->step();
      for (int k = 0; k < 3; ++k) check_close(fresh[k], ps[k], 0.0, 0.0, "resumed param");
    }
  }
}

TEST_CASE("LBFGS follows PyTorch's trajectories, with and without strong Wolfe",
          "[optim][golden][lbfgs]") {
  for (const LbfgsCase& c : lbfgs_cases()) {
    INFO(c.name);
    std::vector<Tensor> ps = lbfgs_params(c.problem);
    optim::LBFGS opt(ps, c.options);
    auto closure = lbfgs_closure(opt, c.problem, ps);
    for (int t = 0; t < c.steps; ++t) {
      Tensor loss = opt.step(closure);
      check_close(loss, golden("optim2")[c.name + ".loss" + std::to_string(t)], 1e-10, 1e-10,
                  "loss");
      kGolden.check_step(c.name, ps, t, 1e-9, 1e-9);
    }
    // "t" is a Python int when it is lr: compare values, not dtypes.
    check_state(c.name, opt.state_dict(), 1e-8, /*check_dtype=*/false);
  }
}

TEST_CASE("LBFGS: state_dict round trip, closure required, one group", "[optim][lbfgs]") {
  for (const LbfgsCase& c : lbfgs_cases()) {
    INFO(c.name);
    std::vector<Tensor> ps = lbfgs_params(c.problem);
    optim::LBFGS opt(ps, c.options);
    auto closure = lbfgs_closure(opt, c.problem, ps);
    opt.step(closure);
    opt.step(closure);
    const TensorDict saved = through_safetensors(opt.state_dict());
    std::vector<Tensor> fresh;
    for (const Tensor& p : ps) fresh.push_back(p.detach().clone().requires_grad_());
    optim::LBFGS resumed(fresh, c.options);
    resumed.load_state_dict(saved);
    auto closure2 = lbfgs_closure(resumed, c.problem, fresh);
    for (int t = 2; t < c.steps; ++t) {
      Tensor a = opt.step(closure);
      Tensor b = resumed.step(closure2);
      check_close(b, a, 0.0, 0.0, "loss");
      for (size_t k = 0; k < ps.size(); ++k) check_close(fresh[k], ps[k], 0.0, 0.0, "param");
    }
  }
  Tensor x = zeros({2}).requires_grad_();
  optim::LBFGS opt({x});
  CHECK_THROWS_WITH(opt.step(), Contains("LBFGS: step() needs a closure"));
  optim::Optimizer& base = opt;
  CHECK_THROWS_WITH(base.step(), Contains("needs a closure"));
  Tensor y = zeros({2}).requires_grad_();
  CHECK_THROWS_WITH(optim::LBFGS({optim::ParamGroup({x}), optim::ParamGroup({y})}),
                    Contains("LBFGS doesn't support per-parameter options"));
  CHECK_THROWS_WITH(optim::LBFGS({x}, optim::LBFGSOptions().line_search_fn("backtracking")),
                    Contains("only 'strong_wolfe' is supported"));
  CHECK_THROWS_WITH(optim::LBFGS({x}, optim::LBFGSOptions().max_iter(0)),
                    Contains("LBFGS: max_iter must be a positive integer, got 0"));
  CHECK_THROWS_WITH(optim::LBFGS({x}, optim::LBFGSOptions().history_size(-1)),
                    Contains("LBFGS: history_size must be a positive integer"));
  CHECK_THROWS_WITH(optim::LBFGS({x}, optim::LBFGSOptions(-1)),
                    Contains("LBFGS: Invalid learning rate: -1"));
  CHECK_THROWS_WITH(optim::LBFGS({x}, optim::LBFGSOptions().tolerance_grad(kNaN)),
                    Contains("LBFGS: Invalid tolerance_grad value: nan"));
  // max_eval defaults to max_iter * 5 / 4, as PyTorch.
  CHECK(optim::LBFGS({x}, optim::LBFGSOptions().max_iter(10)).defaults().at("max_eval") == 12.0);
  // An already optimal point: one evaluation, the counters only.
  Tensor z = ones({2}).requires_grad_();
  optim::LBFGS at_min({z});
  at_min.step(lbfgs_closure(at_min, "rosen", {z}));
  CHECK(at_min.state(z).at("func_evals").item<int64_t>() == 1);
  CHECK(!at_min.state(z).has("d"));
}

TEST_CASE("new optimizers: constructor checks with PyTorch's messages", "[optim]") {
  using namespace optim;
  Tensor w = zeros({2}).requires_grad_();
  struct Case {
    std::function<void()> make;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&] { NAdam({w}, NAdamOptions(-1)); }, "NAdam: Invalid learning rate: -1"},
      {[&] { NAdam({w}, NAdamOptions().eps(-1)); }, "NAdam: Invalid epsilon value: -1"},
      {[&] {
         NAdam({w}, NAdamOptions().betas({1.0, 0.9}));
       },
       "NAdam: Invalid beta parameter at index 0: 1"},
      {[&] {
         NAdam({w}, NAdamOptions().betas({0.9, kNaN}));
       },
       "NAdam: Invalid beta parameter at index 1: nan"},
      {[&] { NAdam({w}, NAdamOptions().weight_decay(-1)); },
       "NAdam: Invalid weight_decay value: -1"},
      {[&] { NAdam({w}, NAdamOptions().momentum_decay(-1)); },
       "NAdam: Invalid momentum_decay value: -1"},
      {[&] { RAdam({w}, RAdamOptions(kNaN)); }, "RAdam: Invalid learning rate: nan"},
      {[&] {
         RAdam({w}, RAdamOptions().betas({-0.1, 0.9}));
       },
       "RAdam: Invalid beta parameter at index 0: -0.1"},
      {[&] { Adamax({w}, AdamaxOptions().eps(-1)); }, "Adamax: Invalid epsilon value: -1"},
      {[&] {
         Adamax({w}, AdamaxOptions().betas({0.9, 1.0}));
       },
       "Adamax: Invalid beta parameter at index 1: 1"},
      {[&] { Adadelta({w}, AdadeltaOptions().rho(1.5)); }, "Adadelta: Invalid rho value: 1.5"},
      {[&] { Adadelta({w}, AdadeltaOptions().rho(kNaN)); }, "Adadelta: Invalid rho value: nan"},
      {[&] { Adadelta({w}, AdadeltaOptions(-1)); }, "Adadelta: Invalid learning rate: -1"},
      {[&] { Adadelta({w}, AdadeltaOptions().eps(-1)); }, "Adadelta: Invalid epsilon value: -1"},
      {[&] { ASGD({w}, ASGDOptions(-1)); }, "ASGD: Invalid learning rate: -1"},
      {[&] { ASGD({w}, ASGDOptions().weight_decay(-1)); }, "ASGD: Invalid weight_decay value: -1"},
      {[&] { ASGD({w}, ASGDOptions().t0(kNaN)); }, "ASGD: option \"t0\" of the new group is NaN"},
      {[&] { Rprop({w}, RpropOptions(-1)); }, "Rprop: Invalid learning rate: -1"},
      {[&] {
         Rprop({w}, RpropOptions().etas({1.5, 1.2}));
       },
       "Rprop: Invalid eta values: 1.5, 1.2"},
      {[&] {
         Rprop({w}, RpropOptions().etas({0.5, 0.9}));
       },
       "Rprop: Invalid eta values: 0.5, 0.9"},
      {[&] {
         Rprop({w}, RpropOptions().step_sizes({1.0, 0.5}));
       },
       "Rprop: Invalid step_sizes values: 1, 0.5"},
  };
  for (const Case& c : cases) CHECK_THROWS_WITH(c.make(), Contains(c.message));
  // Group options are checked too, and flags must be 0 or 1.
  CHECK_THROWS_WITH(NAdam({ParamGroup({w}, {{"lr", -2.0}})}),
                    Contains("Invalid learning rate: -2"));
  CHECK_THROWS_WITH(Adamax({ParamGroup({w}, {{"maximize", 0.5}})}),
                    Contains("Adamax: maximize must be 0 or 1 (false or true), got 0.5"));
  CHECK_THROWS_WITH(SGD({ParamGroup({w}, {{"dampening", kNaN}})}, SGDOptions(0.1)),
                    Contains("SGD: option \"dampening\" of the new group is NaN"));
  CHECK_THROWS_WITH(
      SGD({ParamGroup({w}, {{"nesterov", kNaN}, {"momentum", 0.9}})}, SGDOptions(0.1)),
      Contains("SGD: nesterov must be 0 or 1"));
}

namespace {

// An optimizer of every kind, over fresh parameters, after two steps.
struct Subject {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

std::vector<Subject> subjects() {
  using namespace optim;
  auto of = [](auto make) {
    return [make](std::vector<Tensor> ps) -> std::unique_ptr<Optimizer> { return make(ps); };
  };
  return {
      {"SGD", of([](auto ps) {
         return std::make_unique<SGD>(ps, SGDOptions(0.1).momentum(0.9).nesterov(true));
       })},
      {"Adam", of([](auto ps) { return std::make_unique<Adam>(ps, AdamOptions().amsgrad(true)); })},
      {"AdamW", of([](auto ps) { return std::make_unique<AdamW>(ps); })},
      {"RMSprop", of([](auto ps) {
         return std::make_unique<RMSprop>(ps, RMSpropOptions().momentum(0.5).centered(true));
       })},
      {"Adagrad", of([](auto ps) { return std::make_unique<Adagrad>(ps); })},
      {"NAdam", of([](auto ps) { return std::make_unique<NAdam>(ps); })},
      {"RAdam", of([](auto ps) { return std::make_unique<RAdam>(ps); })},
      {"Adamax", of([](auto ps) { return std::make_unique<Adamax>(ps); })},
      {"Adadelta", of([](auto ps) { return std::make_unique<Adadelta>(ps); })},
      {"ASGD", of([](auto ps) { return std::make_unique<ASGD>(ps, ASGDOptions().t0(1)); })},
      {"Rprop", of([](auto ps) { return std::make_unique<Rprop>(ps); })},
      {"LBFGS", of([](auto ps) {
         return std::make_unique<LBFGS>(
             ps, LBFGSOptions().max_iter(3).history_size(4).line_search_fn("strong_wolfe"));
       })},
  };
}

std::vector<Tensor> subject_params() {
  return {tensor<double>({0.5, -1.0, 2.0}, {3}).requires_grad_(),
          tensor<double>({1.5, 0.25}, {2}).requires_grad_()};
}

void run_steps(optim::Optimizer& opt, const std::vector<Tensor>& ps, int n) {
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = (ps[0] * ps[0]).sum() * 0.5 + (ps[1] - 1.0).pow(2).sum();
    loss.backward();
    return loss;
  };
  for (int i = 0; i < n; ++i) opt.step(closure);
}

// Whether `value` is a valid "name" state entry (Note [Validating loaded state] and each
// optimizer's header); options are judged by the constructor instead.
bool valid_state_value(const std::string& opt, const std::string& name, double v) {
  const bool finite = std::isfinite(v);
  const double max_count = 9007199254740992.0;  // 2^53
  if (opt == "LBFGS" && name == "n_iter")
    return finite && v >= 1 && v <= max_count && v == std::floor(v);
  if (name == "step" || name == "func_evals" || name == "n_iter")
    return finite && v >= 0 && v <= max_count && v == std::floor(v);
  if (name == "mu_product" || name == "mu") return finite && v > 0 && v <= 1;
  if (name == "eta" || name == "step_size") return finite && v >= 0;
  if (opt == "LBFGS") {
    if (name == "t" || name == "H_diag" || name == "prev_loss" || name.rfind("ro.", 0) == 0)
      return finite;
  }
  return true;  // the moment estimates and buffers: any values
}

}  // namespace

TEST_CASE("load_state_dict refuses each invalid loaded field by name and accepts valid ones",
          "[optim][validation]") {
  const std::vector<double> perturbations = {0.0, -1.0, kNaN, kInf, 1e300};
  for (const Subject& s : subjects()) {
    INFO(s.name);
    std::vector<Tensor> ps = subject_params();
    auto opt = s.make(ps);
    run_steps(*opt, ps, 2);
    const TensorDict good = opt->state_dict();
    for (size_t e = 0; e < good.size(); ++e) {
      const std::string& key = good[e].first;
      if (key.size() > 7 && key.compare(key.size() - 7, 7, ".params") == 0) continue;
      const bool is_option = key.rfind("param_groups.", 0) == 0;
      const std::string name = key.substr(key.find('.', key.find('.') + 1) + 1);
      for (double v : perturbations) {
        INFO(key << " = " << v);
        TensorDict bad = good;
        const Tensor& t = good[e].second;
        // A hostile file may store any dtype: a one-number field becomes a float64 scalar.
        bad[e].second =
            t.numel() == 1 ? scalar_tensor(v, kFloat64).reshape(t.sizes()) : full_like(t, v);
        bool valid = true;
        if (is_option) {  // the constructor's verdict on a group with this option value
          try {
            std::vector<Tensor> other = subject_params();
            s.make(other)->add_param_group(
                optim::ParamGroup({zeros({1}).requires_grad_()}, {{name, v}}));
          } catch (const Error&) {
            valid = false;
          }
        } else {
          valid = valid_state_value(s.name, name, v);
        }
        std::vector<Tensor> fresh = subject_params();
        auto target = s.make(fresh);
        run_steps(*target, fresh, 1);
        const TensorDict before = target->state_dict();
        if (valid) {
          CHECK_NOTHROW(target->load_state_dict(bad));
          // A valid state trains on without a signal (the values may well be NaN).
          CHECK_NOTHROW(run_steps(*target, fresh, 1));
        } else {
          CHECK_THROWS_WITH(target->load_state_dict(bad), Contains(key));
          // Unchanged by the failed load.
          const TensorDict after = target->state_dict();
          REQUIRE(after.size() == before.size());
          for (size_t i = 0; i < after.size(); ++i) {
            CHECK(after[i].first == before[i].first);
            check_close(after[i].second, before[i].second, 0.0, 0.0, after[i].first);
          }
        }
      }
    }
  }
}

TEST_CASE("load_state_dict: the messages of refused options and steps", "[optim][validation]") {
  Tensor w = ones({2}).requires_grad_();
  optim::Adam adam({w});
  w.set_grad(ones({2}));
  adam.step();
  auto with = [&](const std::string& key, const Tensor& value) {
    TensorDict d = adam.state_dict();
    for (auto& kv : d)
      if (kv.first == key) kv.second = value;
    return d;
  };
  optim::Adam other({ones({2}).requires_grad_()});
  CHECK_THROWS_WITH(
      other.load_state_dict(with("param_groups.0.lr", scalar_tensor(-1.0, kFloat64))),
      Contains("Adam.load_state_dict: param_groups.0.lr: Adam: Invalid learning rate: -1"));
  CHECK_THROWS_WITH(
      other.load_state_dict(with("param_groups.0.betas1", scalar_tensor(1.0, kFloat64))),
      Contains("param_groups.0.betas1: Adam: Invalid beta parameter at index 1: 1"));
  CHECK_THROWS_WITH(
      other.load_state_dict(with("param_groups.0.eps", scalar_tensor(kNaN, kFloat64))),
      Contains("Adam.load_state_dict: param_groups.0.eps is NaN"));
  CHECK_THROWS_WITH(
      other.load_state_dict(with("param_groups.0.amsgrad", scalar_tensor(2.0, kFloat64))),
      Contains("param_groups.0.amsgrad: Adam: amsgrad must be 0 or 1"));
  CHECK_THROWS_WITH(
      other.load_state_dict(with("state.0.step", scalar_tensor(-3.0, kFloat32))),
      Contains("state.0.step must be a non-negative integer of at most 2^53, got -3"));
  CHECK_THROWS_WITH(
      other.load_state_dict(with("state.0.step", scalar_tensor(1.5, kFloat32))),
      Contains("state.0.step must be a non-negative integer of at most 2^53, got 1.5"));
  CHECK_NOTHROW(other.load_state_dict(with("state.0.step", scalar_tensor(7.0, kFloat32))));

  optim::SGD sgd({w}, optim::SGDOptions(0.1).momentum(0.9));
  sgd.step();
  TensorDict d = sgd.state_dict();
  for (auto& kv : d)
    if (kv.first == "param_groups.0.momentum") kv.second = scalar_tensor(-0.5, kFloat64);
  optim::SGD sgd2({ones({2}).requires_grad_()}, optim::SGDOptions(0.1));
  CHECK_THROWS_WITH(sgd2.load_state_dict(d),
                    Contains("param_groups.0.momentum: SGD: Invalid momentum value: -0.5"));
}

TEST_CASE("LBFGS load_state_dict checks its history", "[optim][validation][lbfgs]") {
  std::vector<Tensor> ps = subject_params();
  optim::LBFGS opt(ps, optim::LBFGSOptions().max_iter(3).history_size(4));
  run_steps(opt, ps, 2);
  const TensorDict good = opt.state_dict();
  REQUIRE(find(good, "state.0.ro.1") != nullptr);
  auto load = [&](const std::function<void(TensorDict&)>& edit) {
    TensorDict d = good;
    edit(d);
    std::vector<Tensor> fresh = subject_params();
    optim::LBFGS target(fresh, optim::LBFGSOptions().max_iter(3).history_size(4));
    target.load_state_dict(d);
  };
  auto drop = [](const std::string& key) {
    return [key](TensorDict& d) {
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i].first == key) d.erase(d.begin() + static_cast<std::ptrdiff_t>(i));
    };
  };
  auto set = [](const std::string& key, Tensor v) {
    return [key, v](TensorDict& d) {
      for (auto& kv : d)
        if (kv.first == key) kv.second = v;
    };
  };
  CHECK_NOTHROW(load([](TensorDict&) {}));
  CHECK_THROWS_WITH(load(drop("state.0.ro.0")), Contains("must have one length"));
  CHECK_THROWS_WITH(load(drop("state.0.H_diag")), Contains("state.0.H_diag is missing"));
  CHECK_THROWS_WITH(load(set("state.0.d", zeros({4}, kFloat64))),
                    Contains("state.0.d must be a floating 1-D tensor of the parameters' 5"));
  CHECK_THROWS_WITH(
      load(set("state.0.n_iter", scalar_tensor(int64_t{-1}, kInt64))),
      Contains("state.0.n_iter must be a non-negative integer of at most 2^53, got -1"));
  CHECK_THROWS_WITH(load(set("state.0.n_iter", scalar_tensor(int64_t{0}, kInt64))),
                    Contains("n_iter must be at least 1 when d is present"));
  CHECK_THROWS_WITH(load(set("state.0.t", scalar_tensor(kNaN, kFloat64))),
                    Contains("state.0.t must be finite, got nan"));
  CHECK_THROWS_WITH(load([](TensorDict& d) { d.emplace_back("state.0.what", zeros({1})); }),
                    Contains("state.0.what: not an LBFGS state entry"));
  CHECK_THROWS_WITH(load([](TensorDict& d) { d.emplace_back("state.1.d", zeros({5})); }),
                    Contains("LBFGS keeps its state on parameter 0 only"));
  CHECK_THROWS_WITH(
      load(set("param_groups.0.line_search_fn", scalar_tensor(2.0, kFloat64))),
      Contains("param_groups.0.line_search_fn: LBFGS: line_search_fn must be 0 or 1"));
  CHECK_THROWS_WITH(load(set("param_groups.0.history_size", scalar_tensor(1.0, kFloat64))),
                    Contains("more than history_size 1"));
}

TEST_CASE(
    "zero_grad: set_to_none (the default) leaves a parameter without gradient fixed; "
    "zeroed gradients keep it moving on its momentum",
    "[optim]") {
  // Note [zero_grad sets to None]: w gets a gradient once, then none.
  for (bool set_to_none : {true, false}) {
    INFO("set_to_none " << set_to_none);
    Tensor w = ones({2}).requires_grad_();
    optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9));
    w.set_grad(full({2}, 1.0));
    opt.step();  // w = 1 - 0.1 * 1 = 0.9, buf = 1
    check_close(w, full({2}, 0.9), 1e-6, 1e-6, "after the one gradient");
    for (int i = 0; i < 3; ++i) {
      if (set_to_none)
        opt.zero_grad();
      else
        opt.zero_grad(false);
      opt.step();
    }
    if (set_to_none) {
      CHECK(!w.grad().defined());
      check_close(w, full({2}, 0.9), 0.0, 0.0, "w stays");
    } else {
      // buf = 0.9, 0.81, 0.729: w = 0.9 - 0.1 * (0.9 + 0.81 + 0.729)
      check_close(w, full({2}, 0.9 - 0.1 * (0.9 + 0.81 + 0.729)), 1e-6, 1e-6, "w moves");
    }
  }
}
