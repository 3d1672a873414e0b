// Public ops of the unary family (core/ops/unary.h): forward = native::, plus autograd.
//
// Each derivative follows PyTorch (derivatives.yaml): it is written with the public,
// differentiable ops, so the backward of a backward works. An op saves its input x or its
// result y, whichever its formula reads (exp, sqrt, tanh, sigmoid... read y). Step functions
// (sign, floor, ceil, round, trunc) have a zero gradient; abs' = sign(x), relu' = (y > 0)
// (Note [ReLU backward]: a one-pass kernel when no graph is recorded);
// clamp passes the gradient where min <= x <= max, hardtanh where min_val < x < max_val
// (PyTorch's hardtanh_backward: 0 on the bounds), nan_to_num where x is finite.
// Every in-place form runs through inplace_op with its out-of-place twin
// (Note [In-place on non-leaves] in autograd/inplace.h); it records the same node.

#include "autograd/ops/unary.h"

#include <cmath>

#include "autograd/ops/common.h"

namespace ember {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;

// The pattern of a unary op whose derivative reads its input x: records `name`, runs
// `forward`, saves x, and backward returns derivative(g, x). `derivative` may capture plain
// values (bounds, exponents) but no tensor.
template <class Forward, class Derivative>
Tensor unary_with_input(const char* name, const Tensor& x, Forward&& forward,
                        Derivative derivative) {
  Op op(name, x);
  Tensor y = op.run(forward);
  op.set_output(y);
  op.save(x);
  op.backward([derivative](const Saved& s, const Tensors& g) -> Tensors {
    return {derivative(g[0], s[0])};
  });
  return y;
}

// The same for a derivative that reads the result y: backward returns derivative(g, y).
template <class Forward, class Derivative>
Tensor unary_with_output(const char* name, const Tensor& x, Forward&& forward,
                         Derivative derivative) {
  Op op(name, x);
  Tensor y = op.run(forward);
  op.set_output(y);
  op.save_output(y);
  op.backward([derivative](const Saved& s, const Tensors& g) -> Tensors {
    return {derivative(g[0], s[0])};
  });
  return y;
}

// A step function (sign, floor...): the gradient is zero wherever it is defined.
template <class Forward>
Tensor unary_zero_grad(const char* name, const Tensor& x, Forward&& forward) {
  Op op(name, x);
  Tensor y = op.run(forward);
  op.set_output(y);
  op.backward([](const Saved&, const Tensors& g) -> Tensors { return {zeros_like(g[0])}; });
  return y;
}

}  // namespace

// ---- dtype-preserving ----------------------------------------------------------------------

