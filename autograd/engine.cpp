#include "autograd/engine.h"

#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/anomaly.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/op.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"
#include "core/ops/factory.h"
#include "core/stream.h"

namespace ember::autograd {

namespace {

// The callbacks of the backward passes running on this thread, innermost last (Note [Engine
// callbacks] in engine.h).
thread_local std::vector<std::vector<std::function<void()>>*> callback_stack;

// Makes `callbacks` the innermost backward's list for the scope.
class CallbackScope {
 public:
  explicit CallbackScope(std::vector<std::function<void()>>* callbacks) {
    callback_stack.push_back(callbacks);
  }
  ~CallbackScope() { callback_stack.pop_back(); }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
};

// Per-node state for one backward run (Note [Engine] in engine.h).
struct NodeState {
  int dependencies = 0;  // gradients still to arrive
  bool needed = true;    // on a path to a wanted gradient
  bool executes = true;  // whether apply runs (a pure capture point does not)
  Tensors buffer;        // one slot per output of the node
};

struct Capture {
  uint32_t slot;
  size_t input_index;
};

std::string anomaly_where(const Node& node) {
  if (node.anomaly() == nullptr) {
    return " (enable anomaly detection, autograd::DetectAnomalyGuard, to see where the forward "
           "op was made)";
  }
  return ". The forward op was " + node.anomaly()->context + ", made at:\n" +
         node.anomaly()->backtrace;
}

// The gradient `g` flowing into slot `slot` of `receiver`, made to fit it: broadcasting undone,
// dtype and device matched (PyTorch's validate_outputs: the gradient of x.cuda() comes back to
// x's device).
Tensor fit_gradient(const Tensor& g, const Node& producer, size_t index, const Node& receiver,
                    uint32_t slot) {
  const GradSlotMeta& meta = receiver.output_meta(slot);
  Tensor out = g;
  if (!meta.has_shape(out.sizes())) {
    try {
      out = sum_to(out, meta.sizes());
    } catch (const Error& e) {
      EMBER_ERROR("Function ", producer.name(), " returned an invalid gradient at index ", index,
                  " - got ", shape_str(g.sizes()), " but expected shape compatible with ",
                  shape_str(meta.sizes()), " (", e.what(), ")");
    }
  }
  if (out.dtype() != meta.dtype || out.device() != meta.device)
    out = out.to(meta.device, meta.dtype);
  return out;
}

// Runs a node's backward on the stream its forward used (Note [Backward runs on the forward's
// stream] in autograd/node.h). The engine's own work -- making zero gradients, fitting a
// gradient to the next node, accumulating -- runs on the device's current ("ambient") stream, so
// the two are ordered with events, as PyTorch's engine orders its input buffers: the node's stream
// waits for what the ambient stream queued before it (its incoming gradients), and after
// finish() the ambient stream waits for what the node queued (its outputs).
class NodeStreamScope {
 public:
  explicit NodeStreamScope(const Node& node) {
    const Stream& s = node.stream();
    if (EMBER_LIKELY(!s.device().is_cuda())) return;
    ambient_ = current_stream(s.device());
    if (ambient_ == s) return;
    Event ready(DeviceType::CUDA);
    ready.record(ambient_);
    ready.block(s);
    stream_ = s;
    guard_.emplace(s);
  }
  void finish() {
    if (!guard_) return;
    guard_.reset();
    Event done(DeviceType::CUDA);
    done.record(stream_);
    done.block(ambient_);
  }

 private:
  Stream ambient_, stream_;
  std::optional<StreamGuard> guard_;
};

class GraphTask {
 public:
  GraphTask(bool keep_graph, bool create_graph)
      : keep_graph_(keep_graph), create_graph_(create_graph) {}

