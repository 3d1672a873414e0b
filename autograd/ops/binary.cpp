// Public ops of the binary family (core/ops/binary.h): forward = native::, plus autograd.
//
// Derivatives follow PyTorch (derivatives.yaml) and are written with the public,
// differentiable ops, so the backward of a backward works. Broadcasting and type promotion of
// the gradients are undone by the engine (autograd/op.h). An op saves an operand only when the
// formula of an input that needs a gradient reads it. Notable cases:
// - div and remainder with rounding ("trunc" / "floor") are step functions: zero gradient;
//   remainder(a, b) = a - floor(a / b) b, so da = g and db = -g floor(a / b);
// - pow: the base gets no gradient where the exponent is 0, the exponent none where the base
//   is 0 and the exponent >= 0 (PyTorch's convention for 0 ** e);
// - maximum / minimum split the gradient evenly between equal operands;
// - where and masked_fill give no gradient to the condition / mask.
// Comparisons, logical and bitwise ops have bool or integer results: no derivative (they are
// defined in core/ops/binary.cpp). Every in-place form runs through inplace_op with its
// out-of-place twin (Note [In-place on non-leaves] in autograd/inplace.h).

#include "autograd/ops/binary.h"

#include <cmath>

#include "autograd/ops/common.h"

namespace ember {

namespace {
// g * alpha, skipping the multiply for alpha == 1.
Tensor scale(const Tensor& g, const Scalar& alpha) {
  return alpha.to<double>() == 1.0 ? g : mul(g, alpha);
}
// -g * alpha.
Tensor neg_scale(const Tensor& g, const Scalar& alpha) {
  const double a = alpha.to<double>();
  return a == 1.0 ? neg(g) : mul(g, Scalar(-a));
}
// The input itself when `keep`, else an undefined tensor: what an op saves for a formula that
// only some inputs' gradients read.
Tensor if_needed(bool keep, const Tensor& t) { return keep ? t : Tensor(); }
}  // namespace

// ---- arithmetic ------------------------------------------------------------------------------

// d(a + alpha b) = g, alpha g. Broadcasting is undone by the engine (autograd/op.h).
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Op op("AddBackward", a, b);
  Tensor y = op.run([&] { return native::add(a, b, alpha); });
  op.set_output(y);
  op.backward([alpha](const Saved& s, const Tensors& g) -> Tensors {
    return {g[0], s.needs_grad(1) ? scale(g[0], alpha) : Tensor()};
  });
  return y;
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  Op op("AddBackward", a);
  Tensor y = op.run([&] { return native::add(a, b, alpha); });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors& g) -> Tensors { return {g[0]}; });
  return y;
}
// d(a - alpha b) = g, -alpha g.
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Op op("SubBackward", a, b);
  Tensor y = op.run([&] { return native::sub(a, b, alpha); });
  op.set_output(y);
  op.backward([alpha](const Saved& s, const Tensors& g) -> Tensors {
    return {g[0], s.needs_grad(1) ? neg_scale(g[0], alpha) : Tensor()};
  });
  return y;
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  Op op("SubBackward", a);
  Tensor y = op.run([&] { return native::sub(a, b, alpha); });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors& g) -> Tensors { return {g[0]}; });
  return y;
}
// d(a b) = g b, g a: each operand is saved only when the other needs its gradient.
Tensor mul(const Tensor& a, const Tensor& b) {
  Op op("MulBackward", a, b);
  Tensor y = op.run([&] { return native::mul(a, b); });
  op.set_output(y);
  op.save(if_needed(op.needs_grad(0), b));
  op.save(if_needed(op.needs_grad(1), a));
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? mul(g[0], s[0]) : Tensor(),
            s.needs_grad(1) ? mul(g[0], s[1]) : Tensor()};
  });
  return y;
}
Tensor mul(const Tensor& a, const Scalar& b) {
  Op op("MulBackward", a);
  Tensor y = op.run([&] { return native::mul(a, b); });
  op.set_output(y);
  op.backward([b](const Saved&, const Tensors& g) -> Tensors { return {mul(g[0], b)}; });
  return y;
}
// True division: d(a / b) = g / b, -g a / b^2. With rounding the result is a step function of
// both operands: zero gradients.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  Op op("DivBackward", a, b);
  Tensor y = op.run([&] { return native::div(a, b, rounding_mode); });
  op.set_output(y);
  if (!rounding_mode.empty()) {
    op.backward([](const Saved& s, const Tensors& g) -> Tensors {
      return {s.needs_grad(0) ? zeros_like(g[0]) : Tensor(),
              s.needs_grad(1) ? zeros_like(g[0]) : Tensor()};
    });
    return y;
  }
  op.save(if_needed(op.needs_grad(1), a));
  op.save(b);
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor b = s[1];
    return {s.needs_grad(0) ? div(g[0], b) : Tensor(),
            s.needs_grad(1) ? neg(div(mul(g[0], s[0]), mul(b, b))) : Tensor()};
  });
  return y;
}
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode) {
  Op op("DivBackward", a);
  Tensor y = op.run([&] { return native::div(a, b, rounding_mode); });
  op.set_output(y);
  const bool rounded = !rounding_mode.empty();
  op.backward([b, rounded](const Saved&, const Tensors& g) -> Tensors {
    return {rounded ? zeros_like(g[0]) : div(g[0], b)};
  });
  return y;
}
// remainder(a, b) = a - floor(a / b) b: d = g, -g floor(a / b).
Tensor remainder(const Tensor& a, const Tensor& b) {
  Op op("RemainderBackward", a, b);
  Tensor y = op.run([&] { return native::remainder(a, b); });
  op.set_output(y);
  op.save(if_needed(op.needs_grad(1), a));
  op.save(if_needed(op.needs_grad(1), b));
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? g[0] : Tensor(),
            s.needs_grad(1) ? neg(mul(g[0], div(s[0], s[1], "floor"))) : Tensor()};
  });
  return y;
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  Op op("RemainderBackward", a);
  Tensor y = op.run([&] { return native::remainder(a, b); });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors& g) -> Tensors { return {g[0]}; });
  return y;
}

