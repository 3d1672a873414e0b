// LR schedulers: each one's lr (and cycled momentum) over 25 or 40 steps against PyTorch
// (tests/golden/gen_optim.py; ConstantLR, PolynomialLR, CyclicLR and ChainedScheduler in
// tests/golden/gen_lr_scheduler.py), state_dict round trips mid-run, keys, closed forms and
// errors.

#include <ember/ember.h>

#include <algorithm>
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
using ember::testing::kNaN;
using ember::testing::values;

namespace {

constexpr int kSchedSteps = 25;      // optim.safetensors
constexpr int kMoreSchedSteps = 40;  // lr_scheduler.safetensors
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
  std::string area = "optim";  // the golden file
  int steps = kSchedSteps;
  std::string key;  // the golden trajectory's name, if not `name`
  const std::string& golden_key() const { return key.empty() ? name : key; }
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

// ConstantLR, PolynomialLR, CyclicLR and ChainedScheduler (gen_lr_scheduler.py): SGD with
// momentum 0.9, 40 steps.
std::vector<SchedConfig> more_sched_configs() {
  using namespace optim;
  using Sched = std::shared_ptr<LRScheduler>;
  auto sgd = [] { return make_sgd(0.9); };
  auto config = [](std::string name, std::function<std::unique_ptr<Optimizer>()> make_opt,
                   std::function<Stepper(Optimizer&)> make, std::string key = "") {
    return SchedConfig{std::move(name), std::move(make_opt), std::move(make),
                       "lr_scheduler",  kMoreSchedSteps,     std::move(key)};
  };
  return {
      config("constant_lr", sgd,
             [](Optimizer& o) { return wrap(std::make_shared<ConstantLR>(o, 0.5, 4)); }),
      config("constant_lr_default", sgd,
             [](Optimizer& o) { return wrap(std::make_shared<ConstantLR>(o)); }),
      config("polynomial_lr", sgd,
             [](Optimizer& o) { return wrap(std::make_shared<PolynomialLR>(o, 8, 2.0)); }),
      config("polynomial_lr_sqrt", sgd,
             [](Optimizer& o) { return wrap(std::make_shared<PolynomialLR>(o, 6, 0.5)); }),
      config("cyclic_triangular", sgd,
             [](Optimizer& o) {
               return wrap(std::make_shared<CyclicLR>(
                   o,
                   CyclicLROptions({0.01, 0.005}, {0.1, 0.05}).step_size_up(4).step_size_down(2)));
             }),
      // PyTorch 1.13 refuses Adam here; ember cycles betas0 (as PyTorch 2.x) the same way.
      config(
          "cyclic_triangular_adam", make_adam,
          [](Optimizer& o) {
            return wrap(std::make_shared<CyclicLR>(
                o, CyclicLROptions({0.01, 0.005}, {0.1, 0.05}).step_size_up(4).step_size_down(2)));
          },
          "cyclic_triangular"),
      config("cyclic_triangular2", sgd,
             [](Optimizer& o) {
               return wrap(std::make_shared<CyclicLR>(o, CyclicLROptions(0.001, 0.01)
                                                             .step_size_up(3)
                                                             .mode("triangular2")
                                                             .base_momentum({0.85})
                                                             .max_momentum({0.95})));
             }),
      config("cyclic_exp_range", sgd,
             [](Optimizer& o) {
               return wrap(std::make_shared<CyclicLR>(o, CyclicLROptions({0.02}, {0.2, 0.1})
                                                             .step_size_up(5)
                                                             .step_size_down(3)
                                                             .mode("exp_range")
                                                             .gamma(0.97)
                                                             .cycle_momentum(false)));
             }),
      config("cyclic_custom_cycle", sgd,
             [](Optimizer& o) {
               return wrap(std::make_shared<CyclicLR>(
                   o, CyclicLROptions(0.01, 0.1)
                          .step_size_up(2)
                          .step_size_down(4)
                          .scale_fn([](double x) { return 1.0 / (1.0 + 0.5 * x); })
                          .scale_mode("cycle")));
             }),
      config("cyclic_custom_iterations", sgd,
             [](Optimizer& o) {
               return wrap(std::make_shared<CyclicLR>(
                   o, CyclicLROptions(0.01, 0.1)
                          .step_size_up(3)
                          .step_size_down(0)
                          .scale_fn([](double x) { return std::pow(0.99, x); })
                          .scale_mode("iterations")));
             }),
      config("chained", sgd,
             [](Optimizer& o) {
               Sched a = std::make_shared<ConstantLR>(o, 0.1, 2);
               Sched b = std::make_shared<ExponentialLR>(o, 0.9);
               return wrap(std::make_shared<ChainedScheduler>(std::vector<Sched>{a, b}));
             }),
      config("chained_three", sgd,
             [](Optimizer& o) {
               Sched a = std::make_shared<StepLR>(o, 3, 0.5);
               Sched b = std::make_shared<LinearLR>(o, 0.5, 1.0, 4);
               Sched c = std::make_shared<PolynomialLR>(o, 30, 1.0);
               return wrap(std::make_shared<ChainedScheduler>(std::vector<Sched>{a, b, c}));
             }),
  };
}

std::vector<SchedConfig> all_sched_configs() {
  std::vector<SchedConfig> all = sched_configs();
  for (SchedConfig& c : more_sched_configs()) all.push_back(std::move(c));
  return all;
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
Tensor row(const std::string& area, const std::string& key, int t) {
  return golden(area)[key].select(0, t);
}

Tensor as_tensor(const std::vector<double>& v) {
  return tensor(v, {static_cast<int64_t>(v.size())});
}

void check_row(const SchedConfig& c, const optim::Optimizer& o, const Stepper& s, int t) {
  const std::string what = c.name + " after step " + std::to_string(t);
  const std::string& name = c.golden_key();
  check_close(as_tensor(group_lrs(o)), row(c.area, name + ".lr", t), 1e-15, 1e-13, what + " (lr)");
  check_close(as_tensor(s.last_lr()), row(c.area, name + ".lr", t), 1e-15, 1e-13,
              what + " (last lr)");
  if (golden(c.area).has(name + ".momentum"))
    check_close(as_tensor(group_momenta(o)), row(c.area, name + ".momentum", t), 1e-15, 1e-13,
                what + " (momentum)");
}

TensorDict through_safetensors(const TensorDict& d) {
  const std::string bytes = safetensors::serialize(d);
  return safetensors::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).tensors;
}

}  // namespace

