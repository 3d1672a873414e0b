#pragma once
// Internal to optim/: the checks that an LR scheduler's settings and state go through, both when
// it is constructed and when a state dict is loaded into it.
//
// Note [Scheduler state checks]
// A state dict comes from a file, so anything may be in it: a T_max of 0 (a division by zero
// at the next step, SIGFPE), a NaN gamma (a NaN lr ever after), a last_epoch of INT64_MAX (an
// overflow at the next step). Each scheduler therefore has one function checking its settings
// (check_settings: T_max > 0, 0 < start_factor <= 1, ...), run by its constructor and by
// load_state_dict on the loaded values, and one checking what only a state holds (check_state:
// last_epoch >= -1, _step_count >= 0, base_lrs finite and >= 0, ...). load_state_dict loads,
// runs both, and puts the previous values back if either throws, so a refused dict changes
// nothing. The rules:
// - every check is written so that NaN fails it (`x > 0 && x <= 1`, never `!(x <= 0)`);
// - counts of epochs or steps (last_epoch, _step_count, T_max, step_size, total_iters, ...)
//   lie in [min, 2^53]: the schedules compute with them in double, exact up to 2^53, and no
//   increment or product of them can overflow int64;
// - learning rates are finite and >= 0; other reals finite (with a sign where it matters).
// Errors are ember::Error "<who>: <field> must be ..., got <value>", `who` being the
// scheduler's name in a constructor ("StepLR") and "<name>.load_state_dict" when loading.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ember::optim::detail {

// The largest count of epochs or steps a scheduler accepts: 2^53.
constexpr int64_t kMaxSchedulerCount = int64_t{1} << 53;

// min <= value <= kMaxSchedulerCount ("must be positive" for min 1, "non-negative" for 0).
void check_count(const std::string& who, const std::string& field, int64_t value, int64_t min);
// value finite and >= min (min = -inf: only finite).
void check_real(const std::string& who, const std::string& field, double value,
                double min = -std::numeric_limits<double>::infinity());
// Each value finite and >= min; errors name the element ("base_lrs[1]").
void check_reals(const std::string& who, const std::string& field,
                 const std::vector<double>& values,
                 double min = -std::numeric_limits<double>::infinity());

}  // namespace ember::optim::detail
