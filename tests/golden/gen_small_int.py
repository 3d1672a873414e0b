#!/usr/bin/python3
"""Golden values for the int8 and int16 dtypes (tests/test_small_int.cpp).

Run with Debian's PyTorch 1.13 (/usr/bin/python3; the pyenv python3 has no torch):

    /usr/bin/python3 tests/golden/gen_small_int.py     # writes small_int.safetensors

Writes, next to this script, small_int.safetensors:
- "promote": int64 [10, 10], torch.promote_types over every ember dtype, each entry the index of
  the result in the metadata's "dtypes" (ember's DType order, Note [DType values are stable]).
- for p in "int8", "int16": the inputs "<p>.a" and "<p>.b" (b has no zero) and "<p>.<op>" for
  the ops below, computed by PyTorch: its wrapping integer arithmetic, Python's floor division
  and modulo, the int64 results of sum/prod/cumsum, and its promotion with the other dtypes.
- "convert.<p>" and "convert.uint8": floats with values out of range, converted (PyTorch wraps
  through a 32-bit integer on x86).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# ember's DType order (core/dtype.h).
DTYPES = [
    ("bool", torch.bool),
    ("uint8", torch.uint8),
    ("int32", torch.int32),
    ("int64", torch.int64),
    ("float16", torch.float16),
    ("bfloat16", torch.bfloat16),
    ("float32", torch.float32),
    ("float64", torch.float64),
    ("int8", torch.int8),
    ("int16", torch.int16),
]


def promote_table():
    types = [t for _, t in DTYPES]
    return torch.tensor(
        [[types.index(torch.promote_types(a, b)) for b in types] for a in types], dtype=torch.int64
    )


INPUTS = {
    # a: distinct values (sort is unambiguous), the extremes included; b: no zero, -1 included.
    "int8": (
        [100, -128, 127, -7, 0, 55, -100, 1, -1, 64, -65, 13],
        [3, -1, 2, -3, 7, -128, 127, 5, -2, 64, 9, -11],
        300,  # a C++ number out of the dtype's range: the sum wraps
    ),
    "int16": (
        [30000, -32768, 32767, -7, 0, 1234, -30000, 1, -1, 256, -257, 77],
        [3, -1, 2, -3, 7, -32768, 32767, 5, -2, 256, 9, -11],
        70000,
    ),
}


def cases(p):
    dt = getattr(torch, p)
    av, bv, big = INPUTS[p]
    a = torch.tensor(av, dtype=dt)
    b = torch.tensor(bv, dtype=dt)
    u8 = torch.tensor([(i * 37) % 256 for i in range(len(av))], dtype=torch.uint8)
    out = {
        "a": a,
        "b": b,
        "add": a + b,
        "sub": a - b,
        "sub_alpha": torch.sub(a, b, alpha=5),
        "mul": a * b,
        "add_scalar": a + big,
        "mul_scalar": a * 3,
        "div_true": a / b,
        "div_trunc": torch.div(a, b, rounding_mode="trunc"),
        "div_floor": torch.div(a, b, rounding_mode="floor"),
        "remainder": torch.remainder(a, b),
        "remainder_scalar": torch.remainder(a, -3),
        "div_floor_scalar": torch.div(a, -3, rounding_mode="floor"),
        "pow_scalar": a**3,
        "pow": torch.pow(a, torch.remainder(b, 5)),
        "neg": -a,
        "abs": torch.abs(a),
        "sign": torch.sign(a),
        "bitwise_and": a & b,
        "bitwise_or": a | b,
        "bitwise_xor": a ^ b,
        "bitwise_not": ~a,
        "maximum": torch.maximum(a, b),
        "minimum": torch.minimum(a, b),
        "lt": a < b,
        "eq_scalar": a == -7,
        "clamp": torch.clamp(a, -5, 50),
        "where": torch.where(a > 0, a, b),
        "sum": a.sum(),
        "prod": a[:4].prod(),  # int64, small enough not to wrap
        "cumsum": a.cumsum(0),
        "max": a.max(),
        "argmax": a.argmax(),
        "argmin": a.argmin(),
        "sort.values": a.sort().values,
        "sort.indices": a.sort().indices,
        "topk.values": a.topk(3).values,
        "topk.indices": a.topk(3).indices,
        "cat": torch.cat([a, b]),
        "stack": torch.stack([a, b]),
        "gather": a.reshape(3, 4).gather(1, torch.tensor([[3, 0], [1, 1], [2, 0]])),
        "index_select": a.index_select(0, torch.tensor([11, 0, 5], dtype=torch.int32)),
        "matmul": a.reshape(3, 4) @ b.reshape(4, 3),
        "to_float32": a.to(torch.float32),
        "add_uint8": a + u8,  # int8 + uint8 is int16
        "add_int16": a + torch.tensor(bv, dtype=torch.int16),
        "add_int32": a + torch.tensor(bv, dtype=torch.int32),
        "add_float16": a + torch.tensor(bv, dtype=torch.float16),
        "uint8": u8,
    }
    return {f"{p}.{k}": v for k, v in out.items()}


# In range, wrapping, and outside int32 (x86's cast gives int32's minimum there, so 0).
FLOATS = [300.0, -1.0, -129.5, 2.7, -2.7, 127.9, -128.9, 40000.0, -40000.0, 70000.5]
FLOATS += [3e9, -3e9, 1e30, float("inf"), float("nan"), 2147483520.0]


def main():
    tensors = {"promote": promote_table()}
    for p in INPUTS:
        tensors.update(cases(p))
    f = torch.tensor(FLOATS, dtype=torch.float32)
    tensors["convert.float32"] = f
    for p in ("int8", "int16", "uint8"):
        tensors[f"convert.{p}"] = f.to(getattr(torch, p))
    d = torch.tensor(FLOATS + [2147483647.0, -2147483648.0, 3e9 + 1], dtype=torch.float64)
    tensors["convert.float64"] = d
    tensors["convert.float64.int8"] = d.to(torch.int8)
    tensors["arange.int8"] = torch.arange(0, 300, 100, dtype=torch.int8)
    meta = {"dtypes": ",".join(n for n, _ in DTYPES), "torch": torch.__version__}
    safetensors_io.save(tensors, os.path.join(HERE, "small_int.safetensors"), meta)


if __name__ == "__main__":
    main()
