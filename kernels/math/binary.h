#pragma once
// Binary element-wise math shared by the CPU loops and the CUDA kernels. Each functor computes
// in opmath_t (float for Half/BFloat16) and returns the storage type.
//
// Integer division (DivTruncOp, DivFloorOp, RemainderOp) never traps: a zero divisor gives 0
// here, and the backend raises ZeroDivisionError (the CPU before it writes, a GPU at the next
// synchronisation: Note [Integer division by zero on a device]). INT_MIN / -1 wraps.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/math/convert.h"
#include "kernels/math/unary.h"

namespace ember::kernels::math {

// out = a + alpha * b (sub is add with -alpha). Integers wrap (Note [Integer overflow wraps]).
template <class T>
struct AddOp {
  opmath_t<T> alpha;
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return wrapping_add(a, wrapping_mul(alpha, b));
    } else {
      return static_cast<T>(static_cast<M>(a) + alpha * static_cast<M>(b));
    }
  }
};

template <class T>
struct MulOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return wrapping_mul(a, b);
    } else {
      return static_cast<T>(static_cast<M>(a) * static_cast<M>(b));
    }
  }
};

// True division (the inputs are already floating: integers were promoted by TensorIter).
template <class T>
struct TrueDivOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    return static_cast<T>(static_cast<M>(a) / static_cast<M>(b));
  }
};

// a / b rounded toward zero.
template <class T>
struct DivTruncOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrapping_neg(a);
      }
      return b == 0 ? T(0) : static_cast<T>(a / b);
    } else {
      using M = opmath_t<T>;
      return static_cast<T>(std::trunc(static_cast<M>(a) / static_cast<M>(b)));
    }
  }
};

// Python's floor division for floats: the quotient is derived from fmod (exact), so that
// a == b * floor_div(a, b) + remainder(a, b) holds as closely as rounding allows.
template <class M>
EMBER_HOST_DEVICE M floor_divide_float(M a, M b) {
  if (b == M(0)) return a / b;  // inf or NaN, as true division
  const M mod = std::fmod(a, b);
  M div = (a - mod) / b;
  if (mod != M(0) && ((b < M(0)) != (mod < M(0)))) div -= M(1);
  if (div == M(0)) return std::copysign(M(0), a / b);
  M floordiv = std::floor(div);
  if (div - floordiv > M(0.5)) floordiv += M(1);
  return floordiv;
}

// a / b rounded toward negative infinity.
template <class T>
struct DivFloorOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>) {
      return b == 0 ? T(0) : static_cast<T>(a / b);
    } else if constexpr (std::is_integral_v<T>) {
      if (b == -1) return wrapping_neg(a);
      const T d = b == 0 ? T(1) : b;
      const T q = static_cast<T>(a / d), r = static_cast<T>(a % d);
      return static_cast<T>(q - ((r != 0) & ((r < 0) != (d < 0))));
    } else {
      using M = opmath_t<T>;
      return static_cast<T>(floor_divide_float(static_cast<M>(a), static_cast<M>(b)));
    }
  }
};

// Python's modulo: the result has the sign of the divisor (b == 0 gives NaN for floats).
template <class T>
struct RemainderOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>) {
      return b == 0 ? T(0) : static_cast<T>(a % b);
    } else if constexpr (std::is_integral_v<T>) {
      const T d = (b == 0) | (b == -1) ? T(1) : b;  // x % -1 == 0, and it never traps
      const T r = static_cast<T>(a % d);
      return static_cast<T>((r != 0) & ((r < 0) != (d < 0)) ? r + d : r);
    } else {
      using M = opmath_t<T>;
      const M bb = static_cast<M>(b);
      const M r = std::fmod(static_cast<M>(a), bb);
      return static_cast<T>((r != M(0)) & ((r < M(0)) != (bb < M(0))) ? r + bb : r);
    }
  }
};

// a^b; integers by squaring (kernels/math/unary.h int_pow).
template <class T>
struct PowOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return int_pow(a, b);
    } else {
      using M = opmath_t<T>;
      return static_cast<T>(std::pow(static_cast<M>(a), static_cast<M>(b)));
    }
  }
};

// Element-wise max / min; a NaN in either input gives NaN.
template <class T>
struct MaximumOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    const M x = static_cast<M>(a), y = static_cast<M>(b);
    return (x > y) | is_nan(x) ? a : b;
  }
};
template <class T>
struct MinimumOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    const M x = static_cast<M>(a), y = static_cast<M>(b);
    return (x < y) | is_nan(x) ? a : b;
  }
};

template <class T>
struct Atan2Op {
  EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using M = opmath_t<T>;
    return static_cast<T>(std::atan2(static_cast<M>(a), static_cast<M>(b)));
  }
};

