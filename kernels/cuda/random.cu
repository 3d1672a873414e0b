// CUDA kernels for the random ops (core/ops/random.h): the same numbers as the CPU kernels
// (kernels/cpu/random.cpp) for the same generator state.
//
// Note [Philox on the device]
// Element i of a random op is a pure function of (seed, offset, i) (Note [Philox streams] in
// core/generator.h), so a CUDA kernel reproduces the CPU's output by computing the same
// function: thread b computes Philox block offset + b (kernels/math/philox.h's philox_block,
// compiled for the device) and writes the 4 / W elements of the output that block yields, with
// the CPU's word -> value maps (uniform_value, normal_pair, bernoulli_value, randint_value). The
// CPU kernels walk the blocks in chunks over the thread pool; here each block is one thread, and
// since no element depends on another block, the two devices agree element by element whatever
// the launch shape. The generator (state, offset advance) is core's and device-blind: the cuda
// default generator of each device (core/generator.cpp) is seeded by manual_seed like the cpu's,
// and a strided output is filled through a contiguous temporary by core before these kernels
// run, so `out` is always contiguous here.
//
// Bit-equality: the integer and uniform maps are exact on every device (add_mul_rn keeps nvcc
// from contracting from + (to - from) * u into an fma). normal_ also goes through log, cos and
// sin: the simulator uses the host's libm and so matches the CPU bit for bit; on a GPU, CUDA's
// logf / cosf / sinf (and the double versions) may differ from glibc's in the last ulp or two.

#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/random.h"
#include "kernels/cuda/common.cuh"
#include "kernels/math/philox.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// The elements block b yields: [first, first + count) of n, `per_block` = 4 / W a block.
struct BlockRange {
  int64_t first, count;
};
EMBER_HOST_DEVICE inline BlockRange block_range(int64_t b, int64_t per_block, int64_t n) {
  const int64_t first = b * per_block;
  const int64_t rest = n - first;
  return {first, rest < per_block ? rest : per_block};
}

// Thread b: op(words of Philox block offset + b, b) for b < blocks.
template <class Op>
__global__ void philox_kernel(int64_t blocks, uint64_t seed, uint64_t offset, Op op) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  const math::Philox4 r = math::philox_block(seed, offset + static_cast<uint64_t>(b));
  op(r.w, b);
}

// out[i] = uniform on [lo, hi) (W = uniform_words<T>).
template <class T>
struct UniformOp {
  T* out;
  int64_t n;
  math::random_acc_t<T> lo, hi;
  EMBER_HOST_DEVICE void operator()(const uint32_t* w, int64_t b) const {
    constexpr int W = math::uniform_words<T>;
    const BlockRange r = block_range(b, 4 / W, n);
    for (int64_t j = 0; j < r.count; ++j)
      out[r.first + j] = math::uniform_value<T>(w + j * W, lo, hi);
  }
};

// out[i] = mu + sigma * z, (2m, 2m+1) one Box-Muller pair inside the block; the second value of
// a trailing odd element's pair is dropped (as on the CPU).
template <class T>
struct NormalOp {
  T* out;
  int64_t n;
  math::random_acc_t<T> mu, sigma;
  EMBER_HOST_DEVICE void operator()(const uint32_t* w, int64_t b) const {
    constexpr int W = math::uniform_words<T>;
    const BlockRange r = block_range(b, 4 / W, n);
    for (int64_t j = 0; j < r.count; j += 2) {
      const auto z = math::normal_pair<T>(w + j * W);
      out[r.first + j] = static_cast<T>(math::add_mul_rn(mu, sigma, z.z0));
      if (j + 1 < r.count) out[r.first + j + 1] = static_cast<T>(math::add_mul_rn(mu, sigma, z.z1));
    }
  }
};

// out[i] = 1 with probability p (W = 1).
template <class T>
struct BernoulliScalarOp {
  T* out;
  int64_t n;
  double p;
  EMBER_HOST_DEVICE void operator()(const uint32_t* w, int64_t b) const {
    const BlockRange r = block_range(b, 4, n);
    for (int64_t j = 0; j < r.count; ++j)
      out[r.first + j] = static_cast<T>(math::bernoulli_value(w + j, p) ? 1 : 0);
  }
};

// out[i] = 1 with probability probs[i] (W = 1); a probability outside [0, 1] (or NaN) sets *bad
// (every writer writes 1) and its element is written 0.
template <class T>
struct BernoulliTensorOp {
  T* out;
  const T* probs;
  int64_t n;
  int* bad;
  EMBER_HOST_DEVICE void operator()(const uint32_t* w, int64_t b) const {
    const BlockRange r = block_range(b, 4, n);
    for (int64_t j = 0; j < r.count; ++j) {
      const double p = static_cast<double>(probs[r.first + j]);
      if (!(p >= 0.0 && p <= 1.0)) {
        *bad = 1;
        out[r.first + j] = static_cast<T>(0);
        continue;
      }
      out[r.first + j] = static_cast<T>(math::bernoulli_value(w + j, p) ? 1 : 0);
    }
  }
};