// d a^b = g b a^(b-1) (0 where b = 0), and g a^b log(a) (0 where a = 0 and b >= 0).
Tensor pow(const Tensor& a, const Tensor& exponent) {
  Op op("PowBackward", a, exponent);
  Tensor y = op.run([&] { return native::pow(a, exponent); });
  op.set_output(y);
  op.save(a);
  op.save(exponent);
  op.save_output(if_needed(op.needs_grad(1), y));
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor x = s[0], e = s[1];
    Tensor grad_base, grad_exponent;
    if (s.needs_grad(0)) {
      grad_base = where(eq(e, 0), Scalar(0.0), mul(g[0], mul(e, pow(x, sub(e, 1)))));
    }
    if (s.needs_grad(1)) {
      Tensor base_zero = logical_and(eq(x, 0), ge(e, 0));
      grad_exponent = where(base_zero, Scalar(0.0), mul(g[0], mul(s[2], log(x))));
    }
    return {grad_base, grad_exponent};
  });
  return y;
}
// d base^e = g base^e log(base) (0 where base = 0 and e >= 0).
Tensor pow(const Scalar& base, const Tensor& exponent) {
  Op op("PowBackward", exponent);
  Tensor y = op.run([&] { return native::pow(base, exponent); });
  op.set_output(y);
  if (!op.recording()) return y;
  op.save_output(y);
  const double b = base.to<double>();
  if (b == 0.0) {
    op.save(exponent);
    op.backward([](const Saved& s, const Tensors& g) -> Tensors {
      // log(0) = -inf: by PyTorch's convention the gradient is 0 where e >= 0; below 0 it
      // is g 0^e log(0), infinite or NaN.
      return {where(ge(s[1], 0), Scalar(0.0), mul(mul(g[0], s[0]), -INFINITY))};
    });
  } else {
    op.backward([log_b = std::log(b)](const Saved& s, const Tensors& g) -> Tensors {
      return {mul(mul(g[0], s[0]), log_b)};
    });
  }
  return y;
}

namespace {
// The gradient of maximum (or minimum, `max` false) for one operand: g where it wins, g / 2 on
// ties, 0 where it loses. `self` is the operand, `other` the other one.
Tensor extremum_grad(const Tensor& g, const Tensor& self, const Tensor& other, bool max) {
  Tensor shared = where(eq(self, other), mul(g, 0.5), g);
  return masked_fill(shared, max ? lt(self, other) : gt(self, other), 0);
}

Tensor extremum(const char* name, const Tensor& a, const Tensor& b, bool max) {
  Op op(name, a, b);
  Tensor y = op.run([&] { return max ? native::maximum(a, b) : native::minimum(a, b); });
  op.set_output(y);
  op.save(a);
  op.save(b);
  op.backward([max](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor a = s[0], b = s[1];
    return {s.needs_grad(0) ? extremum_grad(g[0], a, b, max) : Tensor(),
            s.needs_grad(1) ? extremum_grad(g[0], b, a, max) : Tensor()};
  });
  return y;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum("MaximumBackward", a, b, true); }
Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum("MinimumBackward", a, b, false);
}

