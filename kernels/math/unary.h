#pragma once
// Unary element-wise math shared by the CPU loops and the CUDA kernels.
//
// Two kinds of functor live here:
// - Floating-point math (ExpOp, SigmoidOp, GeluOp, ...) is templated on M, the type the math runs
//   in: opmath_t of the storage type (float for Half/BFloat16, else the type itself). The
//   backend loop converts each element to M, applies the functor and rounds back.
// - Dtype-preserving ops (NegOp, AbsOp, SignOp, ClampOp, ...) are templated on the storage type
//   T and work for integers as well; they convert to opmath_t<T> themselves where it matters.
//
// Functors are branch-light (selects, no early returns in the common path) so that the
// contiguous CPU loop can vectorise them.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/math/common.h"

namespace ember::kernels::math {

// -x with two's-complement wrap-around for integers (no signed-overflow UB on INT_MIN).
template <class T>
EMBER_HOST_DEVICE constexpr T wrapping_neg(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
  } else {
    return -x;
  }
}

// The unsigned integer type of a given size, for bit-level selects.
template <size_t N>
struct uint_of;
template <>
struct uint_of<1> {
  using type = uint8_t;
};
template <>
struct uint_of<2> {
  using type = uint16_t;
};
template <>
struct uint_of<4> {
  using type = uint32_t;
};
template <>
struct uint_of<8> {
  using type = uint64_t;
};

// cond ? a : b without a branch, for any element type (Half included): the bits of a and b are
// blended with an all-ones / all-zeros mask. A data-dependent condition (where, masked_fill with
// a random mask) would otherwise cost a branch misprediction per element; the blend vectorises.
template <class T>
EMBER_HOST_DEVICE T select(bool cond, T a, T b) {
  using B = typename uint_of<sizeof(T)>::type;
  B x, y;
  std::memcpy(&x, &a, sizeof(T));
  std::memcpy(&y, &b, sizeof(T));
  const B mask = static_cast<B>(B(0) - static_cast<B>(cond));
  const B r = static_cast<B>((x & mask) | (y & static_cast<B>(~mask)));
  T out;
  std::memcpy(static_cast<void*>(&out), &r, sizeof(T));
  return out;
}

// ---- dtype-preserving ops (storage type T) ----------------------------------------------------

template <class T>
struct NegOp {
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping_neg(x);
    } else {
      return static_cast<T>(-static_cast<opmath_t<T>>(x));
    }
  }
};

template <class T>
struct AbsOp {
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      return x < 0 ? wrapping_neg(x) : x;
    } else {
      return static_cast<T>(std::abs(static_cast<opmath_t<T>>(x)));
    }
  }
};

// -1, 0 or 1 (sign(NaN) = 0 as in PyTorch; bool is its own sign).
template <class T>
struct SignOp {
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return x;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x != 0);
    } else {
      using M = opmath_t<T>;
      const M v = static_cast<M>(x);
      return static_cast<T>(static_cast<M>((M(0) < v) - (v < M(0))));
    }
  }
};

// max(x, 0); NaN stays NaN.
template <class T>
struct ReluOp {
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      using M = opmath_t<T>;
      const M v = static_cast<M>(x);
      return static_cast<T>(v < M(0) ? M(0) : v);
    }
  }
};

// min(max(x, lo), hi) with lo/hi already in the computing type; NaN stays NaN (both compares
// are false). Without a bound, lo = lowest (or -inf) and hi = max (or +inf).
template <class T>
struct ClampOp {
  opmath_t<T> lo, hi;
  EMBER_HOST_DEVICE T operator()(T x) const {
    using M = opmath_t<T>;
    M v = static_cast<M>(x);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return static_cast<T>(v);
  }
};

// Replaces NaN, +inf and -inf (floating types only; M is the computing type).
template <class M>
struct NanToNumOp {
  M nan, posinf, neginf;
  EMBER_HOST_DEVICE M operator()(M x) const {
    // Unconditional loads of the members, so that the selects below need no branch.
    const M to_nan = nan, to_pos = posinf, to_neg = neginf;
    const M inf = std::numeric_limits<M>::infinity();
    M r = x == inf ? to_pos : x;
    r = x == -inf ? to_neg : r;
    return x != x ? to_nan : r;
  }
};

// Bitwise complement; for bool it is logical not.
template <class T>
struct BitwiseNotOp {
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else {
      return static_cast<T>(~x);
    }
  }
};

// ---- floating-point math (computing type M) ------------------------------------------------

#define EMBER_FLOAT_UNARY_FUNCTOR(Name, expr)                    \
  template <class M>                                             \
  struct Name {                                                  \
    EMBER_HOST_DEVICE M operator()(M x) const { return (expr); } \
  };

