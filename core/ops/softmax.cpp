#include "core/ops/softmax.h"

#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/reduce.h"

namespace ember {

namespace {

constexpr const char* kSoftmaxOps[] = {"softmax", "log_softmax", "one_hot"};
static_assert(sizeof(kSoftmaxOps) / sizeof(kSoftmaxOps[0]) == 3);
const OpFamilyRegistrar registrar("softmax", kSoftmaxOps);

Tensor softmax_impl(const Tensor& self, int64_t dim, bool log, const char* op) {
  EMBER_CHECK(is_floating(self.dtype()), op, ": expected a floating point input, got dtype ",
              dtype_name(self.dtype()), " (convert it with .to(kFloat32) first)");
  int64_t d = wrap_dim(dim, self.dim(), op);
  Tensor out = empty(self.sizes(), self.options());
  if (out.numel() > 0) softmax_stub(self.device().type, out, self, self.dim() == 0 ? 0 : d, log);
  return out;
}

}  // namespace

Tensor native::softmax(const Tensor& self, int64_t dim) {
  return softmax_impl(self, dim, false, "softmax");
}
Tensor native::log_softmax(const Tensor& self, int64_t dim) {
  return softmax_impl(self, dim, true, "log_softmax");
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  EMBER_CHECK(indices.dtype() == kInt64, "one_hot: expected an int64 tensor of class indices, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 or non-negative, got ",
              num_classes);
  if (indices.numel() > 0) {
    int64_t lo = native::amin(indices).item<int64_t>();
    EMBER_CHECK(lo >= 0, "one_hot: class values must be non-negative, got ", lo);
    int64_t hi = native::amax(indices).item<int64_t>();
    if (num_classes == -1) num_classes = hi + 1;
    EMBER_CHECK(hi < num_classes, "one_hot: class values must be smaller than num_classes (",
                num_classes, "), got ", hi);
  } else {
    EMBER_CHECK(num_classes != -1,
                "one_hot: cannot infer the number of classes from an empty tensor; pass "
                "num_classes");
  }
  Shape shape = indices.sizes();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, TensorOptions(kInt64).device(indices.device()));
  if (indices.numel() == 0) return out;
  one_hot_stub(indices.device().type, out, native::contiguous(indices), num_classes);
  return out;
}

}  // namespace ember
