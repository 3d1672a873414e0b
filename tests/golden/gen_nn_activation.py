#!/usr/bin/python3
"""Golden values for tests/test_nn_activation.cpp: activations and embedding from PyTorch 1.13.

For each case NAME it stores, in float64:
  NAME.input        the input x
  NAME.output       y = f(x)
  NAME.grad_output  a random tensor g of y's shape
  NAME.grad_input   d(sum(y * g))/dx, so every output element matters
Embedding cases store NAME.weight, NAME.indices (int64), NAME.output, NAME.grad_output and
NAME.grad_weight (the padding row's gradient is zero).

Regenerate (deterministic: fixed seed) from the repository root with Debian's PyTorch:
  /usr/bin/python3 tests/golden/gen_nn_activation.py
which writes tests/golden/nn_activation.safetensors.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetensors_io  # noqa: E402

torch.manual_seed(20240601)
out = {}


def case(name, fn, x):
    x = x.detach().clone().requires_grad_(True)
    y = fn(x)
    g = torch.randn(y.shape, dtype=torch.float64)
    (y * g).sum().backward()
    out[name + ".input"] = x.detach()
    out[name + ".output"] = y.detach()
    out[name + ".grad_output"] = g
    out[name + ".grad_input"] = x.grad


# (4, 5) with an exact 0 (the kinks of relu / leaky_relu) and a row of large values
# (saturated tanh / sigmoid, gelu's tails).
x = torch.randn(4, 5, dtype=torch.float64) * 2
x[0, 0] = 0.0
x[3] = torch.tensor([-30.0, -8.0, 12.0, 25.0, -0.5], dtype=torch.float64)

case("relu", F.relu, x)
case("leaky_relu", F.leaky_relu, x)
case("leaky_relu_0.2", lambda t: F.leaky_relu(t, 0.2), x)
case("gelu", F.gelu, x)
case("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"), x)
case("silu", F.silu, x)
case("tanh", torch.tanh, x)
case("sigmoid", torch.sigmoid, x)
case("softmax_dim1", lambda t: F.softmax(t, dim=1), x)
case("softmax_dim0", lambda t: F.softmax(t, dim=0), x)
case("log_softmax_dim1", lambda t: F.log_softmax(t, dim=1), x)
x3 = torch.randn(2, 3, 4, dtype=torch.float64)
case("softmax_3d_last", lambda t: F.softmax(t, dim=-1), x3)
case("log_softmax_3d_mid", lambda t: F.log_softmax(t, dim=1), x3)
case("log_softmax_large", lambda t: F.log_softmax(t, dim=1), x * 1e4)


def embedding_case(name, num, dim, indices, padding_idx):
    w = torch.randn(num, dim, dtype=torch.float64)
    if padding_idx is not None:
        w[padding_idx] = 0.0
    w.requires_grad_(True)
    y = F.embedding(indices, w, padding_idx=padding_idx)
    g = torch.randn(y.shape, dtype=torch.float64)
    (y * g).sum().backward()
    out[name + ".weight"] = w.detach()
    out[name + ".indices"] = indices
    out[name + ".output"] = y.detach()
    out[name + ".grad_output"] = g
    out[name + ".grad_weight"] = w.grad


idx = torch.tensor([[1, 3, 1, 0], [5, 1, 2, 3]], dtype=torch.int64)
embedding_case("embedding", 6, 3, idx, None)
embedding_case("embedding_padding", 6, 3, idx, 1)

safetensors_io.save(out, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "nn_activation.safetensors"))
