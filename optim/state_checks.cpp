#include "optim/state_checks.h"

#include <cmath>

#include "core/error.h"

namespace ember::optim::detail {

void check_count(const std::string& who, const std::string& field, int64_t value, int64_t min) {
  const char* rule = min == 1 ? "must be positive" : min == 0 ? "must be non-negative" : nullptr;
  if (rule) {
    EMBER_CHECK(value >= min, who, ": ", field, " ", rule, ", got ", value);
  } else {
    EMBER_CHECK(value >= min, who, ": ", field, " must be >= ", min, ", got ", value);
  }
  EMBER_CHECK(value <= kMaxSchedulerCount, who, ": ", field, " must be at most 2^53 (",
              kMaxSchedulerCount, "), got ", value);
}

void check_real(const std::string& who, const std::string& field, double value, double min) {
  if (std::isinf(min)) {
    EMBER_CHECK(std::isfinite(value), who, ": ", field, " must be finite, got ", value);
  } else if (min == 0.0) {
    EMBER_CHECK(std::isfinite(value) && value >= 0.0, who, ": ", field,
                " must be finite and non-negative, got ", value);
  } else {
    EMBER_CHECK(std::isfinite(value) && value >= min, who, ": ", field,
                " must be finite and >= ", min, ", got ", value);
  }
}

void check_reals(const std::string& who, const std::string& field,
                 const std::vector<double>& values, double min) {
  for (size_t i = 0; i < values.size(); ++i)
    check_real(who, field + "[" + std::to_string(i) + "]", values[i], min);
}

}  // namespace ember::optim::detail
