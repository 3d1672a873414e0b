#include "core/ops/cross_entropy.h"

#include "core/ops/factory.h"
#include "core/ops/view.h"

namespace ember {

namespace {

DType opmath_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }

void check_rows(const Tensor& logits, const Tensor& target, const Tensor& weight, const char* op) {
  EMBER_CHECK(logits.dim() == 2 && is_floating(logits.dtype()) && logits.is_contiguous(), op,
              ": expected contiguous floating logits (M, C), got ", dtype_name(logits.dtype()), " ",
              logits.sizes());
  EMBER_CHECK(target.dtype() == kInt64 && target.dim() == 1 && target.size(0) == logits.size(0) &&
                  target.is_contiguous() && target.device() == logits.device(),
              op, ": expected contiguous int64 targets (", logits.size(0), ") on ", logits.device(),
              ", got ", dtype_name(target.dtype()), " ", target.sizes());
  if (weight.defined())
    EMBER_CHECK(
        weight.dim() == 1 && weight.size(0) == logits.size(1) && weight.dtype() == logits.dtype() &&
            weight.is_contiguous() && weight.device() == logits.device(),
        op, ": expected contiguous class weights (", logits.size(1), ") of dtype ",
        dtype_name(logits.dtype()), ", got ", dtype_name(weight.dtype()), " ", weight.sizes());
}

}  // namespace

native::CrossEntropyRows native::cross_entropy_rows(const Tensor& logits, const Tensor& target,
                                                    const Tensor& weight, int64_t ignore_index,
                                                    double label_smoothing) {
  check_rows(logits, target, weight, "cross_entropy");
  const int64_t M = logits.size(0);
  const TensorOptions o = TensorOptions(opmath_dtype(logits.dtype())).device(logits.device());
  CrossEntropyRows out;
  out.loss_and_weight = empty({2, M}, o);
  out.loss = native::select(out.loss_and_weight, 0, 0);
  out.weight = native::select(out.loss_and_weight, 0, 1);
  out.lse = empty({M}, o);
  if (M > 0)
    cross_entropy_stub(logits.device().type, out, logits, target, weight, ignore_index,
                       label_smoothing);
  return out;
}

Tensor native::cross_entropy_rows_backward(const Tensor& grad_rows, const Tensor& logits,
                                           const Tensor& target, const Tensor& weight,
                                           const Tensor& lse, int64_t ignore_index,
                                           double label_smoothing) {
  check_rows(logits, target, weight, "cross_entropy_backward");
  const int64_t M = logits.size(0);
  const DType acc = opmath_dtype(logits.dtype());
  for (const Tensor* t : {&grad_rows, &lse})
    EMBER_CHECK(t->dim() == 1 && t->size(0) == M && t->dtype() == acc && t->is_contiguous() &&
                    t->device() == logits.device(),
                "cross_entropy_backward: expected contiguous ", dtype_name(acc), " (", M,
                ") row values, got ", dtype_name(t->dtype()), " ", t->sizes());
  Tensor grad = empty(logits.sizes(), logits.options());
  if (grad.numel() > 0)
    cross_entropy_backward_stub(logits.device().type, grad, grad_rows, logits, target, weight, lse,
                                ignore_index, label_smoothing);
  return grad;
}

}  // namespace ember
