// Loaded state is validated (issue 12, "State loaded from a file is not validated"): every
// scheduler's load_state_dict, the DataLoader's load_state, DistributedSampler's set_epoch and
// Generator::set_state put what they load through their constructor's checks. Each field of a
// good state is replaced in turn by 0, -1, NaN, inf, huge values; the load must either accept
// it (and the object then step without a signal and with finite lrs) or throw an ember::Error
// naming the field and leave the object as it was.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "data/dataloader.h"
#include "data/sampler.h"
#include "test_util.h"

using namespace ember;
using ember::testing::kInf;
using ember::testing::kNaN;
using ember::testing::values;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

const std::vector<int64_t> kBadInts = {0, -1, -2, 1, kI64Max, kI64Min, int64_t{1} << 53};
const std::vector<double> kBadReals = {0.0, -1.0, kNaN, kInf, -kInf, 1e300, -1e300, 9.3e18, 2.0};

// Something with a loadable state that steps.
struct Subject {
  std::function<TensorDict()> state_dict;
  std::function<void(const TensorDict&)> load_state_dict;
  std::function<void()> step;
  std::function<std::vector<double>()> lrs;  // the optimizer's current lrs
};

std::vector<optim::ParamGroup> two_groups() {
  return {optim::ParamGroup({zeros({2}, kFloat64).requires_grad_()}, {{"lr", 0.1}}),
          optim::ParamGroup({zeros({3}, kFloat64).requires_grad_()}, {{"lr", 0.05}})};
}

std::vector<double> lrs_of(const optim::Optimizer& o) {
  std::vector<double> out;
  for (const auto& g : o.param_groups()) out.push_back(g.lr());
  return out;
}

// A scheduler of type S made by `make` on an SGD (or Adam) optimizer it keeps alive.
template <class S>
std::function<Subject()> scheduler(std::function<std::shared_ptr<S>(optim::Optimizer&)> make,
                                   bool adam = false) {
  return [make, adam] {
    std::shared_ptr<optim::Optimizer> opt;
    if (adam)
      opt = std::make_shared<optim::Adam>(two_groups());
    else
      opt = std::make_shared<optim::SGD>(two_groups(), optim::SGDOptions(0.1).momentum(0.9));
    std::shared_ptr<S> s = make(*opt);
    return Subject{[s] { return s->state_dict(); },
                   [s](const TensorDict& d) { s->load_state_dict(d); },
                   [s, opt] {
                     opt->step();
                     s->step();
                   },
                   [opt] { return lrs_of(*opt); }};
  };
}

struct Case {
  std::string name;
  std::function<Subject()> make;
  int warmup_steps;
};

