#pragma once
// What the CUDA test files share (tests/test_cuda*.cpp, every case tagged [cuda]).

#include <catch2/catch.hpp>
#include <cstring>

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

}  // namespace ember::testing
