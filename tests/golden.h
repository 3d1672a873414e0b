#pragma once
// Golden values from PyTorch for the nn and optim suites.
//
// Each tests/golden/gen_<area>.py (run with Debian's python3-torch 1.13) writes
// tests/golden/<area>.safetensors through tests/golden/safetensors_io.py; the suite only reads
// the files:
//
//   Golden g("nn_conv");                       // tests/golden/nn_conv.safetensors
//   Tensor x = g["conv2d.same.input"];         // an error lists the names if one is missing
//   check_close(y, g["conv2d.same.output"], 1e-6, 1e-5, "conv2d same");

#include <cmath>
#include <string>

#include <catch2/catch.hpp>
#include <ember/ember.h>

#include "serialize/safetensors.h"

namespace ember::testing {

class Golden {
 public:
  explicit Golden(const std::string& area)
      : file_(safetensors::load_file(std::string(EMBER_GOLDEN_DIR) + "/" + area +
                                     ".safetensors")) {}
  // A copy, so a test may call requires_grad_() or modify it.
  Tensor operator[](const std::string& name) const {
    return safetensors::get(file_, name).clone();
  }
  bool has(const std::string& name) const {
    for (const auto& kv : file_.tensors)
      if (kv.first == name) return true;
    return false;
  }
  const safetensors::File& file() const { return file_; }

 private:
  safetensors::File file_;
};

// |actual - expected| <= atol + rtol * |expected| element-wise, same shape; on failure the
// message names `what`, the worst element and both values.
inline void check_close(const Tensor& actual, const Tensor& expected, double atol, double rtol,
                        const std::string& what) {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(expected.defined());
  REQUIRE(actual.sizes() == expected.sizes());
  Tensor a = actual.detach().to(kCPU).to(kFloat64).contiguous();
  Tensor e = expected.detach().to(kCPU).to(kFloat64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  int64_t worst = -1;
  double worst_excess = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double diff = std::abs(pa[i] - pe[i]);
    double excess = diff - (atol + rtol * std::abs(pe[i]));
    bool nan_mismatch = std::isnan(pa[i]) != std::isnan(pe[i]);
    if (nan_mismatch || (!std::isnan(pa[i]) && excess > worst_excess)) {
      worst_excess = nan_mismatch ? INFINITY : excess;
      worst = i;
    }
  }
  if (worst >= 0) {
    FAIL_CHECK(what << ": element " << worst << " is " << pa[worst] << ", PyTorch gives "
                    << pe[worst] << " (atol " << atol << ", rtol " << rtol << ")");
  }
}

}  // namespace ember::testing
