// Public ops of the copy family (core/ops/copy.h): forward = native::, plus autograd.
//
// clone, contiguous and to pass the gradient through (the engine casts it back to the input's
// dtype). copy_, fill_ and zero_ overwrite their target: the old value gets no gradient, and
// copy_'s source gets the gradient of the region it was broadcast into.

#include "autograd/ops/copy.h"

#include "autograd/ops/common.h"
#include "core/stream.h"

namespace ember {

namespace {
Tensors pass_through(const Saved&, const Tensors& g) { return {g[0]}; }
}  // namespace

Tensor clone(const Tensor& t) {
  Op op("CloneBackward", t);
  Tensor y = op.run([&] { return native::clone(t); });
  op.set_output(y);
  op.backward(pass_through);
  return y;
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Op op("CloneBackward", t);
  Tensor y = op.run([&] { return native::contiguous(t); });
  op.set_output(y);
  op.backward(pass_through);
  return y;
}

Tensor to(const Tensor& t, Device device, DType dtype, bool non_blocking) {
  if (t.device() == device && t.dtype() == dtype) return t;
  Op op("ToCopyBackward", t);
  Tensor y = op.run([&] { return native::to(t, device, dtype, non_blocking); });
  op.set_output(y);
  op.backward(pass_through);
  return y;
}

const Tensor& copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  return inplace_op(
      "copy_", dst, [&] { native::copy_(dst, src, non_blocking); },
      [&](const Tensor& old) {
        Op op("CopyBackwards", old, src);
        Tensor y = op.run([&] {
          Tensor r = native::clone(old);
          native::copy_(r, src);
          return r;
        });
        op.set_output(y);
        op.backward([](const Saved&, const Tensors& g) -> Tensors { return {Tensor(), g[0]}; });
        return y;
      },
      src);
}

namespace {
// fill_ / zero_ through the graph: a constant replaces the old value, which gets no gradient.
Tensor filled(const Tensor& old, const Scalar& value) {
  Op op("FillBackward", old);
  Tensor y = op.run([&] { return ember::full_like(old, value); });
  op.set_output(y);
  op.backward([](const Saved&, const Tensors&) -> Tensors { return {Tensor()}; });
  return y;
}
}  // namespace

const Tensor& fill_(const Tensor& t, const Scalar& value) {
  return inplace_op(
      "fill_", t, [&] { native::fill_(t, value); },
      [&](const Tensor& old) { return filled(old, value); });
}

const Tensor& zero_(const Tensor& t) {
  return inplace_op(
      "zero_", t, [&] { native::zero_(t); }, [&](const Tensor& old) { return filled(old, 0); });
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::contiguous() const { return ember::contiguous(*this); }
Tensor Tensor::clone() const { return ember::clone(*this); }
Tensor Tensor::to(DType d) const { return ember::to(*this, device(), d); }
Tensor Tensor::to(Device d) const { return ember::to(*this, d, dtype()); }
Tensor Tensor::to(Device d, DType t) const { return ember::to(*this, d, t); }
Tensor Tensor::to(Device d, DType t, bool non_blocking) const {
  return ember::to(*this, d, t, non_blocking);
}
Tensor Tensor::cuda(int index) const {
  return ember::to(*this, Device::cuda(index < 0 ? current_device(DeviceType::CUDA) : index),
                   dtype());
}
Tensor Tensor::cpu() const { return ember::to(*this, kCPU, dtype()); }
const Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  return ember::copy_(*this, src, non_blocking);
}
const Tensor& Tensor::fill_(const Scalar& v) const { return ember::fill_(*this, v); }
const Tensor& Tensor::zero_() const { return ember::zero_(*this); }

}  // namespace ember
