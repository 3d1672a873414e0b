#include "core/ops/linalg.h"

#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/view.h"

namespace ember {

namespace {

constexpr const char* kLinalgOps[] = {"matmul", "mm", "bmm", "addmm", "linear", "dot", "outer"};
static_assert(sizeof(kLinalgOps) / sizeof(kLinalgOps[0]) == 7);
const OpFamilyRegistrar registrar("linalg", kLinalgOps);

void check_operands(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  EMBER_CHECK(a.dtype() != kBool, op, ": not supported for bool tensors");
  EMBER_CHECK(a.device() == b.device(), op, ": expected both operands on the same device, got ",
              a.device(), " and ", b.device());
}

void check_dims(const Tensor& a, const Tensor& b, int64_t want_a, int64_t want_b, const char* op) {
  EMBER_CHECK(a.dim() == want_a && b.dim() == want_b, op, ": expected ", want_a, "-D and ", want_b,
              "-D tensors, got shapes ", a.sizes(), " and ", b.sizes());
}

// "op: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)".
void check_inner(const Tensor& a, const Tensor& b, int64_t ka, int64_t kb, const char* op) {
  EMBER_CHECK(ka == kb, op, ": shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (",
              ka, " != ", kb, ")");
}

// alpha and beta must not be fractional for integer tensors (PyTorch's rule for addmm).
void check_scalars(DType dt, const Scalar& alpha, const Scalar& beta, const char* op) {
  EMBER_CHECK(is_floating(dt) || (!alpha.is_floating() && !beta.is_floating()), op,
              ": for integral input tensors, alpha and beta must not be floating point numbers");
}

// Whether a tensor of shape `from` broadcasts to `to` (NumPy rules, `to` unchanged).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

// out = alpha * a @ b + beta * out over a batch (the stub's contract, core/ops/linalg.h).
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
                  const Scalar& beta = 0) {
  if (out.numel() == 0) return;
  batched_gemm_stub(out.device().type, out, a, b, alpha, beta);
}

// (m, k) . (k, n) for 2-D a and b, as a batch of one.
Tensor mm_2d(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), b.size(1)}, a.options());
  batched_gemm(native::unsqueeze(out, 0), native::unsqueeze(a, 0), native::unsqueeze(b, 0));
  return out;
}

}  // namespace

Tensor native::matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "matmul");
  EMBER_CHECK(a.dim() >= 1 && b.dim() >= 1,
              "matmul: both arguments need at least 1 dimension, got shapes ", a.sizes(), " and ",
              b.sizes());
  if (a.dim() == 1 && b.dim() == 1) {
    check_inner(a, b, a.size(0), b.size(0), "matmul");
    return native::dot(a, b);
  }
  // A 1-D operand becomes a row (a) or a column (b) for the product; that dim is removed after.
  Tensor a2 = a.dim() == 1 ? native::unsqueeze(a, 0) : a;
  Tensor b2 = b.dim() == 1 ? native::unsqueeze(b, 1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  check_inner(a, b, k, b2.size(-2), "matmul");
  Shape batch_a(a2.sizes().begin(), a2.sizes().end() - 2);
  Shape batch_b(b2.sizes().begin(), b2.sizes().end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  auto with = [&](int64_t r, int64_t c) {
    Shape s = batch;
    s.push_back(r);
    s.push_back(c);
    return s;
  };
  Tensor out = empty(with(m, n), a.options());
  // A batch of one keeps the shape (1, m, n) for the kernel; expanded batch dims cost nothing.
  Tensor out3 = batch.empty() ? native::unsqueeze(out, 0) : out;
  Tensor ae = batch.empty() ? native::unsqueeze(a2, 0) : native::expand(a2, with(m, k));
  Tensor be = batch.empty() ? native::unsqueeze(b2, 0) : native::expand(b2, with(k, n));
  batched_gemm(out3, ae, be);
  Shape result = batch;
  if (a.dim() > 1) result.push_back(m);
  if (b.dim() > 1) result.push_back(n);
  return native::view(out, result);
}

Tensor native::mm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "mm");
  check_dims(a, b, 2, 2, "mm");
  check_inner(a, b, a.size(1), b.size(0), "mm");
  return mm_2d(a, b);
}

