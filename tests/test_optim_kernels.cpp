// The optimizers' dispatched update kernels (core/ops/optim.h) against the loops they replaced
// (optim/fused.h's per-optimizer lambdas, kept here as the reference): bit for bit, for
// float32, float64 and the 16-bit floats, contiguous and non-contiguous tensors, one and
// several parallel chunks; and the errors for mismatched state.

#include <ember/ember.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/optim.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::values;

namespace {

// ---- the previous loops, verbatim in their arithmetic -------------------------------------

template <class T>
void ref_sgd(T* p, const T* g, T* b, int64_t n, const SgdCoefficients& c) {
  using acc = opmath_t<T>;
  const acc wd = static_cast<acc>(c.weight_decay);
  const acc mom = static_cast<acc>(c.momentum);
  const acc one_minus_damp = static_cast<acc>(1.0 - c.dampening);
  const acc neg_lr = static_cast<acc>(-c.lr);
  for (int64_t i = 0; i < n; ++i) {
    acc d = static_cast<acc>(g[i]);
    if (c.maximize) d = -d;
    const acc pi = static_cast<acc>(p[i]);
    if (c.weight_decay != 0.0) d = d + wd * pi;
    if (b != nullptr) {
      const acc v = c.first ? d : static_cast<acc>(b[i]) * mom + one_minus_damp * d;
      b[i] = static_cast<T>(v);
      d = c.nesterov ? d + mom * v : v;
    }
    p[i] = static_cast<T>(pi + neg_lr * d);
  }
}

template <class T>
void ref_adam(T* p, const T* g, T* m, T* v, T* v_max, int64_t n, const AdamCoefficients& c) {
  using acc = opmath_t<T>;
  const bool l2 = !c.decoupled && c.weight_decay != 0.0;
  const acc b1 = static_cast<acc>(c.beta1), b2 = static_cast<acc>(c.beta2);
  const acc one_minus_b1 = static_cast<acc>(1.0 - c.beta1);
  const acc one_minus_b2 = static_cast<acc>(1.0 - c.beta2);
  const acc wd = static_cast<acc>(c.weight_decay);
  const acc decay = static_cast<acc>(1.0 - c.lr * c.weight_decay);
  const acc bc2_sqrt = static_cast<acc>(c.bias_correction2_sqrt);
  const acc eps_c = static_cast<acc>(c.eps);
  const acc neg_step_size = static_cast<acc>(-c.step_size);
  for (int64_t i = 0; i < n; ++i) {
    acc gi = static_cast<acc>(g[i]);
    if (c.maximize) gi = -gi;
    acc pi = static_cast<acc>(p[i]);
    if (c.decoupled) pi = pi * decay;
    if (l2) gi = gi + wd * pi;
    const acc mi = static_cast<acc>(m[i]) * b1 + one_minus_b1 * gi;
    acc vi = static_cast<acc>(v[i]) * b2 + one_minus_b2 * gi * gi;
    m[i] = static_cast<T>(mi);
    v[i] = static_cast<T>(vi);
    if (c.amsgrad) {
      vi = std::max(static_cast<acc>(v_max[i]), vi);
      v_max[i] = static_cast<T>(vi);
    }
    const acc denom = std::sqrt(vi) / bc2_sqrt + eps_c;
    p[i] = static_cast<T>(pi + neg_step_size * mi / denom);
  }
}

template <class T>
void ref_rmsprop(T* p, const T* g, T* square_avg, T* grad_avg, T* buf, int64_t n,
                 const RmspropCoefficients& c) {
  using acc = opmath_t<T>;
  const acc a = static_cast<acc>(c.alpha);
  const acc one_minus_a = static_cast<acc>(1.0 - c.alpha);
  const acc wd = static_cast<acc>(c.weight_decay);
  const acc eps_c = static_cast<acc>(c.eps);
  const acc mom = static_cast<acc>(c.momentum);
  const acc neg_lr = static_cast<acc>(-c.lr);
  for (int64_t i = 0; i < n; ++i) {
    acc gi = static_cast<acc>(g[i]);
    if (c.maximize) gi = -gi;
    const acc pi = static_cast<acc>(p[i]);
    if (c.weight_decay != 0.0) gi = gi + wd * pi;
    const acc v = static_cast<acc>(square_avg[i]) * a + one_minus_a * gi * gi;
    square_avg[i] = static_cast<T>(v);
    acc avg;
    if (c.centered) {
      const acc ga = static_cast<acc>(grad_avg[i]) * a + one_minus_a * gi;
      grad_avg[i] = static_cast<T>(ga);
      avg = std::sqrt(v + static_cast<acc>(-1) * ga * ga);
    } else {
      avg = std::sqrt(v);
    }
    avg = avg + eps_c;
    if (c.momentum > 0.0) {
      const acc b = static_cast<acc>(buf[i]) * mom + gi / avg;
      buf[i] = static_cast<T>(b);
      p[i] = static_cast<T>(pi + neg_lr * b);
    } else {
      p[i] = static_cast<T>(pi + neg_lr * gi / avg);
    }
  }
}

template <class T>
void ref_adagrad(T* p, const T* g, T* sum, int64_t n, const AdagradCoefficients& c) {
  using acc = opmath_t<T>;
  const acc wd = static_cast<acc>(c.weight_decay);
  const acc eps_c = static_cast<acc>(c.eps);
  const acc neg_clr = static_cast<acc>(-c.clr);
  for (int64_t i = 0; i < n; ++i) {
    acc gi = static_cast<acc>(g[i]);
    if (c.maximize) gi = -gi;
    const acc pi = static_cast<acc>(p[i]);
    if (c.weight_decay != 0.0) gi = gi + wd * pi;
    const acc si = static_cast<acc>(sum[i]) + gi * gi;
    sum[i] = static_cast<T>(si);
    const acc std_ = std::sqrt(si) + eps_c;
    p[i] = static_cast<T>(pi + neg_clr * gi / std_);
  }
}

// ---- operands -----------------------------------------------------------------------------

// A [rows, cols] tensor of dtype dt: contiguous, or (strided) the transpose of a [cols, rows]
// one. Values uniform in [lo, hi).
Tensor operand(int64_t rows, int64_t cols, DType dt, bool strided, double lo, double hi) {
  Tensor base = strided ? rand({cols, rows}, kFloat64).t() : rand({rows, cols}, kFloat64);
  Tensor t = empty({rows, cols}, dt);
  if (strided) t = empty({cols, rows}, dt).t();
  t.copy_(base * (hi - lo) + lo);
  REQUIRE(t.is_contiguous() == !strided);
  return t;
}

// A contiguous copy for the reference loop (undefined stays undefined).
Tensor ref_copy(const Tensor& t) { return t.defined() ? t.contiguous().clone() : Tensor(); }

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Every tensor of `got` equals its `want` bit for bit (as doubles: exact for every dtype).
void check_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("operand " << k);
    REQUIRE(got[k].defined() == want[k].defined());
    if (got[k].defined()) CHECK(values(got[k]) == values(want[k]));
  }
}

