#!/usr/bin/python3
"""Golden trajectories of PyTorch's optimizers, LR schedulers and gradient clipping for
tests/test_optim.cpp, tests/test_lr_scheduler.cpp and tests/test_clip_grad.cpp.

Regenerate (Debian's python3-torch 1.13; the `python3` of a pyenv has no torch):
    /usr/bin/python3 tests/golden/gen_optim.py        # writes tests/golden/optim.safetensors

Everything is float64 and deterministic (fixed seed, fixed gradient sequence).

Optimizers: three parameters "params.<k>" (shapes [3, 4], [4], [2, 3]) in two groups: group 0
holds parameters 0 and 1 with its own lr, group 1 parameter 2 with the optimizer's default lr.
Each config (CONFIGS below) runs STEPS steps; before step t every parameter k gets the gradient
"grads.<t>.<k>", except parameter 1 at step 2, which has none (its update, and its step count,
are skipped). Written per config <c>:
    <c>.step<t>.<k>        parameter k after step t (t = 0 .. STEPS-1)
    <c>.state.<i>.<name>   PyTorch's final optimizer state (the "step" counters as PyTorch keeps
                           them: a float32 tensor for Adam/AdamW/Adagrad, an int64 for RMSprop's
                           Python int)

Schedulers: an optimizer with two groups (lr 0.1 and 0.05) and a scheduler (SCHEDULERS below),
stepped SCHED_STEPS times:
    <s>.lr         [SCHED_STEPS + 1, 2]: get_last_lr() after construction, then after each step
    <s>.momentum   the same for the cycled momentum (OneCycleLR: "momentum" or Adam's beta1)
    plateau*.metrics  the metric sequence given to ReduceLROnPlateau.step

Gradient clipping: "clip.grads.<k>" (three gradients), and for each case <c> of CLIP_CASES:
    clip.<c>.total_norm (0-dim), clip.<c>.grads.<k> (the gradients after clipping)
"""

import math
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# SequentialLR steps its schedulers with an epoch at the milestones, which PyTorch warns about.
warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(1234)
F64 = torch.float64  # explicit everywhere: the default dtype stays float32, as Adam's step
out = {}

# ---- optimizers ----------------------------------------------------------------------------------
STEPS = 6
SHAPES = [(3, 4), (4,), (2, 3)]
INIT = [torch.randn(s, dtype=F64) for s in SHAPES]
GRADS = [[torch.randn(s, dtype=F64) * (1.0 + 0.5 * t) for s in SHAPES] for t in range(STEPS)]
SKIP = (2, 1)  # (step, parameter) without a gradient
GROUP0_LR = 0.03

for k, p in enumerate(INIT):
    out[f"params.{k}"] = p.clone()
for t in range(STEPS):
    for k in range(len(SHAPES)):
        out[f"grads.{t}.{k}"] = GRADS[t][k].clone()

