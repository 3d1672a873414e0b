#include "autograd/dot.h"

#include <sstream>
#include <unordered_map>
#include <vector>

#include "autograd/meta.h"

namespace ember::autograd {

namespace {

std::string tensor_label(const Tensor& t, const std::string& fallback) {
  std::string name = t.name().empty() ? fallback : t.name();
  return name + "\\n" + dtype_name(t.dtype()) + " " + shape_str(t.sizes());
}

}  // namespace

std::string to_dot(const Tensor& root) { return to_dot(Tensors{root}); }

std::string to_dot(const Tensors& roots) {
  std::ostringstream os;
  os << "digraph autograd {\n"
     << "  rankdir=TB;\n"
     << "  node [fontname=\"monospace\", fontsize=10];\n";
  std::unordered_map<const Node*, std::string> ids;
  std::vector<const Node*> stack;
  auto id_of = [&](const Node* n) {
    auto it = ids.find(n);
    if (it != ids.end()) return it->second;
    std::string id = "n" + std::to_string(ids.size());
    ids.emplace(n, id);
    stack.push_back(n);
    return id;
  };
  for (size_t r = 0; r < roots.size(); ++r) {
    const Tensor& t = roots[r];
    const std::string rid = "root" + std::to_string(r);
    os << "  " << rid << " [shape=box, style=filled, fillcolor=\"#c8f0c8\", label=\""
       << tensor_label(t, roots.size() == 1 ? "output" : "output " + std::to_string(r)) << "\"];\n";
    std::shared_ptr<Node> fn = t.grad_fn();
    if (fn) {
      os << "  " << rid << " -> " << id_of(fn.get()) << ";\n";
    } else if (t.requires_grad()) {
      os << "  " << rid << " [fillcolor=\"#c8dcf8\"];\n";  // a leaf on its own
    }
  }
  // Walk the nodes with an explicit stack (graphs can be deep).
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    const std::string id = ids.at(n);
    os << "  " << id << " [label=\"" << n->name() << "\"];\n";
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(n)) {
      os << "  " << id << "_leaf [shape=box, style=filled, fillcolor=\"#c8dcf8\", label=\""
         << (acc->variable().defined() ? tensor_label(acc->variable(), "leaf") : "(freed leaf)")
         << "\"];\n";
      os << "  " << id << " -> " << id << "_leaf;\n";
    }
    for (const Edge& e : n->next_edges()) {
      if (!e.fn) continue;
      const std::string child = id_of(e.fn.get());
      os << "  " << id << " -> " << child;
      if (e.fn->num_outputs() > 1) os << " [label=\"" << e.input_nr << "\"]";
      os << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace ember::autograd
