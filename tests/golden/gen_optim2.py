#!/usr/bin/python3
"""Golden trajectories of PyTorch's NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop and LBFGS for
tests/test_optim2.cpp.

Regenerate (Debian's python3-torch 1.13; the `python3` of a pyenv has no torch):
    /usr/bin/python3 tests/golden/gen_optim2.py       # writes tests/golden/optim2.safetensors

Everything is float64 and deterministic (fixed seed, fixed gradient sequence).

Element-wise optimizers, as gen_optim.py: three parameters "params.<k>" (shapes [3, 4], [4],
[2, 3]) in two groups (group 0: parameters 0 and 1 with lr GROUP0_LR; group 1: parameter 2 with
the default lr); before step t every parameter k gets "grads.<t>.<k>", except parameter 1 at
step 2 (no gradient). Per config <c> of CONFIGS:
    <c>.step<t>.<k>        parameter k after step t (t = 0 .. STEPS-1)
    <c>.state.<i>.<name>   PyTorch's final state (Python int counters as int64)

LBFGS (one group): per config <c> of LBFGS_CONFIGS, on a problem ("rosen": Rosenbrock from
"rosen.x0"; "reg": least squares mean((X W + b - Y)^2) from "reg.W0", "reg.b0" with data
"reg.X", "reg.Y"), LBFGS_STEPS[problem] calls of step(closure):
    <c>.step<t>.<k>        parameter k after step t
    <c>.loss<t>            the loss step t returned
    <c>.state.0.<name>     the final state, lists as numbered keys (Note [LBFGS state keys] in
                           optim/lbfgs.h); "al" (scratch) is left out
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.manual_seed(4321)
F64 = torch.float64
out = {}
O = torch.optim


def put_state(prefix, state):
    for key, value in state.items():
        if key == "al" or value is None:
            continue
        if isinstance(value, list):
            for i, v in enumerate(value):
                out[f"{prefix}.{key}.{i}"] = torch.as_tensor(v, dtype=F64).clone()
            continue
        if isinstance(value, bool) or isinstance(value, int):
            value = torch.tensor(value, dtype=torch.int64)
        elif isinstance(value, float):
            value = torch.tensor(value, dtype=F64)
        out[f"{prefix}.{key}"] = value.clone()


# ---- element-wise optimizers ---------------------------------------------------------------------
STEPS = 8
SHAPES = [(3, 4), (4,), (2, 3)]
INIT = [torch.randn(s, dtype=F64) for s in SHAPES]
GRADS = [[torch.randn(s, dtype=F64) * (1.0 + 0.5 * t) for s in SHAPES] for t in range(STEPS)]
SKIP = (2, 1)
GROUP0_LR = 0.03

for k, p in enumerate(INIT):
    out[f"params.{k}"] = p.clone()
for t in range(STEPS):
    for k in range(len(SHAPES)):
        out[f"grads.{t}.{k}"] = GRADS[t][k].clone()

CONFIGS = {
    "nadam": lambda g: O.NAdam(g, lr=0.01),
    "nadam_wd": lambda g: O.NAdam(g, lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1,
                                  momentum_decay=0.01),
    "radam": lambda g: O.RAdam(g, lr=0.01),
    "radam_rectified": lambda g: O.RAdam(g, lr=0.01, betas=(0.9, 0.9), weight_decay=0.05),
    "adamax": lambda g: O.Adamax(g, lr=0.01),
    "adamax_wd_maximize": lambda g: O.Adamax(g, lr=0.01, betas=(0.8, 0.9), eps=1e-4,
                                             weight_decay=0.1, maximize=True),
    "adadelta": lambda g: O.Adadelta(g, lr=1.0),
    "adadelta_wd_maximize": lambda g: O.Adadelta(g, lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1,
                                                 maximize=True),
    "asgd": lambda g: O.ASGD(g, lr=0.01),
    "asgd_averaging": lambda g: O.ASGD(g, lr=0.05, lambd=0.01, alpha=0.5, t0=3,
                                       weight_decay=0.1, maximize=True),
    "rprop": lambda g: O.Rprop(g, lr=0.01),
    "rprop_clamped_maximize": lambda g: O.Rprop(g, lr=0.01, etas=(0.3, 1.5),
                                                step_sizes=(0.005, 0.02), maximize=True),
}

for name, make in CONFIGS.items():
    params = [p.clone().requires_grad_() for p in INIT]
    opt = make([{"params": params[:2], "lr": GROUP0_LR}, {"params": params[2:]}])
    for t in range(STEPS):
        for k, p in enumerate(params):
            p.grad = None if (t, k) == SKIP else GRADS[t][k].clone()
        opt.step()
        for k, p in enumerate(params):
            out[f"{name}.step{t}.{k}"] = p.detach().clone()
    for i, st in opt.state_dict()["state"].items():
        put_state(f"{name}.state.{i}", st)

# ---- LBFGS ---------------------------------------------------------------------------------------
out["rosen.x0"] = torch.tensor([-1.5, 2.0], dtype=F64)
out["reg.X"] = torch.randn(10, 3, dtype=F64)
out["reg.Y"] = torch.randn(10, 2, dtype=F64)
out["reg.W0"] = torch.randn(3, 2, dtype=F64)
out["reg.b0"] = torch.randn(2, dtype=F64)


def rosen_loss(ps):
    x = ps[0]
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def reg_loss(ps):
    W, b = ps
    return ((out["reg.X"].matmul(W) + b - out["reg.Y"]) ** 2).mean()


PROBLEMS = {
    "rosen": (["rosen.x0"], rosen_loss, 4),
    "reg": (["reg.W0", "reg.b0"], reg_loss, 3),
}
LBFGS_CONFIGS = {
    "lbfgs_rosen": ("rosen", dict(lr=1, max_iter=5, history_size=3)),
    "lbfgs_rosen_wolfe": ("rosen", dict(lr=1, max_iter=6, history_size=3,
                                        line_search_fn="strong_wolfe")),
    "lbfgs_reg": ("reg", dict(lr=0.5, max_iter=4, history_size=2)),
    "lbfgs_reg_wolfe": ("reg", dict(lr=1, max_iter=5, max_eval=9, history_size=3,
                                    line_search_fn="strong_wolfe")),
}

for name, (problem, kwargs) in LBFGS_CONFIGS.items():
    keys, loss_fn, steps = PROBLEMS[problem]
    params = [out[k].clone().requires_grad_() for k in keys]
    opt = O.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_fn(params)
        loss.backward()
        return loss

    for t in range(steps):
        loss = opt.step(closure)
        out[f"{name}.loss{t}"] = loss.detach().clone()
        for k, p in enumerate(params):
            out[f"{name}.step{t}.{k}"] = p.detach().clone()
    put_state(f"{name}.state.0", opt.state_dict()["state"][0])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim2.safetensors")
safetensors_io.save(out, path)
print(f"wrote {len(out)} tensors to {path}")
