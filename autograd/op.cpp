#include "autograd/op.h"

#include <sstream>

#include "autograd/anomaly.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/view.h"

namespace ember::autograd {

// ---- OpNode ----------------------------------------------------------------------------------

Tensor Saved::operator[](size_t i) const {
  const SavedVariable& s = node_.saved(i);
  if (EMBER_LIKELY(!s.has_hooks())) return s.unpack(node_);
  if (hooked_.empty()) hooked_.resize(node_.num_saved());
  if (!hooked_[i].defined()) hooked_[i] = s.unpack(node_);
  return hooked_[i];
}
bool Saved::needs_grad(size_t i) const { return node_.needs_input_grad(i); }

OpNode::~OpNode() {
  for (SavedVariable& s : saved_) s.release();  // Note [Iterative graph teardown]
}

Tensors OpNode::apply(Tensors&& grads) {
  EMBER_INTERNAL_ASSERT(backward_ != nullptr, name_, " has no backward formula");
  Tensors out = backward_(Saved(*this), grads);
  EMBER_INTERNAL_ASSERT(out.size() == next_edges_.size(), name_, " returned ", out.size(),
                        " gradients for ", next_edges_.size(), " inputs");
  return out;
}

void OpNode::release_saved() {
  for (SavedVariable& s : saved_) s.release();
}

// ---- Op --------------------------------------------------------------------------------------

void record_anomaly_info(Node& node, const Tensor* const* inputs, size_t n) {
  auto info = std::make_unique<AnomalyInfo>();
  info->forward_op = node.forward_name();
  std::ostringstream os;
  os << info->forward_op << "(";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) os << ", ";
    if (inputs[i]->defined())
      os << dtype_name(inputs[i]->dtype()) << " " << shape_str(inputs[i]->sizes());
    else
      os << "undefined";
  }
  os << ")";
  info->context = os.str();
  info->backtrace = current_backtrace(3);
  node.set_anomaly(std::move(info));
}

void Op::start(const Tensor* const* inputs, size_t n) {
  node_ = std::make_shared<OpNode>(name_);
  node_->mutable_next_edges().reserve(n);
  for (size_t i = 0; i < n; ++i) {
    node_->add_next_edge(inputs[i]->defined() ? gradient_edge(*inputs[i]) : Edge{});
  }
  if (is_anomaly_enabled()) record_anomaly_info(*node_, inputs, n);
  range_.set_sequence_nr(node_->sequence_nr());
}

Op::Op(const char* name, const std::vector<Tensor>& inputs)
    : name_(name), range_(name, profiler::Category::op) {
  // Built only when needed: a list op that records nothing allocates nothing here.
  auto pointers_of = [&inputs] {
    std::vector<const Tensor*> pointers;
    pointers.reserve(inputs.size());
    for (const Tensor& t : inputs) pointers.push_back(&t);
    return pointers;
  };
  if (EMBER_UNLIKELY(range_.active())) {
    const std::vector<const Tensor*> pointers = pointers_of();
    range_.set_shapes(pointers.data(), pointers.size());
  }
  if (!detail::grad_mode_enabled) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || requires_grad_fast(t);
  if (!any) return;
  const std::vector<const Tensor*> pointers = pointers_of();
  start(pointers.data(), pointers.size());
}

void Op::set_output(const Tensor& t) {
  if (is_anomaly_forward_check_enabled() && t.defined() && has_nonfinite(t)) {
    EMBER_ERROR("anomaly detection: the output of forward op ", forward_op_name(name_), " (",
                dtype_name(t.dtype()), " ", shape_str(t.sizes()),
                ") holds NaN or Inf; it is the first op to produce "
                "one. ",
                node_ && node_->anomaly()
                    ? "Made at " + node_->anomaly()->context + "\n" + node_->anomaly()->backtrace
                    : std::string("Backtrace:\n") + current_backtrace(2));
  }
  set_history(t, node_);
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node) {
  // Integer and bool results (indices, masks) are never differentiable.
  if (!node || !t.defined() || !t.is_floating_point()) return;
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = node;
  m.output_nr = node->add_output(t);
  m.requires_grad = false;  // a non-leaf requires grad through its grad_fn
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  EMBER_CHECK(lead >= 0, "sum_to: gradient of shape ", shape_str(grad.sizes()),
              " cannot be reduced to shape ", shape_str(shape));
  Shape dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t gs = grad.size(lead + d);
    if (shape[d] == 1 && gs != 1) {
      dims.push_back(lead + d);
    } else {
      EMBER_CHECK(shape[d] == gs, "sum_to: gradient of shape ", shape_str(grad.sizes()),
                  " cannot be reduced to shape ", shape_str(shape));
    }
  }
  if (dims.empty()) return ember::reshape(grad, shape);
  return ember::reshape(ember::sum(grad, dims, /*keepdim=*/true), shape);
}

}  // namespace ember::autograd
