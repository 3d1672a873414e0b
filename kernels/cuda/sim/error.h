// The simulator's one error type.
#pragma once

#include <stdexcept>
#include <string>

namespace ember::sim {

// Every error of the simulator: a bad launch, a detector's report (synccheck, racecheck, bounds),
// an exception thrown by a kernel, a bad host-API call. The message names the kernel or the call.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(message); out of line so the callers (often always-inline proxies) stay small.
[[noreturn]] void fail(const std::string& message);

}  // namespace ember::sim
