#include "autograd/node.h"

#include <atomic>

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/ops/binary.h"
#include "autograd/ops/copy.h"

namespace ember::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

// Note [Iterative graph teardown]
// A node owns the nodes its edges point to, and (through saved tensors) tensors that own their
// grad_fn. Letting those shared pointers go one inside the other would destroy a chain of N
// nodes with N nested destructor calls and overflow the stack for a deep graph. Instead a dying
// node hands what it owns to defer_release, which, on the outermost call, drains a queue: each
// destructor then runs at constant depth.
namespace {
thread_local std::vector<std::shared_ptr<void>> teardown_queue;
thread_local bool tearing_down = false;
}  // namespace

void defer_release(std::shared_ptr<void> obj) {
  // Someone else still holds it: letting go cannot destroy anything.
  if (!obj || obj.use_count() > 1) return;
  teardown_queue.push_back(std::move(obj));
  if (tearing_down) return;
  tearing_down = true;
  while (!teardown_queue.empty()) {
    std::shared_ptr<void> last = std::move(teardown_queue.back());
    teardown_queue.pop_back();
    last.reset();  // may push more onto the queue
  }
  tearing_down = false;
}

Node::~Node() {
  for (Edge& e : next_edges_) defer_release(std::move(e.fn));
}

std::string Node::forward_name() const { return forward_op_name(name()); }

uint32_t Node::add_output(const Tensor& t) {
  GradSlotMeta meta;
  for (int64_t s : t.sizes()) meta.shape.push_back(s);
  meta.dtype = t.dtype();
  meta.device = t.device();
  if (EMBER_UNLIKELY(meta.device.is_cuda())) stream_ = current_stream(meta.device);
  outputs_.push_back(std::move(meta));
  return static_cast<uint32_t>(outputs_.size() - 1);
}

int64_t Node::add_pre_hook(uint32_t output_nr, Tensor::GradHook hook) {
  const int64_t h = next_hook_handle();
  pre_hooks_.push_back(PreHook{h, output_nr, std::move(hook)});
  return h;
}

bool Node::remove_pre_hook(int64_t handle) {
  for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it) {
    if (it->handle == handle) {
      pre_hooks_.erase(it);
      return true;
    }
  }
  return false;
}

void Node::set_retain_grad_hook(uint32_t output_nr, std::function<void(const Tensor&)> fn) {
  for (auto& h : retain_hooks_) {
    if (h.first == output_nr) {
      h.second = std::move(fn);
      return;
    }
  }
  retain_hooks_.emplace_back(output_nr, std::move(fn));
}

void Node::run_pre_hooks(Tensors& grads) const {
  for (const PreHook& h : pre_hooks_) {
    if (h.output_nr >= grads.size() || !grads[h.output_nr].defined()) continue;
    Tensor replaced = h.fn(grads[h.output_nr]);
    if (replaced.defined()) grads[h.output_nr] = std::move(replaced);
  }
  for (const auto& h : retain_hooks_) {
    if (h.first < grads.size() && grads[h.first].defined()) h.second(grads[h.first]);
  }
}

// ---- AccumulateGrad --------------------------------------------------------------------------

AccumulateGrad::AccumulateGrad(const Tensor& variable) : variable_(variable.impl_ptr()) {
  add_output(variable);
}

Tensor AccumulateGrad::variable() const {
  std::shared_ptr<TensorImpl> impl = variable_.lock();
  return impl ? Tensor(std::move(impl)) : Tensor();
}

void AccumulateGrad::run_pre_hooks(Tensors& grads) const {
  const Tensor leaf = variable();
  const AutogradMeta* m = get_meta(leaf);
  if (m == nullptr || grads.empty() || !grads[0].defined()) return;
  for (const auto& h : m->leaf_hooks) {
    Tensor replaced = h.fn(grads[0]);
    if (replaced.defined()) grads[0] = std::move(replaced);
  }
}

// Note [Gradient accumulation]
// The first gradient becomes .grad; later ones are added to it. Without create_graph .grad is a
// plain tensor with no history: the incoming gradient is taken as is when nothing else can see
// it (a contiguous tensor no one else holds), and copied otherwise, so .grad never aliases a
// user's tensor or an expanded view. With create_graph the sum is out of place and keeps its
// history, so a second derivative can flow through .grad.
Tensors AccumulateGrad::apply(Tensors&& grads) {
  Tensor g = std::move(grads.at(0));
  const Tensor leaf = variable();
  if (!g.defined() || !leaf.defined()) return {};
  AutogradMeta& m = materialize_meta(leaf);
  if (is_grad_enabled()) {
    m.grad = m.grad.defined() ? ember::add(m.grad, g) : g;
  } else if (!m.grad.defined()) {
    const bool can_steal = g.is_contiguous() && get_meta(g) == nullptr &&
                           g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1;
    m.grad = can_steal ? std::move(g) : native::clone(g).contiguous();
  } else {
    native::add_(m.grad, g, 1);
  }
  for (const auto& h : m.post_accumulate_hooks) h.second(leaf);
  return {};
}

}  // namespace ember::autograd
