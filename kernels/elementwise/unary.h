#pragma once
// The unary element-wise kernels of every device, written once: each applies a
// kernels/math/unary.h functor through a Loop policy -- kernels/cpu's cpu_kernel or
// kernels/cuda's gpu_kernel -- so the CPU and CUDA backends run the same dtype dispatch, the same
// bounds and the same math (Note [Kernels written once for every device] in
// kernels/elementwise/loop.h). Operand 0 is the output, operand 1 the input.
//
//   // kernels/cpu/unary.cpp                     // kernels/cuda/unary.cu
//   EMBER_REGISTER_UNARY_KERNELS(DeviceType::CPU,  EMBER_REGISTER_UNARY_KERNELS(DeviceType::CUDA,
//                                CpuLoop);                                     GpuLoop);

#include <cmath>
#include <limits>
#include <optional>

#include "core/ops/unary.h"
#include "kernels/elementwise/loop.h"
#include "kernels/math/convert.h"
#include "kernels/math/unary.h"

namespace ember::kernels {

// The functors of the bool-result and special-case kernels below.
template <class scalar_t, class M, class Op>
struct ApplyFloatOp {  // converts the stored value to M, applies Op, rounds back
  Op op;
  EMBER_HOST_DEVICE scalar_t operator()(scalar_t x) const {
    return static_cast<scalar_t>(op(static_cast<M>(x)));
  }
};
template <class T>
struct IntSquareOp {
  EMBER_HOST_DEVICE T operator()(T x) const { return static_cast<T>(x * x); }
};
template <class T>
struct IsNanOp {
  EMBER_HOST_DEVICE bool operator()(T x) const {
    const auto v = static_cast<opmath_t<T>>(x);
    return v != v;
  }
};
template <class T>
struct IsInfOp {
  EMBER_HOST_DEVICE bool operator()(T x) const {
    using M = opmath_t<T>;
    const M v = static_cast<M>(x);
    return v == std::numeric_limits<M>::infinity() || v == -std::numeric_limits<M>::infinity();
  }
};
template <class T>
struct IsFiniteOp {  // x - x is 0 for finite x and NaN for inf or NaN
  EMBER_HOST_DEVICE bool operator()(T x) const {
    using M = opmath_t<T>;
    const M v = static_cast<M>(x);
    return v - v == M(0);
  }
};
template <class T>
struct LogicalNotOp {
  EMBER_HOST_DEVICE bool operator()(T x) const { return !math::convert<bool>(x); }
};

template <class Loop>
struct UnaryKernels {
  // Applies a floating-point functor Op<M> (M = opmath_t) to every element: convert the stored
  // value to M, apply, round back. For float and double the conversions vanish.
  template <class scalar_t, class Op>
  static void apply_float(TensorIter& iter, Op op) {
    using M = opmath_t<scalar_t>;
    Loop::run(iter, ApplyFloatOp<scalar_t, M, Op>{op});
  }

  template <template <class> class Op>
  static void float_unary_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                            [&] { apply_float<scalar_t>(iter, Op<opmath_t<scalar_t>>{}); });
  }

