// Op-table entries for the losses (nn/loss.h, family "nn_loss"), with float64 references written
// straight from the definitions in nn/loss.h (PyTorch 1.13's semantics), one naive loop each.
//
// Every run returns the loss under each reduction: {"none", "mean", "sum"} (and "batchmean" for
// kl_div), so one sample checks all of them, forward and gradcheck. Integer options travel as an
// int64 `params` tensor (last argument; floats such as beta or label_smoothing in thousandths),
// so that gradcheck leaves them alone; floating targets, class weights and pos_weight are
// ordinary inputs and get gradchecked too.

#include <cmath>
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

namespace F = nn::functional;

const char* const kReductions[] = {"none", "mean", "sum"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool defined(const RefTensor& r) { return !r.data.empty() || !r.shape.empty(); }
RefTensor scalar(double v) { return RefTensor(Shape{}, std::vector<double>{v}); }
double sum_of(const RefTensor& r) {
  double s = 0;
  for (double v : r.data) s += v;
  return s;
}
// {none, mean, sum} of element-wise losses.
Refs reduced(const RefTensor& none) {
  const double s = sum_of(none);
  return {none, scalar(none.numel() == 0 ? kNaN : s / static_cast<double>(none.numel())),
          scalar(s)};
}

template <class Fn>
std::vector<Tensor> each_reduction(Fn fn) {
  std::vector<Tensor> out;
  for (const char* r : kReductions) out.push_back(fn(r));
  return out;
}

double param(const RefTensor& p, size_t i) { return p.data.at(i); }
double thousandths(const Tensor& p, size_t i) { return to_ref(p).data.at(i) / 1000.0; }

// ---- element-wise losses ------------------------------------------------------------------
// Same-shape (input, target) pairs: 0-dim, empty, size 1, 1-D, 2-D, 3-D, non-contiguous.
std::vector<Sample> pairs(DType dt, double lo, double hi, double lo_t, double hi_t, uint64_t seed) {
  std::vector<Sample> s;
  auto add = [&](const Shape& shape, const std::string& note, bool transposed = false) {
    Tensor x = random_tensor(shape, dt, lo, hi, seed++);
    Tensor t = random_tensor(shape, dt, lo_t, hi_t, seed++);
    if (transposed) x = noncontiguous(x), t = noncontiguous(t);
    s.push_back({{x, t}, note});
  };
  add({}, "0-dim");
  add({0}, "empty");
  add({1}, "size 1");
  add({7}, "[7]");
  add({3, 4}, "[3, 4]");
  add({2, 3, 5}, "[2, 3, 5]");
  add({4, 5}, "non-contiguous [4, 5]", true);
  return s;
}

// The pairs with a list of options each (appended as an int64 params tensor), in turn.
std::vector<Sample> with_params(std::vector<Sample> s, const std::vector<Shape>& options) {
  for (size_t i = 0; i < s.size(); ++i) {
    const Shape& o = options[i % options.size()];
    s[i].args.push_back(params(o));
    s[i].note += ", params " + shape_str(o);
  }
  return s;
}

RefTensor smooth_l1(const RefTensor& x, const RefTensor& t, double beta) {
  return ref_binary(x, t, [=](double a, double b) {
    const double z = std::abs(a - b);
    return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
  });
}

RefTensor huber(const RefTensor& x, const RefTensor& t, double delta) {
  return ref_binary(x, t, [=](double a, double b) {
    const double z = std::abs(a - b);
    return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta);
  });
}

