#pragma once
// AutogradMeta: what autograd keeps per tensor, in the opaque slot TensorImpl::autograd_meta.
// A tensor that never met autograd has no meta at all (the fast path of every op checks that).
//
// Note [View tracking]
// A view (view, transpose, narrow, ...) shares its base's storage, so an in-place op through
// the view changes the base. To keep the graph right the view remembers its base (the root
// tensor owning the storage, never another view) and its own geometry. An in-place op on the
// view then gives the *base* a new grad_fn (CopySlices, autograd/inplace.cpp) and the view a
// grad_fn regenerated from the base (as_strided of the base). Other views of the same base
// notice the storage's version changed and regenerate their grad_fn the same way the next time
// they are used. Views are tracked whether or not grad is enabled, except in InferenceMode.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::autograd {

class Node;

enum class CreationMeta : uint8_t {
  Default,     // an ordinary view
  NoGradMode,  // made under no_grad from a tensor that requires grad: not writable with grad on
};

struct ViewInfo {
  Tensor base;  // the root tensor owning the storage
  Shape sizes, strides;
  int64_t storage_offset = 0;
  CreationMeta creation = CreationMeta::Default;
  uint32_t attr_version = 0;  // the storage version when grad_fn was last made right
};

struct AutogradMeta final : AutogradMetaInterface {
  bool requires_grad = false;  // leaves: set by requires_grad_(); non-leaves: grad_fn != null
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::shared_ptr<Node> grad_accumulator;  // leaves: their AccumulateGrad node (autograd/node.h)
  uint32_t output_nr = 0;
  bool retains_grad = false;
  std::string name;
  std::optional<ViewInfo> view;
  // Leaves only (non-leaf hooks live on their grad_fn): pre hooks and post-accumulate hooks.
  struct LeafHook {
    int64_t handle;
    Tensor::GradHook fn;
  };
  std::vector<LeafHook> leaf_hooks;
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> post_accumulate_hooks;
};

// The tensor's meta, or null (also for an undefined tensor).
inline AutogradMeta* get_meta(const Tensor& t) {
  const TensorImpl* impl = t.unsafe_impl();
  return impl == nullptr ? nullptr : static_cast<AutogradMeta*>(impl->autograd_meta.get());
}
// The tensor's meta, made if missing.
AutogradMeta& materialize_meta(const Tensor& t);

// The graph edge a gradient for `t` must flow into: {grad_fn, output_nr}, or the leaf's
// AccumulateGrad node, or an invalid edge when t needs no gradient. Regenerates a stale view's
// grad_fn first (Note [View tracking]).
struct Edge;
Edge gradient_edge(const Tensor& t);

// Whether t requires grad: a leaf marked so, a tensor with a grad_fn, or a view whose base
// gained a history through another view (Note [View tracking]).
inline bool requires_grad_fast(const Tensor& t) {
  const AutogradMeta* m = get_meta(t);
  if (m == nullptr) return false;
  if (m->requires_grad || m->grad_fn != nullptr) return true;
  if (!m->view) return false;
  const AutogradMeta* b = get_meta(m->view->base);
  return b != nullptr && (b->requires_grad || b->grad_fn != nullptr);
}

// A fresh id for hook handles.
int64_t next_hook_handle();

}  // namespace ember::autograd
