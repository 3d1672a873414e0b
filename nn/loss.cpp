#include "nn/loss.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/op.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/index.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unary.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/factory.h"
#include "core/ops/softmax.h"

namespace ember::nn {

namespace {

constexpr const char* kLossOps[] = {"cross_entropy",
                                    "nll_loss",
                                    "mse_loss",
                                    "l1_loss",
                                    "smooth_l1_loss",
                                    "huber_loss",
                                    "binary_cross_entropy",
                                    "binary_cross_entropy_with_logits",
                                    "kl_div"};
static_assert(sizeof(kLossOps) / sizeof(kLossOps[0]) == 9);
const OpFamilyRegistrar registrar("nn_loss", kLossOps);

// ---- checks and reductions ------------------------------------------------------------------

enum class Reduction { None, Mean, Sum, BatchMean };

Reduction parse_reduction(const std::string& r, const char* op, bool allow_batchmean = false) {
  if (r == "none") return Reduction::None;
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (allow_batchmean && r == "batchmean") return Reduction::BatchMean;
  EMBER_CHECK(false, op, ": reduction must be 'none', 'mean', 'sum'",
              allow_batchmean ? " or 'batchmean'" : "", ", got '", r, "'");
  return Reduction::None;
}

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return loss.mean();
    case Reduction::Sum:
      return loss.sum();
    default:
      return loss;
  }
}

void check_input(const Tensor& input, const char* op) {
  EMBER_CHECK(input.is_floating_point(), op, ": expected a floating-point input, got ",
              dtype_name(input.dtype()), " ", input.sizes());
}

// A floating `other` (target, weight, ...) of input's dtype.
void check_dtype(const Tensor& input, const Tensor& other, const char* what, const char* op) {
  EMBER_CHECK(other.dtype() == input.dtype(), op, ": ", what, " has dtype ",
              dtype_name(other.dtype()), " but input has dtype ", dtype_name(input.dtype()));
}

// input and a floating target of the same shape and dtype (the element-wise losses).
void check_pair(const Tensor& input, const Tensor& target, const char* op) {
  check_input(input, op);
  EMBER_CHECK(target.sizes() == input.sizes(), op, ": target ", target.sizes(),
              " must have the same shape as input ", input.sizes());
  check_dtype(input, target, "target", op);
}

// An optional per-element factor that broadcasts to input's shape.
void check_broadcasts(const Tensor& input, const Tensor& t, const char* what, const char* op) {
  if (!t.defined()) return;
  check_dtype(input, t, what, op);
  bool ok = t.dim() <= input.dim();
  for (int64_t i = 1; ok && i <= t.dim(); ++i) ok = t.size(-i) == 1 || t.size(-i) == input.size(-i);
  EMBER_CHECK(ok, op, ": ", what, " ", t.sizes(), " does not broadcast to the input's shape ",
              input.sizes());
}

// ---- classification -------------------------------------------------------------------------

int64_t class_dim_of(const Tensor& input) { return input.dim() == 1 ? 0 : 1; }

void check_logits(const Tensor& input, const char* op) {
  check_input(input, op);
  EMBER_CHECK(input.dim() >= 1, op,
              ": input must be (C), (N, C) or (N, C, d1, ...), got a 0-dim tensor");
}

void check_class_weight(const Tensor& input, const Tensor& weight, const char* op) {
  if (!weight.defined()) return;
  const int64_t C = input.size(class_dim_of(input));
  EMBER_CHECK(weight.dim() == 1 && weight.size(0) == C, op,
              ": weight must be a 1-D tensor of C=", C, " class weights (input ", input.sizes(),
              "), got weight ", weight.sizes());
  check_dtype(input, weight, "weight", op);
}

// The class weights viewed to broadcast along the class dim: (C), or (1, C, 1, ...).
Tensor class_weight_view(const Tensor& input, const Tensor& weight) {
  Shape shape(static_cast<size_t>(input.dim()), 1);
  shape[class_dim_of(input)] = weight.size(0);
  return weight.view(shape);
}

// Class-index targets prepared for a gather: all of target's shape.
struct ClassTargets {
  Tensor index;   // int64; ignored entries replaced by class 0
  Tensor keep;    // bool: target != ignore_index
  Tensor weight;  // input's dtype: weight[target] (1 without class weights), 0 where ignored
};

