"""PyTorch's DistributedDataParallel step cost, the reference for bench/bench_ddp.cpp.

The same model as ember-train's MLP (784-256-128-10), batch 64 of random images per rank, one
thread per rank, Gloo over loopback, SGD; alternating a plain step on the bare module with a
DDP step, medians of 200 steps each. World sizes 1 and 2 (processes started with
torch.multiprocessing). Run with OPENBLAS_NUM_THREADS=1:

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_ddp_step.py
"""
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def run(rank, world, init_file, steps, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    plain = mlp()
    wrapped = mlp()
    wrapped.load_state_dict(plain.state_dict())
    ddp = nn.parallel.DistributedDataParallel(wrapped)
    opt_p = torch.optim.SGD(plain.parameters(), lr=0.01)
    opt_d = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    loss_fn = nn.CrossEntropyLoss()

    def step(model, opt):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(20):
        step(plain, opt_p)
        step(ddp, opt_d)
    tp, td = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        step(plain, opt_p)
        t1 = time.perf_counter()
        step(ddp, opt_d)
        t2 = time.perf_counter()
        tp.append(t1 - t0)
        td.append(t2 - t1)
    if rank == 0:
        p, d = statistics.median(tp) * 1e3, statistics.median(td) * 1e3
        out.put((world, p, d))
    dist.destroy_process_group()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    ctx = mp.get_context("spawn")
    for world in (1, 2):
        q = ctx.Queue()
        with tempfile.TemporaryDirectory() as d:
            init = os.path.join(d, "init")
            procs = [ctx.Process(target=run, args=(r, world, init, steps, q)) for r in range(world)]
            for p in procs:
                p.start()
            res = q.get(timeout=600)
            for p in procs:
                p.join(timeout=60)
        w, p, dd = res
        print(f"torch {torch.__version__} DDP, mlp, world {w}: plain {p:.3f} ms/step, "
              f"DDP {dd:.3f} ms/step, DDP / plain {dd / p:.2f}, DDP - plain {dd - p:+.3f} ms")


if __name__ == "__main__":
    main()
