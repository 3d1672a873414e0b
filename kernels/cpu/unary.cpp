// CPU kernels for the unary element-wise ops: each applies a kernels/math/unary.h functor
// through cpu_kernel. Operand 0 is the output, operand 1 the input.

#include "core/ops/unary.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/loops.h"
#include "kernels/math/convert.h"
#include "kernels/math/unary.h"

namespace ember::kernels::cpu {

namespace {

// Applies a floating-point functor Op<M> (M = opmath_t) to every element: convert the stored
// value to M, apply, round back. For float and double the conversions vanish.
template <class scalar_t, class Op>
void apply_float(TensorIter& iter, Op op) {
  using M = opmath_t<scalar_t>;
  cpu_kernel(iter,
             [op](scalar_t x) -> scalar_t { return static_cast<scalar_t>(op(static_cast<M>(x))); });
}

template <template <class> class Op>
void float_unary_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                          [&] { apply_float<scalar_t>(iter, Op<opmath_t<scalar_t>>{}); });
}

#define EMBER_FLOAT_UNARY_KERNEL(name, Op) \
  void name##_kernel(TensorIter& iter) { float_unary_kernel<math::Op>(iter); }
EMBER_FLOAT_UNARY_KERNEL(exp, ExpOp)
EMBER_FLOAT_UNARY_KERNEL(exp2, Exp2Op)
EMBER_FLOAT_UNARY_KERNEL(expm1, Expm1Op)
EMBER_FLOAT_UNARY_KERNEL(log, LogOp)
EMBER_FLOAT_UNARY_KERNEL(log2, Log2Op)
EMBER_FLOAT_UNARY_KERNEL(log1p, Log1pOp)
EMBER_FLOAT_UNARY_KERNEL(sqrt, SqrtOp)
EMBER_FLOAT_UNARY_KERNEL(rsqrt, RsqrtOp)
EMBER_FLOAT_UNARY_KERNEL(reciprocal, ReciprocalOp)
EMBER_FLOAT_UNARY_KERNEL(sin, SinOp)
EMBER_FLOAT_UNARY_KERNEL(cos, CosOp)
EMBER_FLOAT_UNARY_KERNEL(tan, TanOp)
EMBER_FLOAT_UNARY_KERNEL(tanh, TanhOp)
EMBER_FLOAT_UNARY_KERNEL(sigmoid, SigmoidOp)
EMBER_FLOAT_UNARY_KERNEL(silu, SiluOp)
EMBER_FLOAT_UNARY_KERNEL(erf, ErfOp)
// Integer inputs never reach these (the op copies them); only floating dtypes are dispatched.
EMBER_FLOAT_UNARY_KERNEL(floor, FloorOp)
EMBER_FLOAT_UNARY_KERNEL(ceil, CeilOp)
EMBER_FLOAT_UNARY_KERNEL(round, RoundOp)
EMBER_FLOAT_UNARY_KERNEL(trunc, TruncOp)
#undef EMBER_FLOAT_UNARY_KERNEL

void neg_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "neg",
                         [&] { cpu_kernel(iter, math::NegOp<scalar_t>{}); });
}

void abs_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "abs",
                         [&] { cpu_kernel(iter, math::AbsOp<scalar_t>{}); });
}

void sign_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), "sign",
                     [&] { cpu_kernel(iter, math::SignOp<scalar_t>{}); });
}

void relu_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "relu",
                         [&] { cpu_kernel(iter, math::ReluOp<scalar_t>{}); });
}

void bitwise_not_kernel(TensorIter& iter) {
  EMBER_DISPATCH_SWITCH(
      iter.common_dtype(), "bitwise_not", EMBER_CASES_INTEGRAL([&] {
        cpu_kernel(iter, math::BitwiseNotOp<scalar_t>{});
      }) EMBER_CASES_BOOL([&] { cpu_kernel(iter, math::BitwiseNotOp<scalar_t>{}); }));
}

void gelu_kernel(TensorIter& iter, GeluApproximation approximate) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), "gelu", [&] {
    using M = opmath_t<scalar_t>;
    if (approximate == GeluApproximation::Tanh) {
      apply_float<scalar_t>(iter, math::GeluTanhOp<M>{});
    } else {
      apply_float<scalar_t>(iter, math::GeluOp<M>{});
    }
  });
}