std::vector<Case> cases() {
  using namespace optim;
  using Sched = std::shared_ptr<LRScheduler>;
  std::vector<Case> out = {
      {"StepLR", scheduler<StepLR>([](Optimizer& o) { return std::make_shared<StepLR>(o, 3); }), 4},
      {"MultiStepLR", scheduler<MultiStepLR>([](Optimizer& o) {
         return std::make_shared<MultiStepLR>(o, std::vector<int64_t>{2, 5, 5, 9}, 0.5);
       }),
       3},
      {"ExponentialLR", scheduler<ExponentialLR>([](Optimizer& o) {
         return std::make_shared<ExponentialLR>(o, 0.9);
       }),
       3},
      {"LinearLR", scheduler<LinearLR>([](Optimizer& o) {
         return std::make_shared<LinearLR>(o, 0.25, 1.0, 6);
       }),
       2},
      {"LambdaLR", scheduler<LambdaLR>([](Optimizer& o) {
         return std::make_shared<LambdaLR>(o, [](int64_t e) { return 1.0 / double(e + 1); });
       }),
       2},
      {"CosineAnnealingLR", scheduler<CosineAnnealingLR>([](Optimizer& o) {
         return std::make_shared<CosineAnnealingLR>(o, 10, 0.001);
       }),
       3},
      {"CosineAnnealingWarmRestarts", scheduler<CosineAnnealingWarmRestarts>([](Optimizer& o) {
         return std::make_shared<CosineAnnealingWarmRestarts>(o, 3, 2, 0.01);
       }),
       4},
      {"SequentialLR", scheduler<SequentialLR>([](Optimizer& o) {
         auto a = std::make_shared<LinearLR>(o, 0.1, 1.0, 3);
         auto b = std::make_shared<StepLR>(o, 2, 0.5);
         return std::make_shared<SequentialLR>(o, std::vector<Sched>{a, b},
                                               std::vector<int64_t>{3});
       }),
       4},
      {"OneCycleLR", scheduler<OneCycleLR>([](Optimizer& o) {
         return std::make_shared<OneCycleLR>(o, OneCycleLROptions(1.0).total_steps(20));
       }),
       5},
      {"OneCycleLR_three_phase_adam",
       scheduler<OneCycleLR>(
           [](Optimizer& o) {
             return std::make_shared<OneCycleLR>(
                 o, OneCycleLROptions(0.01).total_steps(20).three_phase(true).anneal_strategy(
                        "linear"));
           },
           /*adam=*/true),
       5},
      {"ConstantLR",
       scheduler<ConstantLR>([](Optimizer& o) { return std::make_shared<ConstantLR>(o, 0.5, 4); }),
       2},
      {"PolynomialLR", scheduler<PolynomialLR>([](Optimizer& o) {
         return std::make_shared<PolynomialLR>(o, 8, 2.0);
       }),
       3},
      {"CyclicLR", scheduler<CyclicLR>([](Optimizer& o) {
         return std::make_shared<CyclicLR>(
             o, CyclicLROptions(0.01, 0.1).step_size_up(3).mode("triangular2"));
       }),
       7},
      {"CyclicLR_exp_range_adam",
       scheduler<CyclicLR>(
           [](Optimizer& o) {
             return std::make_shared<CyclicLR>(o, CyclicLROptions(0.01, 0.1)
                                                      .step_size_up(2)
                                                      .step_size_down(3)
                                                      .mode("exp_range")
                                                      .gamma(0.9));
           },
           /*adam=*/true),
       4},
      {"CyclicLR_no_momentum", scheduler<CyclicLR>([](Optimizer& o) {
         return std::make_shared<CyclicLR>(
             o, CyclicLROptions(0.01, 0.1).step_size_up(2).cycle_momentum(false));
       }),
       3},
      {"ChainedScheduler", scheduler<ChainedScheduler>([](Optimizer& o) {
         auto a = std::make_shared<PolynomialLR>(o, 6, 1.0);
         auto b = std::make_shared<StepLR>(o, 2, 0.5);
         auto c = std::make_shared<CosineAnnealingLR>(o, 4);
         return std::make_shared<ChainedScheduler>(std::vector<Sched>{a, b, c});
       }),
       3},
  };
  // ReduceLROnPlateau is no LRScheduler: stepped with a metric that improves, then stalls.
  out.push_back({"ReduceLROnPlateau",
                 [] {
                   auto opt = std::make_shared<SGD>(two_groups(), SGDOptions(0.1));
                   auto s = std::make_shared<ReduceLROnPlateau>(
                       *opt, ReduceLROnPlateauOptions().patience(1).cooldown(2).min_lr({0.001}));
                   auto t = std::make_shared<int>(0);
                   return Subject{[s] { return s->state_dict(); },
                                  [s](const TensorDict& d) { s->load_state_dict(d); },
                                  [s, t] {
                                    s->step(*t < 2 ? 1.0 - 0.1 * *t : 0.8);
                                    ++*t;
                                  },
                                  [opt] { return lrs_of(*opt); }};
                 },
                 4});
  return out;
}

// Element-wise equality with NaN equal to NaN.
bool same_dict(const TensorDict& a, const TensorDict& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || a[i].second.sizes() != b[i].second.sizes()) return false;
    const std::vector<double> x = values(a[i].second), y = values(b[i].second);
    for (size_t k = 0; k < x.size(); ++k)
      if (!(x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k])))) return false;
  }
  return true;
}

// The key's own name: "_schedulers.1.T_max" -> "T_max", "_schedule_phases.0.end_step" stays.
std::string leaf(const std::string& key) {
  const std::string prefix = "_schedulers.";
  if (key.rfind(prefix, 0) != 0) return key;
  const size_t dot = key.find('.', prefix.size());
  return key.substr(dot + 1);
}