// The class indices as int64 (target's shape), each checked to be in [0, C) or ignore_index:
// here, through a copy on the host, unless the kernel that reads them checks them itself
// (kernel_checks: the fused CUDA cross-entropy, Note [Index checks on the device] in
// kernels/cuda/indexing.cuh), which spares a copy and a synchronisation before its launch.
Tensor class_indices(const Tensor& input, const Tensor& target, int64_t ignore_index,
                     const char* op, bool kernel_checks = false) {
  const int64_t class_dim = class_dim_of(input);
  const int64_t C = input.size(class_dim);
  EMBER_CHECK(target.dtype() == kInt64 || target.dtype() == kInt32, op,
              ": expected int64 class indices (or a floating target of the input's shape "
              "for class probabilities), got target ",
              dtype_name(target.dtype()), " ", target.sizes(), " for input ", input.sizes());
  Shape expected = input.sizes();
  expected.erase(expected.begin() + class_dim);
  EMBER_CHECK(target.sizes() == expected, op, ": input ", input.sizes(),
              " needs class indices of shape ", expected, ", got target ", target.sizes());

  Tensor t = target.to(kInt64);
  if (!kernel_checks) {
    const Tensor host = t.to(kCPU).contiguous();
    const int64_t* p = host.data_ptr<int64_t>();
    for (int64_t i = 0; i < host.numel(); ++i) {
      EMBER_CHECK(p[i] == ignore_index || (p[i] >= 0 && p[i] < C), op, ": target ", p[i],
                  " is out of bounds for C=", C, " classes (input ", input.sizes(), ")");
    }
  }
  return t;
}

ClassTargets class_targets(const Tensor& input, const Tensor& target, const Tensor& weight,
                           int64_t ignore_index, const char* op) {
  const Tensor t = class_indices(input, target, ignore_index, op);
  ClassTargets ct;
  ct.keep = t.ne(ignore_index);
  ct.index = where(ct.keep, t, 0);
  Tensor w = weight.defined() ? weight.index_select(0, ct.index.reshape({-1})).reshape(t.sizes())
                              : ones(t.sizes(), input.options());
  ct.weight = where(ct.keep, w, 0.0);
  return ct;
}

// nll_loss on log-probabilities with prepared targets.
Tensor nll(const Tensor& log_probs, const ClassTargets& ct, Reduction r) {
  const int64_t class_dim = class_dim_of(log_probs);
  Tensor picked = log_probs.gather(class_dim, ct.index.unsqueeze(class_dim)).squeeze(class_dim);
  // where(): an ignored entry contributes exactly 0, whatever its log-probability holds.
  Tensor loss = where(ct.keep, ct.weight.mul(picked).neg(), 0.0);
  switch (r) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return loss.sum();
    default:  // the weighted mean: NaN (0 / 0) when every target is ignored
      return loss.sum().div(ct.weight.sum());
  }
}

// Class probabilities (already smoothed): -sum_c w[c] p[c] logp[c], reduced.
Tensor cross_entropy_probs(const Tensor& log_probs, const Tensor& probs, const Tensor& weight,
                           Reduction r) {
  const int64_t class_dim = class_dim_of(log_probs);
  Tensor terms = log_probs.mul(probs);
  if (weight.defined()) terms = terms.mul(class_weight_view(log_probs, weight));
  switch (r) {
    case Reduction::None:
      return terms.sum({class_dim}).neg();
    case Reduction::Sum:
      return terms.sum().neg();
    default: {  // divided by the number of samples, not by the weights
      Shape samples = log_probs.sizes();
      samples.erase(samples.begin() + class_dim);
      return terms.sum().neg().div(static_cast<double>(shape_numel(samples)));
    }
  }
}

// ---- the fused cross-entropy (Note [Fused cross-entropy] in core/ops/cross_entropy.h) ------

// Whether cross_entropy with class indices takes the fused kernels: their device has them, and
// the class weights (if any) need no gradient (the fused op gives the input's only).
bool fused_cross_entropy_applies(const Tensor& input, const Tensor& weight) {
  if (!cross_entropy_stub.has_kernel(input.device().type)) return false;
  return !weight.defined() || (!weight.requires_grad() && weight.device() == input.device());
}

