// LR schedulers: each one's lr (and cycled momentum) over 25 steps against PyTorch
// (tests/golden/gen_optim.py), state_dict round trips mid-run, keys, closed forms and errors.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "golden.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::keys;
using ember::testing::values;

namespace {

constexpr int kSchedSteps = 25;
constexpr double kPi = 3.14159265358979323846;

// Two groups with lr 0.1 and 0.05, as gen_optim.py's two_groups().
std::vector<optim::ParamGroup> two_groups() {
  return {optim::ParamGroup({zeros({2}, kFloat64).requires_grad_()}, {{"lr", 0.1}}),
          optim::ParamGroup({zeros({3}, kFloat64).requires_grad_()}, {{"lr", 0.05}})};
}

std::unique_ptr<optim::Optimizer> make_sgd(double momentum = 0.0) {
  return std::make_unique<optim::SGD>(two_groups(), optim::SGDOptions(0.1).momentum(momentum));
}

std::unique_ptr<optim::Optimizer> make_adam() {
  return std::make_unique<optim::Adam>(two_groups());
}

// Something that steps: an LRScheduler, or ReduceLROnPlateau fed the golden metrics.
struct Stepper {
  std::function<void(int)> step;  // step t (0-based)
  std::function<TensorDict()> state_dict;
  std::function<void(const TensorDict&)> load_state_dict;
  std::function<std::vector<double>()> last_lr;
};

template <class S>
Stepper wrap(std::shared_ptr<S> s) {
  return {[s](int) { s->step(); }, [s] { return s->state_dict(); },
          [s](const TensorDict& d) { s->load_state_dict(d); }, [s] { return s->get_last_lr(); }};
}

Stepper wrap_plateau(std::shared_ptr<optim::ReduceLROnPlateau> s, const std::string& name) {
  std::vector<double> metrics = values(golden("optim")[name + ".metrics"]);
  return {[s, metrics](int t) { s->step(metrics[static_cast<size_t>(t)]); },
          [s] { return s->state_dict(); }, [s](const TensorDict& d) { s->load_state_dict(d); },
          [s] { return s->get_last_lr(); }};
}

struct SchedConfig {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>()> make_optimizer;
  std::function<Stepper(optim::Optimizer&)> make_scheduler;
};

std::vector<SchedConfig> sched_configs() {
  using namespace optim;
  auto sgd = [] { return make_sgd(); };
  std::vector<LambdaLR::Lambda> lambdas = {[](int64_t e) { return std::pow(0.95, double(e)); },
                                           [](int64_t e) { return 1.0 / (1.0 + double(e)); }};
  return {
      {"step_lr", sgd, [](Optimizer& o) { return wrap(std::make_shared<StepLR>(o, 4, 0.5)); }},
      {"multistep_lr", sgd,
       [](Optimizer& o) {
         return wrap(std::make_shared<MultiStepLR>(o, std::vector<int64_t>{3, 7, 7, 12}, 0.5));
       }},
      {"exponential_lr", sgd,
       [](Optimizer& o) { return wrap(std::make_shared<ExponentialLR>(o, 0.9)); }},
      {"cosine_lr", sgd,
       [](Optimizer& o) { return wrap(std::make_shared<CosineAnnealingLR>(o, 10, 0.001)); }},
      {"cosine_warm_restarts", sgd,
       [](Optimizer& o) {
         return wrap(std::make_shared<CosineAnnealingWarmRestarts>(o, 3, 2, 0.01));
       }},
      {"lambda_lr", sgd,
       [lambdas](Optimizer& o) { return wrap(std::make_shared<LambdaLR>(o, lambdas)); }},
      {"linear_lr", sgd,
       [](Optimizer& o) { return wrap(std::make_shared<LinearLR>(o, 0.25, 1.0, 6)); }},
      {"linear_lr_decay", sgd,
       [](Optimizer& o) { return wrap(std::make_shared<LinearLR>(o, 1.0, 0.1, 8)); }},
      {"sequential", sgd,
       [](Optimizer& o) {
         auto warmup = std::make_shared<LinearLR>(o, 0.1, 1.0, 5);
         auto cosine = std::make_shared<CosineAnnealingLR>(o, 20, 0.001);
         return wrap(std::make_shared<SequentialLR>(
             o, std::vector<std::shared_ptr<LRScheduler>>{warmup, cosine},
             std::vector<int64_t>{5}));
       }},
      {"onecycle_cos", [] { return make_sgd(0.9); },
       [](Optimizer& o) {
         return wrap(std::make_shared<OneCycleLR>(
             o, OneCycleLROptions(std::vector<double>{1.0, 0.5}).total_steps(kSchedSteps)));
       }},
      {"onecycle_linear_three_phase", make_adam,
       [](Optimizer& o) {
         return wrap(std::make_shared<OneCycleLR>(o, OneCycleLROptions(0.01)
                                                         .total_steps(kSchedSteps)
                                                         .pct_start(0.25)
                                                         .anneal_strategy("linear")
                                                         .three_phase(true)
                                                         .base_momentum({0.8})
                                                         .max_momentum({0.9})));
       }},
      {"plateau", sgd,
       [](Optimizer& o) {
         return wrap_plateau(std::make_shared<ReduceLROnPlateau>(o, ReduceLROnPlateauOptions()
                                                                        .mode("min")
                                                                        .factor(0.5)
                                                                        .patience(2)
                                                                        .threshold(0.01)
                                                                        .threshold_mode("rel")
                                                                        .cooldown(1)
                                                                        .min_lr({0.01, 0.02})),
                             "plateau");
       }},
      {"plateau_max_abs", sgd,
       [](Optimizer& o) {
         return wrap_plateau(std::make_shared<ReduceLROnPlateau>(o, ReduceLROnPlateauOptions()
                                                                        .mode("max")
                                                                        .factor(0.5)
                                                                        .patience(1)
                                                                        .threshold(0.01)
                                                                        .threshold_mode("abs")),
                             "plateau_max_abs");
       }},
  };
}

std::vector<double> group_lrs(const optim::Optimizer& o) {
  std::vector<double> out;
  for (const auto& g : o.param_groups()) out.push_back(g.lr());
  return out;
}

std::vector<double> group_momenta(const optim::Optimizer& o) {
  std::vector<double> out;
  for (const auto& g : o.param_groups())
    out.push_back(g.get(g.has("betas0") ? "betas0" : "momentum"));
  return out;
}

// Row t of a golden [26, 2] trajectory.
Tensor row(const std::string& key, int t) { return golden("optim")[key].select(0, t); }

Tensor as_tensor(const std::vector<double>& v) {
  return tensor(v, {static_cast<int64_t>(v.size())});
}

void check_row(const std::string& name, const optim::Optimizer& o, const Stepper& s, int t) {
  const std::string what = name + " after step " + std::to_string(t);
  check_close(as_tensor(group_lrs(o)), row(name + ".lr", t), 1e-15, 1e-13, what + " (lr)");
  check_close(as_tensor(s.last_lr()), row(name + ".lr", t), 1e-15, 1e-13, what + " (last lr)");
  if (golden("optim").has(name + ".momentum"))
    check_close(as_tensor(group_momenta(o)), row(name + ".momentum", t), 1e-15, 1e-13,
                what + " (momentum)");
}

TensorDict through_safetensors(const TensorDict& d) {
  const std::string bytes = safetensors::serialize(d);
  return safetensors::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).tensors;
}

}  // namespace