  Tensors run(const Tensors& outputs, const Tensors& grad_outputs, const Tensors& inputs,
              bool accumulate, bool allow_unused) {
    EMBER_CHECK(!outputs.empty(), "backward: no outputs to differentiate");
    EMBER_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ",
                grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
    // 1. Roots.
    std::vector<Edge> roots;
    Tensors root_grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& out = outputs[i];
      EMBER_CHECK(out.defined(), "backward: output ", i, " is undefined");
      Edge e = gradient_edge(out);
      EMBER_CHECK(e.valid(), "element ", i,
                  " of tensors does not require grad and does not "
                  "have a grad_fn (",
                  dtype_name(out.dtype()), " ", shape_str(out.sizes()),
                  "). Did you forget requires_grad_(), or compute it under NoGradGuard?");
      Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
      if (!g.defined()) {
        EMBER_CHECK(out.numel() == 1,
                    "grad can be implicitly created only for scalar outputs: "
                    "output ",
                    i, " has shape ", shape_str(out.sizes()),
                    "; pass a gradient of that shape to backward()");
        g = ember::ones_like(out);
      } else {
        EMBER_CHECK(g.sizes() == out.sizes(), "backward: Mismatch in shape: grad_output[", i,
                    "] has a shape of ", shape_str(g.sizes()), " and output[", i,
                    "] has a shape of ", shape_str(out.sizes()));
      }
      roots.push_back(std::move(e));
      root_grads.push_back(std::move(g));
    }
    // Targets: where the wanted gradients are captured.
    std::vector<Edge> targets;
    for (size_t j = 0; j < inputs.size(); ++j) {
      Edge e = gradient_edge(inputs[j]);
      EMBER_CHECK(e.valid(), "One of the differentiated Tensors (input ", j, ", ",
                  dtype_name(inputs[j].dtype()), " ", shape_str(inputs[j].sizes()),
                  ") does not require grad");
      const bool leaf_target = dynamic_cast<AccumulateGrad*>(e.fn.get()) != nullptr;
      if (!(accumulate && leaf_target)) captures_[e.fn.get()].push_back(Capture{e.input_nr, j});
      targets.push_back(std::move(e));
    }
    discover(roots, targets, accumulate);

    // Seed the roots.
    for (size_t i = 0; i < roots.size(); ++i) {
      NodeState& s = states_.at(roots[i].fn.get());
      add_to_buffer(s, *roots[i].fn, roots[i].input_nr, std::move(root_grads[i]));
    }
    std::unordered_set<Node*> seeded;
    for (const Edge& r : roots) {
      Node* n = r.fn.get();
      if (states_.at(n).dependencies == 0 && seeded.insert(n).second)
        ready_.push({n->sequence_nr(), n});
    }
    captured_.assign(inputs.size(), Tensor());

    // 3. Execute, then the queued callbacks (Note [Engine callbacks]).
    {
      CallbackScope scope(&callbacks_);
      while (!ready_.empty()) {
        Node* node = ready_.top().second;
        ready_.pop();
        execute(*node);
      }
      for (size_t i = 0; i < callbacks_.size(); ++i) {
        std::function<void()> callback = std::move(callbacks_[i]);
        callback();
      }
    }

    if (inputs.empty()) return {};
    for (size_t j = 0; j < inputs.size(); ++j) {
      const bool leaf_target = dynamic_cast<AccumulateGrad*>(targets[j].fn.get()) != nullptr;
      if (accumulate) {
        if (!leaf_target &&
            captured_[j].defined()) {  // a non-leaf input: accumulate like retain_grad
          AutogradMeta& m = materialize_meta(inputs[j]);
          m.grad = m.grad.defined() ? ember::add(m.grad, captured_[j]) : captured_[j];
        }
        continue;
      }
      if (!captured_[j].defined()) {
        EMBER_CHECK(allow_unused, "One of the differentiated Tensors (input ", j, ", ",
                    dtype_name(inputs[j].dtype()), " ", shape_str(inputs[j].sizes()),
                    ") appears to not have been used in the graph. Set allow_unused=true if "
                    "this is the desired behavior.");
      }
    }
    return accumulate ? Tensors{} : captured_;
  }

 private:
  // 2. Discovery: reachable nodes, which are needed, and how many edges lead into each.
  void discover(const std::vector<Edge>& roots, const std::vector<Edge>& targets, bool accumulate) {
    std::unordered_set<Node*> target_nodes;
    for (const Edge& t : targets) target_nodes.insert(t.fn.get());
    const bool filter = !targets.empty();
    // Iterative post-order DFS: a node is needed if it is a target or a child is needed.
    struct Frame {
      Node* node;
      size_t next;
    };
    std::vector<Frame> stack;
    for (const Edge& r : roots) {
      if (states_.count(r.fn.get()) != 0) continue;
      states_.emplace(r.fn.get(), NodeState{});
      stack.push_back({r.fn.get(), 0});
      while (!stack.empty()) {
        Frame& f = stack.back();
        const auto& edges = f.node->next_edges();
        if (f.next < edges.size()) {
          Node* child = edges[f.next++].fn.get();
          if (child != nullptr && states_.count(child) == 0) {
            states_.emplace(child, NodeState{});
            stack.push_back({child, 0});
          }
          continue;
        }
        NodeState& s = states_.at(f.node);
        if (filter) {
          bool child_needed = false;
          for (const Edge& e : edges) {
            if (e.fn && states_.at(e.fn.get()).needed) child_needed = true;
          }
          const bool is_target = target_nodes.count(f.node) != 0;
          s.needed = is_target || child_needed;
          const bool accumulates_here =
              accumulate && is_target && dynamic_cast<AccumulateGrad*>(f.node) != nullptr;
          s.executes = child_needed || accumulates_here;
        }
        stack.pop_back();
      }
    }
    for (auto& [node, s] : states_) {
      if (!s.needed || !s.executes) continue;
      for (const Edge& e : node->next_edges()) {
        if (e.fn && states_.at(e.fn.get()).needed) ++states_.at(e.fn.get()).dependencies;
      }
    }
  }

