// The stub registry (Note [Stub registry] in core/dispatch.h): every dispatch stub has a CPU
// kernel, the detector catches one that has not, and the stubs a device lacks are listed.

#include <ember/ember.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/ops/optim.h"

using namespace ember;

namespace {

// Deliberately without any kernel: the detector must report it.
using registry_test_fn = void (*)(int);
EMBER_DECLARE_DISPATCH(registry_test_fn, registry_test_unfilled_stub);

// And one with a CPU kernel, defined and registered here.
void registry_test_kernel(int) {}
EMBER_DECLARE_DISPATCH(registry_test_fn, registry_test_filled_stub);
EMBER_REGISTER_KERNEL(registry_test_filled_stub, DeviceType::CPU, registry_test_kernel);

constexpr const char* kUnfilled = "registry_test_unfilled_stub";

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("dispatch registry: every stub is listed once, by name", "[dispatch]") {
  const std::vector<StubInfo> stubs = dispatch_stubs();
  std::set<std::string> names;
  for (const StubInfo& s : stubs) {
    CHECK_FALSE(s.name.empty());
    CHECK(names.insert(s.name).second);  // no stub listed twice
  }
  // A sample of each family, the new ones included.
  for (const char* name :
       {"add_stub", "copy_stub", "fill_stub", "sum_stub", "batched_gemm_stub", "conv2d_stub",
        "sort_stub", "uniform_stub", "sgd_step_stub", "adam_step_stub", "rmsprop_step_stub",
        "adagrad_step_stub", "arange_stub", "linspace_stub", "eye_stub", kUnfilled,
        "registry_test_filled_stub"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(stubs.size() > 100);
}

TEST_CASE("dispatch registry: every stub has a CPU kernel", "[dispatch]") {
  // The detector works: the test stub without a kernel is reported, the filled one is not.
  const std::vector<std::string> missing = stubs_missing(DeviceType::CPU);
  CHECK(contains(missing, kUnfilled));
  CHECK_FALSE(contains(missing, "registry_test_filled_stub"));
  CHECK_FALSE(registry_test_unfilled_stub.has_kernel(DeviceType::CPU));
  CHECK_THROWS_WITH(registry_test_unfilled_stub(DeviceType::CPU, 1),
                    Catch::Contains("registry_test_unfilled_stub: no kernel for device cpu"));

  // Apart from it, no stub lacks its CPU kernel.
  std::vector<std::string> real_missing;
  for (const std::string& name : missing)
    if (name != kUnfilled) real_missing.push_back(name);
  std::ostringstream list;
  for (const std::string& name : real_missing) list << name << " ";
  INFO("stubs without a CPU kernel: " << list.str());
  CHECK(real_missing.empty());
}

TEST_CASE("dispatch registry: the stubs the CUDA device lacks are listed", "[dispatch]") {
  // Informational, never failing: the list a CUDA backend works through (every stub, in a
  // CPU-only build). EMBER_LIST_STUBS=1 prints it.
  const std::vector<std::string> missing = stubs_missing(DeviceType::CUDA);
  if (std::getenv("EMBER_LIST_STUBS") != nullptr) {
    std::ostringstream list;
    for (const std::string& name : missing) list << "  " << name << "\n";
    WARN(missing.size() << " of " << dispatch_stubs().size() << " stubs have no CUDA kernel:\n"
                        << list.str());
  }
  CHECK(contains(missing, kUnfilled));
  for (const StubInfo& s : dispatch_stubs())
    CHECK(contains(missing, s.name) == !s.has_kernel[static_cast<int>(DeviceType::CUDA)]);
}
