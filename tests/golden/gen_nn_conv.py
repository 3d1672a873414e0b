#!/usr/bin/python3
"""Golden values for ember's linear, convolution, pooling and reshaping layers
(nn/linear.h, nn/conv.h, nn/pooling.h, nn/flatten.h), checked by tests/test_nn_conv.cpp.

For every case NAME it writes, in float64:
  NAME.input (and NAME.input2 for Bilinear)   the layer's input(s)
  NAME.weight, NAME.bias                      the layer's parameters (PyTorch's state_dict keys;
                                              bias absent for bias=False layers)
  NAME.output                                 the layer's output (NAME.indices: MaxPool2d's)
  NAME.grad_output                            a random weight w_out for the loss (y * w_out).sum()
  NAME.grad_input (NAME.grad_input2), NAME.grad_weight, NAME.grad_bias
                                              the gradients of that loss
The layer's settings are in the C++ test, next to the case's name.

Regenerate (Debian's python3-torch 1.13; deterministic, fixed seed) from the repository root:
  /usr/bin/python3 tests/golden/gen_nn_conv.py
"""

import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.manual_seed(1234)
out = {}


def case(name, module, *inputs, forward=None):
    """Runs `module` (or forward(module, *inputs)) forward and backward and records it all."""
    module = module.double()
    xs = [x.double().requires_grad_() for x in inputs]
    result = forward(module, *xs) if forward else module(*xs)
    y, indices = result if isinstance(result, tuple) else (result, None)
    w_out = torch.randn_like(y)
    (y * w_out).sum().backward()
    for i, x in enumerate(xs):
        suffix = "" if i == 0 else str(i + 1)
        out[f"{name}.input{suffix}"] = x.detach()
    for key, p in module.state_dict().items():
        out[f"{name}.{key}"] = p.detach()
    out[f"{name}.output"] = y.detach()
    if indices is not None:
        out[f"{name}.indices"] = indices
    out[f"{name}.grad_output"] = w_out
    for i, x in enumerate(xs):
        suffix = "" if i == 0 else str(i + 1)
        out[f"{name}.grad_input{suffix}"] = x.grad
    for key, p in module.named_parameters():
        out[f"{name}.grad_{key}"] = p.grad


r = torch.randn

# ---- linear -------------------------------------------------------------------------------------
case("linear", nn.Linear(5, 3), r(4, 5))
case("linear.batched", nn.Linear(5, 3), r(2, 3, 5))
case("linear.nobias", nn.Linear(4, 6, bias=False), r(3, 4))
case("bilinear", nn.Bilinear(3, 4, 5), r(6, 3), r(6, 4))
case("bilinear.batched_nobias", nn.Bilinear(2, 3, 4, bias=False), r(2, 3, 2), r(2, 3, 3))

# ---- convolution --------------------------------------------------------------------------------
case("conv2d.basic", nn.Conv2d(3, 2, 3), r(2, 3, 5, 4))
case("conv2d.stride_padding", nn.Conv2d(2, 3, (3, 2), stride=2, padding=(1, 2)), r(1, 2, 7, 6))
case("conv2d.dilation", nn.Conv2d(2, 3, 3, padding=2, dilation=2, bias=False), r(1, 2, 7, 7))
case("conv2d.groups", nn.Conv2d(4, 4, 3, padding=1, groups=2), r(1, 4, 5, 4))
case("conv2d.same_even", nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(1, 2)), r(1, 2, 6, 7))
case("conv2d.same_odd", nn.Conv2d(2, 3, 3, padding="same"), r(1, 2, 5, 4))
case("conv2d.valid", nn.Conv2d(2, 3, 2, padding="valid"), r(2, 2, 4, 5))
case("conv2d.unbatched", nn.Conv2d(2, 3, 3, stride=(1, 2), padding=1), r(2, 5, 6))
case("conv1d.basic", nn.Conv1d(3, 4, 3, stride=2, padding=1), r(2, 3, 9))
case("conv1d.same_even", nn.Conv1d(3, 2, 4, padding="same"), r(2, 3, 8))
case("conv1d.groups_dilation", nn.Conv1d(3, 6, 2, dilation=2, groups=3), r(2, 3, 7))
case("conv1d.unbatched", nn.Conv1d(2, 3, 3, padding=1), r(2, 6))
case("conv_transpose2d.basic", nn.ConvTranspose2d(2, 3, 3), r(2, 2, 3, 4))
case("conv_transpose2d.stride_groups",
     nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2),
     r(1, 4, 3, 3))