// Comparisons: both inputs in their common dtype, a bool result.
struct EqOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NeOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LtOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LeOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GtOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GeOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};

// Logical ops: any value is true when non-zero (NaN is true).
template <class T>
EMBER_HOST_DEVICE bool truthy(T v) {
  return static_cast<opmath_t<T>>(v) != static_cast<opmath_t<T>>(0);
}
struct LogicalAndOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return truthy(a) & truthy(b);
  }
};
struct LogicalOrOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return truthy(a) | truthy(b);
  }
};
struct LogicalXorOp {
  template <class T>
  EMBER_HOST_DEVICE bool operator()(T a, T b) const {
    return truthy(a) != truthy(b);
  }
};

// Bitwise ops on integers and bool.
template <class T>
struct BitwiseAndOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
template <class T>
struct BitwiseOrOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
template <class T>
struct BitwiseXorOp {
  EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

// start + weight * (end - start), computed from the nearer end for accuracy (as PyTorch does).
// Both forms are computed and one selected, so the loop has no branch.
template <class M>
EMBER_HOST_DEVICE M lerp(M start, M end, M weight) {
  const M diff = end - start;
  const M from_start = start + weight * diff;
  const M from_end = end - diff * (M(1) - weight);
  return select(std::abs(weight) < M(0.5), from_start, from_end);
}

template <class T>
struct LerpScalarOp {
  opmath_t<T> weight;
  EMBER_HOST_DEVICE T operator()(T start, T end) const {
    using M = opmath_t<T>;
    return static_cast<T>(lerp(static_cast<M>(start), static_cast<M>(end), weight));
  }
};
template <class T>
struct LerpTensorOp {
  EMBER_HOST_DEVICE T operator()(T start, T end, T weight) const {
    using M = opmath_t<T>;
    return static_cast<T>(lerp(static_cast<M>(start), static_cast<M>(end), static_cast<M>(weight)));
  }
};

// self + value * t1 * t2 (integers wrap)
template <class T>
struct AddcmulOp {
  opmath_t<T> value;
  EMBER_HOST_DEVICE T operator()(T self, T t1, T t2) const {
    using M = opmath_t<T>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return wrapping_add(self, wrapping_mul(wrapping_mul(value, t1), t2));
    } else {
      return static_cast<T>(static_cast<M>(self) + value * static_cast<M>(t1) * static_cast<M>(t2));
    }
  }
};
// self + value * t1 / t2 (floating types only)
template <class T>
struct AddcdivOp {
  opmath_t<T> value;
  EMBER_HOST_DEVICE T operator()(T self, T t1, T t2) const {
    using M = opmath_t<T>;
    return static_cast<T>(static_cast<M>(self) + value * static_cast<M>(t1) / static_cast<M>(t2));
  }
};

// Note [Bool operands read as bytes]
// where's condition and masked_fill's mask are bool tensors, read here as uint8_t (the same
// byte; a char type may alias anything): GCC cannot vectorise loads of `bool`, but it can
// vectorise bytes, and select() then blends without a branch.

// cond ? a : b
template <class T>
struct WhereOp {
  EMBER_HOST_DEVICE T operator()(uint8_t cond, T a, T b) const { return select(cond != 0, a, b); }
};

// mask ? value : x
template <class T>
struct MaskedFillOp {
  T value;
  EMBER_HOST_DEVICE T operator()(T x, uint8_t mask) const { return select(mask != 0, value, x); }
};

// relu's gradient (threshold_backward): grad where output > threshold, else +0. A NaN output
// compares false and gives 0; the blend never multiplies, so a NaN or infinite grad there gives
// 0 too. `threshold` is the dtype's value of the threshold, in the computing type.
template <class T>
struct ThresholdBackwardOp {
  opmath_t<T> threshold;
  EMBER_HOST_DEVICE T operator()(T grad, T output) const {
    using M = opmath_t<T>;
    return select(static_cast<M>(output) > threshold, grad, static_cast<T>(M(0)));
  }
};

// scatter_reduce's "mean": an accumulated sum v over count > 0 contributions (count <= 0: v
// unchanged), rounding down for integers.
template <class T>
struct ScatterMeanOp {
  EMBER_HOST_DEVICE T operator()(T v, int64_t count) const {
    using M = opmath_t<T>;
    if (count <= 0) return v;
    if constexpr (std::is_integral_v<M>) {
      // int8 is a signed char: the cast keeps its sign, which is meant here.
      const int64_t x = static_cast<int64_t>(v);  // NOLINT(bugprone-signed-char-misuse)
      int64_t q = x / count;
      if (x % count != 0 && x < 0) --q;  // floor, not truncation
      return static_cast<T>(q);
    } else {
      return convert<T>(static_cast<M>(v) / static_cast<M>(count));
    }
  }
};

}  // namespace ember::kernels::math
