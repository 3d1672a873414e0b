// Public ops of the random family (core/ops/random.h): forward = native::, plus autograd.
//
// The in-place fills overwrite their target: like fill_ (autograd/ops/copy.cpp), the old value
// gets no gradient, and the new one is a sample, not a function of anything differentiable.
// Under autograd they run through inplace_op, whose out-of-place twin draws into a fresh tensor:
// element i of a draw depends only on the generator state and i (Note [Philox streams]), so the
// values are the ones the native in-place fill would have written.

#include "autograd/ops/random.h"

#include "autograd/ops/common.h"

namespace ember {

namespace {

// A fresh tensor like `old`, filled by `draw`, recorded as `name` with no gradient to `old`.
template <class Draw>
Tensor drawn_like(const char* name, const Tensor& old, Draw&& draw) {
  Op op(name, old);
  Tensor y = op.run([&] {
    Tensor r = empty_like(old);
    draw(r);
    return r;
  });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors&) -> Tensors { return {Tensor()}; });
  return y;
}

}  // namespace

const Tensor& uniform_(const Tensor& self, double from, double to, Generator* gen) {
  return inplace_op(
      "uniform_", self, [&] { native::uniform_(self, from, to, gen); },
      [&](const Tensor& old) {
        return drawn_like("UniformBackward", old,
                          [&](const Tensor& r) { native::uniform_(r, from, to, gen); });
      });
}
const Tensor& normal_(const Tensor& self, double mean, double std, Generator* gen) {
  return inplace_op(
      "normal_", self, [&] { native::normal_(self, mean, std, gen); },
      [&](const Tensor& old) {
        return drawn_like("NormalBackward", old,
                          [&](const Tensor& r) { native::normal_(r, mean, std, gen); });
      });
}
const Tensor& bernoulli_(const Tensor& self, double p, Generator* gen) {
  return inplace_op(
      "bernoulli_", self, [&] { native::bernoulli_(self, p, gen); },
      [&](const Tensor& old) {
        return drawn_like("BernoulliBackward", old,
                          [&](const Tensor& r) { native::bernoulli_(r, p, gen); });
      });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
const Tensor& Tensor::uniform_(double from, double to, Generator* gen) const {
  return ember::uniform_(*this, from, to, gen);
}
const Tensor& Tensor::normal_(double mean, double std, Generator* gen) const {
  return ember::normal_(*this, mean, std, gen);
}
const Tensor& Tensor::bernoulli_(double p, Generator* gen) const {
  return ember::bernoulli_(*this, p, gen);
}

}  // namespace ember
