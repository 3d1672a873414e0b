#pragma once
// The public, differentiable ops of the binary family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/binary.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/binary.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/binary.h"

namespace ember {

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode = "");
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode = "");
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& add_(const Tensor& self, const Scalar& b, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Scalar& b, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& b);
const Tensor& mul_(const Tensor& self, const Scalar& b);
const Tensor& div_(const Tensor& self, const Tensor& b, const std::string& rounding_mode = "");
const Tensor& div_(const Tensor& self, const Scalar& b, const std::string& rounding_mode = "");
const Tensor& remainder_(const Tensor& self, const Tensor& b);
const Tensor& remainder_(const Tensor& self, const Scalar& b);
const Tensor& pow_(const Tensor& self, const Tensor& exponent);
const Tensor& maximum_(const Tensor& self, const Tensor& b);
const Tensor& minimum_(const Tensor& self, const Tensor& b);
const Tensor& atan2_(const Tensor& self, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b);
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value = 1);
const Tensor& addcdiv_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value = 1);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value);

}  // namespace ember
