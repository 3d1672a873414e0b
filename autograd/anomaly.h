#pragma once
// Anomaly mode: find where a NaN or Inf came from.
//
// With anomaly detection on (DetectAnomalyGuard, or set_detect_anomaly(true)), every node
// records the forward op that made it, a short context (the op and its input shapes and dtypes)
// and a C++ backtrace where the platform provides one (glibc's backtrace). When a backward node
// returns a gradient holding NaN or Inf, backward throws an ember::Error naming that node, its
// forward op and the recorded context.
//
// Beyond PyTorch: with check_forward, every differentiable op also checks its outputs as it
// runs, and the first op whose output holds NaN or Inf throws, naming the op and its inputs.
// That answers the question practitioners ask most ("which layer made the NaN?") at the moment
// it happens, not at backward. Both checks cost a pass over every tensor: debugging only.
//
// The switch is process-wide, as in PyTorch.

#include <string>

#include "core/tensor.h"

namespace ember::autograd {

void set_detect_anomaly(bool enabled, bool check_forward = false);
bool is_anomaly_enabled();
bool is_anomaly_forward_check_enabled();

class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_forward = false);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_enabled_, prev_forward_;
};

// The current C++ call stack, demangled, one frame per line, without the innermost `skip`.
std::string current_backtrace(int skip = 1);

// Whether a floating tensor holds a NaN or an infinity.
bool has_nonfinite(const Tensor& t);

}  // namespace ember::autograd
