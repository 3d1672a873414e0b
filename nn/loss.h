#pragma once
// Losses (PyTorch 1.13's torch.nn losses and their torch.nn.functional forms).
//
//   namespace F = ember::nn::functional;
//   Tensor loss = F::cross_entropy(logits, labels);            // logits (N, C), labels int64 (N)
//   nn::CrossEntropyLoss criterion(class_weights, -100, "mean", /*label_smoothing=*/0.1);
//   Tensor loss2 = criterion(logits, labels);
//
// reduction: "none" (one loss per element / sample, shaped as described below), "mean" or
// "sum" (a 0-dim tensor); kl_div also takes "batchmean". Anything else is an error. A "mean"
// over no element is NaN, as in PyTorch.
//
// Every loss is one op of family "nn_loss" (registered under its functional name), built from
// differentiable ops of core (binary_cross_entropy uses an autograd::Function for PyTorch's
// clamped gradient), so gradients reach the input and every floating target / weight, and
// double backward works. Floating inputs only; class weights, pos_weight and floating targets
// must have the input's dtype. Element-wise losses need target.sizes() == input.sizes() (an
// error naming both shapes; PyTorch would broadcast some of them with a warning).
//
// ---- classification ------------------------------------------------------------------------
// Shapes: input (N, C), or (N, C, d1, d2, ...) with the class along dim 1 (e.g. (N, C, H, W)
// for per-pixel classes), or (C) for one unbatched sample. C is input.size(1), or input.size(0)
// for a 1-D input.
//
// nll_loss(input = log-probabilities, target = int64 class indices of input's shape without
// the class dim: (N), (N, d1, ...) or ()):
//   loss_i = -weight[t_i] * input[i, t_i], and 0 where t_i == ignore_index
//   "mean" = sum_i loss_i / sum_i weight[t_i] over the non-ignored i (the weighted mean; NaN
//            when every target is ignored), "none" has target's shape.
// A target outside [0, C) that is not ignore_index is an error naming the loss, the class and
// C. weight: (C), default all ones.
//
// cross_entropy(input = unnormalised logits) = nll_loss(log_softmax(input, class dim), ...)
// with two extensions, exactly as PyTorch 1.13:
// - label_smoothing = e in [0, 1]: the target becomes (1 - e) one_hot(t) + e / C, i.e.
//     loss = (1 - e) nll_loss(...) + (e / C) smooth,  smooth_i = -sum_c weight[c] logp[i, c]
//   with smooth_i = 0 for ignored targets and, for "mean", sum_i smooth_i divided by the same
//   denominator as nll_loss (the weights of the non-ignored targets).
// - probability targets: a floating target of input's shape (class probabilities, rows summing
//   to 1, say): loss_i = -sum_c weight[c] p[i, c] logp[i, c] (p smoothed as above when
//   label_smoothing > 0); "mean" divides by the number of samples N * d1 * ... (not by the
//   weights); "none" has input's shape without the class dim. ignore_index must stay negative.
// log_softmax keeps large logits (1e4 and more) finite.
// With class-index targets (and class weights that need no gradient) cross_entropy is one op of
// fused kernels on every device, never storing the probabilities (Note [Fused cross-entropy] in
// core/ops/cross_entropy.h); its double backward goes through the same formula written with
// differentiable ops.
//
// ---- regression (loss_i of d = input - target, element-wise; "none" has input's shape) ------
// mse_loss:        d^2
// l1_loss:         |d|
// smooth_l1_loss:  0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta    (beta >= 0; 0: l1)
// huber_loss:      0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)  (delta > 0)
//
// ---- binary and distributions (element-wise; "none" has input's shape) ---------------------
// binary_cross_entropy(input = probabilities in [0, 1] (else an error), target in [0, 1]):
//   loss_i = -weight_i (t_i max(log x_i, -100) + (1 - t_i) max(log(1 - x_i), -100))
//   with PyTorch's gradient weight (x - t) / max(x (1 - x), 1e-12), finite at x = 0 and 1.
//   (PyTorch 1.13 differentiates the target too: -weight logit(x).)
// binary_cross_entropy_with_logits(input = logits x, target t):
//   loss_i = -weight_i (pos_weight t_i log sigmoid(x_i) + (1 - t_i) log(1 - sigmoid(x_i)))
//   computed stably for any |x| (the log-sum-exp form PyTorch uses). weight broadcasts to
//   input's shape; pos_weight too (typically (C), one factor per class of the last dim).
// kl_div(input = log-probabilities, target = probabilities, or log-probabilities with
//   log_target): loss_i = t_i (log t_i - x_i), 0 where t_i = 0 (or exp(t_i) (t_i - x_i) with
//   log_target). "batchmean" = sum / input.size(0) (the mathematical KL divergence of a batch);
//   PyTorch's default "mean" divides by the number of elements. The target's gradient is
//   log t + 1 - x, and 0 where t = 0 (the term is the constant 0 there); PyTorch 1.13 gives NaN
//   there (its xlogy backward divides 0 by 0). The input's gradient is -t (0 where t = 0).

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace ember::nn {

namespace functional {

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                int64_t ignore_index = -100, const std::string& reduction = "mean");
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {},
                                        const std::string& reduction = "mean",
                                        const Tensor& pos_weight = {});
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);

}  // namespace functional

// The base of the loss modules (PyTorch's _Loss): a two-input forward and the reduction.
// Class weights and pos_weight are registered as buffers "weight" / "pos_weight" when given
// (so they follow to() and appear in state_dict, as in PyTorch).
class Loss : public Module {
 public:
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::forward;
  using Module::operator();
  const std::string& reduction() const { return reduction_; }

 protected:
  // Checks `reduction` (an error naming the loss for an unknown one).
  Loss(std::string type_name, std::string reduction, bool allow_batchmean = false);

 private:
  std::string reduction_;
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(const Tensor& weight = {}, int64_t ignore_index = -100,
                            std::string reduction = "mean", double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor weight;  // undefined when none was given

 private:
  int64_t ignore_index_;
  double label_smoothing_;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(const Tensor& weight = {}, int64_t ignore_index = -100,
                   std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor weight;

 private:
  int64_t ignore_index_;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(std::string reduction = "mean") : Loss("MSELoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string reduction = "mean") : Loss("L1Loss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;

 private:
  double beta_;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;

 private:
  double delta_;
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(const Tensor& weight = {}, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor weight;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(const Tensor& weight = {}, std::string reduction = "mean",
                             const Tensor& pos_weight = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor weight, pos_weight;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false)
      : Loss("KLDivLoss", std::move(reduction), /*allow_batchmean=*/true),
        log_target_(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;

 private:
  bool log_target_;
};

}  // namespace ember::nn