// ---- binary cross-entropy: args {input, target, weight?, pos_weight?} -----------------------
std::vector<Sample> bce_samples(DType dt, bool logits) {
  const double lo = logits ? -4.0 : 0.02, hi = logits ? 4.0 : 0.98;
  std::vector<Sample> s = pairs(dt, lo, hi, 0.0, 1.0, logits ? 960 : 920);
  uint64_t seed = logits ? 990 : 950;
  auto r = [&](const Shape& shape, double a, double b) {
    return random_tensor(shape, dt, a, b, seed++);
  };
  for (Sample& x : s) x.args.resize(logits ? 4 : 3);  // no weights
  s.push_back({{r({3, 4}, lo, hi), r({3, 4}, 0, 1), r({4}, 0.2, 2.0)}, "weight [4]"});
  s.push_back({{r({3, 4}, lo, hi), r({3, 4}, 0, 1), r({3, 1}, 0.2, 2.0)}, "weight [3, 1]"});
  if (logits) {
    s[s.size() - 2].args.push_back(Tensor());
    s.back().args.push_back(r({4}, 0.2, 3.0));
    s.back().note += ", pos_weight [4]";
    s.push_back(
        {{r({2, 3, 4}, lo, hi), r({2, 3, 4}, 0, 1), Tensor(), r({4}, 0.2, 3.0)}, "pos_weight [4]"});
    s.push_back(
        {{r({2, 4}, -40, 40), r({2, 4}, 0, 1), Tensor(), Tensor()}, "large logits (|x| <= 40)"});
  }
  return s;
}

RefTensor bce_elementwise(const Refs& r) {
  RefTensor loss = ref_binary(r[0], r[1], [](double x, double t) {
    return -(t * std::max(std::log(x), -100.0) + (1 - t) * std::max(std::log(1 - x), -100.0));
  });
  return defined(r[2]) ? ref_binary(loss, r[2], [](double l, double w) { return l * w; }) : loss;
}

RefTensor bce_logits_elementwise(const Refs& r) {
  const RefTensor pos = defined(r[3]) ? r[3] : scalar(1.0);
  // -(pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) with log sigmoid(x) = -log1p(exp(-x)).
  RefTensor loss = ref_ternary(r[0], r[1], pos, [](double x, double t, double pw) {
    const double neg_log_sig = std::max(-x, 0.0) + std::log1p(std::exp(-std::abs(x)));
    return pw * t * neg_log_sig + (1 - t) * (neg_log_sig + x);
  });
  return defined(r[2]) ? ref_binary(loss, r[2], [](double l, double w) { return l * w; }) : loss;
}

// ---- kl_div: args {input (log-probabilities), target, {log_target}} ----------------------------
std::vector<Sample> kl_samples(DType dt) {
  std::vector<Sample> probs = pairs(dt, -4.0, 0.0, -0.3, 1.0, 1100);
  // Targets below 0 become exact zeros (0 log 0 = 0): probabilities with some zeros.
  for (Sample& s : probs) s.args[1] = s.args[1].clamp_min(0);
  probs = with_params(probs, {{0}});
  std::vector<Sample> logs = with_params(pairs(dt, -4.0, 0.0, -4.0, 0.0, 1200), {{1}});
  probs.insert(probs.end(), logs.begin(), logs.end());
  return probs;
}

// ---- classification: args {input, target, weight?, {ignore_index, label_smoothing * 1000}} ----
// Shape of an input for the references: N samples, C classes along dim 1 (dim 0 when 1-D), S
// positions after the class dim; element (n, c, s) sits at (n * C + c) * S + s.
struct ClassLayout {
  int64_t N, C, S;
  explicit ClassLayout(const Shape& shape) {
    const bool one_d = shape.size() == 1;
    N = one_d ? 1 : shape[0];
    C = shape[one_d ? 0 : 1];
    S = 1;
    for (size_t d = 2; d < shape.size(); ++d) S *= shape[d];
  }
  int64_t at(int64_t n, int64_t c, int64_t s) const { return (n * C + c) * S + s; }
};

Shape without_class_dim(const Shape& shape) {
  Shape out = shape;
  out.erase(out.begin() + (shape.size() == 1 ? 0 : 1));
  return out;
}

// log_softmax along the class dim.
RefTensor ref_log_softmax(const RefTensor& x) {
  ClassLayout L(x.shape);
  RefTensor out(x.shape);
  for (int64_t n = 0; n < L.N; ++n)
    for (int64_t s = 0; s < L.S; ++s) {
      double m = -std::numeric_limits<double>::infinity(), z = 0;
      for (int64_t c = 0; c < L.C; ++c) m = std::max(m, x.data[L.at(n, c, s)]);
      for (int64_t c = 0; c < L.C; ++c) z += std::exp(x.data[L.at(n, c, s)] - m);
      for (int64_t c = 0; c < L.C; ++c)
        out.data[L.at(n, c, s)] = x.data[L.at(n, c, s)] - m - std::log(z);
    }
  return out;
}