void softplus_kernel(TensorIter& iter, const Scalar& beta, const Scalar& threshold) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), "softplus", [&] {
    using M = opmath_t<scalar_t>;
    apply_float<scalar_t>(iter, math::SoftplusOp<M>{beta.to<M>(), threshold.to<M>()});
  });
}

// A clamp bound in integer type T: a floating bound rounds inward (x >= 0.5 <=> x >= 1 for
// integer x) and every bound saturates to T's range, so no conversion can wrap.
template <class T>
T integer_bound(const Scalar& s, bool is_lower) {
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (s.is_floating()) {
    double v = s.to_double();
    if (std::isnan(v))
      return is_lower ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    v = is_lower ? std::ceil(v) : std::floor(v);
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
  const int64_t v = s.to_int64();
  if (static_cast<double>(v) <= lo) return std::numeric_limits<T>::lowest();
  if (static_cast<double>(v) >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void clamp_kernel(TensorIter& iter, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
    using M = opmath_t<scalar_t>;
    M lo, hi;
    if constexpr (std::is_integral_v<scalar_t>) {
      lo = min ? integer_bound<scalar_t>(*min, true) : std::numeric_limits<scalar_t>::lowest();
      hi = max ? integer_bound<scalar_t>(*max, false) : std::numeric_limits<scalar_t>::max();
    } else {
      lo = min ? min->to<M>() : -std::numeric_limits<M>::infinity();
      hi = max ? max->to<M>() : std::numeric_limits<M>::infinity();
    }
    cpu_kernel(iter, math::ClampOp<scalar_t>{lo, hi});
  });
}

// hardtanh is clamp with both bounds, as in PyTorch: the same bounds, loop and math::ClampOp.
void hardtanh_kernel(TensorIter& iter, const Scalar& min_val, const Scalar& max_val) {
  clamp_kernel(iter, min_val, max_val);
}

void nan_to_num_kernel(TensorIter& iter, double nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), "nan_to_num", [&] {
    using M = opmath_t<scalar_t>;
    // The defaults are the dtype's own extremes (65504 for float16), exact in M.
    const M big = static_cast<M>(std::numeric_limits<scalar_t>::max());
    const M low = static_cast<M>(std::numeric_limits<scalar_t>::lowest());
    apply_float<scalar_t>(
        iter, math::NanToNumOp<M>{static_cast<M>(nan), posinf ? static_cast<M>(*posinf) : big,
                                  neginf ? static_cast<M>(*neginf) : low});
  });
}

// x ** exponent: the common exponents get exact, vectorisable functors (as PyTorch does).
void pow_scalar_kernel(TensorIter& iter, const Scalar& exponent) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "pow", [&] {
    if constexpr (std::is_integral_v<scalar_t>) {
      // The op guarantees an integral exponent >= 0 here.
      const int64_t e = exponent.to_int64();
      if (e == 2) {
        cpu_kernel(iter, [](scalar_t x) -> scalar_t { return static_cast<scalar_t>(x * x); });
      } else {
        cpu_kernel(iter, math::IntPowScalarOp<scalar_t>{e});
      }
    } else {
      using M = opmath_t<scalar_t>;
      const double e = exponent.to_double();
      if (e == 2.0) {
        apply_float<scalar_t>(iter, math::SquareOp<M>{});
      } else if (e == 3.0) {
        apply_float<scalar_t>(iter, math::CubeOp<M>{});
      } else if (e == 0.5) {
        apply_float<scalar_t>(iter, math::SqrtOp<M>{});
      } else if (e == -0.5) {
        apply_float<scalar_t>(iter, math::RsqrtOp<M>{});
      } else if (e == -1.0) {
        apply_float<scalar_t>(iter, math::ReciprocalOp<M>{});
      } else if (e == -2.0) {
        apply_float<scalar_t>(iter, math::InvSquareOp<M>{});
      } else {
        apply_float<scalar_t>(iter, math::PowScalarOp<M>{static_cast<M>(e)});
      }
    }
  });
}

// ---- bool results: the input keeps its dtype (operand 1) --------------------------------------

template <class T>
bool is_nan_value(T x) {
  const auto v = static_cast<opmath_t<T>>(x);
  return v != v;
}

void isnan_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.dtype(1), "isnan", [&] {
    cpu_kernel(iter, [](scalar_t x) -> bool { return is_nan_value(x); });
  });
}

void isinf_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.dtype(1), "isinf", [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel(iter, [](scalar_t x) -> bool {
      return std::abs(static_cast<M>(x)) == std::numeric_limits<M>::infinity();
    });
  });
}

