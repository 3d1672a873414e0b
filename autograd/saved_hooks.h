#pragma once
// Saved-tensor hooks: decide what an op keeps of a tensor it saves for backward, and how the
// tensor comes back (PyTorch's torch.autograd.graph.saved_tensors_hooks).
//
//   {
//     autograd::SavedTensorsHooksGuard hooks(
//         [](const Tensor& t) -> std::any { return t.cpu(); },              // pack: at save
//         [dev](const std::any& p) { return std::any_cast<Tensor>(p).to(dev); });  // unpack
//     loss = model(x).sum();          // every tensor saved in here goes through `pack`
//   }
//   loss.backward();                  // each node's backward calls `unpack` for what it needs
//
// Two users are built on them: SaveOnCpu below (activations wait in host memory, not on the
// device) and activation checkpointing (autograd/checkpoint.h: nothing is kept, and backward
// recomputes it).
//
// Note [Saved tensor hooks]
// - When: a SavedVariable made while a guard is open on the thread calls the innermost guard's
//   pack hook, keeps what it returns (std::any) and remembers that guard's unpack hook; the
//   guard may be long gone when backward runs. Guards nest; the innermost wins. Tensors saved
//   on other threads are not affected (the hooks are per thread, as PyTorch's are).
// - What pack sees: the saved tensor; an op's own saved output comes as a plain alias without
//   its history (Note [Saved outputs]: keeping the history would be a cycle), and unpack's
//   result gets the node re-attached as its grad_fn. Pack runs with grad mode off, so the ops
//   it runs record nothing; pack must not change the tensor in place.
// - Version check: ember keeps the version counter on the storage, so the saved tensor's
//   storage is held weakly: while it is alive, unpack checks its version as for any saved
//   tensor (Note [Saved tensor versions]); once it is freed nothing can change it in place.
// - What unpack must return: a tensor of the saved shape and dtype (checked, naming the node).
//   Under create_graph (double backward), a saved tensor that required grad must come back
//   with its history, or the second backward would silently miss the path through it; a hook
//   that returns plain data is then an error, not a wrong gradient.
// - Cost: without a guard, saving reads one thread-local counter. With one, each saved tensor
//   costs a small heap record and the hooks' own work.
// - Each backward formula (OpNode) unpacks a hooked tensor at most once per call, however often
//   it reads it (autograd/op.h); a custom Function's get_saved_variables unpacks on each call.

#include <any>
#include <functional>
#include <memory>

#include "core/tensor.h"

namespace ember::detail {
// Guards open on this thread: saving a tensor reads only this when there are none. (In
// ember::detail beside the grad-mode flags; an autograd::detail would hide those.)
inline thread_local int saved_hooks_depth = 0;
}  // namespace ember::detail

namespace ember::autograd {

using PackHook = std::function<std::any(const Tensor&)>;
using UnpackHook = std::function<Tensor(const std::any&)>;

struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
};

// The innermost hooks open on this thread, or null.
std::shared_ptr<const SavedTensorHooks> current_saved_tensor_hooks();

// Installs pack/unpack hooks on this thread until destroyed (Note [Saved tensor hooks]). Both
// must be set. Guards must end in the reverse order they began (as scoped guards do).
class SavedTensorsHooksGuard {
 public:
  SavedTensorsHooksGuard(PackHook pack, UnpackHook unpack);
  explicit SavedTensorsHooksGuard(std::shared_ptr<const SavedTensorHooks> hooks);
  ~SavedTensorsHooksGuard();
  SavedTensorsHooksGuard(const SavedTensorsHooksGuard&) = delete;
  SavedTensorsHooksGuard& operator=(const SavedTensorsHooksGuard&) = delete;

 private:
  const SavedTensorHooks* hooks_;
};

// torch.autograd.graph.save_on_cpu: tensors saved on a cuda device are copied to host memory
// (page-locked with pin_memory, so the copies back can overlap compute) and copied back to
// their device when backward needs them. CPU tensors are kept as they are. The device then
// holds the activations of no more than the node running backward: a model whose activations
// do not fit trains at the price of two copies each. Saves data, not history: under
// create_graph a cuda tensor that required grad is refused at unpack (Note [Saved tensor
// hooks]).
class SaveOnCpu {
 public:
  explicit SaveOnCpu(bool pin_memory = false);

 private:
  SavedTensorsHooksGuard guard_;
};

}  // namespace ember::autograd
