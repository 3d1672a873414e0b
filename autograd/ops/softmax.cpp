// Public ops of the softmax family (core/ops/softmax.h): forward = native::, plus autograd.
//
// Both ops save their result y and reduce the gradient along `dim` (keepdim, so it broadcasts
// back over the line):
//   softmax:     dx = y (g - sum(g y))
//   log_softmax: dx = g - exp(y) sum(g)
// one_hot gives int64 and has no derivative (core/ops/softmax.cpp defines it).

#include "autograd/ops/softmax.h"

#include "autograd/autocast.h"
#include "autograd/ops/common.h"

namespace ember {

Tensor softmax(const Tensor& self, int64_t dim) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor self2 = autocast::cast_float32(self);
    if (!autocast::same(self, self2)) return softmax(self2, dim);
  }
  Op op("SoftmaxBackward", self);
  Tensor y = op.run([&] { return native::softmax(self, dim); });
  op.set_output(y);
  op.save_output(y);
  op.backward([dim](const Saved& s, const Tensors& g) -> Tensors {
    Tensor y = s[0];
    return {mul(y, sub(g[0], sum(mul(g[0], y), {dim}, /*keepdim=*/true)))};
  });
  return y;
}

Tensor log_softmax(const Tensor& self, int64_t dim) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor self2 = autocast::cast_float32(self);
    if (!autocast::same(self, self2)) return log_softmax(self2, dim);
  }
  Op op("LogSoftmaxBackward", self);
  Tensor y = op.run([&] { return native::log_softmax(self, dim); });
  op.set_output(y);
  op.save_output(y);
  op.backward([dim](const Saved& s, const Tensors& g) -> Tensors {
    return {sub(g[0], mul(exp(s[0]), sum(g[0], {dim}, /*keepdim=*/true)))};
  });
  return y;
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::softmax(int64_t d) const { return ember::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return ember::log_softmax(*this, d); }

}  // namespace ember
