#!/usr/bin/python3
"""Golden trajectories of PyTorch's ConstantLR, PolynomialLR, CyclicLR and ChainedScheduler for
tests/test_lr_scheduler.cpp (the other schedulers' are in gen_optim.py).

Regenerate (Debian's python3-torch 1.13; the `python3` of a pyenv has no torch):
    /usr/bin/python3 tests/golden/gen_lr_scheduler.py   # writes tests/golden/lr_scheduler.safetensors

An SGD optimizer with two groups (lr 0.1 and 0.05, momentum 0.9 where the momentum is cycled)
and a scheduler (SCHEDULERS below), stepped STEPS times (enough for several cycles):
    <s>.lr         [STEPS + 1, 2]: the groups' lr after construction, then after each step
    <s>.momentum   the same for the groups' momentum (the CyclicLR configs with cycle_momentum)
Closed forms, step(epoch) with the epochs CLOSED_EPOCHS in turn:
    <s>.closed     [len(CLOSED_EPOCHS), 2]: the lr after each step(epoch)
PyTorch 1.13's CyclicLR refuses Adam (no "momentum" default); the test checks ember's Adam
betas0 against the SGD momentum of the same config.
"""

import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)  # step(epoch) is deprecated
F64 = torch.float64
S = torch.optim.lr_scheduler
STEPS = 40
CLOSED_EPOCHS = [3, 0, 7, 4, 12, 5, 1]
out = {}


def sgd(momentum=0.9):
    ps = [torch.zeros(n, dtype=F64, requires_grad=True) for n in (2, 3)]
    return torch.optim.SGD([{"params": ps[:1], "lr": 0.1}, {"params": ps[1:], "lr": 0.05}],
                           lr=0.1, momentum=momentum)


SCHEDULERS = {
    "constant_lr": lambda o: S.ConstantLR(o, factor=0.5, total_iters=4),
    "constant_lr_default": lambda o: S.ConstantLR(o),
    "polynomial_lr": lambda o: S.PolynomialLR(o, total_iters=8, power=2.0),
    "polynomial_lr_sqrt": lambda o: S.PolynomialLR(o, total_iters=6, power=0.5),
    "cyclic_triangular": lambda o: S.CyclicLR(o, base_lr=[0.01, 0.005], max_lr=[0.1, 0.05],
                                              step_size_up=4, step_size_down=2),
    "cyclic_triangular2": lambda o: S.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=3,
                                               mode="triangular2", base_momentum=0.85,
                                               max_momentum=0.95),
    "cyclic_exp_range": lambda o: S.CyclicLR(o, base_lr=0.02, max_lr=[0.2, 0.1], step_size_up=5,
                                             step_size_down=3, mode="exp_range", gamma=0.97,
                                             cycle_momentum=False),
    "cyclic_custom_cycle": lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                step_size_down=4,
                                                scale_fn=lambda x: 1.0 / (1.0 + 0.5 * x),
                                                scale_mode="cycle"),
    "cyclic_custom_iterations": lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                     step_size_up=3, step_size_down=0,
                                                     scale_fn=lambda x: 0.99 ** x,
                                                     scale_mode="iterations"),
    "chained": lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=2),
                                             S.ExponentialLR(o, gamma=0.9)]),
    "chained_three": lambda o: S.ChainedScheduler([S.StepLR(o, step_size=3, gamma=0.5),
                                                   S.LinearLR(o, start_factor=0.5,
                                                              total_iters=4),
                                                   S.PolynomialLR(o, total_iters=30,
                                                                  power=1.0)]),
}
WITH_MOMENTUM = ["cyclic_triangular", "cyclic_triangular2", "cyclic_custom_cycle",
                 "cyclic_custom_iterations"]

for name, make in SCHEDULERS.items():
    opt = sgd()
    sched = make(opt)
    lrs = [[g["lr"] for g in opt.param_groups]]
    moms = [[g["momentum"] for g in opt.param_groups]]
    for t in range(STEPS):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([g["momentum"] for g in opt.param_groups])
    out[f"{name}.lr"] = torch.tensor(lrs, dtype=F64)
    if name in WITH_MOMENTUM:
        out[f"{name}.momentum"] = torch.tensor(moms, dtype=F64)

for name in ["constant_lr", "polynomial_lr", "polynomial_lr_sqrt"]:
    opt = sgd()
    sched = SCHEDULERS[name](opt)
    closed = []
    for e in CLOSED_EPOCHS:
        sched.step(e)
        closed.append([g["lr"] for g in opt.param_groups])
    out[f"{name}.closed"] = torch.tensor(closed, dtype=F64)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lr_scheduler.safetensors")
safetensors_io.save(out, path)
print(f"wrote {len(out)} tensors to {path}")