// d(-x) = -g.
Tensor neg(const Tensor& t) {
  Op op("NegBackward", t);
  Tensor y = op.run([&] { return native::neg(t); });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors& g) -> Tensors { return {neg(g[0])}; });
  return y;
}
// d|x| = g sign(x) (0 at x = 0, as PyTorch).
Tensor abs(const Tensor& t) {
  return unary_with_input(
      "AbsBackward", t, [&] { return native::abs(t); },
      [](const Tensor& g, const Tensor& x) { return mul(g, sign(x)); });
}
Tensor sign(const Tensor& t) {
  return unary_zero_grad("SignBackward", t, [&] { return native::sign(t); });
}
// Note [ReLU backward]
// d relu(x) = g where y > 0, else +0: PyTorch's threshold_backward, which also gives 0 where g
// is infinite or NaN in the flat region (g * 0 would give NaN there, and -0 for a negative g).
// - No graph recorded (the engine runs a formula with grad mode off unless create_graph, see
//   autograd/engine.cpp): native::threshold_backward, one pass and no temporaries, where the
//   composite mul(g, gt(y, 0)) took three (a bool mask, its float copy, the product).
// - create_graph: the same values from differentiable ops, where(y > 0, g, 0), so double
//   backward works (g's gradient is where(y > 0, gg, 0); y gets none, the step is flat).
// The native kernel is CPU only; a tensor on another device takes the composite.
Tensor relu(const Tensor& t) {
  return unary_with_output(
      "ReluBackward", t, [&] { return native::relu(t); },
      [](const Tensor& g, const Tensor& y) {
        if (!detail::grad_mode_enabled && g.device().is_cpu() && g.dtype() == y.dtype())
          return native::threshold_backward(g, y, 0.0);
        return where(gt(y, 0), g, Scalar(0.0));
      });
}
Tensor floor(const Tensor& t) {
  return unary_zero_grad("FloorBackward", t, [&] { return native::floor(t); });
}
Tensor ceil(const Tensor& t) {
  return unary_zero_grad("CeilBackward", t, [&] { return native::ceil(t); });
}
Tensor round(const Tensor& t) {
  return unary_zero_grad("RoundBackward", t, [&] { return native::round(t); });
}
Tensor round(const Tensor& t, int64_t decimals) {
  return unary_zero_grad("RoundBackward", t, [&] { return native::round(t, decimals); });
}
const Tensor& round_(const Tensor& self, int64_t decimals) {
  return inplace_op(
      "round_", self, [&] { native::round_(self, decimals); },
      [decimals](const Tensor& old) { return round(old, decimals); });
}
Tensor trunc(const Tensor& t) {
  return unary_zero_grad("TruncBackward", t, [&] { return native::trunc(t); });
}
const Tensor& neg_(const Tensor& self) {
  return inplace_op(
      "neg_", self, [&] { native::neg_(self); }, [](const Tensor& old) { return neg(old); });
}
const Tensor& abs_(const Tensor& self) {
  return inplace_op(
      "abs_", self, [&] { native::abs_(self); }, [](const Tensor& old) { return abs(old); });
}
const Tensor& sign_(const Tensor& self) {
  return inplace_op(
      "sign_", self, [&] { native::sign_(self); }, [](const Tensor& old) { return sign(old); });
}
const Tensor& relu_(const Tensor& self) {
  return inplace_op(
      "relu_", self, [&] { native::relu_(self); }, [](const Tensor& old) { return relu(old); });
}
const Tensor& floor_(const Tensor& self) {
  return inplace_op(
      "floor_", self, [&] { native::floor_(self); }, [](const Tensor& old) { return floor(old); });
}
const Tensor& ceil_(const Tensor& self) {
  return inplace_op(
      "ceil_", self, [&] { native::ceil_(self); }, [](const Tensor& old) { return ceil(old); });
}
const Tensor& round_(const Tensor& self) {
  return inplace_op(
      "round_", self, [&] { native::round_(self); }, [](const Tensor& old) { return round(old); });
}
const Tensor& trunc_(const Tensor& self) {
  return inplace_op(
      "trunc_", self, [&] { native::trunc_(self); }, [](const Tensor& old) { return trunc(old); });
}

// d clamp(x) = g where min <= x <= max (an unset bound always holds).
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max) {
  return unary_with_input(
      "ClampBackward", t, [&] { return native::clamp(t, min, max); },
      [min, max](const Tensor& g, const Tensor& x) {
        if (min && max) return mul(g, logical_and(ge(x, *min), le(x, *max)));
        if (min) return mul(g, ge(x, *min));
        if (max) return mul(g, le(x, *max));
        return g;
      });
}
Tensor clamp_min(const Tensor& t, const Scalar& min) {
  return unary_with_input(
      "ClampMinBackward", t, [&] { return native::clamp_min(t, min); },
      [min](const Tensor& g, const Tensor& x) { return mul(g, ge(x, min)); });
}
Tensor clamp_max(const Tensor& t, const Scalar& max) {
  return unary_with_input(
      "ClampMaxBackward", t, [&] { return native::clamp_max(t, max); },
      [max](const Tensor& g, const Tensor& x) { return mul(g, le(x, max)); });
}
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  return inplace_op(
      "clamp_", self, [&] { native::clamp_(self, min, max); },
      [&](const Tensor& old) { return clamp(old, min, max); });
}
const Tensor& clamp_min_(const Tensor& self, const Scalar& min) {
  return inplace_op(
      "clamp_min_", self, [&] { native::clamp_min_(self, min); },
      [&](const Tensor& old) { return clamp_min(old, min); });
}
const Tensor& clamp_max_(const Tensor& self, const Scalar& max) {
  return inplace_op(
      "clamp_max_", self, [&] { native::clamp_max_(self, max); },
      [&](const Tensor& old) { return clamp_max(old, max); });
}

// d hardtanh(x) = g where min_val < x < max_val, 0 on and beyond the bounds (PyTorch's
// hardtanh_backward; clamp, in contrast, passes g on the bounds).
Tensor hardtanh(const Tensor& t, const Scalar& min_val, const Scalar& max_val) {
  return unary_with_input(
      "HardtanhBackward", t, [&] { return native::hardtanh(t, min_val, max_val); },
      [min_val, max_val](const Tensor& g, const Tensor& x) {
        return mul(g, logical_and(gt(x, min_val), lt(x, max_val)));
      });
}
const Tensor& hardtanh_(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return inplace_op(
      "hardtanh_", self, [&] { native::hardtanh_(self, min_val, max_val); },
      [&](const Tensor& old) { return hardtanh(old, min_val, max_val); });
}

