#pragma once
// softmax / log_softmax along one dim, and one_hot.
//
// softmax(x, dim)     = exp(x - max) / sum(exp(x - max))       along dim
// log_softmax(x, dim) = (x - max) - log(sum(exp(x - max)))     along dim
// Subtracting the line's max keeps exp() from overflowing; a line holding +inf or NaN gives NaN,
// as in PyTorch. Floating inputs only (float16 / bfloat16 compute in float); every layout works
// and the result is a new contiguous tensor of the input's shape and dtype.
//
// one_hot(indices, num_classes): int64 indices of any shape (*) -> int64 (*, num_classes) with a
// 1 at each index. num_classes = -1 uses max(indices) + 1.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/softmax.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {
Tensor softmax(const Tensor& self, int64_t dim);
Tensor log_softmax(const Tensor& self, int64_t dim);
}  // namespace native
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// out (contiguous, shape of input) = softmax or log_softmax of input along dim.
using softmax_fn = void (*)(const Tensor& out, const Tensor& input, int64_t dim, bool log);
// out (zeros, (*, num_classes)) gets a 1 at [i, indices[i]] for every i of the flattened,
// contiguous indices (already checked to be in range).
using one_hot_fn = void (*)(const Tensor& out, const Tensor& indices, int64_t num_classes);
EMBER_DECLARE_DISPATCH(softmax_fn, softmax_stub);
EMBER_DECLARE_DISPATCH(one_hot_fn, one_hot_stub);

}  // namespace ember