// `good` with element 0 of entry k replaced by v (same dtype and shape).
TensorDict with_value(const TensorDict& good, size_t k, double v) {
  TensorDict bad = good;
  Tensor t = good[k].second.clone();
  native::fill_(t.dim() == 0 ? t : t.narrow(0, 0, 1), v);
  bad[k].second = t;
  return bad;
}

TensorDict with_value(const TensorDict& good, size_t k, int64_t v) {
  TensorDict bad = good;
  Tensor t = good[k].second.clone();
  Tensor one = t.dim() == 0 ? t : t.narrow(0, 0, 1);
  one.copy_(full(one.sizes(), v, TensorOptions().dtype(kInt64)));
  bad[k].second = t;
  return bad;
}

// Loads `bad` into a fresh subject stepped like the one `good` came from.
void try_load(const Case& c, const std::string& key, const TensorDict& bad,
              const std::string& what) {
  INFO(c.name << ": " << key << " = " << what);
  Subject s = c.make();
  for (int i = 0; i < c.warmup_steps; ++i) s.step();
  const TensorDict before = s.state_dict();
  bool accepted = false;
  try {
    s.load_state_dict(bad);
    accepted = true;
  } catch (const Error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(leaf(key)) != std::string::npos);
    if (leaf(key) != key)
      CHECK(msg.find(key.substr(0, key.size() - leaf(key).size() - 1)) != std::string::npos);
    CHECK(same_dict(s.state_dict(), before));
  }
  if (!accepted) return;
  // Accepted: stepping must work (an ember::Error such as OneCycleLR's "Tried to step" past
  // the end is a fine answer) and give finite learning rates.
  try {
    s.step();
  } catch (const Error&) {
    return;
  }
  for (double lr : s.lrs()) CHECK(std::isfinite(lr));
}

}  // namespace

TEST_CASE("scheduler load_state_dict validates every field against 0 -1 NaN inf and huge values",
          "[optim][lr_scheduler][state_validation]") {
  for (const Case& c : cases()) {
    Subject s = c.make();
    for (int i = 0; i < c.warmup_steps; ++i) s.step();
    const TensorDict good = s.state_dict();
    for (size_t k = 0; k < good.size(); ++k) {
      const std::string& key = good[k].first;
      const Tensor& t = good[k].second;
      if (t.numel() == 0) continue;
      if (t.dtype() == kBool) {
        for (int64_t v : {0, 1})
          try_load(c, key, with_value(good, k, double(v)), std::to_string(v));
      } else if (t.dtype() == kInt64) {
        for (int64_t v : kBadInts) try_load(c, key, with_value(good, k, v), std::to_string(v));
      } else {
        for (double v : kBadReals) {
          std::ostringstream os;
          os << v;
          try_load(c, key, with_value(good, k, v), os.str());
        }
      }
    }
  }
}

TEST_CASE("scheduler load_state_dict refuses T_max 0 and step_size 0 (SIGFPE before)",
          "[optim][lr_scheduler][state_validation]") {
  auto opt = std::make_shared<optim::SGD>(two_groups(), optim::SGDOptions(0.1));
  optim::CosineAnnealingLR cosine(*opt, 10);
  TensorDict sd = cosine.state_dict();
  for (auto& [key, t] : sd)
    if (key == "T_max") t = scalar_tensor(0, kInt64);
  CHECK_THROWS_WITH(cosine.load_state_dict(sd),
                    Catch::Contains("CosineAnnealingLR.load_state_dict: T_max must be positive, "
                                    "got 0"));
  cosine.step();
  CHECK(std::isfinite(cosine.get_last_lr()[0]));

  optim::StepLR step_lr(*opt, 3);
  sd = step_lr.state_dict();
  for (auto& [key, t] : sd)
    if (key == "step_size") t = scalar_tensor(0, kInt64);
  CHECK_THROWS_WITH(step_lr.load_state_dict(sd),
                    Catch::Contains("StepLR.load_state_dict: step_size must be positive, got 0"));
  step_lr.step();
}

