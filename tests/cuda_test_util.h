#pragma once
// What the CUDA test files share (tests/test_cuda*.cpp, every case tagged [cuda]).

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cuda.h"
#include "core/tensor.h"

namespace ember::testing {

// Whether the cuda tests can run here. When not, says why (Catch2 v2 has no SKIP): the case
// then returns, so a real build on a machine without a GPU passes its CUDA cases as skipped.
inline bool have_cuda() {
  if (cuda::is_available()) return true;
  WARN("skipped: " << (cuda_is_built() ? "no CUDA device is available on this machine"
                                       : "ember was built without CUDA (EMBER_CUDA=off)"));
  return false;
}

// The same sizes, dtype and bits, compared on the cpu (either tensor on any device). Empty
// tensors compare by shape: they have no data pointer, and memcmp may not be given null.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(kCPU).contiguous(), y = b.to(kCPU).contiguous();
  if (x.sizes() != y.sizes() || x.dtype() != y.dtype()) return false;
  return x.nbytes() == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Whether this process runs with EMBER_CUDA_LAUNCH_BLOCKING=1 (ctest runs the
// "[launch_blocking]" cases a second time so).
inline bool launch_blocking_env() {
  const char* v = std::getenv("EMBER_CUDA_LAUNCH_BLOCKING");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// A cuda op whose kernel finds a bad value (Note [Deferred device checks] in
// kernels/cuda/device_checks.h) returns, and the next synchronisation raises the CPU's message
// with where it surfaced, once; with EMBER_CUDA_LAUNCH_BLOCKING=1 the op raises the message as
// it is. `matches` checks the op's own message.
template <class Op, class Matcher>
void check_deferred_error(Op&& op, const Matcher& matches) {
  if (launch_blocking_env()) {
    CHECK_THROWS_WITH(op(), matches);
    return;
  }
  CHECK_NOTHROW(op());
  CHECK_THROWS_WITH(cuda::synchronize(), matches && Catch::Contains(" after the op returned") &&
                                             Catch::Contains("raised at synchronize") &&
                                             Catch::Contains("EMBER_CUDA_LAUNCH_BLOCKING=1"));
  CHECK_NOTHROW(cuda::synchronize());  // raised once
}

}  // namespace ember::testing
