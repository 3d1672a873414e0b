// The autograd methods of Tensor (core/tensor.h, section "autograd").

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "core/tensor.h"

namespace ember {

using autograd::AutogradMeta;
using autograd::get_meta;
using autograd::materialize_meta;

namespace {
std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.sizes());
}
}  // namespace

bool Tensor::requires_grad() const { return autograd::requires_grad_fast(*this); }

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  const AutogradMeta* m = get_meta(*this);
  if (m != nullptr && m->grad_fn != nullptr) {
    EMBER_CHECK(requires_grad,
                "requires_grad_: you can only change requires_grad flags of leaf "
                "variables. This tensor (",
                describe(*this), ") has grad_fn ", m->grad_fn->name(),
                "; use detach() to get a tensor that does not require grad.");
    return *this;
  }
  if (requires_grad) {
    EMBER_CHECK(is_floating_point(),
                "requires_grad_: only tensors of floating point dtype can "
                "require gradients, got ",
                describe(*this));
    EMBER_CHECK(!is_inference() || autograd::is_inference_mode_enabled(),
                "requires_grad_: Setting requires_grad=True on inference tensor outside "
                "InferenceMode is not allowed (",
                describe(*this), ")");
  }
  materialize_meta(*this).requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = get_meta(*this);
  return m == nullptr || m->grad_fn == nullptr;
}

Tensor Tensor::grad() const {
  const AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return Tensor();
  if (m->grad_fn != nullptr && !m->retains_grad) {
    EMBER_ERROR("grad: this tensor (", describe(*this), ") is not a leaf: it was made by ",
                m->grad_fn->name(),
                ", and a non-leaf keeps no .grad. Call retain_grad() on it "
                "before backward() to keep its gradient, or use autograd::grad().");
  }
  return m->grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    EMBER_CHECK(grad.sizes() == sizes(), "set_grad: assigned grad has shape ",
                shape_str(grad.sizes()), " but the tensor has shape ", shape_str(sizes()));
    EMBER_CHECK(grad.dtype() == dtype(), "set_grad: assigned grad has dtype ",
                dtype_name(grad.dtype()), " but the tensor has dtype ", dtype_name(dtype()));
  }
  materialize_meta(*this).grad = grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return nullptr;
  if (m->view) autograd::gradient_edge(*this);  // refresh a stale view (Note [View tracking])
  return m->grad_fn;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = get_meta(*this);
  return m == nullptr ? 0 : m->output_nr;
}

void Tensor::retain_grad() const {
  EMBER_CHECK(requires_grad(),
              "retain_grad: can't retain_grad on a tensor that has "
              "requires_grad=False (",
              describe(*this), ")");
  AutogradMeta& m = materialize_meta(*this);
  if (m.grad_fn == nullptr || m.retains_grad) return;  // leaves keep .grad anyway
  m.retains_grad = true;
  // The node keeps only a weak reference: the tensor owns the node, not the other way round.
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  m.grad_fn->set_retain_grad_hook(m.output_nr, [weak](const Tensor& g) {
    std::shared_ptr<TensorImpl> impl = weak.lock();
    if (!impl) return;
    Tensor self(impl);
    AutogradMeta& meta = materialize_meta(self);
    if (!meta.grad.defined()) {
      meta.grad = autograd::is_grad_enabled() ? g : g.detach().clone();
    } else {
      meta.grad = meta.grad + g;
    }
  });
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = get_meta(*this);
  return m != nullptr && m->retains_grad;
}

Tensor Tensor::detach() const {
  return make_tensor(storage(), sizes(), strides(), storage_offset(), dtype());
}

const Tensor& Tensor::detach_() const {
  AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return *this;
  EMBER_CHECK(!m->view, "detach_: can't detach_ a view (", describe(*this),
              "); use detach(), which returns a new tensor");
  m->grad_fn = nullptr;
  m->requires_grad = false;
  m->output_nr = 0;
  return *this;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

int64_t Tensor::register_hook(GradHook hook) const {
  EMBER_CHECK(requires_grad(),
              "register_hook: cannot register a hook on a tensor that doesn't "
              "require gradient (",
              describe(*this), ")");
  AutogradMeta& m = materialize_meta(*this);
  std::shared_ptr<autograd::Node> fn = grad_fn();
  if (fn) return fn->add_pre_hook(m.output_nr, std::move(hook));
  const int64_t h = autograd::next_hook_handle();
  m.leaf_hooks.push_back({h, std::move(hook)});
  return h;
}

void Tensor::remove_hook(int64_t handle) const {
  AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return;
  for (auto it = m->leaf_hooks.begin(); it != m->leaf_hooks.end(); ++it) {
    if (it->handle == handle) {
      m->leaf_hooks.erase(it);
      return;
    }
  }
  if (m->grad_fn) m->grad_fn->remove_pre_hook(handle);
}

int64_t Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  EMBER_CHECK(is_leaf() && requires_grad(),
              "register_post_accumulate_grad_hook: post accumulate "
              "grad hooks cannot be registered on non-leaf tensors or tensors that do not "
              "require grad (",
              describe(*this), ")");
  const int64_t h = autograd::next_hook_handle();
  materialize_meta(*this).post_accumulate_hooks.emplace_back(h, std::move(hook));
  return h;
}

const Tensor& Tensor::set_name(const std::string& name) const {
  materialize_meta(*this).name = name;
  return *this;
}

std::string Tensor::name() const {
  const AutogradMeta* m = get_meta(*this);
  return m == nullptr ? std::string() : m->name;
}

}  // namespace ember