// d atan2(a, b) = g b / (a^2 + b^2), -g a / (a^2 + b^2).
Tensor atan2(const Tensor& a, const Tensor& b) {
  Op op("Atan2Backward", a, b);
  Tensor y = op.run([&] { return native::atan2(a, b); });
  op.set_output(y);
  op.save(a);
  op.save(b);
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor a = s[0], b = s[1];
    Tensor scaled = div(g[0], add(mul(a, a), mul(b, b)));
    return {s.needs_grad(0) ? mul(scaled, b) : Tensor(),
            s.needs_grad(1) ? neg(mul(scaled, a)) : Tensor()};
  });
  return y;
}

// ---- in place (Note [In-place on non-leaves]) ------------------------------------------------

const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return inplace_op(
      "add_", self, [&] { native::add_(self, b, alpha); },
      [&](const Tensor& old) { return add(old, b, alpha); }, b);
}
const Tensor& add_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return inplace_op(
      "add_", self, [&] { native::add_(self, b, alpha); },
      [&](const Tensor& old) { return add(old, b, alpha); });
}
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha) {
  return inplace_op(
      "sub_", self, [&] { native::sub_(self, b, alpha); },
      [&](const Tensor& old) { return sub(old, b, alpha); }, b);
}
const Tensor& sub_(const Tensor& self, const Scalar& b, const Scalar& alpha) {
  return inplace_op(
      "sub_", self, [&] { native::sub_(self, b, alpha); },
      [&](const Tensor& old) { return sub(old, b, alpha); });
}
const Tensor& mul_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "mul_", self, [&] { native::mul_(self, b); }, [&](const Tensor& old) { return mul(old, b); },
      b);
}
const Tensor& mul_(const Tensor& self, const Scalar& b) {
  return inplace_op(
      "mul_", self, [&] { native::mul_(self, b); }, [&](const Tensor& old) { return mul(old, b); });
}
const Tensor& div_(const Tensor& self, const Tensor& b, const std::string& rounding_mode) {
  return inplace_op(
      "div_", self, [&] { native::div_(self, b, rounding_mode); },
      [&](const Tensor& old) { return div(old, b, rounding_mode); }, b);
}
const Tensor& div_(const Tensor& self, const Scalar& b, const std::string& rounding_mode) {
  return inplace_op(
      "div_", self, [&] { native::div_(self, b, rounding_mode); },
      [&](const Tensor& old) { return div(old, b, rounding_mode); });
}
const Tensor& remainder_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "remainder_", self, [&] { native::remainder_(self, b); },
      [&](const Tensor& old) { return remainder(old, b); }, b);
}
const Tensor& remainder_(const Tensor& self, const Scalar& b) {
  return inplace_op(
      "remainder_", self, [&] { native::remainder_(self, b); },
      [&](const Tensor& old) { return remainder(old, b); });
}
const Tensor& pow_(const Tensor& self, const Tensor& exponent) {
  return inplace_op(
      "pow_", self, [&] { native::pow_(self, exponent); },
      [&](const Tensor& old) { return pow(old, exponent); }, exponent);
}
const Tensor& maximum_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "maximum_", self, [&] { native::maximum_(self, b); },
      [&](const Tensor& old) { return maximum(old, b); }, b);
}
const Tensor& minimum_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "minimum_", self, [&] { native::minimum_(self, b); },
      [&](const Tensor& old) { return minimum(old, b); }, b);
}
const Tensor& atan2_(const Tensor& self, const Tensor& b) {
  return inplace_op(
      "atan2_", self, [&] { native::atan2_(self, b); },
      [&](const Tensor& old) { return atan2(old, b); }, b);
}

// ---- where, lerp, addcmul, addcdiv, masked_fill -------------------------------------------------

// d where(c, a, b) = where(c, g, 0), where(c, 0, g); the condition gets no gradient.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  Op op("WhereBackward", a, b);
  Tensor y = op.run([&] { return native::where(condition, a, b); });
  op.set_output(y);
  op.save(condition);
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor c = s[0];
    return {s.needs_grad(0) ? where(c, g[0], Scalar(0.0)) : Tensor(),
            s.needs_grad(1) ? where(c, Scalar(0.0), g[0]) : Tensor()};
  });
  return y;
}
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  Op op("WhereBackward", a);
  Tensor y = op.run([&] { return native::where(condition, a, b); });
  op.set_output(y);
  op.save(condition);
  op.backward(
      [](const Saved& s, const Tensors& g) -> Tensors { return {where(s[0], g[0], Scalar(0.0))}; });
  return y;
}
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  Op op("WhereBackward", b);
  Tensor y = op.run([&] { return native::where(condition, a, b); });
  op.set_output(y);
  op.save(condition);
  op.backward(
      [](const Saved& s, const Tensors& g) -> Tensors { return {where(s[0], Scalar(0.0), g[0])}; });
  return y;
}
// Only the (bool) condition is a tensor: nothing to differentiate.
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b) {
  return native::where(condition, a, b);
}