struct Layout {
  int64_t rows, cols;
  bool strided;
};

const std::vector<DType> kDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16};
// Small contiguous, small transposed, and large enough for several parallel_for chunks.
const std::vector<Layout> kLayouts = {{5, 7, false}, {5, 7, true}, {300, 250, false}};

std::string label(DType dt, const Layout& l) {
  return std::string(dtype_name(dt)) + (l.strided ? " strided " : " contiguous ") +
         std::to_string(l.rows) + "x" + std::to_string(l.cols);
}

}  // namespace

TEST_CASE("optim kernels: SGD matches the previous loop bit for bit", "[optim][optim_kernels]") {
  manual_seed(11);
  struct Case {
    double momentum, dampening, weight_decay;
    bool nesterov, maximize;
  };
  const std::vector<Case> cases = {{0.0, 0.0, 0.0, false, false},
                                   {0.0, 0.0, 0.01, false, true},
                                   {0.9, 0.1, 0.01, false, false},
                                   {0.9, 0.0, 0.0, true, true}};
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (const Case& k : cases) {
        INFO(label(dt, l) << " momentum " << k.momentum << " nesterov " << k.nesterov);
        Tensor p = operand(l.rows, l.cols, dt, l.strided, -1, 1);
        Tensor buf = k.momentum != 0.0 ? operand(l.rows, l.cols, dt, l.strided, -1, 1) : Tensor();
        Tensor rp = ref_copy(p), rbuf = ref_copy(buf);
        for (int step = 0; step < 2; ++step) {
          Tensor g = operand(l.rows, l.cols, dt, l.strided, -1, 1);
          Tensor rg = ref_copy(g);
          const SgdCoefficients c{0.05,       k.momentum, k.dampening, k.weight_decay,
                                  k.nesterov, k.maximize, step == 0};
          const uint32_t version = p.version();
          native::sgd_step_(p, g, buf, c);
          CHECK(p.version() == version + 1);
          EMBER_DISPATCH_FLOATING(dt, "test", [&] {
            ref_sgd(ptr<scalar_t>(rp), ptr<scalar_t>(rg), ptr<scalar_t>(rbuf), rp.numel(), c);
          });
          check_same({p, buf}, {rp, rbuf}, "SGD step " + std::to_string(step));
        }
      }
}

