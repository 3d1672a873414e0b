#pragma once
// What every autograd/ops/*.cpp file uses: the recorder (autograd/op.h), the in-place and view
// helpers (autograd/inplace.h), the public ops and, through them, the kernel-level ops of core/ops.

#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/op.h"
#include "autograd/ops/ops.h"

namespace ember {
using autograd::inplace_op;
using autograd::Op;
using autograd::Saved;
using autograd::Tensors;
}  // namespace ember