TEST_CASE("DataLoader load_state and DistributedSampler set_epoch validate the position",
          "[data][state_validation]") {
  auto ds = std::make_shared<data::TensorDataset>(arange(10, TensorOptions().dtype(kFloat64)));
  data::DataLoaderOptions o;
  o.batch_size = 3;
  o.shuffle = true;
  o.seed = 5;
  const std::vector<int64_t> ints = {0, -1, 1, 3, 4, 5, kI64Max, kI64Min};
  for (int field = 0; field < 3; ++field) {
    for (int64_t v : ints) {
      data::DataLoader loader(ds, o);
      loader.set_epoch(1);
      const data::DataLoaderState before = loader.state();
      data::DataLoaderState s = before;
      (field == 0 ? s.epoch : field == 1 ? s.batches_done : reinterpret_cast<int64_t&>(s.seed)) = v;
      const char* name = field == 0 ? "epoch" : field == 1 ? "batches_done" : "seed";
      INFO(name << " = " << v);
      try {
        loader.load_state(s);
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains(std::string("DataLoader.load_state: ") + name));
        CHECK(loader.state().epoch == before.epoch);
        CHECK(loader.state().batches_done == before.batches_done);
        CHECK(loader.state().seed == before.seed);
        continue;
      }
      int64_t batches = 0;
      for (const data::Batch& b : loader) batches += b.data.numel() > 0 ? 1 : 0;
      CHECK(batches == loader.size() - s.batches_done);
    }
    for (int64_t v : ints) {
      data::DataLoader loader(ds, o);
      INFO("set_epoch " << v);
      try {
        loader.set_epoch(v);
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains("DataLoader.set_epoch: epoch"));
        CHECK(loader.epoch() == 0);
        continue;
      }
      for (const data::Batch& b : loader) (void)b;
    }
  }

  for (int64_t v : ints) {
    data::DistributedSampler sampler(10, 2, 1, true, 3);
    sampler.set_epoch(2);
    INFO("DistributedSampler epoch " << v);
    try {
      sampler.set_epoch(v);
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("DistributedSampler.set_epoch: epoch"));
      CHECK(sampler.epoch() == 2);
      continue;
    }
    CHECK(sampler.order().size() == 5);
  }
}

TEST_CASE("Generator::set_state accepts any 16 bytes and refuses every other tensor",
          "[random][state_validation]") {
  Generator g(11);
  const std::vector<double> saved = values(g.get_state());
  auto refused = [&](const Tensor& t, const std::string& what) {
    INFO(what);
    CHECK_THROWS_AS(g.set_state(t), Error);
    CHECK(values(g.get_state()) == saved);
  };
  refused(Tensor(), "undefined");
  refused(zeros({16}, kFloat32), "float32");
  refused(zeros({16}, kInt64), "int64");
  refused(zeros({15}, kUInt8), "15 bytes");
  refused(zeros({17}, kUInt8), "17 bytes");
  refused(zeros({4, 4}, kUInt8), "[4, 4]");
  refused(zeros({1, 16}, kUInt8), "[1, 16]");
  refused(zeros({}, kUInt8), "0-dim");
  CHECK_THROWS_WITH(g.set_state(zeros({4, 4}, kUInt8)), Catch::Contains("shape [4, 4]"));

  // Any seed and offset are valid, the extremes included; the stream then draws.
  Tensor all_ones = full({16}, 255, TensorOptions().dtype(kUInt8));
  g.set_state(all_ones);
  CHECK(g.seed() == std::numeric_limits<uint64_t>::max());
  CHECK(g.offset() == std::numeric_limits<uint64_t>::max());
  Tensor r = rand({8}, TensorOptions().dtype(kFloat64), &g);
  for (double x : values(r)) CHECK((x >= 0.0 && x < 1.0));
  g.set_state(zeros({16}, kUInt8));
  CHECK(g.seed() == 0);
  // A strided view of the right bytes is read by value.
  Tensor wide = zeros({32}, kUInt8);
  wide.narrow(0, 0, 1).fill_(7);
  g.set_state(wide.as_strided({16}, {2}));
  CHECK(g.seed() == 7);
}