TEST_CASE("LR schedulers follow PyTorch's trajectories", "[optim][lr_scheduler][golden]") {
  for (const SchedConfig& c : sched_configs()) {
    INFO(c.name);
    auto opt = c.make_optimizer();
    Stepper s = c.make_scheduler(*opt);
    check_row(c.name, *opt, s, 0);
    for (int t = 0; t < kSchedSteps; ++t) {
      opt->step();  // no gradients: nothing moves, as in the script
      s.step(t);
      check_row(c.name, *opt, s, t + 1);
    }
  }
}

TEST_CASE("LR scheduler state_dict round trip mid-run continues PyTorch's trajectory",
          "[optim][lr_scheduler][golden]") {
  for (const SchedConfig& c : sched_configs()) {
    INFO(c.name);
    auto opt = c.make_optimizer();
    Stepper s = c.make_scheduler(*opt);
    for (int t = 0; t < 10; ++t) s.step(t);
    const TensorDict opt_state = through_safetensors(opt->state_dict());
    const TensorDict sched_state = through_safetensors(s.state_dict());

    // Fresh ones, loaded: the optimizer first (lrs, initial_lr, momenta), then the scheduler.
    auto opt2 = c.make_optimizer();
    Stepper s2 = c.make_scheduler(*opt2);
    opt2->load_state_dict(opt_state);
    s2.load_state_dict(sched_state);
    for (int t = 10; t < kSchedSteps; ++t) {
      s.step(t);
      s2.step(t);
      check_row(c.name, *opt2, s2, t + 1);
      check_row(c.name, *opt, s, t + 1);
    }
  }
}

