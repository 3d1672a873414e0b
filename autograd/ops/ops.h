#pragma once
// Every public op of ember: the differentiable ones (autograd/ops/<family>.h) and, through
// them, the non-differentiable ones core defines (core/ops/<family>.h).
//
// Note [Where an op lives]
// An op has at most two functions, each declared once:
// - `ember::native::<op>` in core/ops/<family>.h (defined in core/ops/<family>.cpp): checks the
//   inputs, allocates the output, calls the kernel through its dispatch stub. It never records
//   a graph. Its declaration carries the op's documentation: shapes, dtypes, errors.
// - `ember::<op>` in autograd/ops/<family>.h (defined in autograd/ops/<family>.cpp): records
//   a node when an input requires grad, runs `native::<op>` and gives the derivative formula.
//   The `Tensor::<op>` method and the operators sit next to it.
// An op that autograd does not see (comparisons, logical and bitwise ops, isnan, factories,
// argmax, nonzero...) has only the public function, defined in core, with its methods.
//
// core/ and kernels/ call native functions and each other, never a recording op, so
// `ember_core` links and runs on its own (tests/core). The one permitted upward reference is
// the method declarations in core/tensor.h: `x.exp()` must read the same in every layer, as
// PyTorch's TensorBody.h declares methods that its autograd-generated code defines. Calling
// such a method from core compiles but fails to link: `ember_core` is linked with
// -Wl,--no-undefined (CMakeLists.txt), so an upward call is a link error.

#include "autograd/ops/binary.h"
#include "autograd/ops/conv.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/index.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/random.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unary.h"
#include "autograd/ops/view.h"
#include "core/ops/factory.h"