TEST_CASE("optim kernels: Adam and AdamW match the previous loop bit for bit",
          "[optim][optim_kernels]") {
  manual_seed(12);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (bool decoupled : {false, true})
        for (bool amsgrad : {false, true}) {
          INFO(label(dt, l) << " decoupled " << decoupled << " amsgrad " << amsgrad);
          Tensor p = operand(l.rows, l.cols, dt, l.strided, -1, 1);
          Tensor m = operand(l.rows, l.cols, dt, l.strided, -0.1, 0.1);
          Tensor v = operand(l.rows, l.cols, dt, l.strided, 0, 0.01);
          Tensor vmax = amsgrad ? operand(l.rows, l.cols, dt, l.strided, 0, 0.01) : Tensor();
          Tensor rp = ref_copy(p), rm = ref_copy(m), rv = ref_copy(v), rvmax = ref_copy(vmax);
          for (int t = 1; t <= 3; ++t) {
            Tensor g = operand(l.rows, l.cols, dt, l.strided, -1, 1);
            Tensor rg = ref_copy(g);
            AdamCoefficients c;
            c.lr = 1e-2;
            c.beta1 = 0.9;
            c.beta2 = 0.999;
            c.eps = 1e-8;
            c.weight_decay = 0.05;
            c.step_size = c.lr / (1.0 - std::pow(c.beta1, t));
            c.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(c.beta2, t));
            c.decoupled = decoupled;
            c.amsgrad = amsgrad;
            c.maximize = t == 2;
            native::adam_step_(p, g, m, v, vmax, c);
            EMBER_DISPATCH_FLOATING(dt, "test", [&] {
              ref_adam(ptr<scalar_t>(rp), ptr<scalar_t>(rg), ptr<scalar_t>(rm), ptr<scalar_t>(rv),
                       ptr<scalar_t>(rvmax), rp.numel(), c);
            });
            check_same({p, m, v, vmax}, {rp, rm, rv, rvmax}, "Adam step " + std::to_string(t));
          }
        }
}

TEST_CASE("optim kernels: RMSprop matches the previous loop bit for bit",
          "[optim][optim_kernels]") {
  manual_seed(13);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (bool centered : {false, true})
        for (double momentum : {0.0, 0.9}) {
          INFO(label(dt, l) << " centered " << centered << " momentum " << momentum);
          Tensor p = operand(l.rows, l.cols, dt, l.strided, -1, 1);
          Tensor sq = operand(l.rows, l.cols, dt, l.strided, 1, 2);
          Tensor ga = centered ? operand(l.rows, l.cols, dt, l.strided, -0.5, 0.5) : Tensor();
          Tensor buf = momentum > 0.0 ? operand(l.rows, l.cols, dt, l.strided, -1, 1) : Tensor();
          Tensor rp = ref_copy(p), rsq = ref_copy(sq), rga = ref_copy(ga), rbuf = ref_copy(buf);
          for (int t = 0; t < 2; ++t) {
            Tensor g = operand(l.rows, l.cols, dt, l.strided, -1, 1);
            Tensor rg = ref_copy(g);
            const RmspropCoefficients c{1e-2,     0.99,     1e-8,  t == 0 ? 0.0 : 0.01,
                                        momentum, centered, t == 1};
            native::rmsprop_step_(p, g, sq, ga, buf, c);
            EMBER_DISPATCH_FLOATING(dt, "test", [&] {
              ref_rmsprop(ptr<scalar_t>(rp), ptr<scalar_t>(rg), ptr<scalar_t>(rsq),
                          ptr<scalar_t>(rga), ptr<scalar_t>(rbuf), rp.numel(), c);
            });
            check_same({p, sq, ga, buf}, {rp, rsq, rga, rbuf}, "RMSprop step " + std::to_string(t));
          }
        }
}

