#pragma once
// The opcodes and reply statuses of Note [TCPStore wire protocol] (tcp_store.h). Internal.

#include <cstdint>

namespace ember::dist::tcp {

enum class Op : uint8_t {
  Set = 1,
  Get = 2,
  Add = 3,
  CompareSet = 4,
  Wait = 5,
  Check = 6,
  Delete = 7,
  NumKeys = 8,
  Join = 9,
  WaitJoined = 10,
};

enum class Status : uint8_t { Ok = 0, Timeout = 1, Error = 2 };

}  // namespace ember::dist::tcp