#define EMBER_FLOAT_UNARY_KERNEL(name, Op) \
  static void name##_kernel(TensorIter& iter) { float_unary_kernel<math::Op>(iter); }
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

  static void neg_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "neg",
                           [&] { Loop::run(iter, math::NegOp<scalar_t>{}); });
  }

  static void abs_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "abs",
                           [&] { Loop::run(iter, math::AbsOp<scalar_t>{}); });
  }

  static void sign_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), "sign",
                       [&] { Loop::run(iter, math::SignOp<scalar_t>{}); });
  }

  static void relu_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "relu",
                           [&] { Loop::run(iter, math::ReluOp<scalar_t>{}); });
  }

  static void bitwise_not_kernel(TensorIter& iter) {
    EMBER_DISPATCH_SWITCH(
        iter.common_dtype(), "bitwise_not", EMBER_CASES_INTEGRAL([&] {
          Loop::run(iter, math::BitwiseNotOp<scalar_t>{});
        }) EMBER_CASES_BOOL([&] { Loop::run(iter, math::BitwiseNotOp<scalar_t>{}); }));
  }

  static void gelu_kernel(TensorIter& iter, GeluApproximation approximate) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), "gelu", [&] {
      using M = opmath_t<scalar_t>;
      if (approximate == GeluApproximation::Tanh) {
        apply_float<scalar_t>(iter, math::GeluTanhOp<M>{});
      } else {
        apply_float<scalar_t>(iter, math::GeluOp<M>{});
      }
    });
  }

  static void softplus_kernel(TensorIter& iter, const Scalar& beta, const Scalar& threshold) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), "softplus", [&] {
      using M = opmath_t<scalar_t>;
      apply_float<scalar_t>(iter, math::SoftplusOp<M>{beta.to<M>(), threshold.to<M>()});
    });
  }

  // A clamp bound in integer type T: a floating bound rounds inward (x >= 0.5 <=> x >= 1 for
  // integer x) and every bound saturates to T's range, so no conversion can wrap.
  template <class T>
  static T integer_bound(const Scalar& s, bool is_lower) {
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

  static void clamp_kernel(TensorIter& iter, const std::optional<Scalar>& min,
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
      Loop::run(iter, math::ClampOp<scalar_t>{lo, hi});
    });
  }

  // hardtanh is clamp with both bounds, as in PyTorch: the same bounds, loop and math::ClampOp.
  static void hardtanh_kernel(TensorIter& iter, const Scalar& min_val, const Scalar& max_val) {
    clamp_kernel(iter, min_val, max_val);
  }

  static void nan_to_num_kernel(TensorIter& iter, double nan, std::optional<double> posinf,
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
  static void pow_scalar_kernel(TensorIter& iter, const Scalar& exponent) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), "pow", [&] {
      if constexpr (std::is_integral_v<scalar_t>) {
        // The op guarantees an integral exponent >= 0 here.
        const int64_t e = exponent.to_int64();
        if (e == 2) {
          Loop::run(iter, IntSquareOp<scalar_t>{});
        } else {
          Loop::run(iter, math::IntPowScalarOp<scalar_t>{e});
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

  static void isnan_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.dtype(1), "isnan", [&] { Loop::run(iter, IsNanOp<scalar_t>{}); });
  }

  static void isinf_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.dtype(1), "isinf", [&] { Loop::run(iter, IsInfOp<scalar_t>{}); });
  }

  static void isfinite_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.dtype(1), "isfinite",
                            [&] { Loop::run(iter, IsFiniteOp<scalar_t>{}); });
  }

  static void logical_not_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.dtype(1), "logical_not",
                       [&] { Loop::run(iter, LogicalNotOp<scalar_t>{}); });
  }
};

}  // namespace ember::kernels

// Registers every unary kernel of UnaryKernels<LOOP> for DEVICE.
#define EMBER_REGISTER_UNARY_KERNELS(DEVICE, LOOP)                                                \
  EMBER_REGISTER_KERNEL_OF(neg_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, neg_kernel);   \
  EMBER_REGISTER_KERNEL_OF(abs_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, abs_kernel);   \
  EMBER_REGISTER_KERNEL_OF(sign_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, sign_kernel); \
  EMBER_REGISTER_KERNEL_OF(relu_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, relu_kernel); \
  EMBER_REGISTER_KERNEL_OF(floor_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           floor_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(ceil_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, ceil_kernel); \
  EMBER_REGISTER_KERNEL_OF(round_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           round_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(trunc_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           trunc_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(exp_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, exp_kernel);   \
  EMBER_REGISTER_KERNEL_OF(exp2_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, exp2_kernel); \
  EMBER_REGISTER_KERNEL_OF(expm1_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           expm1_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(log_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, log_kernel);   \
  EMBER_REGISTER_KERNEL_OF(log2_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, log2_kernel); \
  EMBER_REGISTER_KERNEL_OF(log1p_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           log1p_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(sqrt_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, sqrt_kernel); \
  EMBER_REGISTER_KERNEL_OF(rsqrt_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           rsqrt_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(reciprocal_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,         \
                           reciprocal_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(sin_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, sin_kernel);   \
  EMBER_REGISTER_KERNEL_OF(cos_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, cos_kernel);   \
  EMBER_REGISTER_KERNEL_OF(tan_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, tan_kernel);   \
  EMBER_REGISTER_KERNEL_OF(tanh_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, tanh_kernel); \
  EMBER_REGISTER_KERNEL_OF(sigmoid_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,            \
                           sigmoid_kernel);                                                       \
  EMBER_REGISTER_KERNEL_OF(silu_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, silu_kernel); \
  EMBER_REGISTER_KERNEL_OF(erf_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, erf_kernel);   \
  EMBER_REGISTER_KERNEL_OF(isnan_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           isnan_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(isinf_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           isinf_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(isfinite_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,           \
                           isfinite_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(logical_not_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,        \
                           logical_not_kernel);                                                   \
  EMBER_REGISTER_KERNEL_OF(bitwise_not_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,        \
                           bitwise_not_kernel);                                                   \
  EMBER_REGISTER_KERNEL_OF(gelu_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>, gelu_kernel); \
  EMBER_REGISTER_KERNEL_OF(softplus_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,           \
                           softplus_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(clamp_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,              \
                           clamp_kernel);                                                         \
  EMBER_REGISTER_KERNEL_OF(hardtanh_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,           \
                           hardtanh_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(nan_to_num_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,         \
                           nan_to_num_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(pow_scalar_stub, DEVICE, ::ember::kernels::UnaryKernels<LOOP>,         \
                           pow_scalar_kernel)
