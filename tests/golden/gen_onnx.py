#!/usr/bin/python3
"""Golden ONNX files from PyTorch for ember's ONNX runner and exporter (tests/test_onnx.cpp).

For each model below (float32, eval mode, seeded weights) this writes:
- tests/golden/onnx/<name>.onnx: torch.onnx.export, opset 17, the batch dim dynamic
  ("batch"), input "input", output "output";
- in tests/golden/onnx.safetensors: "<name>.input" and "<name>.output" (batch 3),
  "<name>.input2" and "<name>.output2" (batch 5: the dynamic dim), and "<name>.<key>" for every
  state_dict entry, so that ember builds the same model, loads the weights and exports it itself.

Regenerate from the repository root with:
    /usr/bin/python3 tests/golden/gen_onnx.py
"""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20261202)
out = {}


def randomize_norm_stats(model):
    """Running statistics and affine parameters away from 0 / 1, so that they matter."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.5)
                m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)
                m.num_batches_tracked.fill_(7)
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm)) and m.weight is not None:
                m.weight.copy_(torch.rand_like(m.weight) + 0.5)
                m.bias.copy_(torch.randn_like(m.bias) * 0.3)


class Unflatten3(nn.Module):
    """x.view(batch, 3, 2, 5): PyTorch 1.13 cannot export nn.Unflatten, and a view on the
    dynamic batch size writes Shape / Gather / Unsqueeze / Concat nodes, which ember must run.
    ember's side of this model is nn::Unflatten(2, {2, 5})."""

    def forward(self, x):
        return x.view(x.size(0), 3, 2, 5)


def models():
    yield "mlp", nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)), \
        lambda n: torch.randn(n, 1, 28, 28)
    yield "cnn", nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, bias=False), nn.ReLU(),
        nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False), nn.Dropout(0.3),
        nn.Flatten(), nn.Linear(6 * 2 * 2, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 5)), \
        lambda n: torch.randn(n, 1, 14, 14)
    yield "acts", nn.Sequential(
        nn.Linear(8, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 8),
        nn.Tanh(), nn.Linear(8, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 8), nn.Sigmoid(),
        nn.Linear(8, 6), nn.BatchNorm1d(6), nn.Softmax(1)), \
        lambda n: torch.randn(n, 8) * 2
    yield "conv1d", nn.Sequential(
        nn.Conv1d(2, 3, 3, padding=2, dilation=2), Unflatten3(),
        nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
        nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LogSoftmax(1)), \
        lambda n: torch.randn(n, 2, 10)
    yield "embed", nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4),
                                 nn.Flatten(), nn.Linear(20, 3)), \
        lambda n: torch.randint(0, 10, (n, 5))
    # Linear on a 3-d input (MatMul + Add rather than Gemm).
    yield "seq3d", nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2)), \
        lambda n: torch.randn(n, 7, 6)


for name, model, make_input in models():
    randomize_norm_stats(model)
    model.eval()
    x, x2 = make_input(3), make_input(5)
    with torch.no_grad():
        y, y2 = model(x), model(x2)
    torch.onnx.export(model, x, os.path.join(HERE, "onnx", name + ".onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      opset_version=17)
    out[name + ".input"], out[name + ".output"] = x, y
    out[name + ".input2"], out[name + ".output2"] = x2, y2
    for key, t in model.state_dict().items():
        out[name + "." + key] = t.detach().clone()

safetensors_io.save(out, os.path.join(HERE, "onnx.safetensors"))
print("wrote", len(out), "tensors")
