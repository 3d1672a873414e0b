#include "autograd/saved_variable.h"

#include <any>
#include <memory>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "autograd/saved_hooks.h"
#include "core/tensor.h"

namespace ember::autograd {

namespace {

// Same data and geometry, no autograd meta (Note [Saved outputs]).
Tensor plain_alias(const Tensor& t) {
  return make_tensor(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype());
}

std::string describe(DType dtype, const Shape& sizes) {
  return std::string(dtype_name(dtype)) + " " + shape_str(sizes);
}
std::string describe(const Tensor& t) { return describe(t.dtype(), t.sizes()); }

void check_version(uint32_t now, uint32_t saved, DType dtype, const Shape& sizes,
                   uint32_t output_nr, bool is_output, const Node& owner) {
  if (EMBER_LIKELY(now == saved)) return;
  EMBER_ERROR(
      "one of the variables needed for gradient computation has been modified by an "
      "inplace operation: [",
      describe(dtype, sizes), "], which is output ", output_nr, " of ",
      is_output ? owner.name() : std::string("its grad_fn"), ", is at version ", now,
      "; expected version ", saved, " instead. It was saved by ", owner.name(), " (forward op ",
      owner.forward_name(),
      "). Hint: replace the in-place op that changed it by its "
      "out-of-place form, or clone() the tensor before changing it.");
}

// A saved output with its owner re-attached as grad_fn (Note [Saved outputs]). The owner is
// alive: it is running.
Tensor with_owner(const Tensor& data, const Node& owner, uint32_t output_nr) {
  Tensor t = plain_alias(data);
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = std::const_pointer_cast<Node>(owner.shared_from_this());
  m.output_nr = output_nr;
  return t;
}

}  // namespace

// Note [Saved tensor hooks] (autograd/saved_hooks.h).
struct SavedVariable::Packed {
  std::shared_ptr<const SavedTensorHooks> hooks;
  std::any value;
  std::weak_ptr<StorageImpl> storage;  // for the version check while it lives
  Shape sizes;
  DType dtype;
};

void SavedVariable::pack(const Tensor& t) {
  auto p = std::make_shared<Packed>();
  p->hooks = current_saved_tensor_hooks();
  p->storage = t.storage();
  p->sizes = t.sizes();
  p->dtype = t.dtype();
  {
    GradModeGuard no_grad(false);
    p->value = p->hooks->pack(is_output_ ? plain_alias(t) : t);
  }
  packed_ = std::move(p);
}

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
  }
  if (EMBER_UNLIKELY(detail::saved_hooks_depth > 0)) {
    pack(t);
    return;
  }
  data_ = is_output ? plain_alias(t) : t;
}

Tensor SavedVariable::unpack_hooked(const Node& owner) const {
  const Packed& p = *packed_;
  if (const std::shared_ptr<StorageImpl> storage = p.storage.lock()) {
    check_version(storage->version, saved_version_, p.dtype, p.sizes, output_nr_, is_output_,
                  owner);
  }
  Tensor t = p.hooks->unpack(p.value);
  EMBER_CHECK(t.defined() && t.dtype() == p.dtype && t.sizes() == p.sizes,
              "saved tensor hooks: the unpack hook returned ",
              t.defined() ? describe(t) : std::string("an undefined tensor"),
              " for a tensor saved as ", describe(p.dtype, p.sizes), " (node ", owner.name(),
              ", forward op ", owner.forward_name(), ")");
  if (!is_output_) {
    // Note [Saved tensor hooks]: under create_graph the history is needed.
    EMBER_CHECK(!requires_grad_ || !is_grad_enabled() || requires_grad_fast(t),
                "saved tensor hooks: the unpack hook returned ", describe(p.dtype, p.sizes),
                " without autograd history, but the saved tensor required grad and this "
                "backward has create_graph=true: the gradient of the gradient would miss the "
                "path through it (node ",
                owner.name(), ", forward op ", owner.forward_name(),
                "). Use create_graph=false, or hooks that keep the tensor itself.");
    return t;
  }
  return requires_grad_ ? with_owner(t, owner, output_nr_) : t;
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
  if (EMBER_UNLIKELY(packed_ != nullptr)) return unpack_hooked(owner);
  if (EMBER_UNLIKELY(data_.version() != saved_version_)) {
    check_version(data_.version(), saved_version_, data_.dtype(), data_.sizes(), output_nr_,
                  is_output_, owner);
  }
  if (!is_output_ || !requires_grad_) return data_;
  return with_owner(data_, owner, output_nr_);
}

void SavedVariable::drop_history_on(const StorageImpl* storage) {
  if (!was_defined_ || released_ || is_output_ || packed_ != nullptr ||
      data_.storage().get() != storage)
    return;
  data_ = plain_alias(data_);
  requires_grad_ = false;
}

void SavedVariable::release() {
  if (!was_defined_ || released_) return;
  released_ = true;
  if (packed_ != nullptr) defer_release(std::move(packed_));  // what pack returned may hold a graph
  std::shared_ptr<TensorImpl> impl = data_.impl_ptr();
  data_ = Tensor();
  defer_release(std::move(impl));
}

}  // namespace ember::autograd