// input (C), (N, C) or (N, C, d...) as rows (M, C): the class dim moved last, contiguous.
Tensor logit_rows(const Tensor& input) {
  const int64_t nd = input.dim(), C = input.size(class_dim_of(input));
  if (nd <= 2) return native::contiguous(input.reshape({-1, C}));
  Shape order{0};
  for (int64_t d = 2; d < nd; ++d) order.push_back(d);
  order.push_back(1);
  return native::contiguous(input.permute(order)).reshape({-1, C});
}

// The rows' gradient (M, C) back in the input's layout.
Tensor from_rows(const Tensor& rows, const Shape& input_shape) {
  const int64_t nd = static_cast<int64_t>(input_shape.size());
  if (nd <= 2) return rows.view(input_shape);
  Shape moved{input_shape[0]};
  for (int64_t d = 2; d < nd; ++d) moved.push_back(input_shape[static_cast<size_t>(d)]);
  moved.push_back(input_shape[1]);
  Shape order{0, nd - 1};
  for (int64_t d = 1; d < nd - 1; ++d) order.push_back(d);
  return rows.view(moved).permute(order);
}

// The fused op's gradient written with differentiable ops (for create_graph): per sample s,
//   dx = G_s ((1 - e) w[t] (p - onehot(t)) + keep (e / C) (p sum(w) - w)).
Tensor cross_entropy_formula(const Tensor& x, const Tensor& t, const Tensor& weight,
                             const Tensor& g, const Tensor& weight_sum, int64_t ignore_index,
                             Reduction r, double e) {
  const int64_t class_dim = class_dim_of(x);
  const int64_t C = x.size(class_dim);
  const Tensor p = softmax(x, class_dim);
  const Tensor keep = t.ne(ignore_index);
  const Tensor index = where(keep, t, 0);
  const int64_t nd = x.dim();
  Shape order;  // one_hot's class dim (last) back to class_dim
  for (int64_t d = 0; d < nd; ++d)
    order.push_back(d < class_dim ? d : d == class_dim ? nd - 1 : d - 1);
  const Tensor onehot = one_hot(index, C).permute(order).to(x.dtype());
  Tensor wt = weight.defined() ? weight.index_select(0, index.reshape({-1})).reshape(t.sizes())
                               : ones(t.sizes(), x.options());
  wt = where(keep, wt, 0.0);
  Tensor G = r == Reduction::None ? g : g.expand(t.sizes());
  if (r == Reduction::Mean) G = G.div(weight_sum.to(x.dtype()));
  Tensor dx = (p - onehot).mul(wt.mul(1 - e).unsqueeze(class_dim));
  if (e > 0) {
    const Tensor w_sum =
        weight.defined() ? weight.sum() : full({}, static_cast<double>(C), x.options());
    const Tensor wv = weight.defined() ? class_weight_view(x, weight) : ones({}, x.options());
    const Tensor smooth = p.mul(w_sum).sub(wv).mul(e / static_cast<double>(C));
    dx = dx.add(smooth.mul(keep.to(x.dtype()).unsqueeze(class_dim)));
  }
  return dx.mul(G.unsqueeze(class_dim));
}

// cross_entropy with class indices t (checked, int64) as one op of fused kernels.
Tensor fused_cross_entropy(const Tensor& input, const Tensor& t, const Tensor& weight,
                           int64_t ignore_index, Reduction r, double e) {
  autograd::Op op("CrossEntropyLossBackward", input);
  Tensor rows, weight_sum, lse;
  const Tensor w = weight.defined() ? native::contiguous(weight) : weight;
  const Tensor flat_t = native::contiguous(t.reshape({-1}));
  Tensor loss = op.run([&] {
    rows = logit_rows(input);
    native::CrossEntropyRows out = native::cross_entropy_rows(rows, flat_t, w, ignore_index, e);
    lse = out.lse;
    if (r == Reduction::None) return out.loss.view(t.sizes()).to(input.dtype());
    if (r == Reduction::Sum) return out.loss.sum().to(input.dtype());
    // The weighted mean (NaN when every target is ignored): both sums in one reduction.
    const Tensor sums = out.loss_and_weight.sum({1});
    weight_sum = sums.select(0, 1);
    return sums.select(0, 0).div(weight_sum).to(input.dtype());
  });
  op.set_output(loss);
  op.save(input);
  op.save(rows);
  op.save(t);
  op.save(weight);
  op.save(lse);
  op.save(weight_sum);
  const Shape input_shape = input.sizes();
  op.backward([ignore_index, r, e, input_shape](const autograd::Saved& s,
                                                const autograd::Tensors& g) -> autograd::Tensors {
    if (autograd::is_grad_enabled())  // create_graph: record the formula's graph
      return {cross_entropy_formula(s[0], s[2], s[3], g[0], s[5], ignore_index, r, e)};
    const Tensor rows = s[1], lse = s[4];
    const int64_t M = rows.size(0);
    Tensor gr = g[0].to(lse.dtype());
    if (r == Reduction::Mean) gr = gr.div(s[5]);
    gr = native::contiguous(r == Reduction::None ? gr.reshape({M}) : gr.expand({M}));
    const Tensor weight = s[3];
    const Tensor d = native::cross_entropy_rows_backward(
        gr, rows, native::contiguous(s[2].reshape({-1})),
        weight.defined() ? native::contiguous(weight) : weight, lse, ignore_index, e);
    return {from_rows(d, input_shape)};
  });
  return loss;
}

