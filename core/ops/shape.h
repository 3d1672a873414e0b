#pragma once
// Shape ops: joining and splitting tensors, repeating, flipping, rolling, padding, and the
// triangular parts of matrices. Every method of the "shape ops" section of Tensor forwards here.
// Names and argument orders are PyTorch's; negative dims count from the end.
//
// split and chunk return views (they share self's storage); every other op returns a new
// contiguous tensor.
//
// Where these ops live (Note [Where an op lives] in autograd/ops/ops.h): the ops autograd
// differentiates, and every in-place op, are declared here as ember::native::<op>, the
// kernel-level function that checks, allocates and dispatches without recording; their public
// forms ember::<op> (and the Tensor methods) are in autograd/ops/shape.h. The ops autograd does
// not see are declared here as public functions and defined in core.

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

namespace native {
// Joins tensors along an existing dim. All must have the same number of dims and the same sizes
// except along dim; the result dtype is the promotion of theirs (int32 with float32 -> float32).
// Legacy empty tensors (shape [0]) are skipped, as in PyTorch: cat({empty({0}), x}) is x.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins tensors of one shape along a new dim: result [..., tensors.size() at dim, ...].
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// Views of consecutive pieces of split_size along dim (the last one may be smaller).
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
// Views of pieces with the given sizes along dim (they must add up to self.size(dim)).
std::vector<Tensor> split(const Tensor& self, const Shape& split_sizes, int64_t dim = 0);
// `chunks` views (fewer if the dim is too small) of ceil(size / chunks) along dim.
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);

// self repeated repeats[d] times along each dim; repeats may have more entries than self has
// dims (self gets leading dims of size 1). [2, 3].repeat({2, 1, 2}) -> [2, 2, 6].
Tensor repeat(const Tensor& self, const Shape& repeats);
// NumPy's tile: like repeat, but reps shorter than self's dims is padded with leading 1s.
Tensor tile(const Tensor& self, const Shape& reps);
// Reverses the order of elements along each of dims.
Tensor flip(const Tensor& self, const Shape& dims);
// Shifts elements along dims[i] by shifts[i] (wrapping around). With no dims, self is rolled
// as if flattened and the shape restored.
Tensor roll(const Tensor& self, const Shape& shifts, const Shape& dims = {});

// F.pad: `pad` holds (left, right) pairs starting from the LAST dim: {1, 2} pads the last dim by
// 1 before and 2 after, {1, 1, 2, 2} also the dim before it by 2 and 2. Modes:
//   "constant"  fill with value; negative pads crop.
//   "reflect"   mirror without repeating the edge ([1 2 3] by 2 -> [3 2 1 2 3 2 1]); each pad
//               must be smaller than its dim.
//   "replicate" repeat the edge element.
//   "circular"  wrap around; each pad at most its dim.
Tensor pad(const Tensor& self, const Shape& pad, const std::string& mode = "constant",
           const Scalar& value = 0);

// The lower (tril) or upper (triu) triangle of the last two dims, batched over the others:
// tril keeps elements with col - row <= diagonal, triu those with col - row >= diagonal; the
// rest are zero.
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);
}  // namespace native

// ---- kernels ---------------------------------------------------------------------------------
// One input of a contiguous cat: `row_bytes` bytes for each of the `outer` rows.
struct CatInput {
  const char* data;
  int64_t row_bytes;
};
// cat of contiguous inputs with out's dtype: out is [outer, out_row_bytes] and each row is the
// inputs' rows one after the other (a single memcpy per input when outer == 1: dim 0).
using cat_fn = void (*)(char* out, int64_t outer, int64_t out_row_bytes,
                        const std::vector<CatInput>& inputs);
// tril/triu of contiguous [batch, rows, cols] elements of `item_bytes` bytes: out = the kept
// triangle of self, zeros elsewhere.
using trilu_fn = void (*)(char* out, const char* self, int64_t batch, int64_t rows, int64_t cols,
                          int64_t item_bytes, int64_t diagonal, bool upper);

EMBER_DECLARE_DISPATCH(cat_fn, cat_stub);
EMBER_DECLARE_DISPATCH(trilu_fn, trilu_stub);

}  // namespace ember
