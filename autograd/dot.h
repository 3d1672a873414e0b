#pragma once
// to_dot: the graph backward will walk, as Graphviz DOT.
//
//   std::ofstream("graph.dot") << autograd::to_dot(loss);   // then: dot -Tsvg graph.dot
//
// Boxes are tensors: the root (green) and the leaves that require grad (blue), with their
// names (Tensor::set_name), dtypes and shapes. Ellipses are grad_fn nodes (SumBackward,
// MulBackward, AccumulateGrad...). Arrows point the way gradients flow: from the root, through
// each node's next_edges, to the leaves. An edge into a node with several outputs is labelled
// with the output it feeds.

#include <string>

#include "autograd/node.h"

namespace ember::autograd {

std::string to_dot(const Tensor& root);
std::string to_dot(const Tensors& roots);

}  // namespace ember::autograd