// ---- binary cross-entropy on probabilities ----------------------------------------------------

// -(t max(log x, -100) + (1 - t) max(log(1 - x), -100)) element-wise, with PyTorch's gradients:
//   d/dx = (x - t) / max(x (1 - x), eps)   (finite at x = 0 and 1, unlike the clamped logs')
//   d/dt = log(1 - x) - log(x)
// written with differentiable ops, so double backward works. eps is PyTorch's `const float
// EPSILON = 1e-12`, i.e. 1e-12 rounded to float (9.99999996e-13), so the gradient at 0 and 1
// matches PyTorch's to the last bit.
constexpr double kBceEpsilon = static_cast<double>(1e-12f);

struct BinaryCrossEntropy : autograd::Function<BinaryCrossEntropy> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& t) {
    ctx->save_for_backward({x, t});
    Tensor log_x = x.log().clamp_min(-100);
    Tensor log_1mx = (1 - x).log().clamp_min(-100);
    return (t - 1).mul(log_1mx).sub(t.mul(log_x));
  }
  static Tensors backward(autograd::AutogradContext* ctx, const Tensors& grads) {
    const Tensors saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &t = saved[1], &g = grads[0];
    Tensor gx, gt;
    if (ctx->needs_input_grad(0)) gx = g.mul(x.sub(t)).div(x.mul(1 - x).clamp_min(kBceEpsilon));
    if (ctx->needs_input_grad(1)) gt = g.mul((1 - x).log().sub(x.log()));
    return {gx, gt};
  }
};

}  // namespace