void isfinite_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.dtype(1), "isfinite", [&] {
    using M = opmath_t<scalar_t>;
    // x - x is 0 for finite x and NaN for inf or NaN.
    cpu_kernel(iter, [](scalar_t x) -> bool {
      const M v = static_cast<M>(x);
      return v - v == M(0);
    });
  });
}

void logical_not_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.dtype(1), "logical_not", [&] {
    cpu_kernel(iter, [](scalar_t x) -> bool { return !math::convert<bool>(x); });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(neg_stub, DeviceType::CPU, neg_kernel);
EMBER_REGISTER_KERNEL(abs_stub, DeviceType::CPU, abs_kernel);
EMBER_REGISTER_KERNEL(sign_stub, DeviceType::CPU, sign_kernel);
EMBER_REGISTER_KERNEL(relu_stub, DeviceType::CPU, relu_kernel);
EMBER_REGISTER_KERNEL(floor_stub, DeviceType::CPU, floor_kernel);
EMBER_REGISTER_KERNEL(ceil_stub, DeviceType::CPU, ceil_kernel);
EMBER_REGISTER_KERNEL(round_stub, DeviceType::CPU, round_kernel);
EMBER_REGISTER_KERNEL(trunc_stub, DeviceType::CPU, trunc_kernel);
EMBER_REGISTER_KERNEL(exp_stub, DeviceType::CPU, exp_kernel);
EMBER_REGISTER_KERNEL(exp2_stub, DeviceType::CPU, exp2_kernel);
EMBER_REGISTER_KERNEL(expm1_stub, DeviceType::CPU, expm1_kernel);
EMBER_REGISTER_KERNEL(log_stub, DeviceType::CPU, log_kernel);
EMBER_REGISTER_KERNEL(log2_stub, DeviceType::CPU, log2_kernel);
EMBER_REGISTER_KERNEL(log1p_stub, DeviceType::CPU, log1p_kernel);
EMBER_REGISTER_KERNEL(sqrt_stub, DeviceType::CPU, sqrt_kernel);
EMBER_REGISTER_KERNEL(rsqrt_stub, DeviceType::CPU, rsqrt_kernel);
EMBER_REGISTER_KERNEL(reciprocal_stub, DeviceType::CPU, reciprocal_kernel);
EMBER_REGISTER_KERNEL(sin_stub, DeviceType::CPU, sin_kernel);
EMBER_REGISTER_KERNEL(cos_stub, DeviceType::CPU, cos_kernel);
EMBER_REGISTER_KERNEL(tan_stub, DeviceType::CPU, tan_kernel);
EMBER_REGISTER_KERNEL(tanh_stub, DeviceType::CPU, tanh_kernel);
EMBER_REGISTER_KERNEL(sigmoid_stub, DeviceType::CPU, sigmoid_kernel);
EMBER_REGISTER_KERNEL(silu_stub, DeviceType::CPU, silu_kernel);
EMBER_REGISTER_KERNEL(erf_stub, DeviceType::CPU, erf_kernel);
EMBER_REGISTER_KERNEL(isnan_stub, DeviceType::CPU, isnan_kernel);
EMBER_REGISTER_KERNEL(isinf_stub, DeviceType::CPU, isinf_kernel);
EMBER_REGISTER_KERNEL(isfinite_stub, DeviceType::CPU, isfinite_kernel);
EMBER_REGISTER_KERNEL(logical_not_stub, DeviceType::CPU, logical_not_kernel);
EMBER_REGISTER_KERNEL(bitwise_not_stub, DeviceType::CPU, bitwise_not_kernel);
EMBER_REGISTER_KERNEL(gelu_stub, DeviceType::CPU, gelu_kernel);
EMBER_REGISTER_KERNEL(softplus_stub, DeviceType::CPU, softplus_kernel);
EMBER_REGISTER_KERNEL(clamp_stub, DeviceType::CPU, clamp_kernel);
EMBER_REGISTER_KERNEL(hardtanh_stub, DeviceType::CPU, hardtanh_kernel);
EMBER_REGISTER_KERNEL(nan_to_num_stub, DeviceType::CPU, nan_to_num_kernel);
EMBER_REGISTER_KERNEL(pow_scalar_stub, DeviceType::CPU, pow_scalar_kernel);

}  // namespace ember::kernels::cpu
