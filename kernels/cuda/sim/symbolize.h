// Source locations of code addresses, for the detectors' reports.
#pragma once

#include <string>

namespace ember::sim::detail {

// "file:line" of the code at `pc` (a return address: the call before it is meant), taken from
// the innermost inlined frame outside kernels/cuda/sim, via dladdr and addr2line (which needs
// the object's debug info); "function+0xoffset (object)" when that fails. Cached.
std::string symbolize(const void* pc);

}  // namespace ember::sim::detail
