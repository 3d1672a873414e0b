#pragma once
// The list of every op ember defines, by family. Each family's .cpp registers its names with an
// OpFamilyRegistrar next to a static_assert on the list's size; the op-table test suite
// (tests/op_table) fails for any registered op that has no op-table entry (DESIGN.md: "a test
// fails when an op has no op-table entry").

#include <string>
#include <vector>

namespace ember {

struct OpFamily {
  std::string family;
  std::vector<std::string> ops;
};

const std::vector<OpFamily>& registered_op_families();

// The forward op a backward node's name stands for: "LogSoftmaxBackward" -> "log_softmax"
// (anomaly mode's messages, the profiler's op names).
std::string forward_op_name(const std::string& node_name);
std::vector<std::string> registered_ops();

struct OpFamilyRegistrar {
  template <size_t N>
  OpFamilyRegistrar(const char* family, const char* const (&ops)[N]) {
    add(family, ops, N);
  }
  static void add(const char* family, const char* const* ops, size_t n);
};

}  // namespace ember