case("conv_transpose2d.dilation",
     nn.ConvTranspose2d(2, 3, (3, 2), stride=(2, 1), padding=(1, 0), output_padding=(1, 1),
                        dilation=(1, 2), bias=False), r(2, 2, 3, 4))
case("conv_transpose2d.unbatched", nn.ConvTranspose2d(2, 2, 2, stride=2), r(2, 3, 3))
case("conv_transpose2d.output_size", nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1),
     r(1, 2, 3, 4), forward=lambda m, x: m(x, output_size=[8, 11]))

# ---- pooling (random inputs: no ties in the max) ------------------------------------------------
case("max_pool2d.basic", nn.MaxPool2d(2), r(2, 2, 6, 5))
case("max_pool2d.stride_padding", nn.MaxPool2d(3, stride=2, padding=1, return_indices=True),
     r(1, 2, 7, 8))
case("max_pool2d.ceil_dilation",
     nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, dilation=(2, 1), ceil_mode=True),
     r(1, 2, 8, 6))
case("avg_pool2d.basic", nn.AvgPool2d(2), r(2, 2, 6, 5))
case("avg_pool2d.ceil_include_pad", nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True),
     r(1, 2, 6, 7))
case("avg_pool2d.ceil_exclude_pad",
     nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     r(1, 2, 6, 7))
case("avg_pool2d.divisor", nn.AvgPool2d((2, 3), stride=(1, 2), padding=1, divisor_override=4),
     r(1, 2, 5, 6))
case("adaptive_avg_pool2d.uneven", nn.AdaptiveAvgPool2d((3, 2)), r(2, 2, 7, 5))
case("adaptive_avg_pool2d.even", nn.AdaptiveAvgPool2d((3, 2)), r(1, 2, 6, 4))
case("adaptive_avg_pool2d.upsample", nn.AdaptiveAvgPool2d((5, 4)), r(1, 2, 3, 2))
case("adaptive_avg_pool2d.global", nn.AdaptiveAvgPool2d(1), r(2, 3, 4, 5))
case("adaptive_avg_pool2d.unbatched", nn.AdaptiveAvgPool2d(4), r(2, 9, 6))

# ---- reshaping ----------------------------------------------------------------------------------
case("flatten", nn.Flatten(), r(2, 3, 4, 2))
case("unflatten", nn.Unflatten(1, (3, 4)), r(2, 12, 2))

# ---- padding modes (last, so that the cases above keep their random values) ---------------------
case("conv2d.reflect", nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"), r(2, 2, 5, 6))
case("conv2d.replicate", nn.Conv2d(2, 3, (2, 3), stride=2, padding=2, padding_mode="replicate"),
     r(1, 2, 5, 4))
case("conv2d.circular", nn.Conv2d(2, 2, 3, padding=1, dilation=(1, 2), padding_mode="circular"),
     r(1, 2, 4, 6))
case("conv2d.circular_same", nn.Conv2d(2, 3, (4, 3), padding="same", padding_mode="circular"),
     r(1, 2, 6, 5))
case("conv2d.reflect_unbatched", nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), r(2, 4, 4))
case("conv1d.reflect", nn.Conv1d(3, 2, 3, padding=2, padding_mode="reflect"), r(2, 3, 7))
case("conv1d.circular_same", nn.Conv1d(2, 2, 4, padding="same", padding_mode="circular"),
     r(1, 2, 6))
case("conv1d.replicate_unbatched", nn.Conv1d(2, 3, 3, padding=1, padding_mode="replicate"),
     r(2, 5))

safetensors_io.save(out, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "nn_conv.safetensors"))
print(f"wrote {len(out)} tensors")
