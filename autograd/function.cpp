#include "autograd/function.h"

#include <cxxabi.h>

#include <cstdlib>

namespace ember::autograd {

Tensors AutogradContext::get_saved_variables() const {
  EMBER_CHECK(!released_,
              "get_saved_variables: Trying to backward through the graph a second "
              "time (or directly access saved tensors after they have already been freed). "
              "Specify retain_graph=true if you need to backward through the graph a second time.");
  Tensors out;
  for (const SavedVariable& s : saved_) out.push_back(s.unpack(*node_));
  return out;
}

void AutogradContext::mark_non_differentiable(const Tensors& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.push_back(t.unsafe_impl());
}

bool AutogradContext::is_non_differentiable(const Tensor& t) const {
  for (TensorImpl* p : non_differentiable_)
    if (p == t.unsafe_impl()) return true;
  return false;
}

void AutogradContext::finish_forward(Node* node, const Tensors& outputs) {
  node_ = node;
  if (node == nullptr) {
    to_save_.clear();
    return;
  }
  for (const Tensor& t : to_save_) {
    bool is_output = false;
    for (const Tensor& o : outputs) is_output = is_output || (t.defined() && o.is_same(t));
    saved_.emplace_back(t, is_output);
  }
  to_save_.clear();
}

std::string custom_node_name(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = (status == 0 && d != nullptr) ? d : mangled;
  std::free(d);
  const size_t colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  return name + "Backward";
}

}  // namespace ember::autograd