// lerp = start + w (end - start): d = g (1 - w), g w, and g (end - start) for a tensor w.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  Op op("LerpBackward", start, end);
  Tensor y = op.run([&] { return native::lerp(start, end, weight); });
  op.set_output(y);
  const double w = weight.to<double>();
  op.backward([w](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? mul(g[0], 1.0 - w) : Tensor(),
            s.needs_grad(1) ? mul(g[0], w) : Tensor()};
  });
  return y;
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Op op("LerpBackward", start, end, weight);
  Tensor y = op.run([&] { return native::lerp(start, end, weight); });
  op.set_output(y);
  op.save(if_needed(op.needs_grad(2), start));
  op.save(if_needed(op.needs_grad(2), end));
  op.save(if_needed(op.needs_grad(0) || op.needs_grad(1), weight));
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? mul(g[0], 1.0 - s[2]) : Tensor(),
            s.needs_grad(1) ? mul(g[0], s[2]) : Tensor(),
            s.needs_grad(2) ? mul(g[0], sub(s[1], s[0])) : Tensor()};
  });
  return y;
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return inplace_op(
      "lerp_", self, [&] { native::lerp_(self, end, weight); },
      [&](const Tensor& old) { return lerp(old, end, weight); }, end);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return inplace_op(
      "lerp_", self, [&] { native::lerp_(self, end, weight); },
      [&](const Tensor& old) { return lerp(old, end, weight); }, end, weight);
}

// d(self + v t1 t2) = g, g v t2, g v t1.
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  Op op("AddcmulBackward", self, t1, t2);
  Tensor y = op.run([&] { return native::addcmul(self, t1, t2, value); });
  op.set_output(y);
  op.save(if_needed(op.needs_grad(2), t1));
  op.save(if_needed(op.needs_grad(1), t2));
  op.backward([value](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? g[0] : Tensor(),
            s.needs_grad(1) ? mul(mul(g[0], s[1]), value) : Tensor(),
            s.needs_grad(2) ? mul(mul(g[0], s[0]), value) : Tensor()};
  });
  return y;
}
// d(self + v t1 / t2) = g, g v / t2, -g v t1 / t2^2.
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  Op op("AddcdivBackward", self, t1, t2);
  Tensor y = op.run([&] { return native::addcdiv(self, t1, t2, value); });
  op.set_output(y);
  op.save(if_needed(op.needs_grad(2), t1));
  op.save(if_needed(op.needs_grad(1) || op.needs_grad(2), t2));
  op.backward([value](const Saved& s, const Tensors& g) -> Tensors {
    const Tensor t2 = s[1];
    Tensor gv = s.needs_grad(1) || s.needs_grad(2) ? mul(g[0], value) : Tensor();
    return {s.needs_grad(0) ? g[0] : Tensor(), s.needs_grad(1) ? div(gv, t2) : Tensor(),
            s.needs_grad(2) ? neg(div(mul(gv, s[0]), mul(t2, t2))) : Tensor()};
  });
  return y;
}
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value) {
  return inplace_op(
      "addcmul_", self, [&] { native::addcmul_(self, t1, t2, value); },
      [&](const Tensor& old) { return addcmul(old, t1, t2, value); }, t1, t2);
}
const Tensor& addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value) {
  return inplace_op(
      "addcdiv_", self, [&] { native::addcdiv_(self, t1, t2, value); },
      [&](const Tensor& old) { return addcdiv(old, t1, t2, value); }, t1, t2);
}

// d masked_fill(self, mask, v) = g with the filled positions zeroed; the mask gets none.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Op op("MaskedFillBackward", self);
  Tensor y = op.run([&] { return native::masked_fill(self, mask, value); });
  op.set_output(y);
  op.save(mask);
  op.backward(
      [](const Saved& s, const Tensors& g) -> Tensors { return {masked_fill(g[0], s[0], 0)}; });
  return y;
}
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return inplace_op(
      "masked_fill_", self, [&] { native::masked_fill_(self, mask, value); },
      [&](const Tensor& old) { return masked_fill(old, mask, value); });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::add(const Tensor& o, const Scalar& al) const { return ember::add(*this, o, al); }