// nll_loss (smoothing = 0) or cross_entropy's class-index branch on log-probabilities.
Refs ref_class_loss(const RefTensor& logp, const RefTensor& target, const RefTensor& weight,
                    double ignore_index, double smoothing) {
  ClassLayout L(logp.shape);
  auto w = [&](int64_t c) { return defined(weight) ? weight.data[c] : 1.0; };
  RefTensor none(without_class_dim(logp.shape));
  double total = 0, weight_total = 0;
  for (int64_t n = 0; n < L.N; ++n)
    for (int64_t s = 0; s < L.S; ++s) {
      const double t = target.data[n * L.S + s];
      if (t == ignore_index) continue;
      const auto cls = static_cast<int64_t>(t);
      double smooth = 0;
      for (int64_t c = 0; c < L.C; ++c) smooth -= w(c) * logp.data[L.at(n, c, s)];
      const double nll = -w(cls) * logp.data[L.at(n, cls, s)];
      none.data[n * L.S + s] = (1 - smoothing) * nll + smoothing / L.C * smooth;
      total += none.data[n * L.S + s];
      weight_total += w(cls);
    }
  return {none, scalar(total / weight_total), scalar(total)};
}

// cross_entropy with class probabilities.
Refs ref_prob_loss(const RefTensor& logp, const RefTensor& target, const RefTensor& weight,
                   double smoothing) {
  ClassLayout L(logp.shape);
  RefTensor none(without_class_dim(logp.shape));
  double total = 0;
  for (int64_t n = 0; n < L.N; ++n)
    for (int64_t s = 0; s < L.S; ++s) {
      double l = 0;
      for (int64_t c = 0; c < L.C; ++c) {
        const double p = (1 - smoothing) * target.data[L.at(n, c, s)] + smoothing / L.C;
        l -= (defined(weight) ? weight.data[c] : 1.0) * p * logp.data[L.at(n, c, s)];
      }
      none.data[n * L.S + s] = l;
      total += l;
    }
  return {none, scalar(total / static_cast<double>(L.N * L.S)), scalar(total)};
}

Tensor classes(const Shape& shape, int64_t C, uint64_t seed) {
  return random_tensor(shape, kInt64, 0, static_cast<double>(C - 1), seed);
}
Tensor labels(const std::vector<int64_t>& v, const Shape& shape) { return tensor(v, shape); }

