#pragma once
// Custom differentiable ops without touching the engine: autograd::Function<Derived>.
//
//   struct Cube : autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;             // runs with grad mode off: nothing inside records
//     }
//     static Tensors backward(AutogradContext* ctx, const Tensors& grads) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * 3 * x * x};  // one gradient per Tensor argument of forward
//     }
//   };
//   Tensor y = Cube::apply(x);        // y.grad_fn()->name() == "CubeBackward"
//
// forward takes the context, then any arguments (the Tensor ones become the node's inputs, in
// order); it returns a Tensor or a Tensors. backward gets one gradient per output (zeros for an
// output that got none) and returns one gradient per Tensor argument (undefined = none; extra
// trailing undefined entries are allowed). Saved tensors are version-checked like any other
// (Note [Saved tensor versions]); outputs marked non-differentiable get no history. Plain values
// for backward go in ctx->saved_data. backward runs with grad mode on under create_graph, so a
// backward written with differentiable ops supports double backward.

#include <any>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograd/anomaly.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "autograd/op.h"
#include "autograd/saved_variable.h"

namespace ember::autograd {

class AutogradContext {
 public:
  // In forward: the tensors backward will need (inputs or outputs).
  void save_for_backward(Tensors tensors) { to_save_ = std::move(tensors); }
  // In backward: the saved tensors, checked against their versions.
  Tensors get_saved_variables() const;
  // In forward: outputs that get no gradient (e.g. indices returned next to values).
  void mark_non_differentiable(const Tensors& outputs);
  // In backward: whether the i-th Tensor argument of forward needs a gradient.
  bool needs_input_grad(size_t i) const { return node_ != nullptr && node_->needs_input_grad(i); }
  // Plain values for backward: ctx->saved_data["dim"] = int64_t{1}.
  std::unordered_map<std::string, std::any> saved_data;

 private:
  template <class T>
  friend class CppNode;
  template <class T>
  friend struct Function;
  void finish_forward(Node* node, const Tensors& outputs);
  bool is_non_differentiable(const Tensor& t) const;
  void release() {
    saved_.clear();
    released_ = true;
  }

  Node* node_ = nullptr;
  Tensors to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<TensorImpl*> non_differentiable_;
  bool released_ = false;
};

// "ns::Cube" -> "CubeBackward".
std::string custom_node_name(const char* mangled_type_name);

template <class T>
class CppNode final : public Node {
 public:
  CppNode() : name_(custom_node_name(typeid(T).name())) {}
  std::string name() const override { return name_; }
  Tensors apply(Tensors&& grads) override {
    Tensors out = T::backward(&ctx_, grads);
    EMBER_CHECK(out.size() >= next_edges_.size(), name_, ": backward returned ", out.size(),
                " gradients, but forward took ", next_edges_.size(), " tensor arguments");
    for (size_t i = next_edges_.size(); i < out.size(); ++i) {
      EMBER_CHECK(!out[i].defined(), name_, ": backward returned ", out.size(),
                  " gradients, but forward took ", next_edges_.size(), " tensor arguments");
    }
    out.resize(next_edges_.size());
    return out;
  }
  void release_saved() override { ctx_.release(); }
  AutogradContext& ctx() { return ctx_; }

 private:
  std::string name_;
  AutogradContext ctx_;
};

namespace detail_fn {
inline void collect(Tensors& out, const Tensor& t) { out.push_back(t); }
template <class X>
void collect(Tensors&, const X&) {}
inline Tensors as_list(const Tensor& t) { return {t}; }
inline Tensors as_list(const Tensors& ts) { return ts; }
}  // namespace detail_fn

template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    Tensors inputs;
    (detail_fn::collect(inputs, args), ...);
    bool record = is_grad_enabled();
    if (record) {
      bool any = false;
      for (const Tensor& t : inputs) any = any || (t.defined() && requires_grad_fast(t));
      record = any;
    }
    std::shared_ptr<CppNode<T>> node;
    AutogradContext local;
    AutogradContext* ctx = &local;
    if (record) {
      node = std::make_shared<CppNode<T>>();
      for (const Tensor& t : inputs) node->add_next_edge(t.defined() ? gradient_edge(t) : Edge{});
      ctx = &node->ctx();
      if (is_anomaly_enabled()) {
        std::vector<const Tensor*> pointers;
        for (const Tensor& t : inputs) pointers.push_back(&t);
        record_anomaly_info(*node, pointers.data(), pointers.size());
      }
    }
    auto result = [&] {
      GradModeGuard no_grad(false);
      return T::forward(ctx, std::forward<Args>(args)...);
    }();
    Tensors outputs = detail_fn::as_list(result);
    if (node) {
      for (const Tensor& out : outputs) {
        if (out.defined() && !ctx->is_non_differentiable(out)) set_history(out, node);
      }
    }
    ctx->finish_forward(node.get(), outputs);
    return result;
  }
};

}  // namespace ember::autograd