Tensor native::bmm(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "bmm");
  check_dims(a, b, 3, 3, "bmm");
  EMBER_CHECK(a.size(0) == b.size(0), "bmm: batch sizes of shapes ", a.sizes(), " and ", b.sizes(),
              " differ (", a.size(0), " != ", b.size(0), ")");
  check_inner(a, b, a.size(2), b.size(1), "bmm");
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, a.options());
  batched_gemm(out, a, b);
  return out;
}

Tensor native::addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                     const Scalar& alpha) {
  check_operands(m1, m2, "addmm");
  check_operands(input, m1, "addmm");
  check_dims(m1, m2, 2, 2, "addmm");
  check_inner(m1, m2, m1.size(1), m2.size(0), "addmm");
  check_scalars(m1.dtype(), alpha, beta, "addmm");
  const Shape shape = {m1.size(0), m2.size(1)};
  EMBER_CHECK(broadcasts_to(input.sizes(), shape), "addmm: input of shape ", input.sizes(),
              " cannot be broadcast to the product's shape ", shape);
  Tensor out = empty(shape, m1.options());
  const bool use_input = beta.to_double() != 0.0;
  if (use_input) native::copy_(out, input);
  batched_gemm(native::unsqueeze(out, 0), native::unsqueeze(m1, 0), native::unsqueeze(m2, 0), alpha,
               use_input ? beta : Scalar(0));
  return out;
}

Tensor native::linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  check_operands(input, weight, "linear");
  EMBER_CHECK(input.dim() >= 1 && weight.dim() == 2,
              "linear: expected input (*, in_features) "
              "and weight (out_features, in_features), got shapes ",
              input.sizes(), " and ", weight.sizes());
  const int64_t in = input.size(-1), out_features = weight.size(0);
  EMBER_CHECK(in == weight.size(1), "linear: input of shape ", input.sizes(),
              " and weight of shape ", weight.sizes(), " don't match (in_features ", in,
              " != ", weight.size(1), ")");
  Shape out_shape(input.sizes().begin(), input.sizes().end() - 1);
  out_shape.push_back(out_features);
  const int64_t rows = shape_numel(Shape(input.sizes().begin(), input.sizes().end() - 1));
  const Shape shape2 = {rows, out_features};
  Tensor out = empty(shape2, input.options());
  if (bias.defined()) {
    check_operands(input, bias, "linear");
    EMBER_CHECK(broadcasts_to(bias.sizes(), shape2), "linear: bias of shape ", bias.sizes(),
                " does not match out_features ", out_features);
    native::copy_(out, bias);
  }
  // (rows, in) @ (in, out): the weight's transpose is a strided view, never copied.
  batched_gemm(native::unsqueeze(out, 0), native::unsqueeze(native::reshape(input, {rows, in}), 0),
               native::unsqueeze(native::transpose(weight, 0, 1), 0), 1,
               Scalar(bias.defined() ? 1 : 0));
  return native::view(out, out_shape);
}

Tensor native::dot(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "dot");
  check_dims(a, b, 1, 1, "dot");
  check_inner(a, b, a.size(0), b.size(0), "dot");
  Tensor out = empty({1, 1, 1}, a.options());
  batched_gemm(out, native::unsqueeze(native::unsqueeze(a, 0), 0),
               native::unsqueeze(native::unsqueeze(b, 1), 0));
  return native::view(out, {});
}

Tensor native::outer(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "outer");
  check_dims(a, b, 1, 1, "outer");
  Tensor out = empty({a.size(0), b.size(0)}, a.options());
  batched_gemm(native::unsqueeze(out, 0), native::unsqueeze(native::unsqueeze(a, 1), 0),
               native::unsqueeze(native::unsqueeze(b, 0), 0));
  return out;
}

}  // namespace ember
