#pragma once
// How a differentiable op records itself: the Op recorder and OpNode.
//
// Every differentiable op in autograd/ops/*.cpp reads the same way, top to bottom:
//
//   Tensor exp(const Tensor& x) {
//     Op op("ExpBackward", x);                            // records only if x requires grad
//     Tensor y = op.run([&] { return native::exp(x); });  // the kernel (core/ops/unary.h)
//     op.set_output(y);                                   // y.grad_fn() is now ExpBackward
//     op.save_output(y);                                  // exp saves its result, not x
//     op.backward([](const Saved& s, const Tensors& g) -> Tensors { return {g[0] * s[0]}; });
//     return y;
//   }
//
// When no input requires grad (or grad mode is off) `op` holds no node and every call after
// the constructor is a no-op, so the op costs one check per input over the bare kernel. The Op
// is also the op's range for the profiler (core/record_function.h): one flag read when none runs.
//
// The backward closure receives the saved tensors (checked against their versions when read,
// Note [Saved tensor versions]) and one gradient per recorded output, never undefined. It
// returns one gradient per input, in the constructor's order; an undefined tensor means "no
// gradient". It does not need to undo broadcasting or type promotion: the engine sums a
// gradient down to its input's shape and casts it to its dtype. Backward formulas are written
// with the differentiable ops themselves, so the backward of a backward works (create_graph).
// The closure must not capture tensors (that could keep the graph alive in a cycle); it saves
// them with save()/save_output() and captures only plain values (dims, scalars, shapes).

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"
#include "core/record_function.h"

namespace ember::autograd {

class OpNode;

// The saved tensors, as a backward closure sees them.
class Saved {
 public:
  explicit Saved(const OpNode& node) : node_(node) {}
  // Unpacks (version-checked). A tensor saved through hooks is unpacked once and then served
  // from a cache that lives for this backward call (Note [Saved tensor hooks]).
  Tensor operator[](size_t i) const;
  // Whether forward input i needs a gradient: skip computing the ones nobody needs.
  bool needs_grad(size_t i) const;

 private:
  const OpNode& node_;
  mutable std::vector<Tensor> hooked_;  // empty unless a hooked tensor was read
};

using BackwardFn = std::function<Tensors(const Saved& saved, const Tensors& grads)>;

// A node whose backward is a closure (see the top of this file).
class OpNode final : public Node {
 public:
  explicit OpNode(const char* name) : name_(name) {}
  ~OpNode() override;
  std::string name() const override { return name_; }
  Tensors apply(Tensors&& grads) override;
  void release_saved() override;
  void drop_saved_history(const StorageImpl* storage) override {
    for (SavedVariable& s : saved_) s.drop_history_on(storage);
  }

  void save(const Tensor& t, bool is_output) { saved_.emplace_back(t, is_output); }
  void set_backward(BackwardFn fn) { backward_ = std::move(fn); }
  const SavedVariable& saved(size_t i) const { return saved_.at(i); }
  size_t num_saved() const { return saved_.size(); }

 private:
  const char* name_;
  std::vector<SavedVariable> saved_;
  BackwardFn backward_;
};

// Records one op (see the top of this file).
class Op {
 public:
  template <class... Ts>
  explicit Op(const char* name, const Ts&... inputs)
      : name_(name), range_(name, profiler::Category::op) {
    static_assert(sizeof...(Ts) > 0, "an op records at least one tensor input");
    const Tensor* pointers[] = {&inputs...};
    if (EMBER_UNLIKELY(range_.active())) range_.set_shapes(pointers, sizeof...(Ts));
    if (!detail::grad_mode_enabled) return;
    if (!(requires_grad_fast(inputs) || ...)) return;
    start(pointers, sizeof...(Ts));
  }
  // For ops over a list of tensors (cat, stack).
  Op(const char* name, const std::vector<Tensor>& inputs);

  bool recording() const { return node_ != nullptr; }
  // Whether input i needs a gradient (false when not recording): save only what is needed.
  bool needs_grad(size_t i) const { return node_ != nullptr && node_->needs_input_grad(i); }

  // Runs the forward kernels; while recording they run with grad mode off, so nothing inside
  // records a graph of its own.
  template <class F>
  auto run(F&& forward) {
    if (!node_) return forward();
    GradModeGuard no_grad(false);
    return forward();
  }

  // Marks `t` as the op's next output (call once per differentiable output, in order). Also
  // the point where anomaly mode's forward check looks for NaN / Inf.
  void set_output(const Tensor& t);
  void set_outputs(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) set_output(t);
  }
  void save(const Tensor& t) {
    if (node_) node_->save(t, /*is_output=*/false);
  }
  // Saves an output of this op; call it after set_output.
  void save_output(const Tensor& t) {
    if (node_) node_->save(t, /*is_output=*/true);
  }
  // A template, so that no std::function is built when the op does not record.
  template <class F>
  void backward(F&& fn) {
    if (node_) node_->set_backward(BackwardFn(std::forward<F>(fn)));
  }
  const std::shared_ptr<OpNode>& node() const { return node_; }

 private:
  void start(const Tensor* const* inputs, size_t n);
  const char* name_;
  // The op's range for the profiler, open for the Op's lifetime: the whole public function
  // (Note [What the profiler records] in core/profiler.h).
  profiler::RecordFunction range_;
  std::shared_ptr<OpNode> node_;
};

// Anomaly mode: records on `node` its forward op, its inputs' dtypes and shapes, and a C++
// backtrace (autograd/anomaly.h).
void record_anomaly_info(Node& node, const Tensor* const* inputs, size_t n);

// A tensor with `t`'s data whose grad_fn is output `output_nr` of `node` (no-op on null).
void set_history(const Tensor& t, const std::shared_ptr<Node>& node);

// Sums `grad` down to `shape` (the reverse of broadcasting). Differentiable.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace ember::autograd
