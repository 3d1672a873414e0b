#pragma once
// What the CUDA test files share (tests/test_cuda*.cpp, every case tagged [cuda]).

#include <catch2/catch.hpp>

#include "core/cuda.h"

namespace ember::testing {

// Whether the cuda tests can run here. When not, says why (Catch2 v2 has no SKIP): the case
// then returns, so a real build on a machine without a GPU passes its CUDA cases as skipped.
inline bool have_cuda() {
  if (cuda::is_available()) return true;
  WARN("skipped: " << (cuda_is_built() ? "no CUDA device is available on this machine"
                                       : "ember was built without CUDA (EMBER_CUDA=off)"));
  return false;
}

}  // namespace ember::testing
