#include "core/ops/copy.h"

#include <cstring>

#include "core/mem_overlap.h"
#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "core/tensor_iter.h"

namespace ember {

namespace {
constexpr const char* kCopyOps[] = {"copy_", "fill_", "zero_", "contiguous", "clone", "to"};
static_assert(sizeof(kCopyOps) / sizeof(kCopyOps[0]) == 6);
const OpFamilyRegistrar registrar("copy", kCopyOps);
}  // namespace

const Tensor& native::copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  EMBER_CHECK(dst.defined() && src.defined(), "copy_: undefined tensor");
  dst.bump_version();
  if (dst.numel() == 0) return dst;
  // Note [Writes over overlapping memory] in core/mem_overlap.h: checked here too, because the
  // fast path below does not build a TensorIter.
  assert_no_internal_overlap(dst, "copy_");
  assert_no_partial_overlap(dst, src, "copy_");
  // Fast path: same dtype, same device, both contiguous, same shape.
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes() && dst.is_cpu() && src.is_cpu()) {
    if (dst.data_ptr() != src.data_ptr())
      std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return dst;
  }
  const DeviceType src_type = src.device().type, dst_type = dst.device().type;
  if (dst.device() == src.device()) {
    TensorIter iter =
        TensorIterConfig("copy_").add_output(dst).add_input(src).static_shape(dst.sizes()).build();
    copy_stub(src_type, dst_type, iter, non_blocking);
    return dst;
  }
  // Between devices: the pair's kernel (Note [Device-pair stubs] in core/dispatch.h).
  EMBER_CHECK(copy_stub.has_kernel(src_type, dst_type), "copy_: no kernel copies from ",
              src.device(), " to ", dst.device(),
              cuda_is_built()
                  ? ""
                  : ": ember was built without CUDA (configure with -DEMBER_CUDA=real or sim)");
  TensorIter iter = TensorIterConfig("copy_")
                        .add_output(dst)
                        .add_input(src)
                        .static_shape(dst.sizes())
                        .check_all_same_device(false)
                        .build();
  copy_stub(src_type, dst_type, iter, non_blocking);
  return dst;
}

const Tensor& native::fill_(const Tensor& t, const Scalar& value) {
  EMBER_CHECK(t.defined(), "fill_: undefined tensor");
  check_fits(value, t.dtype(), "fill_");  // Note [Scalars that overflow]
  t.bump_version();
  if (t.numel() == 0) return t;
  Tensor out = t;
  TensorIter iter = TensorIter::nullary_op(out, "fill_");
  fill_stub(t.device().type, iter, value);
  return t;
}

const Tensor& native::zero_(const Tensor& t) {
  if (t.defined() && t.is_contiguous() && t.is_cpu()) {
    t.bump_version();
    if (t.numel() > 0) std::memset(t.data_ptr(), 0, t.nbytes());
    return t;
  }
  return native::fill_(t, 0);
}

Tensor native::clone(const Tensor& t) {
  Tensor out = empty(t.sizes(), t.options());
  native::copy_(out, t);
  return out;
}

Tensor native::contiguous(const Tensor& t) { return t.is_contiguous() ? t : native::clone(t); }

Tensor pin_memory(const Tensor& t) {
  EMBER_CHECK(t.defined(), "pin_memory: undefined tensor");
  EMBER_CHECK(t.is_cpu(), "pin_memory: only CPU tensors can be pinned, got a tensor on ",
              t.device());
  if (is_pinned(t)) return t;
  const size_t nbytes = storage_nbytes(t.numel(), t.dtype(), "pin_memory");
  auto storage = std::make_shared<StorageImpl>(get_pinned_allocator()->allocate(nbytes), nbytes);
  storage->is_pinned = true;
  Tensor out = make_tensor(std::move(storage), t.sizes(), contiguous_strides(t.sizes()), 0,
                           t.dtype(), "pin_memory");
  native::copy_(out, t);
  return out;
}

bool is_pinned(const Tensor& t) { return t.defined() && t.impl().storage->is_pinned; }

Tensor Tensor::pin_memory() const { return ember::pin_memory(*this); }
bool Tensor::is_pinned() const { return ember::is_pinned(*this); }

Tensor native::to(const Tensor& t, Device device, DType dtype, bool non_blocking) {
  if (t.device() == device && t.dtype() == dtype) return t;
  Tensor out = empty(t.sizes(), TensorOptions(dtype).device(device));
  native::copy_(out, t, non_blocking);
  return out;
}

}  // namespace ember
