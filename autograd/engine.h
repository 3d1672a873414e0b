#pragma once
// The engine: runs the graph backwards.
//
// Note [Engine]
// 1. Roots: each output's gradient edge, seeded with its gradient (ones for a one-element
//    output when none is given; anything else needs an explicit gradient).
// 2. Discovery (an explicit stack, never recursion): every node reachable from the roots, and
//    for each the number of edges that lead into it. With `inputs` (autograd::grad, or
//    backward(inputs=...)), only nodes on a path to one of them are kept.
// 3. Execution: a node is ready once all gradients for it have arrived (its count hits zero).
//    Ready nodes run latest-created first. Before apply, missing gradients of a multi-output
//    node become zeros and the tensor hooks run; after apply, each gradient is checked against
//    the receiving slot (summed down from a broadcast shape, cast to the slot's dtype), added
//    into the receiver's buffer, and the saved tensors are freed unless retain_graph.
// So each node runs once, after all its gradients arrived, whatever the graph's depth: a chain
// of 100,000 ops is fine. With create_graph, the backward formulas run with grad mode on and
// their ops record a graph of their own (double backward).

#include <functional>
#include <optional>
#include <vector>

#include "autograd/node.h"

namespace ember::autograd {

// Accumulates into the .grad of the leaves (or of `inputs` only, when given).
void backward(const Tensors& outputs, const Tensors& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const Tensors& inputs = {});

// Returns the gradients of `outputs` with respect to `inputs` without touching any .grad.
// An input that `outputs` do not depend on is an error unless allow_unused (then undefined).
Tensors grad(const Tensors& outputs, const Tensors& inputs, const Tensors& grad_outputs = {},
             std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
             bool allow_unused = false);

// Note [Engine callbacks]
// queue_callback (PyTorch's Variable._execution_engine.queue_callback) is called during backward
// -- from a hook or a node's apply -- and queues `callback` on the innermost backward (or grad)
// running on this thread. The callbacks run in the order queued, on the thread that called
// backward, after the graph is done and before backward returns; a callback may queue more
// (they run too). An exception from a callback propagates out of backward and drops the
// callbacks after it; when the graph itself throws, the queued callbacks are dropped. DDP
// waits for its gradient reductions this way (distributed/ddp.h). Called outside a backward
// it is an error.
void queue_callback(std::function<void()> callback);

}  // namespace ember::autograd