// d nan_to_num(x) = g where x is finite (replaced values are constants).
Tensor nan_to_num(const Tensor& t, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return unary_with_input(
      "NanToNumBackward", t, [&] { return native::nan_to_num(t, nan, posinf, neginf); },
      [](const Tensor& g, const Tensor& x) { return mul(g, isfinite(x)); });
}
const Tensor& nan_to_num_(const Tensor& self, std::optional<double> nan,
                          std::optional<double> posinf, std::optional<double> neginf) {
  return inplace_op(
      "nan_to_num_", self, [&] { native::nan_to_num_(self, nan, posinf, neginf); },
      [&](const Tensor& old) { return nan_to_num(old, nan, posinf, neginf); });
}

// d x^e = g e x^(e-1); zero for e = 0 (also at x = 0, where x^-1 would be infinite).
Tensor pow(const Tensor& t, const Scalar& exponent) {
  return unary_with_input(
      "PowBackward", t, [&] { return native::pow(t, exponent); },
      [exponent](const Tensor& g, const Tensor& x) {
        const double e = exponent.to<double>();
        if (e == 0.0) return zeros_like(g);
        return mul(g, mul(pow(x, Scalar(e - 1.0)), Scalar(e)));
      });
}
const Tensor& pow_(const Tensor& self, const Scalar& exponent) {
  return inplace_op(
      "pow_", self, [&] { native::pow_(self, exponent); },
      [&](const Tensor& old) { return pow(old, exponent); });
}

// ---- floating math -----------------------------------------------------------------------

