#pragma once
// Errors. User mistakes throw ember::Error through EMBER_CHECK with a message that names the op
// and the shapes / dtypes / devices involved. Broken invariants use EMBER_INTERNAL_ASSERT.
// A library never aborts or exits: both macros throw.

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/macros.h"

namespace ember {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline void append(std::ostringstream&) {}

template <class T>
void append_one(std::ostringstream& os, const T& v) {
  os << v;
}

// Shapes print as [2, 3], the way users see them everywhere else.
inline void append_one(std::ostringstream& os, const std::vector<int64_t>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}

template <class T, class... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  append_one(os, first);
  append(os, rest...);
}

template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  append(os, args...);
  return os.str();
}

[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);
[[noreturn]] void throw_internal(const char* file, int line, const char* cond,
                                 const std::string& msg);

}  // namespace detail
}  // namespace ember

// EMBER_CHECK(cond, "op: message ", value, ...) throws ember::Error when cond is false.
#define EMBER_CHECK(cond, ...)                                                             \
  do {                                                                                     \
    if (EMBER_UNLIKELY(!(cond)))                                                           \
      ::ember::detail::throw_error(__FILE__, __LINE__, ::ember::detail::str(__VA_ARGS__)); \
  } while (0)

#define EMBER_ERROR(...) \
  ::ember::detail::throw_error(__FILE__, __LINE__, ::ember::detail::str(__VA_ARGS__))

#define EMBER_INTERNAL_ASSERT(cond, ...)                                        \
  do {                                                                          \
    if (EMBER_UNLIKELY(!(cond)))                                                \
      ::ember::detail::throw_internal(__FILE__, __LINE__, #cond,                \
                                      ::ember::detail::str("", ##__VA_ARGS__)); \
  } while (0)
