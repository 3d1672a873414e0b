#!/usr/bin/python3
"""Golden values for ember's normalization layers (tests/test_nn_norm.cpp).

Writes tests/golden/nn_norm.safetensors with PyTorch 1.13 (Debian's python3-torch), all float64:

- BatchNorm1d / BatchNorm2d trained for a few steps ("<case>.step<i>.*"): each step's input,
  the output, the gradients of sum(output * grad_weights) with respect to the input, weight and
  bias, and running_mean / running_var / num_batches_tracked after the step; then one step in
  eval mode ("<case>.eval.*"). Cases: bn1d (N, C), momentum 0.1; bn1d_cma (N, C, L),
  momentum None (cumulative moving average); bn2d (N, C, H, W), momentum 0.1; bn2d_nostats
  (track_running_stats=False, affine=False, in eval: still batch statistics).
- LayerNorm over the last dim and the last 2 dims, with and without affine parameters, and
  GroupNorm (3-D and 4-D inputs): input, weight, bias, output and the gradients.
- "<case>.gradgrad.*": double backward. g = d sum(y * w_out) / d input with create_graph, then
  the gradients of sum(g * w_in) with respect to input and weight.

Regenerate from the repository root with:
    /usr/bin/python3 tests/golden/gen_nn_norm.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.manual_seed(1234)
torch.set_default_dtype(torch.float64)
out = {}


def randn(*shape):
    return torch.randn(*shape)


def set_affine(module, name):
    """Random weight / bias instead of 1 / 0, so that the affine part is tested; saved."""
    with torch.no_grad():
        module.weight.copy_(torch.rand_like(module.weight) + 0.5)
        module.bias.copy_(torch.randn_like(module.bias))
    out[name + ".weight"] = module.weight.detach().clone()
    out[name + ".bias"] = module.bias.detach().clone()


def forward_backward(module, x, prefix, params=True):
    """Runs module on x, backward of sum(y * w_out); saves input, w_out, output and grads."""
    x = x.clone().requires_grad_()
    module.zero_grad(set_to_none=True)
    y = module(x)
    w_out = torch.randn_like(y)
    (y * w_out).sum().backward()
    out[prefix + ".input"] = x.detach().clone()
    out[prefix + ".grad_output"] = w_out
    out[prefix + ".output"] = y.detach().clone()
    out[prefix + ".grad_input"] = x.grad.clone()
    if params and getattr(module, "weight", None) is not None:
        out[prefix + ".grad_weight"] = module.weight.grad.clone()
        out[prefix + ".grad_bias"] = module.bias.grad.clone()


def save_running(module, prefix):
    if module.running_mean is not None:
        out[prefix + ".running_mean"] = module.running_mean.clone()
        out[prefix + ".running_var"] = module.running_var.clone()
        out[prefix + ".num_batches_tracked"] = module.num_batches_tracked.clone()


def gradgrad(module, x, prefix):
    """Double backward through module: saves w_out, w_in and the second-order gradients."""
    x = x.clone().requires_grad_()
    module.zero_grad(set_to_none=True)
    y = module(x)
    w_out = torch.randn_like(y)
    (g,) = torch.autograd.grad((y * w_out).sum(), x, create_graph=True)
    w_in = torch.randn_like(g)
    (g * w_in).sum().backward()
    out[prefix + ".input"] = x.detach().clone()
    out[prefix + ".grad_output"] = w_out
    out[prefix + ".grad_grad_input"] = w_in
    out[prefix + ".input_grad"] = x.grad.clone()
    if getattr(module, "weight", None) is not None:
        out[prefix + ".weight_grad"] = module.weight.grad.clone()


def batch_norm_case(name, module, shapes, affine=True):
    if affine:
        set_affine(module, name)
    module.train()
    for i, shape in enumerate(shapes):
        # Offset and scale the batches so that the running statistics move visibly.
        x = randn(*shape) * (1.0 + i) + 0.5 * i
        forward_backward(module, x, "%s.step%d" % (name, i))
        save_running(module, "%s.step%d" % (name, i))
    module.eval()
    forward_backward(module, randn(*shapes[0]), name + ".eval")
    save_running(module, name + ".eval")


batch_norm_case("bn1d", torch.nn.BatchNorm1d(3), [(5, 3), (4, 3), (6, 3)])
batch_norm_case("bn1d_cma", torch.nn.BatchNorm1d(3, momentum=None), [(4, 3, 5), (2, 3, 5), (3, 3, 5)])
batch_norm_case("bn2d", torch.nn.BatchNorm2d(4), [(3, 4, 3, 3), (2, 4, 3, 2)])
batch_norm_case("bn2d_nostats", torch.nn.BatchNorm2d(2, affine=False, track_running_stats=False),
                [(2, 2, 3, 3), (3, 2, 2, 2)], affine=False)

bn = torch.nn.BatchNorm2d(3)
set_affine(bn, "bn2d_gradgrad")
bn.train()
gradgrad(bn, randn(2, 3, 3, 2), "bn2d_gradgrad")

for name, shape, normalized, affine in [
    ("ln_last1", (2, 3, 5), [5], True),
    ("ln_last2", (2, 3, 5), [3, 5], True),
    ("ln_noaffine", (4, 6), [6], False),
]:
    ln = torch.nn.LayerNorm(normalized, elementwise_affine=affine)
    if affine:
        set_affine(ln, name)
    forward_backward(ln, randn(*shape) * 2.0 + 1.0, name)

ln = torch.nn.LayerNorm([3, 4])
set_affine(ln, "ln_gradgrad")
gradgrad(ln, randn(2, 3, 4), "ln_gradgrad")

for name, groups, channels, shape in [
    ("gn_3d", 2, 6, (3, 6, 4)),
    ("gn_4d", 3, 6, (2, 6, 2, 3)),
]:
    gn = torch.nn.GroupNorm(groups, channels)
    set_affine(gn, name)
    forward_backward(gn, randn(*shape) * 1.5 - 0.5, name)

gn = torch.nn.GroupNorm(2, 4)
set_affine(gn, "gn_gradgrad")
gradgrad(gn, randn(2, 4, 3), "gn_gradgrad")

safetensors_io.save(out, os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_norm.safetensors"))
print("wrote %d tensors" % len(out))