TEST_CASE("optim kernels: Adagrad matches the previous loop bit for bit",
          "[optim][optim_kernels]") {
  manual_seed(14);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts) {
      INFO(label(dt, l));
      Tensor p = operand(l.rows, l.cols, dt, l.strided, -1, 1);
      Tensor sum = operand(l.rows, l.cols, dt, l.strided, 0, 0.5);
      Tensor rp = ref_copy(p), rsum = ref_copy(sum);
      for (int t = 1; t <= 3; ++t) {
        Tensor g = operand(l.rows, l.cols, dt, l.strided, -1, 1);
        Tensor rg = ref_copy(g);
        const AdagradCoefficients c{1e-2 / (1.0 + (t - 1) * 0.1), 1e-10, t == 2 ? 0.0 : 0.02,
                                    t == 3};
        const uint32_t version = sum.version();
        native::adagrad_step_(p, g, sum, c);
        CHECK(sum.version() == version + 1);
        EMBER_DISPATCH_FLOATING(dt, "test", [&] {
          ref_adagrad(ptr<scalar_t>(rp), ptr<scalar_t>(rg), ptr<scalar_t>(rsum), rp.numel(), c);
        });
        check_same({p, sum}, {rp, rsum}, "Adagrad step " + std::to_string(t));
      }
    }
}

TEST_CASE("optim kernels: mismatched or missing state is an error naming the optimizer",
          "[optim][optim_kernels]") {
  const Tensor p = zeros({3});
  const Tensor g = ones({3});
  const Tensor before = p.clone();

  SgdCoefficients sgd{0.1, 0.9, 0.0, 0.0, false, false, false};
  CHECK_THROWS_WITH(native::sgd_step_(p, g, zeros({3}, kFloat64), sgd),
                    Contains("SGD: a state tensor has dtype float64 and shape [3] but its "
                             "parameter has dtype float32 and shape [3]") &&
                        Contains("momentum_buffer"));
  CHECK_THROWS_WITH(native::sgd_step_(p, g, Tensor(), sgd),
                    Contains("SGD: the momentum_buffer must be given"));
  sgd.momentum = 0.0;
  CHECK_THROWS_WITH(native::sgd_step_(p, g, zeros({3}), sgd),
                    Contains("SGD: the momentum_buffer must be undefined"));
  CHECK_THROWS_WITH(native::sgd_step_(p, ones({4}), Tensor(), sgd),
                    Contains("SGD: the gradient has dtype float32 and shape [4]"));
  CHECK_THROWS_WITH(native::sgd_step_(zeros({3}, kInt64), ones({3}, kInt64), Tensor(), sgd),
                    Contains("SGD: unsupported dtype int64"));

  AdamCoefficients adam;
  adam.decoupled = true;
  CHECK_THROWS_WITH(native::adam_step_(p, g, zeros({3}), zeros({2, 3}), Tensor(), adam),
                    Contains("AdamW: a state tensor has dtype float32 and shape [2, 3]") &&
                        Contains("exp_avg_sq"));
  adam.decoupled = false;
  adam.amsgrad = true;
  CHECK_THROWS_WITH(native::adam_step_(p, g, zeros({3}), zeros({3}), Tensor(), adam),
                    Contains("Adam: the max_exp_avg_sq must be given"));

  const RmspropCoefficients rms{0.1, 0.99, 1e-8, 0.0, 0.0, true, false};
  CHECK_THROWS_WITH(native::rmsprop_step_(p, g, zeros({3}), zeros({3}, kFloat16), Tensor(), rms),
                    Contains("RMSprop: a state tensor has dtype float16") && Contains("grad_avg"));
  CHECK_THROWS_WITH(native::adagrad_step_(p, g, Tensor(), {0.1, 1e-10, 0.0, false}),
                    Contains("Adagrad: the sum must be given"));
  // Nothing was written by a refused step.
  CHECK(values(p) == values(before));
}
