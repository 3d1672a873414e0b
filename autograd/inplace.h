#pragma once
// In-place ops and views under autograd.
//
// Note [In-place checks]
// With grad mode on, writing in place into
// - a leaf that requires grad is refused (its .grad would describe a value that is gone);
// - a view of such a leaf is refused for the same reason;
// - a view made under no_grad from a tensor that requires grad is refused (its history is
//   unknown);
// - an inference tensor is refused outside InferenceMode.
//
// Note [In-place on non-leaves]
// An in-place op that must be recorded runs as its out-of-place twin on a clone of `self`
// (so the formula may save the old value), and the result becomes self's new value *and*
// history (rebase_history): self.grad_fn() is now the op's node, whose edge leads through the
// clone to self's old history. When self is a view (Note [View tracking] in autograd/meta.h),
// its base gets a CopySlices node instead: the gradient of the base flows unchanged outside the
// view's region, and through the op's backward inside it. Without grad, the native in-place
// kernel runs directly.

#include "autograd/meta.h"
#include "autograd/node.h"

namespace ember::autograd {

// Throws ember::Error when `self` may not be written in place by `op` (Note [In-place checks]).
void check_inplace(const Tensor& self, const char* op);

// Makes `result` (a recorded out-of-place result) the new value and history of `self`.
void rebase_history(const Tensor& self, const Tensor& result);

// The generic in-place op (Note [In-place on non-leaves]). `native()` writes self in place;
// `out_of_place(self_value)` computes the same value as a new, recorded tensor.
template <class Native, class OutOfPlace, class... Ts>
const Tensor& inplace_op(const char* op, const Tensor& self, Native&& native,
                         OutOfPlace&& out_of_place, const Ts&... others) {
  check_inplace(self, op);
  if (!detail::grad_mode_enabled ||
      !(requires_grad_fast(self) || ... || requires_grad_fast(others))) {
    native();
    return self;
  }
  rebase_history(self, out_of_place(self.clone()));
  return self;
}

// Every view op calls this on its result: remembers the base (Note [View tracking]).
void track_view(const Tensor& view, const Tensor& input);

// Where a tensor lies in its storage.
struct Geometry {
  Shape sizes, strides;
  int64_t offset = 0;
  static Geometry of(const Tensor& t) { return {t.sizes(), t.strides(), t.storage_offset()}; }
};

// For a view with geometry `view` over the storage of a tensor with geometry `t`: the linear
// (row-major) index into that tensor of each element of the view, as an int64 tensor of the
// view's shape. Used by the backward of views and by CopySlices. A view element outside the
// tensor is an error.
Tensor view_positions(const Geometry& t, const Geometry& view);

// The gradient of a view op: `grad` (the view's shape) placed into zeros of the input's shape,
// elements the view repeats (unfold, as_strided) summed. Differentiable.
Tensor view_backward(const Tensor& grad, const Geometry& input, const Geometry& view);

}  // namespace ember::autograd
