// The ops that have no CUDA kernel yet (Note on cuda_pending_ops in op_table_checks.h). Each is
// taken off this list in the commit that gives it a kernel; test "every op has a CUDA kernel or
// is pending" fails for a stale entry as for a missing one.

#include "op_table_checks.h"

namespace ember::testing {

const std::set<std::string>& cuda_pending_ops() {
  // Empty since CUDA II: every op of the table has a CUDA kernel (or is composed of ops that do).
  static const std::set<std::string> pending = {};
  return pending;
}

}  // namespace ember::testing
