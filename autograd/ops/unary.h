#pragma once
// The public, differentiable ops of the unary family: each records a node of the autograd graph
// (when an input requires grad) and runs its kernel-level twin ember::native::<op>, declared and
// documented in core/ops/unary.h (shapes, dtypes, errors). The derivative formulas are in
// autograd/ops/unary.cpp. (Note [Where an op lives] in autograd/ops/ops.h.)

#include "core/ops/unary.h"

namespace ember {

Tensor neg(const Tensor& t);
Tensor abs(const Tensor& t);
Tensor sign(const Tensor& t);
Tensor relu(const Tensor& t);
Tensor floor(const Tensor& t);
Tensor ceil(const Tensor& t);
Tensor round(const Tensor& t);
Tensor trunc(const Tensor& t);
Tensor round(const Tensor& t, int64_t decimals);  // native::round(t, decimals); zero gradient
const Tensor& round_(const Tensor& self, int64_t decimals);
const Tensor& neg_(const Tensor& self);
const Tensor& abs_(const Tensor& self);
const Tensor& sign_(const Tensor& self);
const Tensor& relu_(const Tensor& self);
const Tensor& floor_(const Tensor& self);
const Tensor& ceil_(const Tensor& self);
const Tensor& round_(const Tensor& self);
const Tensor& trunc_(const Tensor& self);
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp_min(const Tensor& t, const Scalar& min);
Tensor clamp_max(const Tensor& t, const Scalar& max);
const Tensor& clamp_(const Tensor& self, std::optional<Scalar> min,
                     std::optional<Scalar> max = std::nullopt);
const Tensor& clamp_min_(const Tensor& self, const Scalar& min);
const Tensor& clamp_max_(const Tensor& self, const Scalar& max);
Tensor hardtanh(const Tensor& t, const Scalar& min_val = -1, const Scalar& max_val = 1);
const Tensor& hardtanh_(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor nan_to_num(const Tensor& t, std::optional<double> nan = 0.0,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
const Tensor& nan_to_num_(const Tensor& self, std::optional<double> nan = 0.0,
                          std::optional<double> posinf = std::nullopt,
                          std::optional<double> neginf = std::nullopt);
Tensor pow(const Tensor& t, const Scalar& exponent);
const Tensor& pow_(const Tensor& self, const Scalar& exponent);
Tensor exp(const Tensor& t);
Tensor exp2(const Tensor& t);
Tensor expm1(const Tensor& t);
Tensor log(const Tensor& t);
Tensor log2(const Tensor& t);
Tensor log1p(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor rsqrt(const Tensor& t);
Tensor reciprocal(const Tensor& t);
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
Tensor tan(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor silu(const Tensor& t);
Tensor erf(const Tensor& t);
const Tensor& exp_(const Tensor& self);
const Tensor& exp2_(const Tensor& self);
const Tensor& expm1_(const Tensor& self);
const Tensor& log_(const Tensor& self);
const Tensor& log2_(const Tensor& self);
const Tensor& log1p_(const Tensor& self);
const Tensor& sqrt_(const Tensor& self);
const Tensor& rsqrt_(const Tensor& self);
const Tensor& reciprocal_(const Tensor& self);
const Tensor& sin_(const Tensor& self);
const Tensor& cos_(const Tensor& self);
const Tensor& tan_(const Tensor& self);
const Tensor& tanh_(const Tensor& self);
const Tensor& sigmoid_(const Tensor& self);
const Tensor& silu_(const Tensor& self);
const Tensor& erf_(const Tensor& self);
Tensor gelu(const Tensor& t, const std::string& approximate = "none");
Tensor softplus(const Tensor& t, const Scalar& beta = 1, const Scalar& threshold = 20);

}  // namespace ember
