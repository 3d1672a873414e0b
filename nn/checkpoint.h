#pragma once
// Activation checkpointing for a Sequential (PyTorch's torch.utils.checkpoint.
// checkpoint_sequential, use_reentrant=False).
//
//   Tensor y = nn::checkpoint_sequential(*net, 4, x);   // same y, same gradients as (*net)(x)
//
// The modules are split into `segments` runs of consecutive modules, as even as can be (the
// first ones get the extra module). Every run but the last is a checkpointed region
// (autograd/checkpoint.h): its forward keeps only its input, and backward recomputes it. The
// last run's activations are needed by backward first, so it runs as usual. For n layers,
// about sqrt(n) segments keep the least memory: sqrt(n) segment inputs plus one segment's
// activations during its backward. Too many segments hold more, not less: each region keeps its
// input, and a region per module keeps every module's output, including those (a Linear's,
// before its Tanh) that plain backward would not have kept. The regions hold the modules
// (shared), so backward may run after the caller dropped them.

#include <cstdint>

#include "autograd/checkpoint.h"
#include "nn/container.h"

namespace ember::nn {

// segments: 1 <= segments <= net.size(); 1 checkpoints nothing.
Tensor checkpoint_sequential(const Sequential& net, int64_t segments, const Tensor& input,
                             const autograd::CheckpointOptions& options = {});

}  // namespace ember::nn
