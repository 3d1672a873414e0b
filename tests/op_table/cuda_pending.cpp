// The ops that have no CUDA kernel yet (Note on cuda_pending_ops in op_table_checks.h). Each is
// taken off this list in the commit that gives it a kernel; test "every op has a CUDA kernel or
// is pending" fails for a stale entry as for a missing one.

#include "op_table_checks.h"

namespace ember::testing {

const std::set<std::string>& cuda_pending_ops() {
  static const std::set<std::string> pending = {
      // attention: its GEMMs run on cuda, its softmax waits for the softmax kernel (CUDA II)
      "scaled_dot_product_attention", "multi_head_attention",
      // softmax and the losses on it (CUDA II; batch_norm, layer_norm, group_norm and the
      // element-wise losses run on CUDA as compositions of element-wise ops and reductions,
      // nll_loss as one of gather and reductions)
      "softmax", "log_softmax", "cross_entropy"};
  return pending;
}

}  // namespace ember::testing
