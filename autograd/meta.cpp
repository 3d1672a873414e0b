#include "autograd/meta.h"

#include <atomic>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops/view.h"

namespace ember::autograd {

AutogradMeta& materialize_meta(const Tensor& t) {
  TensorImpl& impl = t.impl();
  if (!impl.autograd_meta) impl.autograd_meta = std::make_shared<AutogradMeta>();
  return *static_cast<AutogradMeta*>(impl.autograd_meta.get());
}

int64_t next_hook_handle() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Note [View tracking]: a view used after its storage changed gets its grad_fn regenerated
// from its base, as `base.as_strided(view geometry)`.
void refresh_view_grad_fn(const Tensor& t, AutogradMeta& m) {
  ViewInfo& v = *m.view;
  if (v.attr_version == t.version()) return;
  v.attr_version = t.version();
  if (!requires_grad_fast(v.base)) return;
  GradModeGuard grad_on(true);
  Tensor regenerated = ember::as_strided(v.base, t.sizes(), t.strides(), t.storage_offset());
  const AutogradMeta* rm = get_meta(regenerated);
  m.grad_fn = rm->grad_fn;
  m.output_nr = rm->output_nr;
}

}  // namespace

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (m == nullptr) return Edge{};
  if (m->view) refresh_view_grad_fn(t, *m);
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  if (!m->requires_grad) return Edge{};
  if (!m->grad_accumulator) m->grad_accumulator = std::make_shared<AccumulateGrad>(t);
  return Edge{m->grad_accumulator, 0};
}

}  // namespace ember::autograd
