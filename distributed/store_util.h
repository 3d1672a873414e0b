#pragma once
// Helpers shared by the Store implementations (internal).

#include <chrono>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace ember::dist {

// The integer of an add() counter (its decimal text); false when `value` is not one.
bool counter_value(const Bytes& value, int64_t& out);
// The message for a key that holds something else than a counter (its first bytes, printable).
std::string not_a_counter(const std::string& key, const Bytes& value);
// counter_value, raising a Usage error with not_a_counter's message when it is not one.
int64_t parse_counter(const char* op, const std::string& key, const Bytes& value);

// Raises the Timeout error of a wait that gave up: names the keys still missing and the time.
[[noreturn]] void throw_wait_timeout(const char* op, const std::vector<std::string>& missing,
                                     std::chrono::milliseconds timeout,
                                     std::chrono::steady_clock::time_point start);

}  // namespace ember::dist
