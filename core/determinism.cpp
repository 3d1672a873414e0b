// The deterministic-algorithms switch (Note [Deterministic algorithms] in core/determinism.h).

#include "core/determinism.h"

#include <atomic>

namespace ember {

namespace {
std::atomic<bool> deterministic{false};
}  // namespace

void use_deterministic_algorithms(bool enabled) {
  deterministic.store(enabled, std::memory_order_relaxed);
}

bool are_deterministic_algorithms_enabled() {
  return deterministic.load(std::memory_order_relaxed);
}

}  // namespace ember
