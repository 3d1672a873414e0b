#!/usr/bin/env python3
"""PyTorch's activation checkpointing on the models of bench/bench_checkpoint.cpp: the step time
without checkpointing and with torch.utils.checkpoint (use_reentrant=False) over the same
segments as ember's checkpoint_sequential, interleaved round by round, one thread. Prints a
markdown table of median step times and their ratio to the plain step, so that ember's overhead
ratio can be set beside PyTorch's (PyTorch does not report CPU memory, so only time is
compared).

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_checkpoint.py [rounds]
"""
import statistics
import sys
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def segmented(net, segments, x):
    """checkpoint_sequential's split (the first segments get the extra module), non-reentrant."""
    mods = list(net)
    n = len(mods)
    begin = 0
    for s in range(segments):
        end = begin + n // segments + (1 if s < n % segments else 0)
        run = nn.Sequential(*mods[begin:end])
        x = checkpoint(run, x, use_reentrant=False) if s + 1 < segments else run(x)
        begin = end
    return x


def step(net, x, segments):
    net.zero_grad(set_to_none=True)
    y = net(x) if segments == 0 else segmented(net, segments, x)
    y.square().mean().backward()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mlp = nn.Sequential(*[m for _ in range(32) for m in (nn.Linear(512, 512), nn.Tanh())])
    conv = nn.Sequential(*[m for _ in range(8) for m in (nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())])
    cases = [("MLP 32 x (Linear 512 + Tanh), batch 256", mlp, torch.randn(256, 512), [0, 2, 4, 8, 16]),
             ("8 x (Conv2d 32->32 3x3 + ReLU), batch 16, 28x28", conv, torch.randn(16, 32, 28, 28),
              [0, 2, 4])]
    fns = [(name, s, (lambda net=net, x=x, s=s: step(net, x, s))) for name, net, x, segs in cases
           for s in segs]
    times = {(n, s): [] for n, s, _ in fns}
    for _, _, f in fns:
        f()
    for _ in range(rounds):
        for n, s, f in fns:
            t0 = time.perf_counter()
            f()
            times[(n, s)].append(time.perf_counter() - t0)
    print(f"PyTorch {torch.__version__}, 1 thread, {rounds} rounds, medians\n")
    print("| model | segments | step ms | / plain |\n|---|---|---|---|")
    for name, _, _, segs in cases:
        plain = statistics.median(times[(name, 0)])
        for s in segs:
            t = statistics.median(times[(name, s)])
            print(f"| {name} | {'none' if s == 0 else s} | {t * 1e3:.2f} | {t / plain:.2f} |")


if __name__ == "__main__":
    main()
