"""Writes and reads the safetensors format for the golden-file scripts (tests/golden/gen_*.py).

The `safetensors` Python package is not in Debian, so this module implements the published
format itself: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and [begin, end) byte offsets into the data buffer that follows, then the raw
little-endian row-major bytes. Only PyTorch 1.13 (Debian's python3-torch) is needed.
"""

import json
import struct

import torch

_CODES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_DTYPES = {v: k for k, v in _CODES.items()}


def _raw_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)  # numpy has no bfloat16; the bits are what is stored
    return t.numpy().tobytes()


def save(tensors, path, metadata=None, codes=None):
    """tensors: dict name -> torch.Tensor (insertion order is the file order).

    codes: dict name -> dtype code written instead of the tensor's own (for a file of a dtype
    PyTorch lacks, such as U16)."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        data = _raw_bytes(t)
        header[name] = {
            "dtype": (codes or {}).get(name, _CODES[t.dtype]),
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # pad so the data buffer starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load(path):
    """Returns (dict name -> torch.Tensor, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    buf = raw[8 + n :]
    out = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        chunk = bytearray(buf[begin:end])
        if dtype == torch.bfloat16:
            t = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16)
        elif end == begin:
            t = torch.empty(0, dtype=dtype)
        else:
            t = torch.frombuffer(chunk, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out, meta
