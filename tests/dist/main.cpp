// dist_tests: the distributed layer's Catch2 suite. The same binary is the worker process the
// multi-process tests start (tests/dist/harness.h): `dist_tests --worker NAME RANK SIZE k=v...`.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "harness.h"

int main(int argc, char** argv) {
  const int worker_status = ember::dist_test::maybe_run_worker(argc, argv);
  if (worker_status >= 0) return worker_status;
  return Catch::Session().run(argc, argv);
}
