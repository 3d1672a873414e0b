// Public ops of the linalg family (core/ops/linalg.h): forward = native::, plus autograd.
//
// For y = a @ b the gradients are g @ b^T and a^T @ g (PyTorch's mm_mat1_backward /
// mm_mat2_backward), written with the differentiable products themselves so that double
// backward works. Broadcast batch dims need no care here: the engine sums each gradient down
// to its input's shape (autograd/op.h). An operand is saved only when the other operand needs
// its gradient.

#include "autograd/ops/linalg.h"

#include "autograd/autocast.h"
#include "autograd/ops/common.h"

namespace ember {

namespace {

// The last two dims swapped: the transpose of each matrix of a batch.
Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

// g * alpha, skipping the multiply for alpha == 1.
Tensor scale(const Tensor& g, const Scalar& alpha) {
  return alpha.to<double>() == 1.0 ? g : mul(g, alpha);
}

// The gradients of matmul(a, b) (core/ops/linalg.h lists the shape rules). A 1-D operand is
// promoted to a matrix (a: (1, k), b: (k, 1)) and g gets the dim matmul removed back, so both
// gradients are batched products; the promoted dim is then dropped again.
// `a` is defined when need_b, `b` when need_a; a_dim and b_dim are the operands' dims.
Tensors matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, int64_t a_dim,
                        int64_t b_dim, bool need_a, bool need_b) {
  if (a_dim == 1 && b_dim == 1) {  // dot product: g is 0-dim
    return {need_a ? g * b : Tensor(), need_b ? g * a : Tensor()};
  }
  Tensor g2 = g;
  if (a_dim == 1) g2 = unsqueeze(g2, -2);  // (..., n) -> (..., 1, n)
  if (b_dim == 1) g2 = unsqueeze(g2, -1);  // (..., m) -> (..., m, 1)
  Tensor grad_a, grad_b;
  if (need_a) {
    const Tensor b2 = b_dim == 1 ? unsqueeze(b, 1) : b;
    grad_a = matmul(g2, mT(b2));  // (batch..., m, k)
    if (a_dim == 1) grad_a = squeeze(grad_a, -2);
  }
  if (need_b) {
    const Tensor a2 = a_dim == 1 ? unsqueeze(a, 0) : a;
    if (a2.dim() > 2 && b_dim <= 2) {
      // A batch of rows against one matrix (a linear layer): fold the batch into the rows,
      // one (k, batch * m) @ (batch * m, n) product instead of a batch of them summed.
      const int64_t k = a2.size(-1), n = g2.size(-1);
      grad_b = mm(mT(reshape(a2, {-1, k})), reshape(g2, {-1, n}));
    } else {
      grad_b = matmul(mT(a2), g2);  // (batch..., k, n)
    }
    if (b_dim == 1) grad_b = squeeze(grad_b, -1);
  }
  return {grad_a, grad_b};
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor a2 = autocast::cast_lower(a), b2 = autocast::cast_lower(b);
    if (!autocast::same(a, a2) || !autocast::same(b, b2)) return matmul(a2, b2);
  }
  Op op("MatmulBackward", a, b);
  Tensor y = op.run([&] { return native::matmul(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(1) ? a : Tensor());
  op.save(op.needs_grad(0) ? b : Tensor());
  op.backward([a_dim = a.dim(), b_dim = b.dim()](const Saved& s, const Tensors& g) -> Tensors {
    return matmul_backward(g[0], s[0], s[1], a_dim, b_dim, s.needs_grad(0), s.needs_grad(1));
  });
  return y;
}
// d(a b) = g b^T, a^T g.
Tensor mm(const Tensor& a, const Tensor& b) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor a2 = autocast::cast_lower(a), b2 = autocast::cast_lower(b);
    if (!autocast::same(a, a2) || !autocast::same(b, b2)) return mm(a2, b2);
  }
  Op op("MmBackward", a, b);
  Tensor y = op.run([&] { return native::mm(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? b : Tensor());
  op.save(op.needs_grad(1) ? a : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? mm(g[0], mT(s[0])) : Tensor(),
            s.needs_grad(1) ? mm(mT(s[1]), g[0]) : Tensor()};
  });
  return y;
}
// The same, for each matrix of the batch.
Tensor bmm(const Tensor& a, const Tensor& b) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor a2 = autocast::cast_lower(a), b2 = autocast::cast_lower(b);
    if (!autocast::same(a, a2) || !autocast::same(b, b2)) return bmm(a2, b2);
  }
  Op op("BmmBackward", a, b);
  Tensor y = op.run([&] { return native::bmm(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? b : Tensor());
  op.save(op.needs_grad(1) ? a : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? bmm(g[0], mT(s[0])) : Tensor(),
            s.needs_grad(1) ? bmm(mT(s[1]), g[0]) : Tensor()};
  });
  return y;
}
// d(beta input + alpha m1 m2) = beta g, alpha g m2^T, alpha m1^T g.
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta,
             const Scalar& alpha) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_lower(input), m12 = autocast::cast_lower(m1),
                 m22 = autocast::cast_lower(m2);
    if (!autocast::same(input, input2) || !autocast::same(m1, m12) || !autocast::same(m2, m22))
      return addmm(input2, m12, m22, beta, alpha);
  }
  Op op("AddmmBackward", input, m1, m2);
  Tensor y = op.run([&] { return native::addmm(input, m1, m2, beta, alpha); });
  op.set_output(y);
  op.save(op.needs_grad(1) ? m2 : Tensor());
  op.save(op.needs_grad(2) ? m1 : Tensor());
  op.backward([beta, alpha](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? scale(g[0], beta) : Tensor(),
            s.needs_grad(1) ? scale(mm(g[0], mT(s[0])), alpha) : Tensor(),
            s.needs_grad(2) ? scale(mm(mT(s[1]), g[0]), alpha) : Tensor()};
  });
  return y;
}
// y = input weight^T + bias: d input = g weight, d weight = g^T input (the leading dims of
// input folded into rows), d bias = g (summed over the leading dims by the engine).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_lower(input), weight2 = autocast::cast_lower(weight),
                 bias2 = autocast::cast_lower(bias);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2) ||
        !autocast::same(bias, bias2))
      return linear(input2, weight2, bias2);
  }
  Op op("LinearBackward", {input, weight, bias});  // the list form accepts an undefined bias
  Tensor y = op.run([&] { return native::linear(input, weight, bias); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? weight : Tensor());
  op.save(op.needs_grad(1) ? input : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    Tensor grad_input, grad_weight;
    if (s.needs_grad(0)) grad_input = matmul(g[0], s[0]);
    if (s.needs_grad(1)) {
      const Tensor x = s[1];
      const int64_t out_features = g[0].size(-1), in_features = x.size(-1);
      grad_weight = mm(mT(reshape(g[0], {-1, out_features})), reshape(x, {-1, in_features}));
    }
    return {grad_input, grad_weight, s.needs_grad(2) ? g[0] : Tensor()};
  });
  return y;
}
// d(a . b) = g b, g a (g is 0-dim).
Tensor dot(const Tensor& a, const Tensor& b) {
  Op op("DotBackward", a, b);
  Tensor y = op.run([&] { return native::dot(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? b : Tensor());
  op.save(op.needs_grad(1) ? a : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? g[0] * s[0] : Tensor(), s.needs_grad(1) ? g[0] * s[1] : Tensor()};
  });
  return y;
}
// y = a b^T for vectors a (m), b (n): d a = g b, d b = g^T a.
Tensor outer(const Tensor& a, const Tensor& b) {
  Op op("OuterBackward", a, b);
  Tensor y = op.run([&] { return native::outer(a, b); });
  op.set_output(y);
  op.save(op.needs_grad(0) ? b : Tensor());
  op.save(op.needs_grad(1) ? a : Tensor());
  op.backward([](const Saved& s, const Tensors& g) -> Tensors {
    return {s.needs_grad(0) ? matmul(g[0], s[0]) : Tensor(),
            s.needs_grad(1) ? matmul(s[1], g[0]) : Tensor()};
  });
  return y;
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ember::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return ember::bmm(*this, other); }
Tensor Tensor::dot(const Tensor& other) const { return ember::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return ember::outer(*this, other); }

}  // namespace ember