TEST_CASE("LR scheduler state_dict keys are PyTorch's attribute names", "[optim][lr_scheduler]") {
  auto opt = make_sgd();
  optim::StepLR step_lr(*opt, 3, 0.5);
  CHECK(keys(step_lr.state_dict()) == std::vector<std::string>{"base_lrs", "last_epoch",
                                                               "_step_count", "_last_lr",
                                                               "step_size", "gamma"});
  const TensorDict sd = step_lr.state_dict();
  CHECK(sd[0].second.dtype() == kFloat64);
  CHECK(values(sd[0].second) == std::vector<double>{0.1, 0.05});
  CHECK(sd[1].second.dtype() == kInt64);
  CHECK(sd[1].second.dim() == 0);
  CHECK(sd[1].second.item<int64_t>() == 0);
  CHECK(sd[2].second.item<int64_t>() == 1);

  auto opt2 = make_sgd();
  auto warmup = std::make_shared<optim::LinearLR>(*opt2, 0.1, 1.0, 5);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(*opt2, 20);
  optim::SequentialLR seq(*opt2, {warmup, cosine}, {5});
  const auto k = keys(seq.state_dict());
  CHECK(k.front() == "last_epoch");
  CHECK(std::find(k.begin(), k.end(), "_schedulers.0.start_factor") != k.end());
  CHECK(std::find(k.begin(), k.end(), "_schedulers.1.T_max") != k.end());
  CHECK(std::find(k.begin(), k.end(), "base_lrs") == k.end());  // PyTorch's has none either

  auto opt3 = make_sgd();
  optim::ReduceLROnPlateau plateau(*opt3);
  const TensorDict psd = plateau.state_dict();
  CHECK(keys(psd).size() == 12);
  CHECK(std::isinf(psd[6].second.item<double>()));  // "best" starts at +inf in mode min
  // LambdaLR saves no function: the same lambdas must be given again.
  auto opt4 = make_sgd();
  optim::LambdaLR lambda(*opt4, [](int64_t e) { return 1.0 / double(e + 1); });
  CHECK(keys(lambda.state_dict()) ==
        std::vector<std::string>{"base_lrs", "last_epoch", "_step_count", "_last_lr"});
}

TEST_CASE("LR scheduler load_state_dict rejects bad dicts and leaves the scheduler unchanged",
          "[optim][lr_scheduler]") {
  auto opt = make_sgd();
  optim::StepLR s(*opt, 3, 0.5);
  s.step();
  TensorDict good = s.state_dict();
  TensorDict missing(good.begin() + 1, good.end());
  CHECK_THROWS_WITH(s.load_state_dict(missing),
                    Contains("StepLR.load_state_dict: missing key \"base_lrs\""));
  TensorDict extra = good;
  extra.emplace_back("T_max", scalar_tensor(3, kInt64));
  CHECK_THROWS_WITH(s.load_state_dict(extra), Contains("unexpected key \"T_max\""));
  TensorDict short_list = good;
  short_list[0].second = tensor<double>({0.1, 0.05, 0.01});
  CHECK_THROWS_WITH(s.load_state_dict(short_list),
                    Contains("\"base_lrs\" has 3 values, expected 2"));
  TensorDict float_epoch = good;
  float_epoch[1].second = scalar_tensor(1.5, kFloat64);
  CHECK_THROWS_WITH(s.load_state_dict(float_epoch), Contains("\"last_epoch\" must hold integers"));
  CHECK(s.last_epoch() == 1);
  TensorDict jump = good;
  jump[1].second = scalar_tensor(7, kInt64);
  s.load_state_dict(jump);
  CHECK(s.last_epoch() == 7);
}

