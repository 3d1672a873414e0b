#pragma once
// Reduction math shared by the CPU reduction engine (kernels/cpu/reduce_utils.h) and, later, the
// CUDA one. A reduction op is a small struct:
//
//   using in_t  = ...;                          // what each element is converted to on load
//   using acc_t = ...;                          // the running state
//   acc_t identity() const;                     // the state of an empty reduction
//   acc_t reduce(acc_t acc, in_t x, int64_t i) const;  // fold in element x at reduced index i
//   acc_t combine(acc_t a, acc_t b) const;      // merge two states; `a` covers lower indices
//
// combine() must be associative: the engine folds elements into several partial states (SIMD
// lanes, pairwise blocks, per-thread chunks) and merges them in a fixed tree, which is what keeps
// a float32 sum of 10^7 elements accurate (Note [Pairwise summation] in reduce_utils.h) and the
// result independent of the number of threads. The index `i` is only used by argmax/argmin: it
// increases along each partial state, and combine() breaks ties towards the lower index, so the
// first extremal element wins as in PyTorch.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/math/common.h"

namespace ember::kernels::math {

// The smallest / largest value of A, infinities for floating types.
template <class A>
EMBER_HOST_DEVICE constexpr A lowest_value() {
  if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::lowest();
}
template <class A>
EMBER_HOST_DEVICE constexpr A highest_value() {
  if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::max();
}

// ---- accumulator and result types, shared by the CPU and CUDA kernels --------------------------

// Integer and bool sums and products accumulate (and return) int64; floats accumulate in opmath
// (float for float16 and bfloat16).
template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;
template <class T>
using sum_out_t = std::conditional_t<std::is_integral_v<T>, int64_t, T>;

// Scans (cumsum, cumprod) accumulate in a wide type: double for float32 and float64 (as
// PyTorch's CPU cumsum), float for the 16-bit floats, int64 for integers; they return sum_out_t.
template <class T>
using scan_acc_t =
    std::conditional_t<std::is_integral_v<T>, int64_t,
                       std::conditional_t<std::is_same_v<T, float>, double, opmath_t<T>>>;

// ---- sums and products ---------------------------------------------------------------------

template <class A>
struct SumOp {
  using in_t = A;
  using acc_t = A;
  EMBER_HOST_DEVICE A identity() const { return A(0); }
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return wrapping_add(acc, x); }
  EMBER_HOST_DEVICE A combine(A a, A b) const { return wrapping_add(a, b); }
};

template <class A>
struct ProdOp {
  using in_t = A;
  using acc_t = A;
  EMBER_HOST_DEVICE A identity() const { return A(1); }
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return wrapping_mul(acc, x); }
  EMBER_HOST_DEVICE A combine(A a, A b) const { return wrapping_mul(a, b); }
};

// Sum of |x| (the 1-norm).
template <class A>
struct AbsSumOp : SumOp<A> {
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return acc + (x < A(0) ? -x : x); }
};

// Sum of x^2 (the 2-norm before its square root).
template <class A>
struct SquareSumOp : SumOp<A> {
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return acc + x * x; }
};

// Sum of |x|^p (the p-norm before its p-th root).
template <class A>
struct PowSumOp : SumOp<A> {
  A p;
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const {
    return acc + std::pow(x < A(0) ? -x : x, p);
  }
};

// ---- mean and variance (Welford, merged with Chan et al.'s formula) -------------------------

template <class A>
struct WelfordState {
  A mean;
  A m2;  // sum of squared deviations from the mean
  int64_t n;
};

template <class A>
struct WelfordOp {
  using in_t = A;
  using acc_t = WelfordState<A>;
  EMBER_HOST_DEVICE acc_t identity() const { return {A(0), A(0), 0}; }
  EMBER_HOST_DEVICE acc_t reduce(acc_t s, A x, int64_t) const {
    s.n += 1;
    A delta = x - s.mean;
    s.mean += delta / static_cast<A>(s.n);
    s.m2 += delta * (x - s.mean);
    return s;
  }
  // n contiguous values at once: their mean, then the squared deviations from it (exact
  // two-pass statistics for a short block, and no division per element).
  EMBER_HOST_DEVICE acc_t block_reduce(const A* x, int64_t n) const {
    if (n == 0) return identity();
    // Four independent partial sums per pass, so the additions pipeline.
    A s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int l = 0; l < 4; ++l) s[l] += x[i + l];
    for (; i < n; ++i) s[0] += x[i];
    const A mean = ((s[0] + s[1]) + (s[2] + s[3])) / static_cast<A>(n);
    A q[4] = {0, 0, 0, 0};
    for (i = 0; i + 4 <= n; i += 4)
      for (int l = 0; l < 4; ++l) q[l] += (x[i + l] - mean) * (x[i + l] - mean);
    for (; i < n; ++i) q[0] += (x[i] - mean) * (x[i] - mean);
    return {mean, (q[0] + q[1]) + (q[2] + q[3]), n};
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    int64_t n = a.n + b.n;
    A nb_over_n = static_cast<A>(b.n) / static_cast<A>(n);
    A delta = b.mean - a.mean;
    return {a.mean + delta * nb_over_n,
            a.m2 + b.m2 + delta * delta * static_cast<A>(a.n) * nb_over_n, n};
  }
  // m2 / max(0, n - correction), as PyTorch (0/0 = nan for a single element with correction 1).
  EMBER_HOST_DEVICE static A variance(const acc_t& s, int64_t correction) {
    int64_t d = s.n - correction;
    return s.m2 / static_cast<A>(d > 0 ? d : 0);
  }
};

