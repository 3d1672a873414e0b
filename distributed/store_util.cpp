#include "distributed/store_util.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "distributed/error.h"

namespace ember::dist {

bool counter_value(const Bytes& value, int64_t& out) {
  const std::string text = to_string(value);
  if (text.empty() || text.size() > 20) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

std::string not_a_counter(const std::string& key, const Bytes& value) {
  std::string text;
  for (size_t i = 0; i < value.size() && i < 32; ++i) {
    const auto ch = static_cast<unsigned char>(value[i]);
    text += std::isprint(ch) ? static_cast<char>(ch) : '?';
  }
  return "key '" + key + "' holds '" + text + "', not an integer counter";
}

int64_t parse_counter(const char* op, const std::string& key, const Bytes& value) {
  int64_t v = 0;
  if (!counter_value(value, v))
    throw Error(ErrorKind::Usage, op, -1, -1, -1, not_a_counter(key, value));
  return v;
}

void throw_wait_timeout(const char* op, const std::vector<std::string>& missing,
                        std::chrono::milliseconds timeout,
                        std::chrono::steady_clock::time_point start) {
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 8; ++i) keys += (i ? ", '" : "'") + missing[i] + "'";
  if (missing.size() > 8) keys += ", ... (" + std::to_string(missing.size()) + " keys)";
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  throw Error(ErrorKind::Timeout, op, -1, -1, s,
              "keys " + keys + " not set within " + std::to_string(timeout.count()) + " ms");
}

}  // namespace ember::dist