TEST_CASE("LR schedulers: closed forms, fractional restarts, resuming and errors",
          "[optim][lr_scheduler]") {
  auto opt = make_sgd();
  optim::StepLR step_lr(*opt, 4, 0.5);
  step_lr.step(int64_t{9});  // the closed form: base * 0.5^(9 // 4)
  CHECK(step_lr.get_last_lr()[0] == Approx(0.1 * 0.25).epsilon(1e-15));
  CHECK(step_lr.last_epoch() == 9);

  // CosineAnnealingWarmRestarts at a fractional epoch, PyTorch's formula: epoch 4.5 with
  // T_0 = 3, T_mult = 2 lies in the second period (T_i = 6) at T_cur = 1.5.
  auto opt2 = make_sgd();
  optim::CosineAnnealingWarmRestarts cawr(*opt2, 3, 2, 0.01);
  cawr.step_fractional(4.5);
  CHECK(cawr.get_last_lr()[0] ==
        Approx(0.01 + (0.1 - 0.01) * (1 + std::cos(kPi * 1.5 / 6)) / 2).epsilon(1e-14));
  CHECK(cawr.last_epoch() == 4);
  CHECK_THROWS_WITH(cawr.step_fractional(-1), Contains("Expected non-negative epoch, but got -1"));

  // Resuming with last_epoch needs "initial_lr" in the groups.
  auto opt3 = make_sgd();
  CHECK_THROWS_WITH(optim::ExponentialLR(*opt3, 0.9, 5),
                    Contains("param 'initial_lr' is not specified in param_groups[0] when "
                             "resuming an optimizer"));
  for (auto& g : opt3->param_groups()) g.set("initial_lr", 1.0);
  optim::ExponentialLR resumed(*opt3, 0.5, 2);  // its first step is epoch 3: lr * 0.5
  CHECK(resumed.last_epoch() == 3);
  CHECK(resumed.get_last_lr()[0] == Approx(0.05));
  CHECK(resumed.base_lrs() == std::vector<double>{1.0, 1.0});

  auto opt4 = make_sgd();
  CHECK_THROWS_WITH(optim::StepLR(*opt4, 0), Contains("step_size must be positive"));
  CHECK_THROWS_WITH(optim::LinearLR(*opt4, 0.0), Contains("Starting multiplicative factor"));
  CHECK_THROWS_WITH(optim::LinearLR(*opt4, 0.5, 1.5), Contains("Ending multiplicative factor"));
  CHECK_THROWS_WITH(optim::CosineAnnealingWarmRestarts(*opt4, 0),
                    Contains("Expected positive integer T_0, but got 0"));
  CHECK_THROWS_WITH(optim::CosineAnnealingWarmRestarts(*opt4, 2, 0),
                    Contains("Expected integer T_mult >= 1, but got 0"));
  CHECK_THROWS_WITH(
      optim::LambdaLR(*opt4, std::vector<optim::LambdaLR::Lambda>{[](int64_t) { return 1.0; }}),
      Contains("Expected 2 lr_lambdas, but got 1"));
  CHECK_THROWS_WITH(optim::ReduceLROnPlateau(*opt4, optim::ReduceLROnPlateauOptions().factor(1.0)),
                    Contains("Factor should be < 1.0."));
  CHECK_THROWS_WITH(
      optim::ReduceLROnPlateau(*opt4, optim::ReduceLROnPlateauOptions().mode("median")),
      Contains("mode median is unknown!"));
  CHECK_THROWS_WITH(
      optim::ReduceLROnPlateau(*opt4, optim::ReduceLROnPlateauOptions().threshold_mode("pct")),
      Contains("threshold mode pct is unknown!"));
  CHECK_THROWS_WITH(
      optim::ReduceLROnPlateau(*opt4, optim::ReduceLROnPlateauOptions().min_lr({0, 0, 0})),
      Contains("expected 2 min_lrs, got 3"));

  // OneCycleLR: its settings, an optimizer without momentum, stepping past the end.
  auto opt5 = make_sgd();
  CHECK_THROWS_WITH(optim::OneCycleLR(*opt5, optim::OneCycleLROptions(1.0)),
                    Contains("You must define either total_steps OR (epochs AND steps_per_epoch)"));
  CHECK_THROWS_WITH(optim::OneCycleLR(*opt5, optim::OneCycleLROptions(1.0).total_steps(0)),
                    Contains("Expected positive integer total_steps, but got 0"));
  CHECK_THROWS_WITH(
      optim::OneCycleLR(*opt5, optim::OneCycleLROptions(1.0).total_steps(10).pct_start(1.5)),
      Contains("Expected float between 0 and 1 pct_start, but got 1.5"));
  CHECK_THROWS_WITH(
      optim::OneCycleLR(*opt5,
                        optim::OneCycleLROptions(1.0).total_steps(10).anneal_strategy("exp")),
      Contains("anneal_strategy must by one of 'cos' or 'linear'"));
  CHECK_THROWS_WITH(
      optim::OneCycleLR(*opt5, optim::OneCycleLROptions({1.0, 2.0, 3.0}).total_steps(10)),
      Contains("expected 2 values for max_lr, got 3"));
  optim::Adagrad adagrad(two_groups());
  CHECK_THROWS_WITH(optim::OneCycleLR(adagrad, optim::OneCycleLROptions(1.0).total_steps(10)),
                    Contains("optimizer must support momentum with `cycle_momentum` option"));
  optim::OneCycleLR no_momentum(adagrad,
                                optim::OneCycleLROptions(1.0).total_steps(4).cycle_momentum(false));
  optim::OneCycleLR by_epochs(*opt5, optim::OneCycleLROptions(1.0).epochs(2).steps_per_epoch(2));
  for (int i = 0; i < 4; ++i) by_epochs.step();
  CHECK_THROWS_WITH(by_epochs.step(),
                    Contains("Tried to step 6 times. The specified number of total steps is 4"));
  CHECK(opt5->param_groups()[0].has("max_lr"));
  CHECK(opt5->param_groups()[0].get("min_lr") == Approx(1.0 / 25 / 1e4));

  // SequentialLR: the schedulers' optimizer and the milestone count.
  auto opt6 = make_sgd();
  auto other = make_sgd();
  auto a = std::make_shared<optim::ExponentialLR>(*opt6, 0.9);
  auto b = std::make_shared<optim::ExponentialLR>(*other, 0.9);
  CHECK_THROWS_WITH(optim::SequentialLR(*opt6, {a, b}, {3}),
                    Contains("expects all schedulers to belong to the same optimizer"));
  auto c = std::make_shared<optim::ExponentialLR>(*opt6, 0.8);
  CHECK_THROWS_WITH(
      optim::SequentialLR(*opt6, {a, c}, {3, 4}),
      Contains("number of schedulers 2 and the number of milestones to be equal to 2"));
  optim::SequentialLR seq(*opt6, {a, c}, {3});
  CHECK_THROWS_WITH(seq.step(int64_t{2}), Contains("SequentialLR: step(epoch) is not supported"));

  // A group added after the scheduler was made.
  auto opt7 = make_sgd();
  optim::LambdaLR lambda_lr(*opt7, [](int64_t e) { return 1.0 / double(e + 1); });
  opt7->add_param_group(optim::ParamGroup({zeros({1}, kFloat64).requires_grad_()}));
  CHECK_THROWS_WITH(lambda_lr.step(), Contains("was a group added after the scheduler was made?"));
}

TEST_CASE("LR schedulers drive a real optimizer's lr", "[optim][lr_scheduler]") {
  // SGD on p with gradient 1: each step moves p by exactly the current lr.
  Tensor p = zeros({1}, kFloat64).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(1.0));
  optim::MultiStepLR sched(opt, {2}, 0.1);
  double expected = 0.0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    p.set_grad(ones({1}, kFloat64));
    opt.step();
    expected -= epoch < 2 ? 1.0 : 0.1;
    sched.step();
  }
  CHECK(values(p)[0] == Approx(expected).epsilon(1e-14));
  optim::ReduceLROnPlateau plateau(opt, optim::ReduceLROnPlateauOptions().patience(0));
  plateau.step(scalar_tensor(1.0, kFloat64));
  CHECK(plateau.best() == 1.0);
  plateau.step(1.0);  // no improvement, patience 0: reduce
  CHECK(opt.param_groups()[0].lr() == Approx(0.01));
  CHECK(plateau.get_last_lr()[0] == Approx(0.01));
}