namespace functional {

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, const std::string& reduction) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), weight2 = autocast::cast_float32(weight);
    if (!autocast::same(input, input2) || !autocast::same(weight, weight2))
      return nll_loss(input2, target, weight2, ignore_index, reduction);
  }
  const char* op = "nll_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_logits(input, op);
  check_class_weight(input, weight, op);
  return nll(input, class_targets(input, target, weight, ignore_index, op), r);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, const std::string& reduction, double label_smoothing) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target),
                 weight2 = autocast::cast_float32(weight);
    if (!autocast::same(input, input2) || !autocast::same(target, target2) ||
        !autocast::same(weight, weight2))
      return cross_entropy(input2, target2, weight2, ignore_index, reduction, label_smoothing);
  }
  const char* op = "cross_entropy";
  const Reduction r = parse_reduction(reduction, op);
  check_logits(input, op);
  check_class_weight(input, weight, op);
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
              ": label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  const int64_t class_dim = class_dim_of(input);
  const double C = static_cast<double>(input.size(class_dim));

  if (target.is_floating_point()) {  // class probabilities
    const Tensor log_probs = log_softmax(input, class_dim);
    EMBER_CHECK(target.sizes() == input.sizes(), op,
                ": a floating target holds class probabilities and must have the input's "
                "shape; input ",
                input.sizes(), ", target ", target.sizes());
    check_dtype(input, target, "target", op);
    EMBER_CHECK(ignore_index < 0, op,
                ": ignore_index is not supported for floating point (probability) targets, got "
                "ignore_index=",
                ignore_index);
    Tensor probs = target;
    if (label_smoothing > 0) probs = target.mul(1 - label_smoothing).add(label_smoothing / C);
    return cross_entropy_probs(log_probs, probs, weight, r);
  }

  if (fused_cross_entropy_applies(input, weight))
    return fused_cross_entropy(
        input, class_indices(input, target, ignore_index, op, input.device().is_cuda()), weight,
        ignore_index, r, label_smoothing);
  const Tensor log_probs = log_softmax(input, class_dim);
  const ClassTargets ct = class_targets(input, target, weight, ignore_index, op);
  Tensor loss = nll(log_probs, ct, r);
  if (label_smoothing == 0.0) return loss;
  // The uniform part of the smoothed target: -sum_c w[c] logp[c] per sample, 0 where ignored,
  // and for "mean" divided by nll_loss's denominator (PyTorch 1.13).
  Tensor terms = weight.defined() ? log_probs.mul(class_weight_view(input, weight)) : log_probs;
  Tensor smooth = where(ct.keep, terms.sum({class_dim}).neg(), 0.0);
  if (r == Reduction::Sum) smooth = smooth.sum();
  if (r == Reduction::Mean) smooth = smooth.sum().div(ct.weight.sum());
  return loss.mul(1 - label_smoothing).add(smooth.mul(label_smoothing / C));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target);
    if (!autocast::same(input, input2) || !autocast::same(target, target2))
      return mse_loss(input2, target2, reduction);
  }
  const char* op = "mse_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  Tensor d = input.sub(target);
  return reduce(d.mul(d), r);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target);
    if (!autocast::same(input, input2) || !autocast::same(target, target2))
      return l1_loss(input2, target2, reduction);
  }
  const char* op = "l1_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  return reduce(input.sub(target).abs(), r);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target);
    if (!autocast::same(input, input2) || !autocast::same(target, target2))
      return smooth_l1_loss(input2, target2, reduction, beta);
  }
  const char* op = "smooth_l1_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  EMBER_CHECK(beta >= 0.0, op, ": beta must be non-negative, got ", beta);
  Tensor d = input.sub(target);
  Tensor z = d.abs();
  if (beta == 0.0) return reduce(z, r);  // the quadratic part vanishes: l1_loss
  return reduce(where(z.lt(beta), d.mul(d).mul(0.5 / beta), z.sub(0.5 * beta)), r);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target);
    if (!autocast::same(input, input2) || !autocast::same(target, target2))
      return huber_loss(input2, target2, reduction, delta);
  }
  const char* op = "huber_loss";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  EMBER_CHECK(delta > 0.0, op, ": delta must be positive, got ", delta);
  Tensor d = input.sub(target);
  Tensor z = d.abs();
  return reduce(where(z.lt(delta), d.mul(d).mul(0.5), z.sub(0.5 * delta).mul(delta)), r);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target),
                 weight2 = autocast::cast_float32(weight);
    if (!autocast::same(input, input2) || !autocast::same(target, target2) ||
        !autocast::same(weight, weight2))
      return binary_cross_entropy(input2, target2, weight2, reduction);
  }
  const char* op = "binary_cross_entropy";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  check_broadcasts(input, weight, "weight", op);
  {
    Tensor outside = input.ge(0).logical_and(input.le(1)).logical_not();  // NaN counts too
    EMBER_CHECK(!outside.any().item<bool>(), op,
                ": all elements of input should be between 0 and 1 (probabilities; use "
                "binary_cross_entropy_with_logits for logits)");
  }
  Tensor loss = BinaryCrossEntropy::apply(input, target);
  if (weight.defined()) loss = loss.mul(weight);
  return reduce(loss, r);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        const Tensor& pos_weight) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target),
                 weight2 = autocast::cast_float32(weight),
                 pos_weight2 = autocast::cast_float32(pos_weight);
    if (!autocast::same(input, input2) || !autocast::same(target, target2) ||
        !autocast::same(weight, weight2) || !autocast::same(pos_weight, pos_weight2))
      return binary_cross_entropy_with_logits(input2, target2, weight2, reduction, pos_weight2);
  }
  const char* op = "binary_cross_entropy_with_logits";
  const Reduction r = parse_reduction(reduction, op);
  check_pair(input, target, op);
  check_broadcasts(input, weight, "weight", op);
  check_broadcasts(input, pos_weight, "pos_weight", op);
  // -log sigmoid(x) = log(1 + exp(-x)) = m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0):
  // both exponents are <= 0, so nothing overflows for any |x|. (The value does not depend on m,
  // so neither does the gradient: its d/dm terms cancel, also at the kink x = 0.)
  Tensor m = input.neg().clamp_min(0);
  Tensor neg_log_sigmoid = m.neg().exp().add(input.neg().sub(m).exp()).log().add(m);
  // -log(1 - sigmoid(x)) = x - log sigmoid(x), so the loss is
  //   (1 - t) x + (1 + (pos_weight - 1) t) (-log sigmoid(x)).
  Tensor factor = pos_weight.defined() ? pos_weight.sub(1).mul(target).add(1) : Tensor();
  Tensor loss =
      (1 - target).mul(input).add(factor.defined() ? factor.mul(neg_log_sigmoid) : neg_log_sigmoid);
  if (weight.defined()) loss = loss.mul(weight);
  return reduce(loss, r);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  if (autocast::any_enabled()) {  // Note [Autocast op lists]
    const Tensor input2 = autocast::cast_float32(input), target2 = autocast::cast_float32(target);
    if (!autocast::same(input, input2) || !autocast::same(target, target2))
      return kl_div(input2, target2, reduction, log_target);
  }
  const char* op = "kl_div";
  const Reduction r = parse_reduction(reduction, op, /*allow_batchmean=*/true);
  check_pair(input, target, op);
  Tensor loss;
  if (log_target) {
    loss = target.exp().mul(target.sub(input));
  } else {
    // t (log t - x) where t != 0 and 0 where t = 0 (0 log 0 = 0). Selecting the whole term, not
    // only the log, makes both gradients 0 where t = 0 (nn/loss.h); the log's argument is 1
    // there so that its backward never sees log(0) either.
    const Tensor nonzero = target.ne(0);
    loss = where(nonzero, target.mul(where(nonzero, target, 1.0).log().sub(input)), 0.0);
  }
  if (r != Reduction::BatchMean) return reduce(loss, r);
  Tensor total = loss.sum();
  return input.dim() == 0 ? total : total.div(static_cast<double>(input.size(0)));
}

}  // namespace functional

