#pragma once
// Grad modes: thread-local switches that decide whether ops record the graph.
//
// - NoGradGuard: ops run without recording; their results do not require grad. Use it for
//   evaluation and for optimizer updates. Views made under it are still tracked (an in-place op
//   on them later, with grad enabled, is checked).
// - EnableGradGuard: recording back on inside a no-grad region.
// - set_grad_enabled(bool): the same switch, without a scope.
// - InferenceMode: no recording, no view tracking; every tensor made inside is an *inference
//   tensor* that can never join a graph later (requires_grad_ on it, saving it for backward, or
//   writing it in place outside InferenceMode is an error). It is cheaper than NoGradGuard
//   because views skip the autograd bookkeeping (bench/bench_autograd measures it).
// Each guard restores the previous state when it goes out of scope. The flags are per thread.

#include "core/grad_mode.h"

namespace ember::autograd {

inline bool is_grad_enabled() { return detail::grad_mode_enabled; }
inline void set_grad_enabled(bool enabled) { detail::grad_mode_enabled = enabled; }
inline bool is_inference_mode_enabled() { return detail::inference_mode_enabled; }

class NoGradGuard {
 public:
  NoGradGuard() : prev_(detail::grad_mode_enabled) { detail::grad_mode_enabled = false; }
  ~NoGradGuard() { detail::grad_mode_enabled = prev_; }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(detail::grad_mode_enabled) { detail::grad_mode_enabled = true; }
  ~EnableGradGuard() { detail::grad_mode_enabled = prev_; }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// Sets grad mode to `enabled` for a scope (PyTorch's AutoGradMode / torch.set_grad_enabled).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(detail::grad_mode_enabled) {
    detail::grad_mode_enabled = enabled;
  }
  ~GradModeGuard() { detail::grad_mode_enabled = prev_; }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true)
      : prev_grad_(detail::grad_mode_enabled), prev_inference_(detail::inference_mode_enabled) {
    detail::inference_mode_enabled = enabled;
    detail::grad_mode_enabled = enabled ? false : prev_grad_;
  }
  ~InferenceMode() {
    detail::grad_mode_enabled = prev_grad_;
    detail::inference_mode_enabled = prev_inference_;
  }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled() { return detail::inference_mode_enabled; }

 private:
  bool prev_grad_;
  bool prev_inference_;
};

}  // namespace ember::autograd

namespace ember {
// The PyTorch C++ spellings: torch::NoGradGuard, c10::InferenceMode.
using autograd::EnableGradGuard;
using autograd::InferenceMode;
using autograd::NoGradGuard;
}  // namespace ember
