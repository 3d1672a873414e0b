#pragma once
// Checked int64 arithmetic for shapes, strides, element and byte counts.
//
// Note [Sizes that overflow]
// Every size computation that a user's numbers reach (a factory's shape, view/reshape/expand,
// cat/stack, repeat, unfold, conv and pool output sizes, arange/linspace lengths, a storage's
// byte count) goes through these helpers, so that a shape whose element count does not fit in
// int64 is an ember::Error naming the op and the shape instead of a numel that wrapped to 0 or
// to a negative number (and a segfault at the first index). Signed overflow is undefined
// behaviour in C++, so the check is made before the fact with the compiler's overflow builtins,
// not by looking at the wrapped result. Negative sizes are refused where shapes come in
// (shape_numel in core/tensor.h).

#include <cstdint>

#include "core/error.h"
#include "core/macros.h"

namespace ember {

// The product of `sizes` (a container of int64) into *n: 0 when any size is 0, however large the
// others; false when it overflows int64 or a size is negative. Inline, because
// every new tensor computes its numel with it (Note [Per-op overhead] in core/tensor_iter.cpp).
template <class Sizes>
inline bool numel_fits(const Sizes& sizes, int64_t* n) {
  int64_t r = 1;
  bool negative = false, zero = false, overflow = false;
  for (int64_t s : sizes) {
    negative |= s < 0;
    zero |= s == 0;
    overflow |= __builtin_mul_overflow(r, s, &r);
  }
  *n = zero ? 0 : r;
  return !negative && (zero || !overflow);
}

// a * b, or an ember::Error "<op>: <what> overflows int64 (a * b)".
inline int64_t checked_mul(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_mul_overflow(a, b, &r), op, ": ", what, " overflows int64 (", a, " * ", b,
              ")");
  return r;
}

// a + b, or an ember::Error "<op>: <what> overflows int64 (a + b)".
inline int64_t checked_add(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_add_overflow(a, b, &r), op, ": ", what, " overflows int64 (", a, " + ", b,
              ")");
  return r;
}

// a - b, or an ember::Error "<op>: <what> overflows int64 (a - b)".
inline int64_t checked_sub(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r = 0;
  EMBER_CHECK(!__builtin_sub_overflow(a, b, &r), op, ": ", what, " overflows int64 (", a, " - ", b,
              ")");
  return r;
}

}  // namespace ember
