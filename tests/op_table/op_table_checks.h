#pragma once
// The op table's checks that need no autograd, shared by the two suites that walk the table:
// tests/test_op_table.cpp (ember_tests: the public ops, plus gradcheck) and
// tests/core/test_core_op_table.cpp (core_tests: the native ops on ember_core alone).

#include <set>
#include <string>
#include <vector>

#include "op_table.h"

namespace ember::testing {

// Empty when `got` matches `want` within tolerance_for(got's dtype, tol_scale) (NaN matches NaN,
// an infinity only itself); else what differs, naming the first differing element.
std::string compare(const Tensor& got, const RefTensor& want, double tol_scale);

// The devices the op table runs on: the CPU first, then every other device this build has
// kernels for (a device type counts when its copies from and to the CPU are registered) and that
// has a device here: the CUDA backend (real with a GPU, or simulated) adds "cuda".
std::vector<Device> op_table_devices();

// Every dtype and sample of `op`: the CPU result against the float64 reference, then, on each
// other device in `devices`, the same inputs copied there and the result copied back, against
// the CPU result within the dtype's epsilon scaled by op.tol_scale (integers and bool exactly).
void check_forward(const OpInfo& op, const std::vector<Device>& devices);

// The ops that have no CUDA kernel yet (tests/op_table/cuda_pending.cpp), by op-table name: the
// cross-device comparison skips them, and a test fails when one of them runs on cuda after all
// (take it off the list) or an op off the list has no CUDA kernel.
const std::set<std::string>& cuda_pending_ops();

// On `device` (a cuda device): every op of the table runs there unless it is pending, and every
// pending op really fails for want of a kernel on at least one sample. Prints how many are
// pending.
void check_cuda_coverage(Device device);

// Every op registered by the families linked into this program (core/op_registry.h) has an
// entry, and every entry names a registered op. core_tests compiles only the entries of core's
// families, so both directions hold there too.
void check_registry_coverage();

}  // namespace ember::testing
