#pragma once
// SavedVariable: a tensor an op keeps for its backward.
//
// Note [Saved tensor versions]
// Saving records the storage's version counter (core/storage.h). unpack() compares it: if an
// in-place op changed the tensor in between, the gradient would be silently wrong, so unpack
// throws instead, naming the node, the forward op, the tensor and both versions.
//
// Note [Saved outputs]
// An op may save its own output (exp saves its result). Holding that output as-is would make a
// cycle (output -> grad_fn -> saved output), so an output is saved as a plain alias of its data
// with no autograd meta, and unpack() re-attaches the node as its grad_fn. That keeps double
// backward working without leaking the graph.
//
// After a backward without retain_graph, the engine frees the saved tensors; unpacking them
// again is the "backward through the graph a second time" error.
//
// Made while saved-tensor hooks are installed (autograd/saved_hooks.h), a SavedVariable keeps
// whatever the pack hook returned instead of the tensor (Note [Saved tensor hooks]).

#include <cstdint>
#include <memory>

#include "core/tensor.h"

namespace ember::autograd {

class Node;

class SavedVariable {
 public:
  SavedVariable() = default;
  // is_output: t is an output of the node that saves it (Note [Saved outputs]).
  SavedVariable(const Tensor& t, bool is_output);

  // The saved tensor, checked against its version; `owner` is the node that saved it.
  Tensor unpack(const Node& owner) const;
  void release();
  // Forgets the autograd history of a saved tensor that lives on `storage` (see
  // Node::drop_saved_history).
  void drop_history_on(const StorageImpl* storage);
  bool was_defined() const { return was_defined_; }
  // Saved through pack/unpack hooks (Note [Saved tensor hooks]).
  bool has_hooks() const { return packed_ != nullptr; }

 private:
  struct Packed;
  void pack(const Tensor& t);
  Tensor unpack_hooked(const Node& owner) const;

  Tensor data_;
  std::shared_ptr<Packed> packed_;  // with hooks: what pack returned, and the unpack hook
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool released_ = false;
  bool requires_grad_ = false;
};

}  // namespace ember::autograd
