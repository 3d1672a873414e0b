#!/usr/bin/python3
"""Checks the ONNX files ember writes with tools written apart from ember (tests/test_onnx.cpp).

    python3 tests/onnx_check.py DIR

For every DIR/<name>.onnx (with DIR/<name>.safetensors holding "input" and "output", ember's
input and ember's result):
1. onnx.checker.check_model(full_check=True): the model is valid ONNX, and strict shape
   inference agrees with the declared input and output shapes (Debian's python3-onnx);
2. the graph is evaluated by the small NumPy interpreter below -- written from the ONNX
   operator specification, sharing no code with ember -- and its output must match ember's.
Exits 1 naming the file and the problem on the first failure, 0 when all pass.
"""

import json
import math
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
          "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        a = np.frombuffer(data[base + begin:base + end], dtype=DTYPES[e["dtype"]])
        out[name] = a.reshape(e["shape"])
    return out


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pad_spatial(x, pads, value):
    k = (x.ndim - 2)
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + k]) for i in range(k)]
    return np.pad(x, widths, constant_values=value)


def windows(x, kernel, strides, dilations, out_sizes):
    """x (N, C, *spatial) -> (N, C, *out, *kernel) views of each window."""
    n, c = x.shape[:2]
    idx = []
    for d, (k, s, dil, o) in enumerate(zip(kernel, strides, dilations, out_sizes)):
        idx.append((np.arange(o) * s)[:, None] + (np.arange(k) * dil)[None, :])
    if len(kernel) == 1:
        return x[:, :, idx[0]]
    return x[:, :, idx[0][:, None, :, None], idx[1][None, :, None, :]]


def out_size(size, pad_begin, pad_end, k, s, dil, ceil):
    span = dil * (k - 1) + 1
    o = (size + pad_begin + pad_end - span) / s + 1
    o = math.ceil(o) if ceil else math.floor(o)
    if ceil and (o - 1) * s >= size + pad_begin:  # the last window must start in the input
        o -= 1
    return int(o)


def conv(x, w, b, a):
    k = list(w.shape[2:])
    sp = len(k)
    strides = a.get("strides", [1] * sp)
    dil = a.get("dilations", [1] * sp)
    pads = a.get("pads", [0] * 2 * sp)
    group = a.get("group", 1)
    x = pad_spatial(x, pads, 0.0)
    outs = [out_size(x.shape[2 + i], 0, 0, k[i], strides[i], dil[i], False) for i in range(sp)]
    win = windows(x, k, strides, dil, outs)  # (N, C, *out, *k)
    cg, og = x.shape[1] // group, w.shape[0] // group
    ys = []
    for g in range(group):
        wg = w[g * og:(g + 1) * og]  # (og, cg, *k)
        xg = win[:, g * cg:(g + 1) * cg]
        if sp == 1:
            ys.append(np.einsum("ncpk,ock->nop", xg, wg))
        else:
            ys.append(np.einsum("ncpqkl,ockl->nopq", xg, wg))
    y = np.concatenate(ys, axis=1)
    if b is not None:
        y = y + b.reshape([1, -1] + [1] * sp)
    return y.astype(x.dtype)


def conv_transpose(x, w, b, a):
    n, cin, h, wd = x.shape
    group = a.get("group", 1)
    kh, kw = w.shape[2:]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    oph, opw = a.get("output_padding", [0, 0])
    cout = w.shape[1] * group
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    y = np.zeros((n, cout, full_h, full_w), dtype=np.float64)
    cg, og = cin // group, cout // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                # contribution of kernel tap (i, j): x (N, cg, H, W) @ w (cg, og)
                contrib = np.einsum("nchw,co->nohw", x[:, g * cg:(g + 1) * cg],
                                    w[g * cg:(g + 1) * cg, :, i, j])
                y[:, g * og:(g + 1) * og, i * dh:i * dh + (h - 1) * sh + 1:sh,
                  j * dw:j * dw + (wd - 1) * sw + 1:sw] += contrib
    y = y[:, :, pads[0]:full_h - pads[2], pads[1]:full_w - pads[3]]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype)


def pool(x, a, kind):
    k = a["kernel_shape"]
    strides = a.get("strides", [1, 1])
    dil = a.get("dilations", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    ceil = a.get("ceil_mode", 0)
    h, w = x.shape[2:]
    outs = [out_size(s, pads[i], pads[i + 2], k[i], strides[i], dil[i], ceil)
            for i, s in enumerate((h, w))]
    # Pad generously (ceil mode windows may run past the end): NaN marks "outside".
    extra = [max(0, (outs[i] - 1) * strides[i] + dil[i] * (k[i] - 1) + 1 - (x.shape[2 + i] + pads[i] + pads[i + 2]))
             for i in range(2)]
    inside = np.ones(x.shape, dtype=bool)
    widths = [(0, 0), (0, 0), (pads[0], pads[2] + extra[0]), (pads[1], pads[3] + extra[1])]
    xp = np.pad(x.astype(np.float64), widths, constant_values=0.0)
    real = np.pad(inside, widths, constant_values=False)
    in_pads = np.pad(inside, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])],
                     constant_values=True)
    in_pads = np.pad(in_pads, [(0, 0), (0, 0), (0, extra[0]), (0, extra[1])], constant_values=False)
    win = windows(xp, k, strides, dil, outs)
    real_w = windows(real, k, strides, dil, outs)
    if kind == "max":
        y = np.where(real_w, win, -np.inf).max(axis=(-2, -1))
    else:
        count = windows(in_pads, k, strides, dil, outs) if a.get("count_include_pad", 0) else real_w
        y = np.where(real_w, win, 0.0).sum(axis=(-2, -1)) / count.sum(axis=(-2, -1))
    return y.astype(x.dtype)