// Samples for nll_loss (log-probability inputs) and cross_entropy (logits; with_probs adds the
// probability-target samples and label smoothing).
std::vector<Sample> class_samples(DType dt, bool cross_entropy) {
  std::vector<Sample> s;
  uint64_t seed = cross_entropy ? 1300 : 1400;
  const double lo = cross_entropy ? -3.0 : -4.0, hi = cross_entropy ? 3.0 : 0.0;
  auto x = [&](const Shape& shape) { return random_tensor(shape, dt, lo, hi, seed++); };
  auto w = [&](int64_t C) { return random_tensor({C}, dt, 0.3, 2.0, seed++); };
  // label smoothing (thousandths) only for cross_entropy
  auto opts = [&](int64_t ignore, int64_t smoothing) {
    return params({ignore, cross_entropy ? smoothing : 0});
  };
  s.push_back({{x({5, 4}), classes({5}, 4, seed++), Tensor(), opts(-100, 0)}, "(N, C)"});
  s.push_back({{x({6, 4}), labels({0, -100, 3, 2, -100, 1}, {6}), w(4), opts(-100, 200)},
               "weights, ignored targets, smoothing 0.2"});
  s.push_back({{x({6, 3}), labels({1, 0, 2, 1, 1, 0}, {6}), w(3), opts(1, 100)},
               "ignore_index = 1 (a real class), weights, smoothing 0.1"});
  s.push_back({{x({2, 3, 2, 3}), labels({0, 2, 1, -100, 2, 0, 1, 1, -100, 0, 2, 2}, {2, 2, 3}),
                w(3), opts(-100, 100)},
               "spatial (N, C, H, W), weights, ignored targets, smoothing 0.1"});
  s.push_back({{x({2, 4, 3}), classes({2, 3}, 4, seed++), Tensor(), opts(-100, 0)}, "(N, C, d1)"});
  s.push_back(
      {{x({5}), labels({3}, {}), Tensor(), opts(-100, 300)}, "unbatched (C), smoothing 0.3"});
  s.push_back({{noncontiguous(x({5, 4})), classes({5}, 4, seed++), w(4), opts(-100, 0)},
               "non-contiguous input, weights"});
  s.push_back({{x({0, 4}), labels({}, {0}), Tensor(), opts(-100, 0)}, "empty batch"});
  s.push_back({{x({3, 4}), labels({-100, -100, -100}, {3}), Tensor(), opts(-100, 100)},
               "every target ignored: the mean is 0 / 0"});
  if (!cross_entropy) return s;
  // Up to 6000 (900 in float16, whose sum of the smoothing terms would pass 65504 and
  // overflow, in PyTorch too).
  s.push_back({{x({4, 5}).mul(dt == kFloat16 ? 300 : 2000), classes({4}, 5, seed++), Tensor(),
                opts(-100, 100)},
               "large logits"});
  // Class probabilities: a floating target of the input's shape.
  auto probs = [&](const Shape& shape) {
    return softmax(random_tensor(shape, dt, -2, 2, seed++), shape.size() == 1 ? 0 : 1);
  };
  s.push_back({{x({5, 4}), probs({5, 4}), Tensor(), opts(-100, 0)}, "probability targets"});
  s.push_back({{x({4, 3}), probs({4, 3}), w(3), opts(-100, 150)},
               "probability targets, weights, smoothing 0.15"});
  s.push_back(
      {{x({2, 3, 4}), probs({2, 3, 4}), Tensor(), opts(-100, 0)}, "spatial probability targets"});
  s.push_back({{x({4}), probs({4}), Tensor(), opts(-100, 0)}, "unbatched probability target"});
  s.push_back({{x({0, 3}), probs({0, 3}), Tensor(), opts(-100, 0)}, "empty probability batch"});
  return s;
}

Refs ref_class_entry(const Refs& r, bool cross_entropy) {
  const RefTensor logp = cross_entropy ? ref_log_softmax(r[0]) : r[0];
  const double ignore = param(r[3], 0), smoothing = param(r[3], 1) / 1000.0;
  if (r[1].shape == r[0].shape && cross_entropy) return ref_prob_loss(logp, r[1], r[2], smoothing);
  return ref_class_loss(logp, r[1], r[2], ignore, smoothing);
}

std::vector<Tensor> run_class_entry(const Sample& s, bool cross_entropy) {
  const auto ignore = static_cast<int64_t>(to_ref(s.args[3]).data[0]);
  const double smoothing = thousandths(s.args[3], 1);
  return each_reduction([&](const char* r) {
    return cross_entropy ? F::cross_entropy(s.args[0], s.args[1], s.args[2], ignore, r, smoothing)
                         : F::nll_loss(s.args[0], s.args[1], s.args[2], ignore, r);
  });
}

// The class-index mean is 0 / 0 when no target counts (empty batch, every target ignored), and
// a probability-target mean over no sample too: nothing to gradcheck there.
bool class_mean_defined(const Sample& s) {
  if (s.args[1].is_floating_point()) return s.args[0].numel() > 0;
  const auto ignore = static_cast<int64_t>(to_ref(s.args[3]).data[0]);
  return s.args[1].ne(ignore).any().item<bool>();
}

OpInfo class_entry(const char* name, bool cross_entropy) {
  OpInfo e{name,
           floating_dtypes(),
           [=](DType dt) { return class_samples(dt, cross_entropy); },
           [=](const Sample& s) { return run_class_entry(s, cross_entropy); },
           [=](const Refs& r) { return ref_class_entry(r, cross_entropy); },
           /*tol_scale=*/16};
  e.grad_sample_ok = class_mean_defined;
  return e;
}

// An element-wise loss entry over `samples`, `run(x, t, reduction, sample)`, and the reference
// of its unreduced loss.
template <class Run, class Ref>
OpInfo elementwise_entry(const char* name, std::function<std::vector<Sample>(DType)> samples,
                         Run run, Ref ref) {
  return OpInfo{
      name,
      floating_dtypes(),
      std::move(samples),
      [=](const Sample& s) { return each_reduction([&](const char* r) { return run(s, r); }); },
      [=](const Refs& r) { return reduced(ref(r)); },
      /*tol_scale=*/16};
}

