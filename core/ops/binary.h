#pragma once
// Binary element-wise ops with broadcasting and PyTorch's type promotion (TensorIter).
// Each op has a functional form, an in-place form where PyTorch has one (`add_`), and a form
// with a C++ number (`add(t, 2.5)`), which promotes like a Scalar.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

class TensorIter;

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);

// In-place: the result is written into `self` (its dtype must hold the result type).
const Tensor& add_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& sub_(const Tensor& self, const Tensor& b, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& b);

using binary_alpha_fn = void (*)(TensorIter& iter, const Scalar& alpha);
using binary_fn = void (*)(TensorIter& iter);
EMBER_DECLARE_DISPATCH(binary_alpha_fn, add_stub);
EMBER_DECLARE_DISPATCH(binary_fn, mul_stub);

}  // namespace ember