TEST_CASE("LR schedulers follow PyTorch's trajectories", "[optim][lr_scheduler][golden]") {
  for (const SchedConfig& c : all_sched_configs()) {
    INFO(c.name);
    auto opt = c.make_optimizer();
    Stepper s = c.make_scheduler(*opt);
    check_row(c, *opt, s, 0);
    for (int t = 0; t < c.steps; ++t) {
      opt->step();  // no gradients: nothing moves, as in the script
      s.step(t);
      check_row(c, *opt, s, t + 1);
    }
  }
}

TEST_CASE("LR scheduler state_dict round trip mid-run continues PyTorch's trajectory",
          "[optim][lr_scheduler][golden]") {
  for (const SchedConfig& c : all_sched_configs()) {
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
    for (int t = 10; t < c.steps; ++t) {
      s.step(t);
      s2.step(t);
      check_row(c, *opt2, s2, t + 1);
      check_row(c, *opt, s, t + 1);
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

TEST_CASE("ConstantLR and PolynomialLR step(epoch) follow PyTorch's closed forms",
          "[optim][lr_scheduler][golden]") {
  const std::vector<int64_t> epochs = {3, 0, 7, 4, 12, 5, 1};  // gen_lr_scheduler.py's
  std::vector<
      std::pair<std::string, std::function<std::shared_ptr<optim::LRScheduler>(optim::Optimizer&)>>>
      cases = {
          {"constant_lr",
           [](optim::Optimizer& o) { return std::make_shared<optim::ConstantLR>(o, 0.5, 4); }},
          {"polynomial_lr",
           [](optim::Optimizer& o) { return std::make_shared<optim::PolynomialLR>(o, 8, 2.0); }},
          {"polynomial_lr_sqrt",
           [](optim::Optimizer& o) { return std::make_shared<optim::PolynomialLR>(o, 6, 0.5); }},
      };
  for (const auto& [name, make] : cases) {
    auto opt = make_sgd(0.9);
    auto s = make(*opt);
    for (size_t i = 0; i < epochs.size(); ++i) {
      s->step(epochs[i]);
      check_close(as_tensor(group_lrs(*opt)),
                  row("lr_scheduler", name + ".closed", static_cast<int>(i)), 1e-15, 1e-13,
                  name + " step(" + std::to_string(epochs[i]) + ")");
    }
  }
  // ConstantLR with factor 0: PyTorch's lr / factor fails at total_iters; ember gives base_lr.
  auto opt = make_sgd();
  optim::ConstantLR zero(*opt, 0.0, 2);
  CHECK(zero.get_last_lr()[0] == 0.0);
  zero.step();
  CHECK(zero.get_last_lr()[0] == 0.0);
  zero.step();
  CHECK(zero.get_last_lr() == std::vector<double>{0.1, 0.05});
}

TEST_CASE("ConstantLR, PolynomialLR, CyclicLR and ChainedScheduler: keys and errors",
          "[optim][lr_scheduler]") {
  using optim::CyclicLROptions;
  auto opt = make_sgd(0.9);
  optim::CyclicLR cyclic(*opt, CyclicLROptions(0.01, 0.1).step_size_up(4));
  CHECK(keys(cyclic.state_dict()) ==
        std::vector<std::string>{"base_lrs", "last_epoch", "_step_count", "_last_lr", "max_lrs",
                                 "total_size", "step_ratio", "gamma", "cycle_momentum", "use_beta1",
                                 "base_momentums", "max_momentums"});
  CHECK(values(cyclic.state_dict()[5].second) == std::vector<double>{8.0});  // total_size
  CHECK(cyclic.base_lrs() == std::vector<double>{0.01, 0.01});
  auto opt_c = make_sgd();
  optim::ConstantLR constant(*opt_c, 0.5, 3);
  CHECK(keys(constant.state_dict()) == std::vector<std::string>{"base_lrs", "last_epoch",
                                                                "_step_count", "_last_lr", "factor",
                                                                "total_iters"});
  optim::PolynomialLR poly(*opt_c, 4, 2.0);
  CHECK(keys(poly.state_dict()).back() == "power");
  auto a = std::make_shared<optim::ConstantLR>(*opt_c, 0.5, 3);
  auto b = std::make_shared<optim::StepLR>(*opt_c, 2);
  optim::ChainedScheduler chained({a, b});
  const auto k = keys(chained.state_dict());
  CHECK(k.front() == "_last_lr");
  CHECK(std::find(k.begin(), k.end(), "_schedulers.0.factor") != k.end());
  CHECK(std::find(k.begin(), k.end(), "_schedulers.1.step_size") != k.end());
  CHECK(chained.last_epoch() == -1);
  CHECK_THROWS_WITH(chained.step(int64_t{3}),
                    Contains("ChainedScheduler: step(epoch) is not supported"));

  // Constructor errors, with PyTorch's messages where it has them.
  auto o = make_sgd(0.9);
  CHECK_THROWS_WITH(optim::ConstantLR(*o, 1.5),
                    Contains("Constant multiplicative factor expected to be between 0 and 1"));
  CHECK_THROWS_WITH(optim::ConstantLR(*o, kNaN),
                    Contains("Constant multiplicative factor expected to be between 0 and 1"));
  CHECK_THROWS_WITH(optim::ConstantLR(*o, 0.5, -1),
                    Contains("ConstantLR: total_iters must be non-negative, got -1"));
  CHECK_THROWS_WITH(optim::PolynomialLR(*o, 0),
                    Contains("PolynomialLR: total_iters must be positive, got 0"));
  CHECK_THROWS_WITH(optim::PolynomialLR(*o, 5, kNaN),
                    Contains("PolynomialLR: power must be finite and non-negative, got nan"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions({0.1, 0.1, 0.1}, {1.0})),
                    Contains("CyclicLR: expected 2 values for base_lr, got 3"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions(0.1, 1.0).mode("cosine")),
                    Contains("CyclicLR: mode is invalid and scale_fn is None"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions(0.1, 1.0).step_size_up(0)),
                    Contains("CyclicLR: step_size_up must be positive, got 0"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions(0.1, 1.0).step_size_down(-1)),
                    Contains("CyclicLR: step_size_down must be non-negative, got -1"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions(0.1, kNaN)),
                    Contains("CyclicLR: max_lrs[0] must be finite and non-negative, got nan"));
  CHECK_THROWS_WITH(optim::CyclicLR(*o, CyclicLROptions(0.1, 1.0).mode("exp_range").gamma(0)),
                    Contains("CyclicLR: gamma must be in (0, 1], got 0"));
  CHECK_THROWS_WITH(
      optim::CyclicLR(
          *o, CyclicLROptions(0.1, 1.0).scale_fn([](double) { return 1.0; }).scale_mode("epoch")),
      Contains("scale_mode must be 'cycle' or 'iterations', got 'epoch'"));
  optim::Adagrad adagrad(two_groups());
  CHECK_THROWS_WITH(optim::CyclicLR(adagrad, CyclicLROptions(0.1, 1.0)),
                    Contains("optimizer must support momentum or beta1 with `cycle_momentum`"));
  // A refused constructor leaves the groups as they were.
  CHECK(o->param_groups()[0].lr() == 0.1);
  CHECK(o->param_groups()[0].get("momentum") == 0.9);
  optim::CyclicLR no_momentum(adagrad, CyclicLROptions(0.1, 1.0).cycle_momentum(false));
  CHECK(adagrad.param_groups()[0].lr() == 0.1);

  auto other = make_sgd();
  auto c = std::make_shared<optim::ExponentialLR>(*other, 0.9);
  CHECK_THROWS_WITH(optim::ChainedScheduler({a, c}),
                    Contains("expects all schedulers to belong to the same optimizer, but got "
                             "schedulers at index 0 and 1 to be different"));
  CHECK_THROWS_WITH(optim::ChainedScheduler({}), Contains("needs at least one scheduler"));

  // A state with a cycle of size 0 (PyTorch: ZeroDivisionError) is refused when loaded.
  TensorDict sd = cyclic.state_dict();
  sd[5].second = scalar_tensor(0.0, kFloat64);
  CHECK_THROWS_WITH(cyclic.load_state_dict(sd),
                    Contains("CyclicLR.load_state_dict: total_size must be finite and positive"));
  // A chained scheduler names the one whose field is bad.
  TensorDict csd = chained.state_dict();
  for (auto& [key, t] : csd)
    if (key == "_schedulers.1.step_size") t = scalar_tensor(0, kInt64);
  CHECK_THROWS_WITH(chained.load_state_dict(csd),
                    Contains("ChainedScheduler.load_state_dict: _schedulers.1 (StepLR): step_size "
                             "must be positive, got 0"));
}