  void add_to_buffer(NodeState& s, const Node& node, uint32_t slot, Tensor g) {
    if (s.buffer.empty()) s.buffer.resize(node.num_outputs());
    Tensor& b = s.buffer.at(slot);
    b = b.defined() ? ember::add(b, g) : std::move(g);
  }

  void execute(Node& node) {
    NodeState& s = states_.at(&node);
    Tensors grads = std::move(s.buffer);
    grads.resize(node.num_outputs());
    GradModeGuard mode(create_graph_);
    if (node.has_pre_hooks() || dynamic_cast<AccumulateGrad*>(&node) != nullptr)
      node.run_pre_hooks(grads);
    auto cap = captures_.find(&node);
    if (cap != captures_.end()) {
      for (const Capture& c : cap->second) captured_[c.input_index] = grads.at(c.slot);
    }
    if (!s.needed || !s.executes) return;

    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    Tensors outputs;
    if (any) {
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!grads[i].defined()) {
          const GradSlotMeta& m = node.output_meta(i);
          grads[i] = ember::zeros(m.sizes(), TensorOptions(m.dtype).device(m.device));
        }
      }
      NodeStreamScope on_stream(node);  // Note [Backward runs on the forward's stream]
      std::optional<profiler::RecordFunction> range;  // Note [What the profiler records]
      if (EMBER_UNLIKELY(profiler::enabled())) {
        range.emplace(node.name(), profiler::Category::backward);
        range->set_sequence_nr(node.sequence_nr());
      }
      if (is_anomaly_enabled()) {
        try {
          outputs = node.apply(std::move(grads));
        } catch (const Error& e) {
          EMBER_ERROR(e.what(), "\n(raised by the backward of ", node.name(), ", forward op ",
                      node.forward_name(), anomaly_where(node), ")");
        }
      } else {
        outputs = node.apply(std::move(grads));
      }
      on_stream.finish();
      if (!keep_graph_) node.release_saved();
      if (is_anomaly_enabled()) {
        for (size_t i = 0; i < outputs.size(); ++i) {
          if (outputs[i].defined() && has_nonfinite(outputs[i])) {
            EMBER_ERROR("anomaly detection: Function '", node.name(),
                        "' returned nan or inf "
                        "values in its ",
                        i, "th output (forward op ", node.forward_name(), ")", anomaly_where(node));
          }
        }
      }
    }
    const auto& edges = node.next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.fn) continue;
      NodeState& cs = states_.at(e.fn.get());
      if (!cs.needed) continue;
      if (i < outputs.size() && outputs[i].defined()) {
        add_to_buffer(cs, *e.fn, e.input_nr, fit_gradient(outputs[i], node, i, *e.fn, e.input_nr));
      }
      if (--cs.dependencies == 0) ready_.push({e.fn->sequence_nr(), e.fn.get()});
    }
  }

  bool keep_graph_, create_graph_;
  std::unordered_map<Node*, NodeState> states_;
  std::unordered_map<Node*, std::vector<Capture>> captures_;
  Tensors captured_;
  std::priority_queue<std::pair<uint64_t, Node*>> ready_;
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace

void queue_callback(std::function<void()> callback) {
  EMBER_CHECK(!callback_stack.empty(),
              "queue_callback: no backward pass is running on this thread (call it from a hook "
              "or a node's backward)");
  EMBER_CHECK(callback != nullptr, "queue_callback: the callback is empty");
  callback_stack.back()->push_back(std::move(callback));
}

void backward(const Tensors& outputs, const Tensors& grad_outputs, std::optional<bool> retain_graph,
              bool create_graph, const Tensors& inputs) {
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  task.run(outputs, grad_outputs, inputs, /*accumulate=*/true, /*allow_unused=*/true);
}

Tensors grad(const Tensors& outputs, const Tensors& inputs, const Tensors& grad_outputs,
             std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  EMBER_CHECK(!inputs.empty(), "autograd::grad: no inputs to differentiate with respect to");
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  return task.run(outputs, grad_outputs, inputs, /*accumulate=*/false, allow_unused);
}

}  // namespace ember::autograd