// out[i] = low + draw % range, W words a draw.
template <class T>
struct RandintOp {
  T* out;
  int64_t n;
  int words;
  int64_t low;
  uint64_t range;
  EMBER_HOST_DEVICE void operator()(const uint32_t* w, int64_t b) const {
    const BlockRange r = block_range(b, 4 / words, n);
    for (int64_t j = 0; j < r.count; ++j)
      out[r.first + j] = static_cast<T>(math::randint_value(w + j * words, words, low, range));
  }
};

// Launches op over the Philox blocks of n elements of `words` words each on out's device.
template <class Op>
void launch_philox(const char* name, const Tensor& out, int words, PhiloxState st, const Op& op) {
  const int64_t blocks =
      static_cast<int64_t>(math::philox_blocks(static_cast<uint64_t>(out.numel()), words));
  EMBER_CHECK(blocks / kThreads < INT32_MAX, name, ": ", out.numel(),
              " elements are too many for one CUDA launch");
  DeviceGuard guard(out.device());
  launch_kernel(name, &philox_kernel<Op>, dim3(blocks_for(blocks, kThreads)), dim3(kThreads), 0,
                current_stream(out.device()), blocks, st.seed, st.offset, op);
}

// out: contiguous, floating.
void uniform_kernel(const Tensor& out, double from, double to, PhiloxState st) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "uniform_", [&] {
    using acc_t = math::random_acc_t<scalar_t>;
    launch_philox("uniform_kernel", out, math::uniform_words<scalar_t>, st,
                  UniformOp<scalar_t>{out.data_ptr<scalar_t>(), out.numel(),
                                      static_cast<acc_t>(from), static_cast<acc_t>(to)});
  });
}

// out: contiguous, floating.
void normal_kernel(const Tensor& out, double mean, double std, PhiloxState st) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "normal_", [&] {
    using acc_t = math::random_acc_t<scalar_t>;
    launch_philox("normal_kernel", out, math::uniform_words<scalar_t>, st,
                  NormalOp<scalar_t>{out.data_ptr<scalar_t>(), out.numel(),
                                     static_cast<acc_t>(mean), static_cast<acc_t>(std)});
  });
}

// out: contiguous, any dtype; 0 or 1.
void bernoulli_scalar_kernel(const Tensor& out, double p, PhiloxState st) {
  EMBER_DISPATCH_ALL(out.dtype(), "bernoulli_", [&] {
    launch_philox("bernoulli_scalar_kernel", out, 1, st,
                  BernoulliScalarOp<scalar_t>{out.data_ptr<scalar_t>(), out.numel(), p});
  });
}

// out, probs: contiguous, same shape and floating dtype. An invalid probability raises as on the
// CPU; finding one costs a synchronisation (the flag is read back), and the message names the
// first such element, found on the host.
void bernoulli_tensor_kernel(const Tensor& out, const Tensor& probs, PhiloxState st) {
  Tensor bad = zeros({}, TensorOptions(kInt32).device(out.device()));
  EMBER_DISPATCH_FLOATING(out.dtype(), "bernoulli", [&] {
    launch_philox("bernoulli_tensor_kernel", out, 1, st,
                  BernoulliTensorOp<scalar_t>{out.data_ptr<scalar_t>(), probs.data_ptr<scalar_t>(),
                                              out.numel(), bad.data_ptr<int>()});
  });
  if (bad.item<int>() == 0) return;
  const Tensor host = native::to(probs, kCPU);
  EMBER_DISPATCH_FLOATING(host.dtype(), "bernoulli", [&] {
    const scalar_t* prob = host.data_ptr<scalar_t>();
    for (int64_t i = 0; i < host.numel(); ++i) {
      const double p = static_cast<double>(prob[i]);
      EMBER_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: expects every probability in [0, 1], got ", p,
                  " at element ", i);
    }
  });
}

// out: contiguous, any dtype; low + draw % range.
void randint_kernel(const Tensor& out, int64_t low, uint64_t range, PhiloxState st) {
  const int W = math::randint_words(range);
  EMBER_DISPATCH_ALL(out.dtype(), "randint", [&] {
    launch_philox("randint_kernel", out, W, st,
                  RandintOp<scalar_t>{out.data_ptr<scalar_t>(), out.numel(), W, low, range});
  });
}

// out: contiguous [n]. The permutation is the indices sorted by (64-bit key, index); ember has
// no device sort yet, so the cpu kernel sorts the same keys (drawn from the same Philox blocks)
// on the host and the result is copied to the device: the same permutation as on the cpu.
void randperm_kernel(const Tensor& out, PhiloxState st) {
  Tensor host = empty(out.sizes(), TensorOptions(out.dtype()));
  randperm_stub(DeviceType::CPU, host, st);
  native::copy_(out, host);
}

}  // namespace

EMBER_REGISTER_KERNEL(uniform_stub, DeviceType::CUDA, uniform_kernel);
EMBER_REGISTER_KERNEL(normal_stub, DeviceType::CUDA, normal_kernel);
EMBER_REGISTER_KERNEL(bernoulli_scalar_stub, DeviceType::CUDA, bernoulli_scalar_kernel);
EMBER_REGISTER_KERNEL(bernoulli_tensor_stub, DeviceType::CUDA, bernoulli_tensor_kernel);
EMBER_REGISTER_KERNEL(randint_stub, DeviceType::CUDA, randint_kernel);
EMBER_REGISTER_KERNEL(randperm_stub, DeviceType::CUDA, randperm_kernel);

}  // namespace ember::kernels::cuda
