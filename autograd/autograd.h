#pragma once
// ember's autograd: the define-by-run grad_fn graph.
//
//   Tensor w = randn({3, 2}).requires_grad_();   // a leaf
//   Tensor loss = x.matmul(w).relu().sum();      // every op records a node as it runs
//   loss.backward();                              // the engine walks the nodes back
//   w.grad();                                     // d loss / d w, accumulated
//
// Where things are:
// - autograd/node.h       Node, Edge, AccumulateGrad: the graph itself
// - autograd/meta.h       what a tensor carries (grad, grad_fn, hooks, its view base)
// - autograd/op.h         how an op records itself (Op, OpNode); autograd/ops/*.cpp: every
//                         differentiable op with its derivative formula
// - autograd/saved_variable.h  tensors kept for backward, checked against version counters
// - autograd/saved_hooks.h  pack/unpack hooks on saved tensors; SaveOnCpu
// - autograd/checkpoint.h activation checkpointing: drop a region's activations, recompute them
// - autograd/inplace.h    in-place ops and views: the checks, and how the graph is rebased
// - autograd/engine.h     backward() and grad(): the iterative engine
// - autograd/grad_mode.h  NoGradGuard, EnableGradGuard, InferenceMode
// - autograd/autocast.h   AutocastGuard: mixed precision, ops cast to float16/bfloat16 or float32
// - autograd/anomaly.h    DetectAnomalyGuard: where a NaN came from
// - autograd/function.h   Function<Derived>: user-defined ops with their own backward
// - autograd/gradcheck.h  gradcheck / gradgradcheck by central differences
// - autograd/dot.h        to_dot: the graph as Graphviz DOT

#include "autograd/anomaly.h"
#include "autograd/autocast.h"
#include "autograd/checkpoint.h"
#include "autograd/dot.h"
#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/node.h"
#include "autograd/saved_hooks.h"
