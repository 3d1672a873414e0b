#pragma once
// Golden values from PyTorch for the nn and optim suites.
//
// Each tests/golden/gen_<area>.py (run with Debian's python3-torch 1.13) writes
// tests/golden/<area>.safetensors through tests/golden/safetensors_io.py; the suite only reads
// the files:
//
//   const Golden& g = golden("nn_conv");       // tests/golden/nn_conv.safetensors, read once
//   Tensor x = g["conv2d.same.input"];         // an error lists the names if one is missing
//   check_close(y, g["conv2d.same.output"], 1e-6, 1e-5, "conv2d same");
//   check_param_grads(m, g, "conv2d.same.grad_", 1e-6, 1e-5);  // every parameter's gradient

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serialize/safetensors.h"

namespace ember::testing {

class Golden {
 public:
  explicit Golden(const std::string& area)
      : file_(safetensors::load_file(std::string(EMBER_GOLDEN_DIR) + "/" + area + ".safetensors")) {
  }
  // A copy, so a test may call requires_grad_() or modify it.
  Tensor operator[](const std::string& name) const { return safetensors::get(file_, name).clone(); }
  bool has(const std::string& name) const {
    for (const auto& kv : file_.tensors)
      if (kv.first == name) return true;
    return false;
  }
  const safetensors::File& file() const { return file_; }

 private:
  safetensors::File file_;
};

// The golden file of `area`, read on first use and kept for the rest of the run.
inline const Golden& golden(const std::string& area) {
  static std::map<std::string, std::unique_ptr<const Golden>> files;
  auto it = files.find(area);
  if (it == files.end()) it = files.emplace(area, std::make_unique<const Golden>(area)).first;
  return *it->second;
}

// The entries "<prefix><key>" of g, in the file's order, as (key, tensor) pairs (the prefix
// removed) for the keys `keep` accepts: e.g. the parameters of one case, by PyTorch's
// state_dict keys, to pass to load_state_dict.
inline std::vector<std::pair<std::string, Tensor>> entries_under(
    const Golden& g, const std::string& prefix,
    const std::function<bool(const std::string& key)>& keep) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [key, t] : g.file().tensors) {
    if (key.rfind(prefix, 0) != 0) continue;
    std::string rest = key.substr(prefix.size());
    if (keep(rest)) out.emplace_back(std::move(rest), t);
  }
  return out;
}

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

// Compares the gradient of each of m's parameters with g["<grad_prefix><parameter name>"].
inline void check_param_grads(const nn::Module& m, const Golden& g, const std::string& grad_prefix,
                              double atol, double rtol) {
  for (const auto& [name, p] : m.named_parameters())
    check_close(p.grad(), g[grad_prefix + name], atol, rtol, grad_prefix + name);
}

}  // namespace ember::testing
