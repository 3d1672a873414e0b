// The index family (core/ops/index.h, which also declares its dispatch stubs): its op registry
// and the shared helpers of core/ops/index_utils.h that are not inline. The ops themselves live in
// core/ops/index_*.cpp (the file map is in index_utils.h).
#include "core/ops/index.h"

#include "core/op_registry.h"
#include "core/ops/factory.h"
#include "core/ops/index_utils.h"
#include "core/tensor_iter.h"

namespace ember {

namespace {
constexpr const char* kIndexOps[] = {"index_select",   "gather",    "scatter", "scatter_add",
                                     "scatter_reduce", "index_add", "index",   "index_put_",
                                     "masked_select",  "take",      "nonzero", "embedding",
                                     "sort",           "argsort",   "topk"};
static_assert(sizeof(kIndexOps) / sizeof(kIndexOps[0]) == 15);
const OpFamilyRegistrar registrar("index", kIndexOps);
}  // namespace

namespace index_detail {

void check_index_values(const Tensor& index, const IndexAxis& axis) {
  if (index.numel() == 0) return;
  Tensor scratch = empty(index.sizes(), index.options());
  TensorIter iter = TensorIterConfig(axis.op)
                        .add_output(scratch)
                        .add_input(zeros({}, index.options()))
                        .add_input(index)
                        .build();
  index_offsets_stub(iter.device().type, iter,
                     IndexAxis{axis.size, 0, axis.wrap_negative, axis.dim, axis.op});
}

}  // namespace index_detail

}  // namespace ember
