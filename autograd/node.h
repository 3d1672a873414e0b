#pragma once
// The graph: Nodes joined by Edges.
//
// Every op that records (autograd/op.h) makes one Node -- "MulBackward", "ExpBackward" -- that
// knows how to turn the gradients of the op's outputs into gradients of its inputs. Its
// next_edges() point, one per forward input, at the node that continues the chain for that
// input: the input's own grad_fn (output_nr says which of its outputs the input was), or, for a
// leaf that requires grad, the leaf's AccumulateGrad node, which adds the gradient into .grad.
// An input that needs no gradient gets an invalid (null) edge.
//
//   x (leaf) --> AccumulateGrad <-- MulBackward <-- SumBackward <-- loss
//
// backward() walks the edges from the loss (autograd/engine.h). Naming follows PyTorch's
// torch/csrc/autograd/function.h, so `grad_fn()->name()` and `next_edges()` read the same.
//
// Ownership: a tensor owns its grad_fn; a node owns the nodes its edges point to. Nothing points
// back (saved outputs hold no grad_fn; see autograd/saved_variable.h), so a graph is freed as
// soon as its last tensor goes. Note [Iterative graph teardown] in node.cpp explains why
// destroying a 100,000-node chain does not overflow the stack.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/op_registry.h"
#include "core/small_vector.h"
#include "core/stream.h"
#include "core/tensor.h"

namespace ember::autograd {

class Node;
using Tensors = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;  // which gradient input of `fn` this edge feeds
  bool valid() const { return fn != nullptr; }
};

// What a node knows about each of its forward outputs (= each gradient it receives): enough to
// reduce a broadcast gradient to the right shape, cast it to the right dtype, or make zeros.
struct GradSlotMeta {
  DimVector shape;  // inline storage: recording an op allocates as little as possible
  DType dtype = DType::Float32;
  Device device;

  Shape sizes() const { return Shape(shape.begin(), shape.end()); }
  bool has_shape(const Shape& s) const {
    return s.size() == shape.size() && std::equal(s.begin(), s.end(), shape.begin());
  }
};

// Anomaly mode records where each node was made (autograd/anomaly.h).
struct AnomalyInfo {
  std::string forward_op;  // e.g. "log"
  std::string context;     // the op and its inputs: "log(float32 [4, 3])"
  std::string backtrace;   // a C++ backtrace where the platform gives one
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // grads[i]: the gradient of forward output i (the engine passes zeros for outputs that got no
  // gradient). Returns one gradient per next edge; an undefined tensor means "none".
  virtual Tensors apply(Tensors&& grads) = 0;
  // Frees the tensors saved for backward (after a backward without retain_graph).
  virtual void release_saved() {}
  // Called when an in-place op recorded by this node has overwritten `storage`: the tensors
  // this node saved from that storage lose their autograd history. Unpacking them fails the
  // version check anyway, and their history may now lead back to this node, which would be a
  // reference cycle (self.mul_(self) saves self, whose grad_fn becomes this node).
  virtual void drop_saved_history(const StorageImpl* /*storage*/) {}
  // The forward op this node differentiates ("mul" for MulBackward), for messages.
  virtual std::string forward_name() const;

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  // PyTorch's Python name for the same list (grad_fn.next_functions).
  const std::vector<Edge>& next_functions() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  void add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }
  // Whether input i of the forward op needs a gradient.
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }

  // One slot per forward output; add_output returns the output_nr of `t`.
  uint32_t add_output(const Tensor& t);
  size_t num_outputs() const { return outputs_.size(); }
  const GradSlotMeta& output_meta(size_t i) const { return outputs_.at(i); }

  // Creation order. The engine runs ready nodes latest-first, as PyTorch does.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Tensor hooks (Tensor::register_hook on a non-leaf): run on the gradient of output
  // `output_nr` before apply; a hook may return a replacement.
  int64_t add_pre_hook(uint32_t output_nr, Tensor::GradHook hook);
  bool remove_pre_hook(int64_t handle);
  // retain_grad(): stores the gradient of `output_nr` into the tensor, after the pre hooks.
  void set_retain_grad_hook(uint32_t output_nr, std::function<void(const Tensor&)> fn);
  // Runs the hooks on `grads` (one per output) in registration order.
  virtual void run_pre_hooks(Tensors& grads) const;
  bool has_pre_hooks() const { return !pre_hooks_.empty() || !retain_hooks_.empty(); }

  // Note [Backward runs on the forward's stream]
  // A node made by an op on a cuda device remembers that device's current stream at the time
  // (set by add_output), and the engine runs the node's backward with that stream current, as
  // PyTorch does: the backward kernels then queue behind the forward work they read, and a
  // program that ran its forward on a side stream gets its backward there too. CPU nodes keep
  // the CPU's stream, which changes nothing.
  const Stream& stream() const { return stream_; }

  AnomalyInfo* anomaly() const { return anomaly_.get(); }
  void set_anomaly(std::unique_ptr<AnomalyInfo> info) { anomaly_ = std::move(info); }

 protected:
  std::vector<Edge> next_edges_;
  std::vector<GradSlotMeta> outputs_;

 private:
  struct PreHook {
    int64_t handle;
    uint32_t output_nr;
    Tensor::GradHook fn;
  };
  uint64_t sequence_nr_;
  Stream stream_;  // Note [Backward runs on the forward's stream]
  std::vector<PreHook> pre_hooks_;
  std::vector<std::pair<uint32_t, std::function<void(const Tensor&)>>> retain_hooks_;
  std::unique_ptr<AnomalyInfo> anomaly_;
};

// The node at the end of every path to a leaf that requires grad: adds the incoming gradient
// into the leaf's .grad (Note [Gradient accumulation] in node.cpp), then runs the leaf's
// post-accumulate-grad hooks. Its one gradient slot has the leaf's shape.
// The leaf owns this node (so recording an op does not rebuild it every time) and the node
// refers back to the leaf weakly: a gradient for a leaf nobody holds any more is dropped.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable);
  std::string name() const override { return "AccumulateGrad"; }
  std::string forward_name() const override { return "leaf"; }
  Tensors apply(Tensors&& grads) override;
  // A leaf's hooks live on the leaf (Tensor::register_hook), not on this node.
  void run_pre_hooks(Tensors& grads) const override;
  // The leaf, or an undefined tensor once it is gone.
  Tensor variable() const;

 private:
  std::weak_ptr<TensorImpl> variable_;
};

// The forward op a node name stands for: "LogSoftmaxBackward" -> "log_softmax".
using ember::forward_op_name;

// Hands `obj` to the iterative teardown (Note [Iterative graph teardown]).
void defer_release(std::shared_ptr<void> obj);

}  // namespace ember::autograd

namespace ember {
using autograd::Tensors;  // a list of tensors, as backward formulas take and return
}  // namespace ember