// d exp(x) = exp(x) g: exp saves its result, not its input (DESIGN.md "One op, one place").
Tensor exp(const Tensor& t) {
  Op op("ExpBackward", t);
  Tensor y = op.run([&] { return native::exp(t); });
  op.set_output(y);
  op.save_output(y);
  op.backward([](const Saved& s, const Tensors& g) -> Tensors { return {mul(g[0], s[0])}; });
  return y;
}
// d 2^x = g 2^x ln 2.
Tensor exp2(const Tensor& t) {
  return unary_with_output(
      "Exp2Backward", t, [&] { return native::exp2(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, mul(y, kLn2)); });
}
// d expm1(x) = g (y + 1).
Tensor expm1(const Tensor& t) {
  return unary_with_output(
      "Expm1Backward", t, [&] { return native::expm1(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, add(y, 1)); });
}
// d log(x) = g / x.
Tensor log(const Tensor& t) {
  return unary_with_input(
      "LogBackward", t, [&] { return native::log(t); },
      [](const Tensor& g, const Tensor& x) { return div(g, x); });
}
// d log2(x) = g / (x ln 2).
Tensor log2(const Tensor& t) {
  return unary_with_input(
      "Log2Backward", t, [&] { return native::log2(t); },
      [](const Tensor& g, const Tensor& x) { return div(g, mul(x, kLn2)); });
}
// d log1p(x) = g / (x + 1).
Tensor log1p(const Tensor& t) {
  return unary_with_input(
      "Log1PBackward", t, [&] { return native::log1p(t); },
      [](const Tensor& g, const Tensor& x) { return div(g, add(x, 1)); });
}
// d sqrt(x) = g / (2 y).
Tensor sqrt(const Tensor& t) {
  return unary_with_output(
      "SqrtBackward", t, [&] { return native::sqrt(t); },
      [](const Tensor& g, const Tensor& y) { return div(g, mul(y, 2)); });
}
// d x^(-1/2) = -g y^3 / 2.
Tensor rsqrt(const Tensor& t) {
  return unary_with_output(
      "RsqrtBackward", t, [&] { return native::rsqrt(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, mul(pow(y, 3), -0.5)); });
}
// d (1/x) = -g y^2.
Tensor reciprocal(const Tensor& t) {
  return unary_with_output(
      "ReciprocalBackward", t, [&] { return native::reciprocal(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, neg(mul(y, y))); });
}
// d sin(x) = g cos(x).
Tensor sin(const Tensor& t) {
  return unary_with_input(
      "SinBackward", t, [&] { return native::sin(t); },
      [](const Tensor& g, const Tensor& x) { return mul(g, cos(x)); });
}
// d cos(x) = -g sin(x).
Tensor cos(const Tensor& t) {
  return unary_with_input(
      "CosBackward", t, [&] { return native::cos(t); },
      [](const Tensor& g, const Tensor& x) { return mul(g, neg(sin(x))); });
}
// d tan(x) = g (1 + y^2).
Tensor tan(const Tensor& t) {
  return unary_with_output(
      "TanBackward", t, [&] { return native::tan(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, add(mul(y, y), 1)); });
}
// d tanh(x) = g (1 - y^2).
Tensor tanh(const Tensor& t) {
  return unary_with_output(
      "TanhBackward", t, [&] { return native::tanh(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, 1.0 - mul(y, y)); });
}
// d sigmoid(x) = g y (1 - y).
Tensor sigmoid(const Tensor& t) {
  return unary_with_output(
      "SigmoidBackward", t, [&] { return native::sigmoid(t); },
      [](const Tensor& g, const Tensor& y) { return mul(g, mul(y, 1.0 - y)); });
}
// d x sigmoid(x) = g s (1 + x (1 - s)), s = sigmoid(x).
Tensor silu(const Tensor& t) {
  return unary_with_input(
      "SiluBackward", t, [&] { return native::silu(t); },
      [](const Tensor& g, const Tensor& x) {
        Tensor s = sigmoid(x);
        return mul(g, mul(s, add(mul(x, 1.0 - s), 1)));
      });
}
// d erf(x) = g 2/sqrt(pi) exp(-x^2).
Tensor erf(const Tensor& t) {
  return unary_with_input(
      "ErfBackward", t, [&] { return native::erf(t); },
      [](const Tensor& g, const Tensor& x) {
        return mul(g, mul(exp(neg(mul(x, x))), 2.0 / std::sqrt(kPi)));
      });
}
const Tensor& exp_(const Tensor& self) {
  return inplace_op(
      "exp_", self, [&] { native::exp_(self); }, [](const Tensor& old) { return exp(old); });
}
const Tensor& exp2_(const Tensor& self) {
  return inplace_op(
      "exp2_", self, [&] { native::exp2_(self); }, [](const Tensor& old) { return exp2(old); });
}
const Tensor& expm1_(const Tensor& self) {
  return inplace_op(
      "expm1_", self, [&] { native::expm1_(self); }, [](const Tensor& old) { return expm1(old); });
}
const Tensor& log_(const Tensor& self) {
  return inplace_op(
      "log_", self, [&] { native::log_(self); }, [](const Tensor& old) { return log(old); });
}
const Tensor& log2_(const Tensor& self) {
  return inplace_op(
      "log2_", self, [&] { native::log2_(self); }, [](const Tensor& old) { return log2(old); });
}
const Tensor& log1p_(const Tensor& self) {
  return inplace_op(
      "log1p_", self, [&] { native::log1p_(self); }, [](const Tensor& old) { return log1p(old); });
}
const Tensor& sqrt_(const Tensor& self) {
  return inplace_op(
      "sqrt_", self, [&] { native::sqrt_(self); }, [](const Tensor& old) { return sqrt(old); });
}
const Tensor& rsqrt_(const Tensor& self) {
  return inplace_op(
      "rsqrt_", self, [&] { native::rsqrt_(self); }, [](const Tensor& old) { return rsqrt(old); });
}
const Tensor& reciprocal_(const Tensor& self) {
  return inplace_op(
      "reciprocal_", self, [&] { native::reciprocal_(self); },
      [](const Tensor& old) { return reciprocal(old); });
}
const Tensor& sin_(const Tensor& self) {
  return inplace_op(
      "sin_", self, [&] { native::sin_(self); }, [](const Tensor& old) { return sin(old); });
}
const Tensor& cos_(const Tensor& self) {
  return inplace_op(
      "cos_", self, [&] { native::cos_(self); }, [](const Tensor& old) { return cos(old); });
}
const Tensor& tan_(const Tensor& self) {
  return inplace_op(
      "tan_", self, [&] { native::tan_(self); }, [](const Tensor& old) { return tan(old); });
}
const Tensor& tanh_(const Tensor& self) {
  return inplace_op(
      "tanh_", self, [&] { native::tanh_(self); }, [](const Tensor& old) { return tanh(old); });
}
const Tensor& sigmoid_(const Tensor& self) {
  return inplace_op(
      "sigmoid_", self, [&] { native::sigmoid_(self); },
      [](const Tensor& old) { return sigmoid(old); });
}
const Tensor& silu_(const Tensor& self) {
  return inplace_op(
      "silu_", self, [&] { native::silu_(self); }, [](const Tensor& old) { return silu(old); });
}
const Tensor& erf_(const Tensor& self) {
  return inplace_op(
      "erf_", self, [&] { native::erf_(self); }, [](const Tensor& old) { return erf(old); });
}

