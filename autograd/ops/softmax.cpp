// Public ops of the softmax family (core/ops/softmax.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/softmax.h"

namespace ember {

Tensor softmax(const Tensor& self, int64_t dim) {
  return native::softmax(self, dim);
}
Tensor log_softmax(const Tensor& self, int64_t dim) {
  return native::log_softmax(self, dim);
}

}  // namespace ember
