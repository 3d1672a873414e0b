#pragma once
// Random ops: random factories (rand, randn, randint, randperm, *_like), the in-place fills
// (uniform_, normal_, bernoulli_) and bernoulli(probabilities).
//
// Every op draws from a Generator (core/generator.h); gen = nullptr means the default generator
// of the output's device. Element i of a result (row-major over its logical shape, whatever the
// output's strides) is a pure function of the generator's seed, its offset when the op starts,
// and i -- Note [Philox streams] -- so results do not depend on the number of threads, and a
// saved generator state (get_state / set_state) replays them exactly.
//
// dtypes, as in PyTorch: rand/randn/uniform_/normal_ need a floating dtype (float16 and bfloat16
// are computed in float and rounded); randint takes every dtype (int64 by default); randperm
// every dtype but bool (int64 by default); bernoulli_ fills any dtype with 0/1; bernoulli(p)
// takes floating probabilities in [0, 1] and returns their dtype.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/random.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include "core/dispatch.h"
#include "core/generator.h"
#include "core/tensor.h"

namespace ember {

// Uniform on [0, 1).
Tensor rand(const Shape& sizes, const TensorOptions& options = {}, Generator* gen = nullptr);
// Standard normal.
Tensor randn(const Shape& sizes, const TensorOptions& options = {}, Generator* gen = nullptr);
// Integers uniform on [low, high) (dtype int64 unless options name another).
Tensor randint(int64_t low, int64_t high, const Shape& sizes, const TensorOptions& options = {},
               Generator* gen = nullptr);
Tensor randint(int64_t high, const Shape& sizes, const TensorOptions& options = {},
               Generator* gen = nullptr);
// A uniformly random permutation of 0 .. n-1 (dtype int64 unless options name another).
Tensor randperm(int64_t n, const TensorOptions& options = {}, Generator* gen = nullptr);
// rand / randn with t's shape, dtype and device (options override dtype/device).
Tensor rand_like(const Tensor& t, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, const TensorOptions& options = {}, Generator* gen = nullptr);

namespace native {
// In place; each bumps self's version. Overlapping outputs (expanded tensors) are refused.
// Uniform on [from, to); from <= to, both finite.
const Tensor& uniform_(const Tensor& self, double from = 0.0, double to = 1.0,
                       Generator* gen = nullptr);
// mean + std * N(0, 1); std >= 0.
const Tensor& normal_(const Tensor& self, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
// 1 with probability p, else 0; p in [0, 1].
const Tensor& bernoulli_(const Tensor& self, double p = 0.5, Generator* gen = nullptr);
}  // namespace native
// out[i] = 1 with probability probs[i] (every probability in [0, 1]); out has probs' shape and
// dtype.
Tensor bernoulli(const Tensor& probs, Generator* gen = nullptr);

// Kernels. `out` is contiguous and non-empty; `st` is the reserved Philox range.
using uniform_fn = void (*)(const Tensor& out, double from, double to, PhiloxState st);
using normal_fn = void (*)(const Tensor& out, double mean, double std, PhiloxState st);
using bernoulli_scalar_fn = void (*)(const Tensor& out, double p, PhiloxState st);
// probs: contiguous, out's shape and dtype. Throws when a probability is outside [0, 1].
using bernoulli_tensor_fn = void (*)(const Tensor& out, const Tensor& probs, PhiloxState st);
// out = low + draw % range (range = high - low > 0).
using randint_fn = void (*)(const Tensor& out, int64_t low, uint64_t range, PhiloxState st);
// out: 1-D of n elements.
using randperm_fn = void (*)(const Tensor& out, PhiloxState st);
EMBER_DECLARE_DISPATCH(uniform_fn, uniform_stub);
EMBER_DECLARE_DISPATCH(normal_fn, normal_stub);
EMBER_DECLARE_DISPATCH(bernoulli_scalar_fn, bernoulli_scalar_stub);
EMBER_DECLARE_DISPATCH(bernoulli_tensor_fn, bernoulli_tensor_stub);
EMBER_DECLARE_DISPATCH(randint_fn, randint_stub);
EMBER_DECLARE_DISPATCH(randperm_fn, randperm_stub);

}  // namespace ember