// approximate "none": d x Phi(x) = g (Phi(x) + x phi(x)), Phi the normal CDF, phi its density.
// approximate "tanh": with u = k (x + c x^3) and t = tanh(u),
//   d 0.5 x (1 + t) = g (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)).
Tensor gelu(const Tensor& t, const std::string& approximate) {
  const bool tanh_approx = approximate == "tanh";
  return unary_with_input(
      "GeluBackward", t, [&] { return native::gelu(t, approximate); },
      [tanh_approx](const Tensor& g, const Tensor& x) {
        if (tanh_approx) {
          const double k = std::sqrt(2.0 / kPi), c = 0.044715;
          Tensor x2 = mul(x, x);
          Tensor th = tanh(mul(mul(x, add(mul(x2, c), 1)), k));
          Tensor left = mul(add(th, 1), 0.5);
          Tensor right = mul(mul(mul(x, 0.5), 1.0 - mul(th, th)), mul(add(mul(x2, 3 * c), 1), k));
          return mul(g, add(left, right));
        }
        Tensor cdf = mul(add(erf(mul(x, 1.0 / std::sqrt(2.0))), 1), 0.5);
        Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), 1.0 / std::sqrt(2.0 * kPi));
        return mul(g, add(cdf, mul(x, pdf)));
      });
}
// d softplus(x) = g sigmoid(beta x), and g where beta x > threshold (the linear part).
Tensor softplus(const Tensor& t, const Scalar& beta, const Scalar& threshold) {
  return unary_with_input(
      "SoftplusBackward", t, [&] { return native::softplus(t, beta, threshold); },
      [beta, threshold](const Tensor& g, const Tensor& x) {
        Tensor bx = mul(x, beta);
        return mul(g, where(gt(bx, threshold), Scalar(1.0), sigmoid(bx)));
      });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
#define EMBER_UNARY_METHOD(name)                             \
  Tensor Tensor::name() const { return ember::name(*this); } \
  const Tensor& Tensor::name##_() const { return ember::name##_(*this); }
EMBER_UNARY_METHOD(neg)
EMBER_UNARY_METHOD(abs)
EMBER_UNARY_METHOD(sign)
EMBER_UNARY_METHOD(exp)
EMBER_UNARY_METHOD(exp2)
EMBER_UNARY_METHOD(expm1)
EMBER_UNARY_METHOD(log)
EMBER_UNARY_METHOD(log2)
EMBER_UNARY_METHOD(log1p)
EMBER_UNARY_METHOD(sqrt)
EMBER_UNARY_METHOD(rsqrt)
EMBER_UNARY_METHOD(reciprocal)
EMBER_UNARY_METHOD(sin)
EMBER_UNARY_METHOD(cos)
EMBER_UNARY_METHOD(tan)
EMBER_UNARY_METHOD(tanh)
EMBER_UNARY_METHOD(sigmoid)
EMBER_UNARY_METHOD(relu)
EMBER_UNARY_METHOD(silu)
EMBER_UNARY_METHOD(erf)
EMBER_UNARY_METHOD(floor)
EMBER_UNARY_METHOD(ceil)
EMBER_UNARY_METHOD(round)
EMBER_UNARY_METHOD(trunc)
#undef EMBER_UNARY_METHOD
Tensor Tensor::round(int64_t decimals) const { return ember::round(*this, decimals); }
const Tensor& Tensor::round_(int64_t decimals) const { return ember::round_(*this, decimals); }
Tensor Tensor::gelu(const std::string& approximate) const {
  return ember::gelu(*this, approximate);
}
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const {
  return ember::softplus(*this, beta, threshold);
}
Tensor Tensor::pow(const Scalar& exponent) const { return ember::pow(*this, exponent); }
const Tensor& Tensor::pow_(const Scalar& exponent) const { return ember::pow_(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ember::clamp(*this, min, max);
}
const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ember::clamp_(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return ember::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return ember::clamp_max(*this, max); }
const Tensor& Tensor::clamp_min_(const Scalar& min) const { return ember::clamp_min_(*this, min); }
const Tensor& Tensor::clamp_max_(const Scalar& max) const { return ember::clamp_max_(*this, max); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return ember::nan_to_num(*this, nan, posinf, neginf);
}
const Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                                  std::optional<double> neginf) const {
  return ember::nan_to_num_(*this, nan, posinf, neginf);
}
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace ember
