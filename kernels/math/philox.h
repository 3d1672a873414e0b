#pragma once
// Philox4x32-10, the counter-based random number generator of Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3" (SC 2011), and the mappings from its 32-bit words to the values
// of ember's random ops. Everything here is a pure function marked EMBER_HOST_DEVICE, so the CPU
// kernels (kernels/cpu/random.cpp) and the CUDA kernels compute bit-identical words from the same
// (seed, offset, element index). How ember lays out its streams is Note [Philox streams] in
// core/generator.h.
//
// Philox4x32-10 maps a 128-bit counter and a 64-bit key to 128 random bits (four 32-bit words)
// with ten rounds of a multiply-xor bijection. Different counters give independent outputs, so
// element i of a tensor can be computed without computing elements 0..i-1.
//
// Note [Where the generator's math lives]
// A Generator has two halves. Its state -- (seed, offset), the mutex that makes reservations
// disjoint, the default generator of each device -- is core's (core/generator.h). Its math --
// the Philox rounds, the maps from words to uniform, normal, bernoulli and randint values, and
// the block arithmetic of a reservation (philox_blocks, kRandpermWords) -- is here, in
// kernels/math, because element i of a random op must be the same pure function of (seed,
// offset, i) on every device: the CPU kernels, the CUDA kernels (compiled by nvcc or by the
// simulator) and core/ops/random.cpp, which sizes each reservation, all read this one header.
// core including it is therefore not an upward arrow: kernels/math is the floor under core
// (both are ember_core), header-only, with no ember dependency but core's vocabulary headers
// (core/macros.h for EMBER_HOST_DEVICE, core/half.h, core/dtype.h and core/error.h), which
// include nothing else of ember. cmake/check_layers.cmake enforces exactly that list, so a
// functor can never reach for a Tensor. Moving the math into core instead would make every
// CUDA kernel include a core source for its random numbers, and the word-to-value maps would
// then sit apart from the functors that use them.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/half.h"
#include "core/macros.h"

namespace ember::kernels::math {

struct Philox4 {
  uint32_t w[4];
};

namespace philox_detail {
constexpr uint32_t kMul0 = 0xD2511F53u;  // round multipliers
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // key schedule increments (golden ratio, sqrt(3) - 1)
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

EMBER_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace philox_detail

// The raw generator: counter (c0..c3) and key (k0, k1) -> four words.
EMBER_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 ctr, uint32_t k0, uint32_t k1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr.w[0], hi0, lo0);
    mulhilo(kMul1, ctr.w[2], hi1, lo1);
    ctr = Philox4{{hi1 ^ ctr.w[1] ^ k0, lo1, hi0 ^ ctr.w[3] ^ k1, lo0}};
  }
  return ctr;
}

// ember's use of Philox (Note [Philox streams]): key = the 64-bit seed, counter = the 64-bit
// block number (low word first; the upper 64 counter bits are zero).
EMBER_HOST_DEVICE inline Philox4 philox_block(uint64_t seed, uint64_t block) {
  Philox4 ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}};
  return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Word k of the stream that starts at counter `offset`: word k % 4 of block offset + k / 4.
// (Kernels compute a whole block at once; this is the one-word form for references.)
EMBER_HOST_DEVICE inline uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t k) {
  return philox_block(seed, offset + k / 4).w[k % 4];
}

// a + b * c with two roundings, as the CPU computes it. nvcc would contract the expression into
// one fma (a single rounding) in device code, and the CUDA kernels' values would then differ
// from the CPU's in the last bit; the _rn intrinsics are never contracted.
EMBER_HOST_DEVICE inline float add_mul_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, __fmul_rn(b, c));
#else
  return a + b * c;
#endif
}
EMBER_HOST_DEVICE inline double add_mul_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, __dmul_rn(b, c));
#else
  return a + b * c;
#endif
}

