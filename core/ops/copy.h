#pragma once
// Copies and conversions: copy_ (with dtype conversion and broadcasting of the source), fill_,
// zero_, contiguous, clone, to(dtype / device).
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/copy.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

class TensorIter;

namespace native {
// Copies src into dst (src broadcasts to dst's shape; dtypes may differ). Bumps dst's version.
// Between the host and a device the copy is finished when it returns, unless non_blocking and the
// host tensor is pinned (Note [Pinned host memory] in core/allocator.h): then it is queued on the
// device's current stream and the caller synchronises before touching the host memory, as with
// PyTorch's non_blocking=True.
const Tensor& copy_(const Tensor& dst, const Tensor& src, bool non_blocking = false);
const Tensor& fill_(const Tensor& t, const Scalar& value);
const Tensor& zero_(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to(const Tensor& t, Device device, DType dtype, bool non_blocking = false);
// The two one-change forms of to(), as Tensor::to(DType) and Tensor::to(Device).
inline Tensor to(const Tensor& t, DType dtype) { return to(t, t.device(), dtype); }
inline Tensor to(const Tensor& t, Device device) { return to(t, device, t.dtype()); }
}  // namespace native

// A copy of a CPU tensor in page-locked host memory (Note [Pinned host memory] in
// core/allocator.h), from which copies to a device can run asynchronously (copy_ with
// non_blocking). The tensor itself when it is pinned already. Needs the CUDA backend.
Tensor pin_memory(const Tensor& t);
// Whether t's storage is page-locked host memory.
bool is_pinned(const Tensor& t);

// copy_stub has one kernel per (source, destination) device-type pair (Note [Device-pair stubs]
// in core/dispatch.h): iter's output 0 is the destination, input 1 the source, each on its own
// device when they differ (TensorIterConfig::check_all_same_device(false)); the kernel converts
// dtypes. kernels/cpu fills (CPU, CPU); kernels/cuda/copy.cu the pairs with CUDA. non_blocking is
// copy_'s (a CPU copy ignores it).
using copy_fn = void (*)(TensorIter& iter, bool non_blocking);
using fill_fn = void (*)(TensorIter& iter, const Scalar& value);
EMBER_DECLARE_DEVICE_PAIR_DISPATCH(copy_fn, copy_stub);
EMBER_DECLARE_DISPATCH(fill_fn, fill_stub);

}  // namespace ember
