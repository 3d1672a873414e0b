#pragma once
// Generator: the state of ember's random number streams, a counter-based Philox4x32-10 generator
// (kernels/math/philox.h) whose whole state is two numbers, (seed, offset). The state lives
// here, the math in kernels/math (Note [Where the generator's math lives] in
// kernels/math/philox.h).
//
//   ember::manual_seed(42);                        // seeds every device's default generator
//   auto x = ember::randn({2, 3});                 // draws from default_generator(kCPU)
//   ember::Generator g(7);                         // a private stream
//   auto y = ember::rand({4}, {}, &g);
//   auto saved = g.get_state();  ...  g.set_state(saved);   // replays the same numbers
//
// There is one default generator per device: the cpu, and one per CUDA device index (the table
// exists in every build, so a CUDA backend draws the same numbers as the CPU for the same seed).
//
// Note [Philox streams]
// Philox maps (key, 128-bit counter) to four 32-bit words, and different counters give
// independent words. ember uses key = seed and counter = a 64-bit block number, so a generator
// owns the infinite word stream
//     word k = word (k % 4) of Philox(seed, block = offset_0 + k / 4).
// A random op on a tensor of n elements
//   1. reserves B = ceil(n * W / 4) blocks: it reads the generator's offset and advances it by B
//      under the generator's mutex (Generator::reserve), so concurrent ops get disjoint blocks;
//   2. gives element i (in row-major order of the output's logical shape) the W words
//      i*W .. i*W + W - 1 of the stream starting at the reserved offset.
// So element i is a pure function of (seed, offset at the op's start, i): it does not depend on
// the thread count, the chunking of the CPU loop, or the CUDA launch shape, and a kernel can
// compute any element on its own (the CPU kernels compute one block, 4 / W elements, at a time).
//
// W, the words per element, and the mapping from words to values (kernels/math/philox.h):
//   uniform_ / rand   W = 2 for float64 (53-bit uniform), else 1 (a uniform with the type's
//                     significand bits: 24 float32, 11 float16, 8 bfloat16), then
//                     from + (to - from) * u; a value that rounds up to `to` becomes `from`.
//   normal_ / randn   as uniform; elements 2m and 2m+1 form a Box-Muller pair: u1 (in (0, 1])
//                     from element 2m's words, u2 from element 2m+1's, z = sqrt(-2 ln u1) *
//                     (cos, sin)(2 pi u2), value = mean + std * z. float16/bfloat16 compute in
//                     float and round. (Exact across devices up to the last ulp of log/cos.)
//   bernoulli         W = 1: value = (word * 2^-32 < p).
//   randint           W = 1 when high - low <= 2^32, else 2 (a 64-bit draw): low + draw % range.
//   randperm(n)       W = 2: element i gets a 64-bit key; the result is the indices sorted by
//                     (key, index).
//
// Thread safety: reserve, manual_seed, get_state and set_state lock the generator's mutex; the
// default-generator table has its own lock.

#include <cstdint>
#include <mutex>

#include "core/device.h"
#include "core/tensor.h"

namespace ember {

// PyTorch's default seed, so a fresh process starts from a fixed, documented stream.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

// The counter range one op reserved: Philox blocks [offset, offset + blocks) under key `seed`.
struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

class Generator {
 public:
  // A generator's state tensor: uint8 [16], the seed then the offset, little-endian.
  static constexpr int64_t kStateSize = 16;

  explicit Generator(uint64_t seed = kDefaultSeed, Device device = kCPU);
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  Device device() const { return device_; }

  // Restarts the stream: seed = s, offset = 0.
  void manual_seed(uint64_t s);
  uint64_t seed() const;
  uint64_t initial_seed() const { return seed(); }  // PyTorch's name for the same getter
  // The next unused Philox block.
  uint64_t offset() const;
  void set_offset(uint64_t offset);

  // Reserves `blocks` Philox blocks for one op (Note [Philox streams]): returns the seed and
  // the offset the op starts at, and advances the offset past them.
  PhiloxState reserve(uint64_t blocks);

  // The state as a cpu uint8 tensor of kStateSize bytes; set_state takes such a tensor back
  // (any 16 bytes: every seed and offset is valid) and throws ember::Error for any other
  // dtype, shape or device, leaving the generator as it was.
  Tensor get_state() const;
  void set_state(const Tensor& state);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  Device device_;
};

// Default generators: one for the cpu and one per CUDA device index (< kMaxCudaDevices).
constexpr int kMaxCudaDevices = 64;
Generator& default_generator(Device device = kCPU);

// Seeds the default generator of every device (like torch.manual_seed). CUDA generators that
// are first used later start from this seed too.
void manual_seed(uint64_t seed);

// The cpu default generator's state (torch.get_rng_state / torch.set_rng_state).
Tensor get_rng_state();
void set_rng_state(const Tensor& state);

}  // namespace ember