OpInfo kl_entry() {
  OpInfo e{"kl_div",
           floating_dtypes(),
           kl_samples,
           [](const Sample& s) {
             const bool log_target = to_ref(s.args[2]).data[0] != 0;
             std::vector<Tensor> out;
             for (const char* r : {"none", "mean", "sum", "batchmean"})
               out.push_back(F::kl_div(s.args[0], s.args[1], r, log_target));
             return out;
           },
           [](const Refs& r) {
             const bool log_target = param(r[2], 0) != 0;
             RefTensor none = ref_binary(r[0], r[1], [=](double x, double t) {
               if (log_target) return std::exp(t) * (t - x);
               return t == 0 ? 0.0 : t * (std::log(t) - x);
             });
             Refs out = reduced(none);
             const double batch = r[0].dim() == 0 ? 1.0 : static_cast<double>(r[0].shape[0]);
             out.push_back(scalar(sum_of(none) / batch));
             return out;
           },
           /*tol_scale=*/16};
  // t log t has no derivative at t = 0 from below (central differences step into t < 0).
  e.grad_sample_ok = [](const Sample& s) {
    return to_ref(s.args[2]).data[0] != 0 || !s.args[1].eq(0).any().item<bool>();
  };
  return e;
}

const OpTableRegistrar reg({
    class_entry("cross_entropy", true),
    class_entry("nll_loss", false),
    elementwise_entry(
        "mse_loss", [](DType dt) { return pairs(dt, -2, 2, -2, 2, 1000); },
        [](const Sample& s, const char* r) { return F::mse_loss(s.args[0], s.args[1], r); },
        [](const Refs& r) {
          return ref_binary(r[0], r[1], [](double a, double b) { return (a - b) * (a - b); });
        }),
    elementwise_entry(
        "l1_loss", [](DType dt) { return pairs(dt, -2, 2, -2, 2, 1020); },
        [](const Sample& s, const char* r) { return F::l1_loss(s.args[0], s.args[1], r); },
        [](const Refs& r) {
          return ref_binary(r[0], r[1], [](double a, double b) { return std::abs(a - b); });
        }),
    // params {beta * 1000}; beta = 0 is l1_loss.
    elementwise_entry(
        "smooth_l1_loss",
        [](DType dt) {
          return with_params(pairs(dt, -2, 2, -2, 2, 1040), {{1000}, {500}, {0}, {2500}});
        },
        [](const Sample& s, const char* r) {
          return F::smooth_l1_loss(s.args[0], s.args[1], r, thousandths(s.args[2], 0));
        },
        [](const Refs& r) {
          const double beta = param(r[2], 0) / 1000.0;
          if (beta == 0.0)
            return ref_binary(r[0], r[1], [](double a, double b) { return std::abs(a - b); });
          return smooth_l1(r[0], r[1], beta);
        }),
    // params {delta * 1000}.
    elementwise_entry(
        "huber_loss",
        [](DType dt) {
          return with_params(pairs(dt, -2, 2, -2, 2, 1060), {{1000}, {300}, {2500}});
        },
        [](const Sample& s, const char* r) {
          return F::huber_loss(s.args[0], s.args[1], r, thousandths(s.args[2], 0));
        },
        [](const Refs& r) { return huber(r[0], r[1], param(r[2], 0) / 1000.0); }),
    elementwise_entry(
        "binary_cross_entropy", [](DType dt) { return bce_samples(dt, false); },
        [](const Sample& s, const char* r) {
          return F::binary_cross_entropy(s.args[0], s.args[1], s.args[2], r);
        },
        bce_elementwise),
    elementwise_entry(
        "binary_cross_entropy_with_logits", [](DType dt) { return bce_samples(dt, true); },
        [](const Sample& s, const char* r) {
          return F::binary_cross_entropy_with_logits(s.args[0], s.args[1], s.args[2], r, s.args[3]);
        },
        bce_logits_elementwise),
    kl_entry(),
});

}  // namespace
}  // namespace ember::testing
