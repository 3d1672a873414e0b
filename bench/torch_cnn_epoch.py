#!/usr/bin/env python3
"""One Fashion-MNIST training epoch of ember-train's CNN (examples/models.h) in PyTorch eager:
the reference for `ember-train --device cuda --epochs 1` in bench/gpu.sh.

Same network, Adam lr 1e-3, batch 64, shuffled, the same normalisation (mean 0.2860, std 0.3530);
the images are read from the idx files directly (no torchvision). Prints one JSON line:
train_seconds (the epoch's training loop, data already on the host), samples_per_s, the mean
loss of the last 100 batches, and the device.

    python3 bench/torch_cnn_epoch.py [--device cuda] [--data-dir DIR] [--batches N]
"""
import argparse
import gzip
import json
import os
import time

import torch
import torch.nn as nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--data-dir", default=os.environ.get("EMBER_FASHION_MNIST",
                                                        "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--batches", type=int, default=0, help="stop after N batches (0: the epoch)")
    p.add_argument("--amp", choices=["none", "bf16", "fp16"], default="none",
                   help="autocast (and for fp16 a GradScaler), as ember-train --amp")
    a = p.parse_args()
    images = read_idx(os.path.join(a.data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(a.data_dir, "train-labels-idx1-ubyte.gz")).long()
    x = ((images.float() / 255.0 - 0.2860) / 0.3530).unsqueeze(1)
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = cnn().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    order = torch.randperm(x.shape[0])
    pin = dev.type == "cuda"
    losses = []
    amp_dtype = torch.float16 if a.amp == "fp16" else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler(enabled=a.amp == "fp16")
    if pin:
        torch.cuda.synchronize()
    start = time.perf_counter()
    n = 0
    for b, i in enumerate(range(0, x.shape[0], 64)):
        if a.batches and b >= a.batches:
            break
        idx = order[i:i + 64]
        xb, yb = x[idx], labels[idx]
        if pin:
            xb, yb = xb.pin_memory(), yb.pin_memory()
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=a.amp != "none"):
            loss = loss_fn(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
        n += xb.shape[0]
    if pin:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    last = torch.stack(losses[-100:]).float().mean().item()
    print(json.dumps({"framework": "pytorch", "device": a.device, "train_seconds": seconds,
                      "samples_per_s": n / seconds, "train_loss_last100": last,
                      "amp": a.amp, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