Tensor Tensor::add(const Scalar& o, const Scalar& al) const { return ember::add(*this, o, al); }
const Tensor& Tensor::add_(const Tensor& o, const Scalar& al) const {
  return ember::add_(*this, o, al);
}
const Tensor& Tensor::add_(const Scalar& o, const Scalar& al) const {
  return ember::add_(*this, o, al);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& al) const { return ember::sub(*this, o, al); }
Tensor Tensor::sub(const Scalar& o, const Scalar& al) const { return ember::sub(*this, o, al); }
const Tensor& Tensor::sub_(const Tensor& o, const Scalar& al) const {
  return ember::sub_(*this, o, al);
}
const Tensor& Tensor::sub_(const Scalar& o, const Scalar& al) const {
  return ember::sub_(*this, o, al);
}
Tensor Tensor::mul(const Tensor& o) const { return ember::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ember::mul(*this, o); }
const Tensor& Tensor::mul_(const Tensor& o) const { return ember::mul_(*this, o); }
const Tensor& Tensor::mul_(const Scalar& o) const { return ember::mul_(*this, o); }
Tensor Tensor::div(const Tensor& o, const std::string& m) const { return ember::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, const std::string& m) const { return ember::div(*this, o, m); }
const Tensor& Tensor::div_(const Tensor& o, const std::string& m) const {
  return ember::div_(*this, o, m);
}
const Tensor& Tensor::div_(const Scalar& o, const std::string& m) const {
  return ember::div_(*this, o, m);
}
Tensor Tensor::remainder(const Tensor& o) const { return ember::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return ember::remainder(*this, o); }
const Tensor& Tensor::remainder_(const Tensor& o) const { return ember::remainder_(*this, o); }
const Tensor& Tensor::remainder_(const Scalar& o) const { return ember::remainder_(*this, o); }
Tensor Tensor::pow(const Tensor& e) const { return ember::pow(*this, e); }
const Tensor& Tensor::pow_(const Tensor& e) const { return ember::pow_(*this, e); }
Tensor Tensor::maximum(const Tensor& o) const { return ember::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return ember::minimum(*this, o); }
const Tensor& Tensor::maximum_(const Tensor& o) const { return ember::maximum_(*this, o); }
const Tensor& Tensor::minimum_(const Tensor& o) const { return ember::minimum_(*this, o); }
Tensor Tensor::atan2(const Tensor& o) const { return ember::atan2(*this, o); }
const Tensor& Tensor::atan2_(const Tensor& o) const { return ember::atan2_(*this, o); }
Tensor Tensor::lerp(const Tensor& e, const Scalar& w) const { return ember::lerp(*this, e, w); }
Tensor Tensor::lerp(const Tensor& e, const Tensor& w) const { return ember::lerp(*this, e, w); }
const Tensor& Tensor::lerp_(const Tensor& e, const Scalar& w) const {
  return ember::lerp_(*this, e, w);
}
const Tensor& Tensor::lerp_(const Tensor& e, const Tensor& w) const {
  return ember::lerp_(*this, e, w);
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return ember::addcmul(*this, t1, t2, v);
}
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return ember::addcdiv(*this, t1, t2, v);
}
const Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return ember::addcmul_(*this, t1, t2, v);
}
const Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  return ember::addcdiv_(*this, t1, t2, v);
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const {
  return ember::where(cond, *this, other);
}
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v) const {
  return ember::masked_fill(*this, m, v);
}
const Tensor& Tensor::masked_fill_(const Tensor& m, const Scalar& v) const {
  return ember::masked_fill_(*this, m, v);
}
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrapped_scalar_tensor(a, b), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar_tensor(a, b), b); }
const Tensor& operator+=(const Tensor& a, const Tensor& b) { return a.add_(b); }
const Tensor& operator+=(const Tensor& a, const Scalar& b) { return a.add_(b); }
const Tensor& operator-=(const Tensor& a, const Tensor& b) { return a.sub_(b); }
const Tensor& operator-=(const Tensor& a, const Scalar& b) { return a.sub_(b); }
const Tensor& operator*=(const Tensor& a, const Tensor& b) { return a.mul_(b); }
const Tensor& operator*=(const Tensor& a, const Scalar& b) { return a.mul_(b); }
const Tensor& operator/=(const Tensor& a, const Tensor& b) { return a.div_(b); }
const Tensor& operator/=(const Tensor& a, const Scalar& b) { return a.div_(b); }

}  // namespace ember
