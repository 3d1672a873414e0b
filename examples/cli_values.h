#pragma once
// Numbers from ember-train's command line, parsed strictly and refused with a short message
// naming the option, the accepted range and the text given (CLI11's own checks print ranges of
// 300 digits, clamp 99999999999999999999 and wrap -1 into an unsigned seed):
//
//   int64_t epochs = parse_int("--epochs", "abc", 1);
//   // UsageError: "--epochs must be a positive integer, got 'abc'"
//   uint64_t seed = parse_uint64("--seed", "-1");
//   // UsageError: "--seed must be a non-negative integer (at most 18446744073709551615), got '-1'"
//   double lr = parse_real("--lr", "nan", 0.0, kInf, /*min_inclusive=*/false);
//   // UsageError: "--lr must be a positive number, got 'nan'"
//
// Accepted: decimal integers with an optional '-' (no '+', spaces, hex or trailing text), and
// finite decimal numbers as strtod reads them ("1e-3", ".5"); "nan" and "inf" never.

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace ember::examples {

// A bad command-line value: ember-train prints "ember-train: error: <what>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

namespace detail {

inline bool all_digits(const std::string& s, size_t from) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

inline std::string int_range(int64_t min, int64_t max) {
  if (max == kMaxInt64 && min == 1) return "a positive integer";
  if (max == kMaxInt64 && min == 0) return "a non-negative integer";
  if (max == kMaxInt64) return "an integer of at least " + std::to_string(min);
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

inline std::string real_range(double min, double max, bool min_inclusive) {
  if (std::isinf(max) && min == 0.0)
    return min_inclusive ? "a non-negative number" : "a positive number";
  if (std::isinf(max))
    return (min_inclusive ? "a number of at least " : "a number above ") + number_text(min);
  if (min_inclusive) return "a number from " + number_text(min) + " to " + number_text(max);
  return "a number above " + number_text(min) + " and at most " + number_text(max);
}

[[noreturn]] inline void refuse(const std::string& option, const std::string& range,
                                const std::string& text, const char* why = nullptr) {
  throw UsageError(option + " must be " + range + ", got '" + text + "'" +
                   (why ? std::string(" (") + why + ")" : std::string()));
}

}  // namespace detail

// `text` as an integer in [min, max].
inline int64_t parse_int(const std::string& option, const std::string& text, int64_t min,
                         int64_t max = kMaxInt64) {
  const std::string range = detail::int_range(min, max);
  const bool negative = !text.empty() && text[0] == '-';
  if (!detail::all_digits(text, negative ? 1 : 0)) detail::refuse(option, range, text);
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) detail::refuse(option, range, text, negative ? "too small" : "too large");
  if (v < min || v > max) detail::refuse(option, range, text);
  return static_cast<int64_t>(v);
}

// `text` as an unsigned 64-bit integer (a seed: 0 to 2^64 - 1).
inline uint64_t parse_uint64(const std::string& option, const std::string& text) {
  const std::string range = "a non-negative integer (at most " +
                            std::to_string(std::numeric_limits<uint64_t>::max()) + ")";
  if (!detail::all_digits(text, 0)) detail::refuse(option, range, text);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) detail::refuse(option, range, text, "too large");
  return static_cast<uint64_t>(v);
}

// `text` as a finite number in [min, max] (or (min, max] when !min_inclusive).
inline double parse_real(const std::string& option, const std::string& text, double min, double max,
                         bool min_inclusive) {
  const std::string range = detail::real_range(min, max, min_inclusive);
  const bool starts_ok =
      !text.empty() && (text[0] == '-' || text[0] == '.' || (text[0] >= '0' && text[0] <= '9'));
  char* end = nullptr;
  errno = 0;
  const double v = starts_ok ? std::strtod(text.c_str(), &end) : 0.0;
  if (!starts_ok || end != text.c_str() + text.size() || !std::isfinite(v))
    detail::refuse(option, range, text);
  if (errno == ERANGE && v != 0.0) detail::refuse(option, range, text, "out of range");
  if (v < min || v > max || (!min_inclusive && v == min)) detail::refuse(option, range, text);
  return v;
}

}  // namespace ember::examples
