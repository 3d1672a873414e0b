#pragma once
// Helpers shared by the Store implementations (internal).

#include <chrono>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace ember::dist {

// The integer of an add() counter; a value that is not one raises a Usage error naming the key.
int64_t parse_counter(const char* op, const std::string& key, const Bytes& value);

// Raises the Timeout error of a wait that gave up: names the keys still missing and the time.
[[noreturn]] void throw_wait_timeout(const char* op, const std::vector<std::string>& missing,
                                     std::chrono::milliseconds timeout,
                                     std::chrono::steady_clock::time_point start);

}  // namespace ember::dist