O = torch.optim
CONFIGS = {
    "sgd_plain": lambda g: O.SGD(g, lr=0.1),
    "sgd_momentum": lambda g: O.SGD(g, lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda g: O.SGD(g, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "sgd_dampening": lambda g: O.SGD(g, lr=0.1, momentum=0.9, dampening=0.3),
    "sgd_weight_decay": lambda g: O.SGD(g, lr=0.1, weight_decay=0.1),
    "sgd_maximize": lambda g: O.SGD(g, lr=0.1, momentum=0.5, maximize=True),
    "adam": lambda g: O.Adam(g, lr=0.01),
    "adam_amsgrad_wd": lambda g: O.Adam(g, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                        weight_decay=0.1, amsgrad=True),
    "adam_maximize": lambda g: O.Adam(g, lr=0.01, maximize=True),
    "adamw": lambda g: O.AdamW(g, lr=0.01, weight_decay=0.1),
    "adamw_amsgrad": lambda g: O.AdamW(g, lr=0.01, amsgrad=True),
    "rmsprop": lambda g: O.RMSprop(g, lr=0.01),
    "rmsprop_centered_momentum": lambda g: O.RMSprop(g, lr=0.01, alpha=0.9, momentum=0.8,
                                                     centered=True, weight_decay=0.05),
    "adagrad": lambda g: O.Adagrad(g, lr=0.1, lr_decay=0.05, weight_decay=0.02,
                                   initial_accumulator_value=0.1),
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
        for key, value in st.items():
            if value is None:
                continue
            if not torch.is_tensor(value):
                value = torch.tensor(value, dtype=torch.int64)
            out[f"{name}.state.{i}.{key}"] = value.clone()

# ---- LR schedulers -------------------------------------------------------------------------------
SCHED_STEPS = 25
S = torch.optim.lr_scheduler
LAMBDAS = [lambda e: 0.95 ** e, lambda e: 1.0 / (1.0 + e)]
METRICS = [1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.799, 0.7, 0.7, 0.71, 0.7, 0.69, 0.5, 0.5, 0.5,
           0.5, 0.5, 0.49, 0.49, 0.49, 0.3, 0.3, 0.3, 0.3, 0.3]
METRICS_MAX = [0.1, 0.2, 0.2, 0.25, 0.25, 0.25, 0.3, 0.3, 0.3, 0.3, 0.3, 0.31, 0.5, 0.5, 0.5,
               0.5, 0.5, 0.5, 0.5, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
out["plateau.metrics"] = torch.tensor(METRICS, dtype=F64)
out["plateau_max_abs.metrics"] = torch.tensor(METRICS_MAX, dtype=F64)


def two_groups():
    ps = [torch.zeros(n, dtype=F64, requires_grad=True) for n in (2, 3)]
    return [{"params": ps[:1], "lr": 0.1}, {"params": ps[1:], "lr": 0.05}]


def sgd(momentum=0.0):
    return O.SGD(two_groups(), lr=0.1, momentum=momentum)


def adam():
    return O.Adam(two_groups())


SCHEDULERS = {
    "step_lr": (sgd, lambda o: S.StepLR(o, step_size=4, gamma=0.5)),
    "multistep_lr": (sgd, lambda o: S.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.5)),
    "exponential_lr": (sgd, lambda o: S.ExponentialLR(o, gamma=0.9)),
    "cosine_lr": (sgd, lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
    "cosine_warm_restarts": (sgd, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                          eta_min=0.01)),
    "lambda_lr": (sgd, lambda o: S.LambdaLR(o, LAMBDAS)),
    "linear_lr": (sgd, lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0,
                                            total_iters=6)),
    "linear_lr_decay": (sgd, lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                                  total_iters=8)),
    "sequential": (sgd, lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
            S.CosineAnnealingLR(o, T_max=20, eta_min=0.001)], milestones=[5])),
    "onecycle_cos": (lambda: sgd(0.9), lambda o: S.OneCycleLR(o, max_lr=[1.0, 0.5],
                                                              total_steps=SCHED_STEPS)),
    "onecycle_linear_three_phase": (adam, lambda o: S.OneCycleLR(
        o, max_lr=0.01, total_steps=SCHED_STEPS, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, base_momentum=0.8, max_momentum=0.9)),
    "plateau": (sgd, lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2,
                                                   threshold=0.01, threshold_mode="rel",
                                                   cooldown=1, min_lr=[0.01, 0.02])),
    "plateau_max_abs": (sgd, lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.5,
                                                           patience=1, threshold=0.01,
                                                           threshold_mode="abs")),
}

for name, (make_opt, make_sched) in SCHEDULERS.items():
    opt = make_opt()
    sched = make_sched(opt)
    plateau = isinstance(sched, S.ReduceLROnPlateau)
    lrs = [[g["lr"] for g in opt.param_groups]]
    moms = []

    def momentum():
        g = opt.param_groups
        return [x["betas"][0] if "betas" in x else x["momentum"] for x in g]

    moms.append(momentum())
    for t in range(SCHED_STEPS):
        opt.step()
        if plateau:
            sched.step((METRICS if name == "plateau" else METRICS_MAX)[t])
        else:
            sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append(momentum())
    out[f"{name}.lr"] = torch.tensor(lrs, dtype=F64)
    if name.startswith("onecycle"):
        out[f"{name}.momentum"] = torch.tensor(moms, dtype=F64)

# ---- gradient clipping ---------------------------------------------------------------------------
CLIP_GRADS = [torch.randn(s, dtype=F64) for s in SHAPES]
for k, g in enumerate(CLIP_GRADS):
    out[f"clip.grads.{k}"] = g.clone()
CLIP_CASES = {
    "p2": (1.0, 2.0),
    "p1": (2.0, 1.0),
    "inf": (0.5, math.inf),
    "p3": (1.0, 3.0),
    "p0_5": (4.0, 0.5),
    "p2_no_clip": (100.0, 2.0),
}
for name, (max_norm, norm_type) in CLIP_CASES.items():
    ps = [torch.zeros(s, dtype=F64, requires_grad=True) for s in SHAPES]
    for p, g in zip(ps, CLIP_GRADS):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    out[f"clip.{name}.total_norm"] = total.detach().clone()
    for k, p in enumerate(ps):
        out[f"clip.{name}.grads.{k}"] = p.grad.clone()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim.safetensors")
safetensors_io.save(out, path)
print(f"wrote {len(out)} tensors to {path}")
