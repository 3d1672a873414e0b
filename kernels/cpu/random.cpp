// CPU kernels for the random ops (core/ops/random.h).
//
// Every kernel walks the Philox blocks the op reserved (Note [Philox streams] in
// core/generator.h): block b yields the 4 / W elements b * (4 / W) ... of the output, W being the
// words per element. The blocks are split over the thread pool anywhere, and each element's value
// depends only on its own words, so the result never depends on the number of threads. The
// word -> value mappings are the shared functions of kernels/math/philox.h.

#include "core/ops/random.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/parallel.h"
#include "kernels/math/philox.h"

namespace ember::kernels::cpu {

namespace {

// Philox blocks per parallel_for grain (a block is 20 32-bit multiplies).
constexpr int64_t kBlockGrain = 4096;

// Calls fn(w, first, count) for every block of an op over n elements of `words` words each:
// w holds the block's four words, `first` is the block's first element and `count` (at most
// 4 / words) how many of its elements exist.
template <class F>
void for_each_block(int64_t n, int words, PhiloxState st, const F& fn) {
  const int64_t per_block = 4 / words;
  const int64_t blocks = (n + per_block - 1) / per_block;
  parallel_for(0, blocks, kBlockGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const math::Philox4 r = math::philox_block(st.seed, st.offset + static_cast<uint64_t>(b));
      const int64_t first = b * per_block;
      fn(r.w, first, std::min(per_block, n - first));
    }
  });
}

// out: contiguous, floating.
void uniform_kernel(const Tensor& out, double from, double to, PhiloxState st) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "uniform_", [&] {
    using acc_t = math::random_acc_t<scalar_t>;
    constexpr int W = math::uniform_words<scalar_t>;
    const acc_t lo = static_cast<acc_t>(from);
    const acc_t hi = static_cast<acc_t>(to);
    scalar_t* y = out.data_ptr<scalar_t>();
    for_each_block(out.numel(), W, st, [&](const uint32_t* w, int64_t first, int64_t count) {
      for (int64_t j = 0; j < count; ++j)
        y[first + j] = math::uniform_value<scalar_t>(w + j * W, lo, hi);
    });
  });
}

// out: contiguous, floating. Elements (2m, 2m+1) are one Box-Muller pair, never split across
// blocks; the second value of a trailing odd element's pair is dropped.
void normal_kernel(const Tensor& out, double mean, double std, PhiloxState st) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "normal_", [&] {
    using acc_t = math::random_acc_t<scalar_t>;
    constexpr int W = math::uniform_words<scalar_t>;
    const acc_t mu = static_cast<acc_t>(mean);
    const acc_t sigma = static_cast<acc_t>(std);
    scalar_t* y = out.data_ptr<scalar_t>();
    for_each_block(out.numel(), W, st, [&](const uint32_t* w, int64_t first, int64_t count) {
      for (int64_t j = 0; j < count; j += 2) {
        const auto z = math::normal_pair<scalar_t>(w + j * W);
        y[first + j] = static_cast<scalar_t>(mu + sigma * z.z0);
        if (j + 1 < count) y[first + j + 1] = static_cast<scalar_t>(mu + sigma * z.z1);
      }
    });
  });
}

// out: contiguous, any dtype; 0 or 1.
void bernoulli_scalar_kernel(const Tensor& out, double p, PhiloxState st) {
  EMBER_DISPATCH_ALL(out.dtype(), "bernoulli_", [&] {
    scalar_t* y = out.data_ptr<scalar_t>();
    for_each_block(out.numel(), 1, st, [&](const uint32_t* w, int64_t first, int64_t count) {
      for (int64_t j = 0; j < count; ++j)
        y[first + j] = static_cast<scalar_t>(math::bernoulli_value(w + j, p) ? 1 : 0);
    });
  });
}

// out, probs: contiguous, same shape and floating dtype.
void bernoulli_tensor_kernel(const Tensor& out, const Tensor& probs, PhiloxState st) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "bernoulli", [&] {
    scalar_t* y = out.data_ptr<scalar_t>();
    const scalar_t* prob = probs.data_ptr<scalar_t>();
    for_each_block(out.numel(), 1, st, [&](const uint32_t* w, int64_t first, int64_t count) {
      for (int64_t j = 0; j < count; ++j) {
        const double p = static_cast<double>(prob[first + j]);
        EMBER_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: expects every probability in [0, 1], got ", p,
                    " at element ", first + j);
        y[first + j] = static_cast<scalar_t>(math::bernoulli_value(w + j, p) ? 1 : 0);
      }
    });
  });
}

// out: contiguous, any dtype; low + draw % range.
void randint_kernel(const Tensor& out, int64_t low, uint64_t range, PhiloxState st) {
  const int W = math::randint_words(range);
  EMBER_DISPATCH_ALL(out.dtype(), "randint", [&] {
    scalar_t* y = out.data_ptr<scalar_t>();
    for_each_block(out.numel(), W, st, [&](const uint32_t* w, int64_t first, int64_t count) {
      for (int64_t j = 0; j < count; ++j)
        y[first + j] = static_cast<scalar_t>(math::randint_value(w + j * W, W, low, range));
    });
  });
}

// out: contiguous [n]. Sorts 0..n-1 by (random 64-bit key, index): a uniform permutation that
// any device reproduces with a stable sort of the same keys.
void randperm_kernel(const Tensor& out, PhiloxState st) {
  const int64_t n = out.numel();
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  constexpr int W = math::kRandpermWords;
  for_each_block(n, W, st, [&](const uint32_t* w, int64_t first, int64_t count) {
    for (int64_t j = 0; j < count; ++j) keys[first + j] = math::randperm_key(w + j * W);
  });
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::sort(perm.begin(), perm.end(),
            [&](int64_t a, int64_t b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; });
  EMBER_DISPATCH_NUMERIC(out.dtype(), "randperm", [&] {
    scalar_t* y = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<scalar_t>(perm[i]);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(uniform_stub, DeviceType::CPU, uniform_kernel);
EMBER_REGISTER_KERNEL(normal_stub, DeviceType::CPU, normal_kernel);
EMBER_REGISTER_KERNEL(bernoulli_scalar_stub, DeviceType::CPU, bernoulli_scalar_kernel);
EMBER_REGISTER_KERNEL(bernoulli_tensor_stub, DeviceType::CPU, bernoulli_tensor_kernel);
EMBER_REGISTER_KERNEL(randint_stub, DeviceType::CPU, randint_kernel);
EMBER_REGISTER_KERNEL(randperm_stub, DeviceType::CPU, randperm_kernel);

}  // namespace ember::kernels::cpu
