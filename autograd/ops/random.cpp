// Public ops of the random family (core/ops/random.h): forward = native::, plus autograd.

#include "autograd/ops/common.h"
#include "core/ops/random.h"

namespace ember {

const Tensor& uniform_(const Tensor& self, double from, double to, Generator* gen) {
  return native::uniform_(self, from, to, gen);
}
const Tensor& normal_(const Tensor& self, double mean, double std, Generator* gen) {
  return native::normal_(self, mean, std, gen);
}
const Tensor& bernoulli_(const Tensor& self, double p, Generator* gen) {
  return native::bernoulli_(self, p, gen);
}

}  // namespace ember
