#include "autograd/saved_variable.h"

#include <memory>

#include "autograd/meta.h"
#include "autograd/node.h"
#include "core/tensor.h"

namespace ember::autograd {

namespace {

// Same data and geometry, no autograd meta (Note [Saved outputs]).
Tensor plain_alias(const Tensor& t) {
  return make_tensor(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype());
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.sizes());
}

}  // namespace

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  EMBER_CHECK(!t.is_inference(), "Inference tensors cannot be saved for backward: ", describe(t),
              " was made under InferenceMode. Make it outside InferenceMode, or "
              "clone() it there, to use it in autograd.");
  was_defined_ = true;
  is_output_ = is_output;
  saved_version_ = t.version();
  requires_grad_ = requires_grad_fast(t);
  if (is_output) {
    const AutogradMeta* m = get_meta(t);
    output_nr_ = m != nullptr ? m->output_nr : 0;
    data_ = plain_alias(t);
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const Node& owner) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(!released_,
              "Trying to backward through the graph a second time (or directly access saved "
              "tensors after they have already been freed). Saved intermediate values of the "
              "graph are freed when you call backward() or autograd::grad(). Specify "
              "retain_graph=true if you need to backward through the graph a second time. "
              "(node ",
              owner.name(), ")");
  if (data_.version() != saved_version_) {
    EMBER_ERROR(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [",
        describe(data_), "], which is output ", output_nr_, " of ",
        is_output_ ? owner.name() : std::string("its grad_fn"), ", is at version ", data_.version(),
        "; expected version ", saved_version_, " instead. It was saved by ", owner.name(),
        " (forward op ", owner.forward_name(),
        "). Hint: replace the in-place op that changed it by its "
        "out-of-place form, or clone() the tensor before changing it.");
  }
  if (!is_output_ || !requires_grad_) return data_;
  // Re-attach the owner as grad_fn (Note [Saved outputs]). The owner is alive: it is running.
  Tensor t = plain_alias(data_);
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = std::const_pointer_cast<Node>(owner.shared_from_this());
  m.output_nr = output_nr_;
  return t;
}

void SavedVariable::drop_history_on(const StorageImpl* storage) {
  if (!was_defined_ || released_ || is_output_ || data_.storage().get() != storage) return;
  data_ = plain_alias(data_);
  requires_grad_ = false;
}

void SavedVariable::release() {
  if (!was_defined_ || released_) return;
  released_ = true;
  std::shared_ptr<TensorImpl> impl = data_.impl_ptr();
  data_ = Tensor();
  defer_release(std::move(impl));
}

}  // namespace ember::autograd
