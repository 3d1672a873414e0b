#pragma once
// ember::optim: optimizers and learning-rate schedules (PyTorch's torch.optim).
//
// - optim/optimizer.h     Optimizer: parameter groups, per-parameter state, zero_grad, step,
//                         state_dict (Note [Optimizer state_dict keys])
// - optim/sgd.h, adam.h (Adam, AdamW), rmsprop.h, adagrad.h: the optimizers
// - optim/nadam.h, radam.h, adamax.h, adadelta.h, asgd.h, rprop.h: more optimizers, each a
//                         chain of native ops (PyTorch's single-tensor path)
// - optim/lbfgs.h         LBFGS: step(closure) with an optional strong Wolfe line search
// - optim/step_count.h    the step counters (internal); each update is one fused kernel,
//                         native::sgd_step_ ... in core/ops/optim.h
// - optim/lr_scheduler.h  LRScheduler and the epoch/batch schedules (StepLR ... OneCycleLR)
// - optim/constant_lr.h, polynomial_lr.h, cyclic_lr.h: ConstantLR, PolynomialLR, CyclicLR
// - optim/chained_scheduler.h  ChainedScheduler: several schedules stepped together
// - optim/state_checks.h  the checks of loaded scheduler state (internal; Note [Scheduler
//                         state checks])
// - optim/reduce_lr_on_plateau.h  ReduceLROnPlateau, driven by a metric
// - optim/grad_scaler.h  amp::GradScaler: loss scaling for float16 mixed precision
// Gradient clipping is in nn/clip_grad.h (torch.nn.utils).

#include "optim/adadelta.h"
#include "optim/adagrad.h"
#include "optim/adam.h"
#include "optim/adamax.h"
#include "optim/asgd.h"
#include "optim/chained_scheduler.h"
#include "optim/constant_lr.h"
#include "optim/cyclic_lr.h"
#include "optim/grad_scaler.h"
#include "optim/lbfgs.h"
#include "optim/lr_scheduler.h"
#include "optim/nadam.h"
#include "optim/optimizer.h"
#include "optim/polynomial_lr.h"
#include "optim/radam.h"
#include "optim/reduce_lr_on_plateau.h"
#include "optim/rmsprop.h"
#include "optim/rprop.h"
#include "optim/sgd.h"
