#pragma once
// What every autograd/ops/*.cpp file uses: the recorder (autograd/op.h), the in-place and view
// helpers (autograd/inplace.h) and the kernel-level ops of core/ops.

#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/op.h"
#include "core/ops/binary.h"
#include "core/ops/conv.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/linalg.h"
#include "core/ops/random.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/ops/softmax.h"
#include "core/ops/unary.h"
#include "core/ops/view.h"

namespace ember {
using autograd::inplace_op;
using autograd::Op;
using autograd::Saved;
using autograd::Tensors;
}  // namespace ember
