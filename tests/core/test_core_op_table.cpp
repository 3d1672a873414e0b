// core_tests: the op table's forward checks on ember_core alone (no autograd, nn or optim is
// linked: tests/CMakeLists.txt). Every op of core's families is run through its native function
// and compared with its float64 reference, on every device of this build, as ember_tests does
// for the public ops (tests/op_table/op_table.h explains how one set of entries serves both).

#include <catch2/catch.hpp>

#include "core/op_registry.h"
#include "op_table/op_table.h"
#include "op_table/op_table_checks.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("op table on the native layer: every op of core's families has an entry",
          "[core][op_table]") {
  check_registry_coverage();
  // Only core's families are linked here: the nn families register from ember_nn.
  for (const OpFamily& f : registered_op_families()) {
    INFO("family " << f.family);
    CHECK(f.family.rfind("nn_", 0) != 0);
  }
}

TEST_CASE("op table on the native layer: forward matches the float64 reference",
          "[core][op_table]") {
  REQUIRE(!op_table().empty());
  const std::vector<Device> devices = op_table_devices();
  for (const OpInfo& op : op_table()) {
    DYNAMIC_SECTION(op.name) { check_forward(op, devices); }
  }
}
