#pragma once
// Shared by tests/test_optim.cpp and tests/test_optim2.cpp: the optimizer configs and the
// golden trajectories of tests/golden/gen_optim.py and gen_optim2.py, which share one layout
// ("params.<k>", "grads.<t>.<k>", "<config>.step<t>.<k>"; three parameters in two groups,
// parameter 1 without a gradient at step 2).

#include <ember/ember.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "golden.h"

namespace ember::testing {

using MakeOptimizer =
    std::function<std::unique_ptr<optim::Optimizer>(std::vector<optim::ParamGroup>)>;

struct OptimConfig {
  std::string name;
  MakeOptimizer make;
};

template <class Opt, class Options>
MakeOptimizer maker(Options options) {
  return [options](std::vector<optim::ParamGroup> groups) {
    return std::make_unique<Opt>(std::move(groups), options);
  };
}

// Group 0: parameters 0 and 1 with lr `lr0`; group 1: parameter 2 with the default lr.
inline std::vector<optim::ParamGroup> two_groups(const std::vector<Tensor>& ps, double lr0) {
  return {optim::ParamGroup({ps[0], ps[1]}, {{"lr", lr0}}), optim::ParamGroup({ps[2]})};
}

// The trajectories of one golden file (area "optim" or "optim2").
struct OptimGolden {
  std::string area;

  std::vector<Tensor> initial_params() const {
    std::vector<Tensor> ps;
    for (int k = 0; k < 3; ++k)
      ps.push_back(golden(area)["params." + std::to_string(k)].requires_grad_());
    return ps;
  }

  // The gradients of step t; parameter 1 has none at step 2.
  void set_grads(const std::vector<Tensor>& ps, int t) const {
    for (int k = 0; k < 3; ++k) {
      ps[k].set_grad(t == 2 && k == 1
                         ? Tensor()
                         : golden(area)["grads." + std::to_string(t) + "." + std::to_string(k)]);
    }
  }

  void check_step(const std::string& name, const std::vector<Tensor>& ps, int t, double atol,
                  double rtol) const {
    for (size_t k = 0; k < ps.size(); ++k) {
      const std::string key = name + ".step" + std::to_string(t) + "." + std::to_string(k);
      check_close(ps[k], golden(area)[key], atol, rtol, key);
    }
  }
};

inline const Tensor* find(const TensorDict& d, const std::string& key) {
  for (const auto& kv : d)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

// A checkpoint's trip: the dict written as a safetensors image and read back.
inline TensorDict through_safetensors(const TensorDict& d) {
  const std::string bytes = safetensors::serialize(d);
  return safetensors::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).tensors;
}

}  // namespace ember::testing
