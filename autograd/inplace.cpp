#include "autograd/inplace.h"

#include "autograd/grad_mode.h"
#include "autograd/op.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/index.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/view.h"
#include "core/ops/factory.h"

namespace ember::autograd {

namespace {

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.sizes());
}

bool is_leaf_requiring_grad(const Tensor& t) {
  const AutogradMeta* m = get_meta(t);
  return m != nullptr && m->requires_grad && m->grad_fn == nullptr;
}

}  // namespace

void check_inplace(const Tensor& self, const char* op) {
  if (self.is_inference() && !detail::inference_mode_enabled) {
    EMBER_ERROR(op, ": Inplace update to inference tensor outside InferenceMode is not allowed (",
                describe(self), "). Make a clone() of it outside InferenceMode first.");
  }
  if (!detail::grad_mode_enabled) return;
  const AutogradMeta* m = get_meta(self);
  if (m == nullptr) return;
  if (m->requires_grad && m->grad_fn == nullptr) {
    EMBER_ERROR(op, ": a leaf Variable that requires grad (", describe(self),
                ") is being used in an in-place operation. Do it under NoGradGuard (as "
                "optimizers do), or on a clone.");
  }
  if (!m->view) return;
  const ViewInfo& v = *m->view;
  if (is_leaf_requiring_grad(v.base)) {
    EMBER_ERROR(op,
                ": a view of a leaf Variable that requires grad is being used in an "
                "in-place operation (view ",
                describe(self), " of leaf ", describe(v.base),
                "). Do it under NoGradGuard, or on a clone.");
  }
  if (v.creation == CreationMeta::NoGradMode && requires_grad_fast(v.base)) {
    EMBER_ERROR(op,
                ": a view was created in no_grad mode and is being modified inplace with "
                "grad mode enabled (view ",
                describe(self),
                "). Given that this use case is "
                "ambiguous and error-prone, it is forbidden; clone() the view first.");
  }
}

// ---- views -----------------------------------------------------------------------------------

void track_view(const Tensor& view, const Tensor& input) {
  if (detail::inference_mode_enabled || view.is_inference()) return;
  const AutogradMeta* im = get_meta(input);
  AutogradMeta& m = materialize_meta(view);
  ViewInfo info;
  info.base = (im != nullptr && im->view) ? im->view->base : input;
  info.creation = (im != nullptr && im->view) ? im->view->creation : CreationMeta::Default;
  if (!detail::grad_mode_enabled && requires_grad_fast(input))
    info.creation = CreationMeta::NoGradMode;
  info.attr_version = view.version();
  m.view = std::move(info);
}

namespace {
// One past the last storage element a geometry reaches (0 when empty).
int64_t extent(const Geometry& g) {
  int64_t e = g.offset + 1;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return 0;
    e += (g.sizes[d] - 1) * g.strides[d];
  }
  return e;
}
}  // namespace

Tensor view_positions(const Geometry& t, const Geometry& view) {
  // Storage position of every element of `t` and of the view, then invert the first map.
  const int64_t n = std::max<int64_t>({extent(t), extent(view), 1});
  int64_t t_numel = 1;
  for (int64_t s : t.sizes) t_numel *= s;
  Tensor storage_index = ember::arange(0, n, 1, kInt64);
  Tensor positions = native::as_strided(storage_index, t.sizes, t.strides, t.offset);
  Tensor inverse = ember::full({n}, -1, kInt64);
  native::index_put_(inverse, {native::reshape(positions, {-1})},
                     ember::arange(0, t_numel, 1, kInt64), false);
  Tensor view_pos = native::as_strided(storage_index, view.sizes, view.strides, view.offset);
  Tensor linear =
      native::reshape(native::index(inverse, {native::reshape(view_pos, {-1})}), view.sizes);
  EMBER_CHECK(linear.numel() == 0 || native::min(linear).item<int64_t>() >= 0,
              "as_strided: the view ", shape_str(view.sizes), " with strides ",
              shape_str(view.strides), " and offset ", view.offset,
              " reaches elements outside its input of shape ", shape_str(t.sizes),
              ", so no gradient can be formed for them");
  return linear;
}

Tensor view_backward(const Tensor& grad, const Geometry& input, const Geometry& view) {
  // The positions are worked out on the host; the gradient stays on its device.
  Tensor index = native::to(native::reshape(view_positions(input, view), {-1}), grad.device());
  int64_t numel = 1;
  for (int64_t s : input.sizes) numel *= s;
  Tensor flat = ember::zeros({numel}, grad.options());
  return ember::reshape(ember::index_add(flat, 0, index, ember::reshape(grad, {-1})), input.sizes);
}

// ---- rebase ----------------------------------------------------------------------------------

namespace {

// The base's grad_fn after an in-place op through one of its views (Note [In-place on
// non-leaves]). Edge 0: the base's old history. Edges 1..: those of `fn`, the in-place op's node.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : positions_(view_positions(Geometry::of(base), Geometry::of(view))), fn_(std::move(fn)) {
    add_next_edge(gradient_edge(base));
    for (const Edge& e : fn_->next_edges()) add_next_edge(e);
    add_output(base);
  }
  std::string name() const override { return "CopySlices"; }
  std::string forward_name() const override { return fn_->forward_name() + " (through a view)"; }

  Tensors apply(Tensors&& grads) override {
    const Tensor& g = grads[0];
    Tensor flat = ember::reshape(g, {-1});
    // The positions are worked out on the host; the gradient stays on its device.
    Tensor index = native::to(native::reshape(positions_, {-1}), g.device());
    // Inside the view's region the old value was overwritten: its gradient is the op's.
    Tensor slice_grad = ember::reshape(ember::index_select(flat, 0, index), positions_.sizes());
    Tensor keep = ember::ones({g.numel()}, g.options());
    native::index_put_(keep, {index}, ember::zeros({index.numel()}, g.options()), false);
    Tensors out;
    out.push_back(ember::reshape(ember::mul(flat, keep), g.sizes()));
    Tensors fn_grads = fn_->apply({slice_grad});
    for (Tensor& t : fn_grads) out.push_back(std::move(t));
    return out;
  }
  void release_saved() override { fn_->release_saved(); }

 private:
  Tensor positions_;  // int64, the view's shape: linear index into the base of each element
  std::shared_ptr<Node> fn_;
};

}  // namespace

void rebase_history(const Tensor& self, const Tensor& result) {
  {
    GradModeGuard no_grad(false);
    native::copy_(self, result);
  }
  const AutogradMeta* rm = get_meta(result);
  std::shared_ptr<Node> fn = rm != nullptr ? rm->grad_fn : nullptr;
  AutogradMeta& m = materialize_meta(self);
  if (!fn) {  // the new value has no history (e.g. filled from a constant)
    m.grad_fn = nullptr;
    return;
  }
  if (!m.view) {
    m.grad_fn = fn;
    m.output_nr = rm->output_nr;
    fn->drop_saved_history(self.storage().get());  // Node::drop_saved_history
    return;
  }
  fn->drop_saved_history(self.storage().get());  // Node::drop_saved_history
  const Tensor base = m.view->base;
  auto copy_slices = std::make_shared<CopySlices>(base, self, fn);
  AutogradMeta& bm = materialize_meta(base);
  bm.grad_fn = copy_slices;
  bm.output_nr = 0;
  // The view now reads the base's new value: regenerate its grad_fn from the base.
  m.view->attr_version = self.version() - 1;  // force gradient_edge to refresh it
  m.grad_fn = nullptr;
  gradient_edge(self);
}

}  // namespace ember::autograd