// ---- extrema --------------------------------------------------------------------------------

// max (kMax) or min of the values; a NaN wins, as in PyTorch.
template <class A, bool kMax>
struct MinMaxOp {
  using in_t = A;
  using acc_t = A;
  EMBER_HOST_DEVICE A identity() const { return kMax ? lowest_value<A>() : highest_value<A>(); }
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return combine(acc, x); }
  // Written as one select so that it vectorises: a wins when it is NaN or strictly better,
  // otherwise b (which is then NaN, better, or equal).
  EMBER_HOST_DEVICE A combine(A a, A b) const {
    if constexpr (kMax) {
      return (is_nan(a) || a > b) ? a : b;
    } else {
      return (is_nan(a) || a < b) ? a : b;
    }
  }
};

// max |x| (the infinity norm); a NaN wins.
template <class A>
struct AbsMaxOp {
  using in_t = A;
  using acc_t = A;
  EMBER_HOST_DEVICE A identity() const { return A(0); }
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return combine(acc, x < A(0) ? -x : x); }
  EMBER_HOST_DEVICE A combine(A a, A b) const { return (is_nan(a) || a > b) ? a : b; }
};

// min |x| (the -infinity norm); a NaN wins. No identity: an empty reduction is refused.
template <class A>
struct AbsMinOp {
  using in_t = A;
  using acc_t = A;
  EMBER_HOST_DEVICE A identity() const { return A(INFINITY); }
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return combine(acc, x < A(0) ? -x : x); }
  EMBER_HOST_DEVICE A combine(A a, A b) const { return (is_nan(a) || a < b) ? a : b; }
};

// The number of non-zero elements (the 0-"norm"); a NaN is non-zero.
template <class A>
struct NonzeroCountOp : SumOp<A> {
  EMBER_HOST_DEVICE A reduce(A acc, A x, int64_t) const { return acc + (x != A(0) ? A(1) : A(0)); }
};

template <class A>
struct ValueIndex {
  A value;
  int64_t index;  // -1: no element seen yet
};

// argmax (kMax) / argmin with the value: the first extremal element wins; the first NaN wins
// over everything, as in PyTorch.
template <class A, bool kMax>
struct ArgMinMaxOp {
  using in_t = A;
  using acc_t = ValueIndex<A>;
  EMBER_HOST_DEVICE acc_t identity() const { return {A(0), -1}; }
  // Elements arrive in increasing index order, so a tie keeps acc.
  EMBER_HOST_DEVICE acc_t reduce(acc_t acc, A x, int64_t i) const {
    bool better = kMax ? x > acc.value : x < acc.value;
    bool take = acc.index < 0 || better || (is_nan(x) && !is_nan(acc.value));
    return take ? acc_t{x, i} : acc;
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index < b.index ? a : b;
      return a_nan ? a : b;
    }
    bool b_better = kMax ? b.value > a.value : b.value < a.value;
    if (b_better) return b;
    if (b.value == a.value && b.index < a.index) return b;
    return a;
  }
};

// ---- logsumexp ------------------------------------------------------------------------------

template <class A>
struct MaxSumExp {
  A max;
  A sum;  // sum of exp(x - max)
};

// Online logsumexp: keeps the running max and the sum of exp(x - max), rescaling the sum when
// the max grows, so no element's exp overflows. Infinities and NaN behave like PyTorch's
// log(sum(exp(x))): +inf anywhere gives +inf, all -inf gives -inf, NaN gives NaN.
template <class A>
struct LogSumExpOp {
  using in_t = A;
  using acc_t = MaxSumExp<A>;
  EMBER_HOST_DEVICE acc_t identity() const { return {lowest_value<A>(), A(0)}; }
  EMBER_HOST_DEVICE acc_t reduce(acc_t acc, A x, int64_t) const { return combine(acc, {x, A(1)}); }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (b.sum == A(0)) return a;
    if (a.sum == A(0)) return b;
    if (is_nan(a.max) || is_nan(b.max)) {
      A nan = std::numeric_limits<A>::quiet_NaN();
      return {nan, nan};
    }
    if (a.max == b.max) return {a.max, a.sum + b.sum};  // also +-inf == +-inf
    if (a.max > b.max) return {a.max, a.sum + b.sum * std::exp(b.max - a.max)};
    return {b.max, b.sum + a.sum * std::exp(a.max - b.max)};
  }
  EMBER_HOST_DEVICE static A result(const acc_t& s) {
    if (s.sum == A(0)) return lowest_value<A>();  // empty: log(0)
    return s.max + std::log(s.sum);
  }
};

// ---- logical --------------------------------------------------------------------------------

template <class A, bool kAll>
struct AllAnyOp {
  using in_t = A;
  using acc_t = bool;
  EMBER_HOST_DEVICE bool identity() const { return kAll; }
  EMBER_HOST_DEVICE bool reduce(bool acc, A x, int64_t) const {
    return kAll ? (acc && x != A(0)) : (acc || x != A(0));
  }
  EMBER_HOST_DEVICE bool combine(bool a, bool b) const { return kAll ? (a && b) : (a || b); }
};

}  // namespace ember::kernels::math
