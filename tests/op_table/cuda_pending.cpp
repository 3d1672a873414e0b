// The ops that have no CUDA kernel yet (Note on cuda_pending_ops in op_table_checks.h). Each is
// taken off this list in the commit that gives it a kernel; test "every op has a CUDA kernel or
// is pending" fails for a stale entry as for a missing one.

#include "op_table_checks.h"

namespace ember::testing {

const std::set<std::string>& cuda_pending_ops() {
  static const std::set<std::string> pending = {
      // GEMM (CUDA II)
      "matmul", "mm", "bmm", "dot", "outer", "addmm", "linear", "bilinear",
      "scaled_dot_product_attention", "multi_head_attention",
      // convolution and pooling (CUDA II)
      "conv2d", "conv1d", "conv_transpose2d", "im2col", "col2im", "max_pool2d_with_indices",
      "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
  return pending;
}

}  // namespace ember::testing
