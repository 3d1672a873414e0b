#include "core/ops/multi_tensor.h"

#include <initializer_list>

#include "core/mem_overlap.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"

namespace ember {

namespace {

// A tensor the multi-tensor kernel can take as it is: like the parameter (dtype, shape, device)
// and contiguous. Anything else goes the per-parameter way, which checks and stages.
bool takes(const Tensor& param, const Tensor& t) {
  return t.defined() && t.is_contiguous() && t.dtype() == param.dtype() &&
         t.sizes() == param.sizes() && t.device() == param.device();
}

// Whether every update's tensors can go to the multi-tensor kernel of one device;
// `tensors_of(u)` lists an update's parameter first, then the tensors it uses, and `unused(u)`
// the optional states it must not have.
template <class Update, class Stub, class Tensors, class Unused>
bool one_launch(const std::vector<Update>& updates, const Stub& stub, Tensors tensors_of,
                Unused unused) {
  if (updates.empty() || !updates.front().param.defined()) return false;
  const Device device = updates.front().param.device();
  if (!stub.has_kernel(device.type)) return false;
  for (const Update& u : updates) {
    if (!u.param.defined() || u.param.device() != device || !is_floating(u.param.dtype()) ||
        unused(u))
      return false;
    for (const Tensor* t : tensors_of(u))
      if (!takes(u.param, *t)) return false;
  }
  return true;
}

// The checks of native::sgd_step_ that staging does not cover: the written tensors share
// memory with nothing else the update touches (Note [Writes over overlapping memory]).
void check_overlap(const char* who, const Tensor& param, const Tensor& grad,
                   std::initializer_list<const Tensor*> states) {
  assert_no_partial_overlap(param, grad, who);
  std::vector<const Tensor*> seen{&param, &grad};
  for (const Tensor* s : states) {
    if (!s->defined()) continue;
    for (const Tensor* t : seen) assert_no_overlap(*s, *t, who);
    seen.push_back(s);
  }
}

void bump(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined()) t->bump_version();
}

}  // namespace

void native::sgd_steps_(const std::vector<SgdUpdate>& updates) {
  const bool fused = one_launch(
      updates, multi_sgd_step_stub,
      [](const SgdUpdate& u) {
        std::vector<const Tensor*> ts{&u.param, &u.grad};
        if (u.c.momentum != 0.0) ts.push_back(&u.momentum_buffer);
        return ts;
      },
      [](const SgdUpdate& u) { return u.c.momentum == 0.0 && u.momentum_buffer.defined(); });
  if (!fused) {
    for (const SgdUpdate& u : updates) sgd_step_(u.param, u.grad, u.momentum_buffer, u.c);
    return;
  }
  for (const SgdUpdate& u : updates) check_overlap("SGD", u.param, u.grad, {&u.momentum_buffer});
  multi_sgd_step_stub(updates.front().param.device().type, updates);
  for (const SgdUpdate& u : updates) bump({&u.param, &u.momentum_buffer});
}

void native::adam_steps_(const std::vector<AdamUpdate>& updates) {
  const bool fused = one_launch(
      updates, multi_adam_step_stub,
      [](const AdamUpdate& u) {
        std::vector<const Tensor*> ts{&u.param, &u.grad, &u.exp_avg, &u.exp_avg_sq};
        if (u.c.amsgrad) ts.push_back(&u.max_exp_avg_sq);
        return ts;
      },
      [](const AdamUpdate& u) { return !u.c.amsgrad && u.max_exp_avg_sq.defined(); });
  if (!fused) {
    for (const AdamUpdate& u : updates)
      adam_step_(u.param, u.grad, u.exp_avg, u.exp_avg_sq, u.max_exp_avg_sq, u.c);
    return;
  }
  for (const AdamUpdate& u : updates)
    check_overlap(u.c.decoupled ? "AdamW" : "Adam", u.param, u.grad,
                  {&u.exp_avg, &u.exp_avg_sq, &u.max_exp_avg_sq});
  multi_adam_step_stub(updates.front().param.device().type, updates);
  for (const AdamUpdate& u : updates)
    bump({&u.param, &u.exp_avg, &u.exp_avg_sq, &u.max_exp_avg_sq});
}

bool native::multi_tensor_norm_applies(const std::vector<Tensor>& tensors) {
  if (tensors.empty() || !multi_norm2_stub.has_kernel(DeviceType::CUDA)) return false;
  const Tensor& first = tensors.front();
  if (!first.defined() || !first.device().is_cuda() || !is_floating(first.dtype())) return false;
  for (const Tensor& t : tensors)
    if (!t.defined() || t.device() != first.device() || t.dtype() != first.dtype()) return false;
  return true;
}

Tensor native::total_norm2(const std::vector<Tensor>& tensors) {
  EMBER_CHECK(!tensors.empty(), "total_norm2: no tensors");
  const Tensor& first = tensors.front();
  std::vector<Tensor> work;
  work.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.defined() && t.device() == first.device() && t.dtype() == first.dtype(),
                "total_norm2: every tensor must be defined and have the first's dtype ",
                dtype_name(first.dtype()), " and device ", first.device());
    work.push_back(t.is_contiguous() ? t : contiguous(t));
  }
  Tensor out = empty({}, first.options());
  multi_norm2_stub(first.device().type, out, work);
  return out;
}

}  // namespace ember
