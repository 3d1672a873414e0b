#pragma once
// Small helpers shared by the Catch2 suites.

#include <ember/ember.h>

#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ember::testing {

// Every element of t as a double, in row-major order (any dtype, any layout).
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kCPU).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// The names of a state dict (or any list of (name, tensor) pairs), in order.
template <class Dict>
std::vector<std::string> keys(const Dict& d) {
  std::vector<std::string> out;
  for (const auto& kv : d) out.push_back(kv.first);
  return out;
}

// What `os << m` prints for a module.
inline std::string printed(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

// The largest |a - b| over the elements, computed in float64 (any dtypes, any devices).
inline double max_difference(const Tensor& a, const Tensor& b) {
  return abs(a.to(kCPU).to(kFloat64) - b.to(kCPU).to(kFloat64)).max().item<double>();
}

// t * t, differentiable (ember has no square()).
inline Tensor sq(const Tensor& t) { return t * t; }

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

}  // namespace ember::testing