def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def run_node(node, v):
    a = attrs(node)
    x = [v[name] if name else None for name in node.input]
    op = node.op_type
    if op == "Gemm":
        A = x[0].T if a.get("transA", 0) else x[0]
        B = x[1].T if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(x) > 2 and x[2] is not None:
            y = y + a.get("beta", 1.0) * x[2]
        return [y.astype(x[0].dtype)]
    simple = {
        "MatMul": lambda: x[0] @ x[1], "Add": lambda: x[0] + x[1], "Sub": lambda: x[0] - x[1],
        "Mul": lambda: x[0] * x[1], "Div": lambda: x[0] / x[1],
        "Relu": lambda: np.maximum(x[0], 0), "Sigmoid": lambda: 1 / (1 + np.exp(-x[0])),
        "Tanh": lambda: np.tanh(x[0]), "Erf": lambda: erf(x[0]), "Identity": lambda: x[0],
        "LeakyRelu": lambda: np.where(x[0] >= 0, x[0], a.get("alpha", 0.01) * x[0]),
        "Softmax": lambda: softmax(x[0], a.get("axis", -1)),
        "LogSoftmax": lambda: np.log(softmax(x[0], a.get("axis", -1))),
        "GlobalAveragePool": lambda: x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True),
        "Gather": lambda: np.take(x[0], x[1], axis=a.get("axis", 0)),
        "Conv": lambda: conv(x[0], x[1], x[2] if len(x) > 2 else None, a),
        "ConvTranspose": lambda: conv_transpose(x[0], x[1], x[2] if len(x) > 2 else None, a),
        "MaxPool": lambda: pool(x[0], a, "max"), "AveragePool": lambda: pool(x[0], a, "avg"),
    }
    if op in simple:
        return [np.asarray(simple[op]()).astype(x[0].dtype if op != "Gather" else v[node.input[0]].dtype)]
    if op == "Reshape":
        shape = [int(s) for s in x[1]]
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return [x[0].reshape(shape)]
    if op == "BatchNormalization":
        X, scale, bias, mean, var = x
        sh = [1, -1] + [1] * (X.ndim - 2)
        eps = a.get("epsilon", 1e-5)
        return [((X - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * scale.reshape(sh)
                 + bias.reshape(sh)).astype(X.dtype)]
    if op == "LayerNormalization":
        X, scale, bias = x[0], x[1], x[2] if len(x) > 2 else None
        axis = a.get("axis", -1) % X.ndim
        axes = tuple(range(axis, X.ndim))
        mu = X.mean(axis=axes, keepdims=True)
        var = ((X - mu) ** 2).mean(axis=axes, keepdims=True)
        y = (X - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale
        return [(y + bias if bias is not None else y).astype(X.dtype)]
    raise ValueError("no NumPy evaluation of operator " + op)


def evaluate(model, inputs):
    v = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for info, x in zip(model.graph.input, inputs):
        v[info.name] = x
    for node in model.graph.node:
        for name, y in zip(node.output, run_node(node, v)):
            v[name] = y
    return [v[o.name] for o in model.graph.output]


def main(directory):
    names = sorted(f[:-5] for f in os.listdir(directory) if f.endswith(".onnx"))
    if not names:
        print("onnx_check: no .onnx files in", directory)
        return 1
    for name in names:
        path = os.path.join(directory, name + ".onnx")
        model = onnx.load(path)
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as e:  # noqa: BLE001 -- report any checker failure
            print("onnx_check: %s: onnx.checker: %s" % (path, e))
            return 1
        data = read_safetensors(os.path.join(directory, name + ".safetensors"))
        (got,) = evaluate(model, [data["input"]])
        want = data["output"]
        tol = 2e-3 if want.dtype == np.float16 else 1e-4  # NumPy's float16 rounds each step
        if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol / 10):
            diff = np.abs(got - want).max() if got.shape == want.shape else "shape %s" % (got.shape,)
            print("onnx_check: %s: NumPy's evaluation differs from ember's output: %s (want %s)"
                  % (path, diff, want.shape))
            return 1
        print("onnx_check: %s: valid, and NumPy's evaluation matches ember's output" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
