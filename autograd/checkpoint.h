#pragma once
// Activation checkpointing: spend compute to save memory (PyTorch's torch.utils.checkpoint,
// use_reentrant=False).
//
//   Tensor h = autograd::checkpoint([&](const Tensor& x) { return (*block)(x); }, x);
//   Tensor loss = (*head)(h).sum();
//   loss.backward();   // block's forward runs a second time here, so that block's backward gets
//                      // back the activations the first run did not keep
//
// nn::checkpoint_sequential (nn/checkpoint.h) does this for the segments of a Sequential.
//
// Note [Activation checkpointing]
// A training step keeps, until backward, every tensor its ops save (the inputs of each matmul,
// the output of each exp, a mask per dropout): for a deep net those activations are most of
// the step's memory, and they grow with depth times batch. checkpoint(fn, inputs) runs fn with
// saved-tensor hooks (autograd/saved_hooks.h) whose pack keeps only a slot number -- the
// tensor's place in the order of saves -- and its shape, dtype and device. The graph is built
// as usual: the outputs have their grad_fn, and backward walks through the region's nodes like
// any others. Only their saved tensors are missing.
//
// When backward first unpacks one, the frame (the region's record) reruns fn on the same
// inputs with grad mode on, under hooks that store the k-th tensor the rerun saves in slot k,
// and unpack hands out slot k. The other slots wait for their nodes, which backward reaches
// next; a slot is freed as its node reads it (or dies without running). So the region's
// activations exist twice briefly during its backward, and between forward and backward the
// memory held is the region's inputs and outputs. Splitting a chain of n layers into sqrt(n)
// regions keeps O(sqrt(n)) activations instead of O(n), for one extra forward.
//
// The rerun must compute what the forward computed:
// - Random numbers: with preserve_rng_state the cpu generator's state, and that of every cuda
//   device an input lives on, is recorded before the forward and restored around the rerun
//   (then put back as it was), so dropout draws the same mask.
// - Autocast: the rerun runs under the autocast state the forward saw (autograd/autocast.h).
// - BatchNorm's running statistics are not updated a second time by the rerun
//   (is_recomputing(); PyTorch updates them twice).
// - Inputs: an input changed in place between forward and backward is an error, naming it.
// - determinism_check: the rerun must save as many tensors as the forward, with the same
//   shapes, dtypes and devices; a difference (a branch on data, a counter) is an error naming
//   the first one that differs, not a wrong gradient.
// - A tensor saved by the rerun and then changed in place by a later op of the rerun fails the
//   version check, exactly as it would without checkpointing.
//
// Beyond one backward: with retain_graph, a second backward recomputes again. Under
// create_graph the rerun's tensors keep their history, so double backward works. Regions nest
// (an inner checkpoint inside fn keeps its own slots; the outer region then also keeps the
// inner region's inputs). With grad mode off, or when nothing inside records, checkpoint is
// just fn(inputs).
//
// fn is kept until the region's backward has run: whatever it captures by reference (a module)
// must live that long. It must not call backward or grad on its own graph.

#include <functional>

#include "autograd/node.h"

namespace ember::autograd {

struct CheckpointOptions {
  // Restore the random number generators for the rerun (Note [Activation checkpointing]).
  bool preserve_rng_state = true;
  // Compare the rerun's saved tensors with the forward's (count, shapes, dtypes, devices).
  bool determinism_check = true;
};

using CheckpointFn = std::function<Tensors(const Tensors&)>;

// Runs fn(inputs) keeping none of the tensors its ops save; backward recomputes them.
Tensors checkpoint(const CheckpointFn& fn, const Tensors& inputs,
                   const CheckpointOptions& options = {});
// The one-tensor form.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  const CheckpointOptions& options = {});

// True on this thread while a checkpointed region is being recomputed in backward: code that
// has effects beyond its outputs (BatchNorm's running statistics) skips them.
bool is_recomputing();

// How many times regions have been recomputed since the program started (for tests and
// benchmarks: one per region per backward).
int64_t num_recomputations();

}  // namespace ember::autograd