// ---- words -> values --------------------------------------------------------------------------
// A 64-bit draw from two consecutive words (the first is the low half).
EMBER_HOST_DEVICE inline uint64_t words_to_u64(uint32_t lo, uint32_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Uniform in [0, 1) with `bits` random bits (1 <= bits <= 24): (w >> (32 - bits)) * 2^-bits.
// ember uses the significand width of the output type (24 float, 11 half, 8 bfloat16), so the
// value is exact in that type and [0, 1) samples can never round up to 1.
EMBER_HOST_DEVICE inline float uniform_float(uint32_t w, int bits) {
  return static_cast<float>(w >> (32 - bits)) * (1.0f / static_cast<float>(1u << bits));
}

// Uniform in [0, 1) with 53 random bits, for float64.
EMBER_HOST_DEVICE inline double uniform_double(uint64_t u) {
  return static_cast<double>(u >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

// Uniform in (0, 1]: never 0, so log() is finite (Box-Muller's radius).
EMBER_HOST_DEVICE inline float uniform_float_open0(uint32_t w) {
  return static_cast<float>((w >> 8) + 1u) * (1.0f / 16777216.0f);  // 2^-24
}
EMBER_HOST_DEVICE inline double uniform_double_open0(uint64_t u) {
  return static_cast<double>((u >> 11) + 1u) * (1.0 / 9007199254740992.0);
}

// Uniform in [0, 1) with 32 bits as a double (bernoulli's comparison with p).
EMBER_HOST_DEVICE inline double uniform_u32_double(uint32_t w) {
  return static_cast<double>(w) * (1.0 / 4294967296.0);  // 2^-32
}

// Box-Muller: two uniforms -> two independent standard normals
// (z0, z1) = sqrt(-2 log u1) * (cos 2 pi u2, sin 2 pi u2), u1 in (0, 1], u2 in [0, 1).
template <class T>
struct NormalPair {
  T z0, z1;
};
template <class T>
EMBER_HOST_DEVICE inline NormalPair<T> box_muller(T u1, T u2);
template <>
EMBER_HOST_DEVICE inline NormalPair<float> box_muller<float>(float u1, float u2) {
  float r = std::sqrt(-2.0f * std::log(u1));
  float theta = 6.2831853071795864769f * u2;
  return {r * std::cos(theta), r * std::sin(theta)};
}
template <>
EMBER_HOST_DEVICE inline NormalPair<double> box_muller<double>(double u1, double u2) {
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 6.2831853071795864769 * u2;
  return {r * std::cos(theta), r * std::sin(theta)};
}

// ---- element values (Note [Philox streams] in core/generator.h) ------------------------------
// Each function gets a pointer to the element's first word; W is the words per element.

// Random bits in a uniform sample of T: its significand width, so [0, 1) stays below 1.
template <class T>
struct UniformBits {
  static constexpr int value = 24;
};  // float
template <>
struct UniformBits<Half> {
  static constexpr int value = 11;
};
template <>
struct UniformBits<BFloat16> {
  static constexpr int value = 8;
};

// The type random values are computed in: double for float64, float for every other float.
template <class T>
using random_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Words per element of uniform_ / normal_ for T.
template <class T>
constexpr int uniform_words = std::is_same_v<T, double> ? 2 : 1;

// uniform_: from + (to - from) * u rounded to T, in [from, to) (a value that rounds up to `to`
// becomes `from`).
template <class T>
EMBER_HOST_DEVICE inline T uniform_value(const uint32_t* w, random_acc_t<T> from,
                                         random_acc_t<T> to) {
  if constexpr (std::is_same_v<T, double>) {
    double v = add_mul_rn(from, to - from, uniform_double(words_to_u64(w[0], w[1])));
    return v < to ? v : from;
  } else {
    T v = static_cast<T>(add_mul_rn(from, to - from, uniform_float(w[0], UniformBits<T>::value)));
    return static_cast<float>(v) < to ? v : static_cast<T>(from);
  }
}

// normal_: the Box-Muller pair of elements 2m and 2m+1; w points at element 2m's words and
// element 2m+1's follow (uniform_words<T> each).
template <class T>
EMBER_HOST_DEVICE inline NormalPair<random_acc_t<T>> normal_pair(const uint32_t* w) {
  if constexpr (std::is_same_v<T, double>) {
    return box_muller<double>(uniform_double_open0(words_to_u64(w[0], w[1])),
                              uniform_double(words_to_u64(w[2], w[3])));
  } else {
    return box_muller<float>(uniform_float_open0(w[0]), uniform_float(w[1], 24));
  }
}

// bernoulli: 1 with probability p (W = 1).
EMBER_HOST_DEVICE inline bool bernoulli_value(const uint32_t* w, double p) {
  return uniform_u32_double(w[0]) < p;
}

// randint: W = 1 while range <= 2^32, else 2; the result is low + draw % range.
EMBER_HOST_DEVICE inline int randint_words(uint64_t range) {
  return range > (uint64_t{1} << 32) ? 2 : 1;
}
EMBER_HOST_DEVICE inline int64_t randint_value(const uint32_t* w, int words, int64_t low,
                                               uint64_t range) {
  uint64_t draw = words == 1 ? w[0] : words_to_u64(w[0], w[1]);
  return static_cast<int64_t>(static_cast<uint64_t>(low) + draw % range);
}

// randperm: W = 2, a 64-bit sort key per element.
constexpr int kRandpermWords = 2;
EMBER_HOST_DEVICE inline uint64_t randperm_key(const uint32_t* w) {
  return words_to_u64(w[0], w[1]);
}

// Philox blocks an op over n elements of W words reserves (a Box-Muller pair never straddles
// blocks: 2 * W divides 4).
EMBER_HOST_DEVICE inline uint64_t philox_blocks(uint64_t n, int words) {
  return (n * static_cast<uint64_t>(words) + 3) / 4;
}

}  // namespace ember::kernels::math
