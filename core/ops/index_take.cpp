// Elements picked by mask or flat position (core/ops/index.h): masked_select, take, nonzero.

#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/index_utils.h"
#include "core/ops/view.h"
#include "core/tensor_iter.h"

namespace ember {

using namespace index_detail;

Tensor native::masked_select(const Tensor& self, const Tensor& mask) {
  const char* op = "masked_select";
  check_defined(self, op, "self");
  check_defined(mask, op, "mask");
  EMBER_CHECK(mask.dtype() == kBool, op, ": expected a bool mask, got ", dtype_name(mask.dtype()));
  const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  Tensor s = native::expand(self, shape), m = native::expand(mask, shape);
  if (shape.empty()) {
    s = native::view(s, {1});
    m = native::view(m, {1});
  }
  return index_impl(s, {m}, op);
}

Tensor native::take(const Tensor& self, const Tensor& index) {
  const char* op = "take";
  check_defined(self, op, "self");
  check_int64_index(index, op);
  check_same_device(self, index, op, "index");
  Tensor out = empty(index.sizes(), self.options());
  if (out.numel() == 0) return out;
  const Tensor flat = native::reshape(self, {-1});
  const Tensor flat_r = restride(flat, index.sizes(), Shape(index.sizes().size(), 0));
  TensorIter iter = TensorIterConfig(op)
                        .add_output(out)
                        .add_input(flat_r)
                        .add_input(index)
                        .static_shape(index.sizes())
                        .build();
  gather_stub(iter.device().type, iter, IndexAxis{flat.numel(), byte_stride(flat, 0), true, 0, op});
  return out;
}

Tensor nonzero(const Tensor& self) {
  check_defined(self, "nonzero", "self");
  const Tensor c = native::contiguous(self);
  Tensor out;
  nonzero_stub(c.device().type, c, out);
  return out;
}

// ---- Tensor methods ---------------------------------------------------------------------------
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }

}  // namespace ember
