#!/usr/bin/python3
"""Golden files for ember's safetensors reader and writer (tests/test_safetensors.cpp).

Run with Debian's PyTorch 1.13 (/usr/bin/python3; the pyenv python3 has no torch):

    /usr/bin/python3 tests/golden/gen_safetensors.py            # writes the golden files
    /usr/bin/python3 tests/golden/gen_safetensors.py --check F  # PyTorch reads ember's file F

Writes, next to this script:
- safetensors_dtypes.safetensors: one tensor of every dtype ember supports (incl. a 0-dim, an
  empty and a 3-D one, special floats, names that JSON must escape) and metadata. Every value is
  given by value(code, i) below (i: the row-major flat index); the C++ test has the same
  formulas, so it checks each loaded value, and that ember serializes the same tensors to the
  same bytes.
- safetensors_unsupported.safetensors: a tensor of U16, which ember has no dtype for (PyTorch
  1.13 has no uint16 either: int16 bits are written under the code U16).

--check FILE loads a file ember wrote (the test writes one when EMBER_SAFETENSORS_EXPORT names a
path) with safetensors_io.load and compares it, bit for bit, with the tensors and metadata below,
and verifies ember's checksums with Python's zlib (Note [safetensors checksums] in
serialize/safetensors.h: "ember.crc32.<name>" = zlib.crc32 of the tensor's bytes,
"ember.crc32.__metadata__" = zlib.crc32 of the other metadata as json.dumps writes it).
"""

import json
import math
import os
import struct
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

TORCH_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def value(code, i):
    """The i-th element of a formula tensor of dtype `code` (mirrored in test_safetensors.cpp)."""
    if code in ("F64", "F32"):
        return ((i * 7) % 13 - 6) / 3.0  # not exact in binary: checks every mantissa bit
    if code in ("F16", "BF16"):
        return ((i % 9) - 4) * 0.25  # exact in both 16-bit formats
    if code == "I64":
        return (i - 3) * 3037000499  # needs all 64 bits
    if code == "I32":
        return (i - 12) * 98765432
    if code == "I16":
        return (i - 2) * 1000
    if code == "I8":
        return i * 9 - 100
    if code == "U8":
        return (i * 37) % 256
    if code == "BOOL":
        return i % 3 == 0
    raise ValueError(code)


def formula_tensor(code, shape):
    n = math.prod(shape)
    return torch.tensor([value(code, i) for i in range(n)], dtype=TORCH_DTYPES[code]).reshape(shape)


# name, dtype code, shape; in file order. Mirrored by kFormulaTensors in test_safetensors.cpp.
FORMULA_TENSORS = [
    ("f64", "F64", [2, 3]),
    ("f32", "F32", [4, 5]),
    ("f16", "F16", [7]),
    ("bf16", "BF16", [3, 3]),
    ("i64", "I64", [6]),
    ("empty_f32", "F32", [0, 4]),  # shares its offset with the next tensor
    ("i32_3d", "I32", [2, 3, 4]),
    ("u8", "U8", [16]),
    ("i16", "I16", [5]),
    ("i8", "I8", [3, 4]),
    ("bool", "BOOL", [2, 5]),
    ("scalar_f64", "F64", []),
    ('unicode_\u00e9_\u540d_\U0001F600 "q" \\ /', "F16", [2]),  # escapes in the JSON header
]

METADATA = {"format": "pt", "producer": "gen_safetensors.py", "note": "line 1\nline \u00e9"}


def special_bits():
    """Tensors with exact bit patterns: infinities, NaN, -0, denormals, extremes."""
    f32 = torch.tensor(
        [0x7F800000, 0xFF800000, 0x7FC00000, 0x80000000, 0x00000001, 0x7F7FFFFF, 0xFF7FFFFF],
        dtype=torch.int64,
    ).to(torch.int32)  # two's complement wrap, then reinterpret
    f16 = torch.tensor([0x7C00, 0xFC00, 0x7E00, 0x8000, 0x0001, 0x7BFF], dtype=torch.int64)
    bf16 = torch.tensor([0x7F80, 0xFF80, 0x7FC0, 0x8000, 0x0001, 0x7F7F], dtype=torch.int64)
    i64 = torch.tensor([-(2**63), 2**63 - 1, -1, 0], dtype=torch.int64)
    i32 = torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32)
    i16 = torch.tensor([-(2**15), 2**15 - 1, -1, 0], dtype=torch.int16)
    i8 = torch.tensor([-128, 127, -1, 0], dtype=torch.int8)
    return {
        "special_f32": f32.view(torch.float32),
        "special_f16": f16.to(torch.int16).view(torch.float16),
        "special_bf16": bf16.to(torch.int16).view(torch.bfloat16),
        "special_i64": i64,
        "special_i32": i32,
        "special_i16": i16,
        "special_i8": i8,
    }


def golden_tensors():
    out = {name: formula_tensor(code, shape) for name, code, shape in FORMULA_TENSORS}
    out.update(special_bits())
    return out


def bits(t):
    """A tensor's raw bytes, so NaNs and -0.0 compare exactly."""
    return safetensors_io._raw_bytes(t)


def generate():
    # ember's metadata is a std::map, so it writes keys sorted; the reference keeps dict order.
    meta = dict(sorted(METADATA.items()))
    safetensors_io.save(golden_tensors(), os.path.join(HERE, "safetensors_dtypes.safetensors"), meta)
    unsupported = {
        "ok_f32": formula_tensor("F32", [2]),
        "u16": formula_tensor("I16", [3]),
        "ok_i8": formula_tensor("I8", [4]),
    }
    path = os.path.join(HERE, "safetensors_unsupported.safetensors")
    safetensors_io.save(unsupported, path, codes={"u16": "U16"})


def check(path):
    got, meta = safetensors_io.load(path)
    want = golden_tensors()
    problems = []
    prefix = "ember.crc32."
    sums = {k[len(prefix) :]: v for k, v in meta.items() if k.startswith(prefix)}
    meta = {k: v for k, v in meta.items() if not k.startswith(prefix)}
    if set(sums) != set(got) | {"__metadata__"}:
        problems.append(f"checksums for {sorted(sums)}, tensors {sorted(got)}")
    for name, t in got.items():
        if name in sums and sums[name] != f"{zlib.crc32(bits(t)):08x}":
            problems.append(f"{name!r}: checksum {sums[name]} != zlib's {zlib.crc32(bits(t)):08x}")
    encoded = json.dumps(meta, separators=(",", ":"), sort_keys=True).encode("utf-8")
    if sums.get("__metadata__") != f"{zlib.crc32(encoded):08x}":
        problems.append(f"metadata checksum {sums.get('__metadata__')} != {zlib.crc32(encoded):08x}")
    if meta != METADATA:
        problems.append(f"metadata {meta!r} != {METADATA!r}")
    if set(got) != set(want):
        problems.append(f"names {sorted(got)} != {sorted(want)}")
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            continue
        if g.dtype != w.dtype or list(g.shape) != list(w.shape):
            problems.append(f"{name!r}: {g.dtype} {list(g.shape)} != {w.dtype} {list(w.shape)}")
        elif bits(g) != bits(w):
            problems.append(f"{name!r}: values differ: {g} != {w}")
    # The header itself, parsed by Python's json, must be padded to 8 and offsets must tile.
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
    if n % 8:
        problems.append(f"header length {n} is not a multiple of 8")
    if problems:
        print(f"FAIL {path}:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"OK {path}: {len(got)} tensors and the metadata match, bit for bit, and so do the checksums (torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    generate()
