#include "core/error.h"

namespace ember::detail {

void throw_error(const char*, int, const std::string& msg) { throw Error(msg); }

void throw_internal(const char* file, int line, const char* cond, const std::string& msg) {
  throw Error(str("ember internal error: ", cond, " failed at ", file, ":", line,
                  msg.empty() ? "" : ": ", msg, " (this is a bug in ember, please report it)"));
}

}  // namespace ember::detail