EMBER_FLOAT_UNARY_FUNCTOR(ExpOp, std::exp(x))
EMBER_FLOAT_UNARY_FUNCTOR(Exp2Op, std::exp2(x))
EMBER_FLOAT_UNARY_FUNCTOR(Expm1Op, std::expm1(x))
EMBER_FLOAT_UNARY_FUNCTOR(LogOp, std::log(x))
EMBER_FLOAT_UNARY_FUNCTOR(Log2Op, std::log2(x))
EMBER_FLOAT_UNARY_FUNCTOR(Log1pOp, std::log1p(x))
EMBER_FLOAT_UNARY_FUNCTOR(SqrtOp, std::sqrt(x))
EMBER_FLOAT_UNARY_FUNCTOR(RsqrtOp, M(1) / std::sqrt(x))
EMBER_FLOAT_UNARY_FUNCTOR(ReciprocalOp, M(1) / x)
EMBER_FLOAT_UNARY_FUNCTOR(SinOp, std::sin(x))
EMBER_FLOAT_UNARY_FUNCTOR(CosOp, std::cos(x))
EMBER_FLOAT_UNARY_FUNCTOR(TanOp, std::tan(x))
EMBER_FLOAT_UNARY_FUNCTOR(TanhOp, std::tanh(x))
EMBER_FLOAT_UNARY_FUNCTOR(ErfOp, std::erf(x))
// 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving exactly 0.
EMBER_FLOAT_UNARY_FUNCTOR(SigmoidOp, M(1) / (M(1) + std::exp(-x)))
// x * sigmoid(x).
EMBER_FLOAT_UNARY_FUNCTOR(SiluOp, x / (M(1) + std::exp(-x)))
// Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))).
EMBER_FLOAT_UNARY_FUNCTOR(GeluOp, M(0.5) * x * (M(1) + std::erf(x * M(0.70710678118654752440))))
// GELU, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed
// as x * sigmoid(2u) (the same function: 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u)), because exp is
// several times cheaper than tanh. Saturates correctly: e^-2u = inf gives -0, e^-2u = 0 gives x.
EMBER_FLOAT_UNARY_FUNCTOR(GeluTanhOp, x / (M(1) + std::exp(M(-1.5957691216057307118) *
                                                           (x + M(0.044715) * x * x * x))))
EMBER_FLOAT_UNARY_FUNCTOR(FloorOp, std::floor(x))
EMBER_FLOAT_UNARY_FUNCTOR(CeilOp, std::ceil(x))
// Round half to even (the default floating-point rounding mode), like PyTorch and NumPy.
EMBER_FLOAT_UNARY_FUNCTOR(RoundOp, std::nearbyint(x))
EMBER_FLOAT_UNARY_FUNCTOR(TruncOp, std::trunc(x))
EMBER_FLOAT_UNARY_FUNCTOR(SquareOp, x* x)
EMBER_FLOAT_UNARY_FUNCTOR(CubeOp, x* x* x)
EMBER_FLOAT_UNARY_FUNCTOR(InvSquareOp, M(1) / (x * x))

#undef EMBER_FLOAT_UNARY_FUNCTOR

// log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (where the two agree to
// within rounding and the exponential would overflow).
template <class M>
struct SoftplusOp {
  M beta, threshold;
  EMBER_HOST_DEVICE M operator()(M x) const {
    const M bx = x * beta;
    return bx > threshold ? x : std::log1p(std::exp(bx)) / beta;
  }
};

// x^e for a fixed floating exponent (the common exponents have their own functors).
template <class M>
struct PowScalarOp {
  M exponent;
  EMBER_HOST_DEVICE M operator()(M x) const { return std::pow(x, exponent); }
};

// ---- integer power ----------------------------------------------------------------------------

// base^exp by squaring, in unsigned arithmetic so overflow wraps like PyTorch's integer pow
// (Note [Integer overflow wraps]).
// A negative exponent gives 1 / base^|exp| truncated: 1 for base 1, +-1 for base -1, else 0.
template <class T, class E>
EMBER_HOST_DEVICE T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if constexpr (std::is_signed_v<T>) {
        if (base == -1) return (exp & 1) ? T(-1) : T(1);
      }
      return T(0);
    }
  }
  using U = std::make_unsigned_t<T>;
  using UE = std::make_unsigned_t<E>;
  U result = 1, b = static_cast<U>(base);
  UE e = static_cast<UE>(exp);
  while (e) {
    if (e & 1u) result = wrapping_mul(result, b);
    e = static_cast<UE>(e >> 1);
    b = wrapping_mul(b, b);
  }
  return static_cast<T>(result);
}

// x^exponent for integer x and a fixed exponent >= 0.
template <class T>
struct IntPowScalarOp {
  int64_t exponent;
  EMBER_HOST_DEVICE T operator()(T x) const { return int_pow(x, exponent); }
};

}  // namespace ember::kernels::math