namespace F = functional;

// ---- modules ------------------------------------------------------------------------------

Loss::Loss(std::string type_name, std::string reduction, bool allow_batchmean)
    : Module(std::move(type_name)), reduction_(std::move(reduction)) {
  parse_reduction(reduction_, this->type_name().c_str(), allow_batchmean);
}

CrossEntropyLoss::CrossEntropyLoss(const Tensor& weight, int64_t ignore_index,
                                   std::string reduction, double label_smoothing)
    : Loss("CrossEntropyLoss", std::move(reduction)),
      ignore_index_(ignore_index),
      label_smoothing_(label_smoothing) {
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, got ",
              label_smoothing);
  if (weight.defined()) this->weight = register_buffer("weight", weight);
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target, weight, ignore_index_, reduction(), label_smoothing_);
}

NLLLoss::NLLLoss(const Tensor& weight, int64_t ignore_index, std::string reduction)
    : Loss("NLLLoss", std::move(reduction)), ignore_index_(ignore_index) {
  if (weight.defined()) this->weight = register_buffer("weight", weight);
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target, weight, ignore_index_, reduction());
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return F::mse_loss(input, target, reduction());
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return F::l1_loss(input, target, reduction());
}

SmoothL1Loss::SmoothL1Loss(std::string reduction, double beta)
    : Loss("SmoothL1Loss", std::move(reduction)), beta_(beta) {
  EMBER_CHECK(beta >= 0.0, "SmoothL1Loss: beta must be non-negative, got ", beta);
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return F::smooth_l1_loss(input, target, reduction(), beta_);
}

HuberLoss::HuberLoss(std::string reduction, double delta)
    : Loss("HuberLoss", std::move(reduction)), delta_(delta) {
  EMBER_CHECK(delta > 0.0, "HuberLoss: delta must be positive, got ", delta);
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return F::huber_loss(input, target, reduction(), delta_);
}

BCELoss::BCELoss(const Tensor& weight, std::string reduction)
    : Loss("BCELoss", std::move(reduction)) {
  if (weight.defined()) this->weight = register_buffer("weight", weight);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, weight, reduction());
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const Tensor& weight, std::string reduction,
                                     const Tensor& pos_weight)
    : Loss("BCEWithLogitsLoss", std::move(reduction)) {
  if (weight.defined()) this->weight = register_buffer("weight", weight);
  if (pos_weight.defined()) this->pos_weight = register_buffer("pos_weight", pos_weight);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target, weight, reduction(), pos_weight);
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return F::kl_div(input, target, reduction(), log_target_);
}

}  // namespace ember::nn
