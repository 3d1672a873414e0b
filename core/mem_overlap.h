#pragma once
// Memory overlap between the tensor an op writes and the tensors it reads.
//
// Note [Writes over overlapping memory]
// An element-wise kernel reads its inputs and writes its output in one pass, element after
// element (and in parallel). That is only right when each written element is read by no other
// element's computation. Two ways break it, and ember refuses both, as PyTorch does:
//   - the output overlaps itself: two of its elements are one memory location (a stride 0,
//     `zeros({3, 1}).expand({3, 4}).add_(1)` would add 4 times into each element);
//   - the output partly overlaps an input: `x.add_(x.t())`, or
//     `y.narrow(0, 1, n - 1).add_(y.narrow(0, 0, n - 1))`, where an element is written before
//     another element's computation reads it.
// Exact aliasing (`x.add_(x)`, `x.mul_(x)`: the same memory with the same sizes and strides) is
// safe, since every element reads only itself, and is allowed.
//
// The checks are made once, centrally: TensorIter::build checks every output it was given
// against itself and against every input (so every element-wise op, in-place op, copy_ and
// fill is covered), and the ops that write without TensorIter (index_put_, scatter, index_copy,
// masked_scatter, the optimizer steps...) call assert_no_internal_overlap /
// assert_no_partial_overlap themselves. Deciding overlap exactly for arbitrary strides is a
// hard problem (an integer program), so an answer is only Yes or Partial when it is certain;
// when it cannot tell cheaply (two interleaved non-dense views) it says TooHard, and the op
// goes ahead, as PyTorch does.

#include "core/tensor.h"

namespace ember {

enum class MemOverlap {
  No,      // no element of the tensor shares memory with another
  Yes,     // at least two elements share one memory location
  TooHard  // could not be decided cheaply
};

enum class MemOverlapStatus {
  Full,     // the same memory, with the same sizes and strides
  Partial,  // some memory is shared, but the layouts differ
  No,       // no memory is shared
  TooHard   // could not be decided cheaply
};

// Whether two elements of t are one memory location.
MemOverlap has_internal_overlap(const Tensor& t);

// How the memory of a and b relates.
MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b);

// An ember::Error naming `op` when t has internal overlap (MemOverlap::Yes).
void assert_no_internal_overlap(const Tensor& t, const char* op);

// An ember::Error naming `op` when the written tensor `out` partly overlaps `in`
// (MemOverlapStatus::Partial); exact aliasing is allowed.
void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op);

// An ember::Error naming `op` when `out` and `in` share any memory at all (Full or Partial): for
// ops such as index_put_ whose values must not be the destination either.
void assert_no_overlap(const Tensor& out, const Tensor& in, const char* op);

}  // namespace ember
