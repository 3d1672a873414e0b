#pragma once
// Small helpers shared by the Catch2 suites.

#include <limits>
#include <vector>

#include <ember/ember.h>

namespace ember::testing {

// Every element of t as a double, in row-major order (any dtype, any layout).
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kCPU).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

}  // namespace ember::testing
