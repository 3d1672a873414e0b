#include "autograd/anomaly.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <atomic>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/unary.h"

namespace ember::autograd {

namespace {
std::atomic<bool> anomaly_enabled{false};
std::atomic<bool> anomaly_forward{false};
}  // namespace

void set_detect_anomaly(bool enabled, bool check_forward) {
  anomaly_enabled.store(enabled);
  anomaly_forward.store(enabled && check_forward);
}
bool is_anomaly_enabled() { return anomaly_enabled.load(std::memory_order_relaxed); }
bool is_anomaly_forward_check_enabled() { return anomaly_forward.load(std::memory_order_relaxed); }

DetectAnomalyGuard::DetectAnomalyGuard(bool check_forward)
    : prev_enabled_(is_anomaly_enabled()), prev_forward_(is_anomaly_forward_check_enabled()) {
  set_detect_anomaly(true, check_forward);
}
DetectAnomalyGuard::~DetectAnomalyGuard() {
  anomaly_enabled.store(prev_enabled_);
  anomaly_forward.store(prev_forward_);
}

std::string current_backtrace(int skip) {
  void* frames[48];
  const int n = ::backtrace(frames, 48);
  char** symbols = ::backtrace_symbols(frames, n);
  if (symbols == nullptr) return "(no backtrace on this platform)\n";
  std::ostringstream os;
  for (int i = skip; i < n; ++i) {
    // glibc prints "binary(mangled+0x12) [0xaddr]": demangle the part between '(' and '+'.
    std::string line = symbols[i];
    const size_t open = line.find('('), plus = line.find('+', open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      const std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = 0;
      char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      if (status == 0 && demangled != nullptr) {
        line = line.substr(0, open + 1) + demangled + line.substr(plus);
      }
      std::free(demangled);
    }
    os << "  #" << (i - skip) << " " << line << "\n";
  }
  std::free(symbols);
  return os.str();
}

bool has_nonfinite(const Tensor& t) {
  if (!t.is_floating_point() || t.numel() == 0) return false;
  GradModeGuard no_grad(false);
  return !ember::isfinite(t).all().item<bool>();
}

}  // namespace ember::autograd
