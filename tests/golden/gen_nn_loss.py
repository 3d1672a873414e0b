#!/usr/bin/python3
"""Golden values for tests/test_nn_loss.cpp: every loss of torch.nn.functional that ember has,
from PyTorch 1.13, in float64.

For each case NAME it stores the inputs
  NAME.input, NAME.target                      (target int64 for class indices)
  NAME.weight, NAME.pos_weight                 (only when the case uses them)
  NAME.ignore_index, NAME.label_smoothing,     (only when not the default; 0-dim tensors)
  NAME.beta, NAME.delta, NAME.log_target
and for each reduction R the case covers ("none", "mean", "sum", and "batchmean" for kl_div):
  NAME.R.output       the loss
  NAME.R.grad_output  a random tensor g of the loss's shape
  NAME.R.grad_input   d(sum(loss * g))/d input
  NAME.R.grad_target  the same for a floating target (where PyTorch differentiates it)

Regenerate (deterministic: fixed seed) from the repository root with Debian's PyTorch:
  /usr/bin/python3 tests/golden/gen_nn_loss.py
which writes tests/golden/nn_loss.safetensors.
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetensors_io  # noqa: E402

# kl_div's reduction='mean' warns that it is not the KL divergence; that is what is tested.
warnings.filterwarnings("ignore", message="reduction: 'mean'")

torch.manual_seed(20240602)
f64 = torch.float64
out = {}
ALL = ("none", "mean", "sum")


def case(name, fn, inputs, reductions=ALL, grad_target=True, **options):
    """fn(input, target, reduction, **inputs-without-input/target, **options) -> loss."""
    for k, v in inputs.items():
        out[f"{name}.{k}"] = v
    for k, v in options.items():
        dtype = torch.int64 if isinstance(v, (bool, int)) else f64
        out[f"{name}.{k}"] = torch.tensor(v, dtype=dtype)
    extra = {k: v for k, v in inputs.items() if k not in ("input", "target")}
    for r in reductions:
        x = inputs["input"].clone().requires_grad_(True)
        t = inputs["target"].clone()
        if t.is_floating_point() and grad_target:
            t.requires_grad_(True)
        y = fn(x, t, r, **extra, **options)
        g = torch.randn(y.shape, dtype=f64)
        (y * g).sum().backward()
        out[f"{name}.{r}.output"] = y.detach()
        out[f"{name}.{r}.grad_output"] = g
        out[f"{name}.{r}.grad_input"] = x.grad
        if t.requires_grad:
            out[f"{name}.{r}.grad_target"] = t.grad


def classes(shape, C, ignore=()):
    """Random class indices; positions in `ignore` (flat indices) become -100."""
    t = torch.randint(0, C, shape)
    flat = t.view(-1)
    for i in ignore:
        flat[i] = -100
    return t


def probs(*shape, dim=1):
    return torch.softmax(torch.randn(*shape, dtype=f64), dim=dim)


# ---- cross_entropy ------------------------------------------------------------------------
def ce(x, t, r, weight=None, ignore_index=-100, label_smoothing=0.0):
    return F.cross_entropy(x, t, weight=weight, ignore_index=ignore_index, reduction=r,
                           label_smoothing=label_smoothing)


w4 = torch.rand(4, dtype=f64) + 0.5
case("ce.basic", ce, {"input": torch.randn(5, 4, dtype=f64), "target": classes((5,), 4)})
case("ce.weight", ce, {"input": torch.randn(6, 4, dtype=f64),
                       "target": torch.tensor([0, 1, 2, 3, 1, 1]), "weight": w4})
case("ce.ignore", ce, {"input": torch.randn(6, 4, dtype=f64),
                       "target": classes((6,), 4, ignore=(1, 4)), "weight": w4})
case("ce.ignore_class", ce, {"input": torch.randn(6, 4, dtype=f64),
                             "target": torch.tensor([2, 0, 2, 3, 1, 2])}, ignore_index=2)
case("ce.smooth", ce, {"input": torch.randn(5, 4, dtype=f64), "target": classes((5,), 4)},
     label_smoothing=0.15)
case("ce.smooth_weight_ignore", ce,
     {"input": torch.randn(7, 4, dtype=f64), "target": classes((7,), 4, ignore=(0, 5)),
      "weight": w4}, label_smoothing=0.2)
case("ce.smooth_ignore", ce,
     {"input": torch.randn(7, 4, dtype=f64), "target": classes((7,), 4, ignore=(2,))},
     label_smoothing=0.3)
case("ce.probs", ce, {"input": torch.randn(5, 4, dtype=f64), "target": probs(5, 4)})
case("ce.probs_weight_smooth", ce,
     {"input": torch.randn(5, 4, dtype=f64), "target": probs(5, 4), "weight": w4},
     label_smoothing=0.1)
case("ce.probs_spatial", ce, {"input": torch.randn(2, 3, 4, dtype=f64), "target": probs(2, 3, 4)})
case("ce.spatial", ce,
     {"input": torch.randn(2, 3, 4, 5, dtype=f64), "target": classes((2, 4, 5), 3, ignore=(3, 17, 30)),
      "weight": torch.rand(3, dtype=f64) + 0.5})
case("ce.spatial_smooth", ce,
     {"input": torch.randn(2, 3, 3, 3, dtype=f64), "target": classes((2, 3, 3), 3, ignore=(4,))},
     label_smoothing=0.1)
case("ce.unbatched", ce, {"input": torch.randn(5, dtype=f64), "target": torch.tensor(3)})
case("ce.large_logits", ce,
     {"input": torch.randn(4, 5, dtype=f64) * 1e4, "target": classes((4,), 5)},
     label_smoothing=0.1)

# ---- nll_loss -------------------------------------------------------------------------------
def nll(x, t, r, weight=None, ignore_index=-100):
    return F.nll_loss(x, t, weight=weight, ignore_index=ignore_index, reduction=r)


case("nll.basic", nll, {"input": torch.log_softmax(torch.randn(5, 4, dtype=f64), 1),
                        "target": classes((5,), 4)})
case("nll.weight_ignore", nll,
     {"input": torch.log_softmax(torch.randn(6, 4, dtype=f64), 1),
      "target": classes((6,), 4, ignore=(2,)), "weight": w4})
case("nll.spatial", nll, {"input": torch.randn(2, 3, 4, dtype=f64),
                          "target": classes((2, 4), 3, ignore=(5,))}, ignore_index=-100)

# ---- regression -------------------------------------------------------------------------------
def pair(*shape):
    return {"input": torch.randn(*shape, dtype=f64) * 1.5, "target": torch.randn(*shape, dtype=f64)}


case("mse", lambda x, t, r: F.mse_loss(x, t, reduction=r), pair(3, 4))
case("l1", lambda x, t, r: F.l1_loss(x, t, reduction=r), pair(3, 4))
for tag, beta in (("1", 1.0), ("0.5", 0.5), ("0", 0.0)):
    case("smooth_l1." + tag, lambda x, t, r, beta: F.smooth_l1_loss(x, t, reduction=r, beta=beta),
         pair(3, 4), beta=beta)
for tag, delta in (("1", 1.0), ("0.3", 0.3), ("2.5", 2.5)):
    case("huber." + tag, lambda x, t, r, delta: F.huber_loss(x, t, reduction=r, delta=delta),
         pair(3, 4), delta=delta)

# ---- binary cross-entropy ---------------------------------------------------------------------
def bce(x, t, r, weight=None):
    return F.binary_cross_entropy(x, t, weight=weight, reduction=r)


case("bce.basic", bce, {"input": torch.rand(3, 4, dtype=f64) * 0.96 + 0.02,
                        "target": torch.rand(3, 4, dtype=f64)})
case("bce.weight", bce, {"input": torch.rand(3, 4, dtype=f64) * 0.96 + 0.02,
                         "target": torch.randint(0, 2, (3, 4)).to(f64), "weight": w4})
# Probabilities of exactly 0 and 1: the logs clamp at -100 and the gradient divides by
# max(x (1 - x), 1e-12). The target gradient is infinite there, so it is not compared.
case("bce.edges", bce,
     {"input": torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.5, 1e-30]], dtype=f64),
      "target": torch.tensor([[0.0, 1.0, 0.3, 0.6], [1.0, 0.0, 1.0, 0.0]], dtype=f64)},
     grad_target=False)


def bce_logits(x, t, r, weight=None, pos_weight=None):
    return F.binary_cross_entropy_with_logits(x, t, weight=weight, reduction=r,
                                              pos_weight=pos_weight)


def logits_pair(*shape, scale=2.0):
    return {"input": torch.randn(*shape, dtype=f64) * scale, "target": torch.rand(*shape, dtype=f64)}


case("bce_logits.basic", bce_logits, logits_pair(3, 4))
case("bce_logits.weight", bce_logits, dict(logits_pair(3, 4), weight=torch.rand(3, 1, dtype=f64)))
case("bce_logits.pos_weight", bce_logits,
     dict(logits_pair(3, 4), pos_weight=torch.rand(4, dtype=f64) * 3))
case("bce_logits.both", bce_logits,
     dict(logits_pair(2, 3, 4), weight=w4, pos_weight=torch.rand(4, dtype=f64) * 3))
large = logits_pair(2, 4)
large["input"] = torch.tensor([[-1e4, -60.0, 40.0, 1e4], [-25.0, 0.0, 30.0, -1e3]], dtype=f64)
case("bce_logits.large", bce_logits, dict(large, pos_weight=torch.tensor([2.0, 0.5, 1.0, 3.0], dtype=f64)))

# ---- kl_div -------------------------------------------------------------------------------------
def kl(x, t, r, log_target=False):
    return F.kl_div(x, t, reduction=r, log_target=bool(log_target))


KL = ALL + ("batchmean",)
case("kl_div.probs", kl, {"input": torch.log_softmax(torch.randn(3, 5, dtype=f64), 1),
                          "target": probs(3, 5)}, reductions=KL)
# Targets of exactly 0 (0 log 0 = 0). PyTorch 1.13 differentiates xlogy(t, t) into NaN there
# (later versions give 0, as ember does), so the target gradient is not compared.
target = probs(3, 5)
target[0, 1] = 0.0
target[2, 4] = 0.0
case("kl_div.zeros", kl, {"input": torch.log_softmax(torch.randn(3, 5, dtype=f64), 1),
                          "target": target}, reductions=KL, grad_target=False)
case("kl_div.log_target", kl, {"input": torch.log_softmax(torch.randn(3, 5, dtype=f64), 1),
                               "target": torch.log_softmax(torch.randn(3, 5, dtype=f64), 1)},
     reductions=KL, log_target=1)

safetensors_io.save(out, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "nn_loss.safetensors"))
