// The multi-process harness itself (harness.h): exit codes and signals are reported, a rank that
// hangs is killed at the deadline, and no child outlives its test.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "harness.h"

using namespace ember;
using namespace std::chrono_literals;

DIST_WORKER(exit_with) { return args.int_param("code", 0) + args.rank; }

DIST_WORKER(hang) {
  std::this_thread::sleep_for(std::chrono::hours(1));
  return 0;
}

DIST_WORKER(expect_fails) {
  DIST_EXPECT(args.rank == 99, "rank ", args.rank, " is not 99");
  return 0;
}

TEST_CASE("dist harness: exit codes, failed expectations and hangs are reported", "[dist]") {
  dist_test::RunOptions o;
  o.params["code"] = "3";
  auto r = dist_test::run_workers("exit_with", 2, o);
  REQUIRE(r.size() == 2);
  CHECK(r[0].exit_code == 3);
  CHECK(r[1].exit_code == 4);

  r = dist_test::run_workers("expect_fails", 1);
  CHECK(r[0].exit_code == 1);
  CHECK(r[0].output.find("rank 0 is not 99") != std::string::npos);

  dist_test::RunOptions quick;
  quick.timeout = 300ms;
  const auto t0 = std::chrono::steady_clock::now();
  r = dist_test::run_workers("hang", 2, quick);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  CHECK(r[0].timed_out);
  CHECK(r[1].timed_out);
  CHECK_FALSE(r[0].ok());
}

TEST_CASE("dist harness: a killed child reports its signal and leaves no process", "[dist]") {
  pid_t pid = -1;
  {
    auto procs = dist_test::start_workers("hang", 1, {});
    pid = procs[0].pid();
    std::this_thread::sleep_for(50ms);
    procs[0].signal(SIGKILL);
    auto res = procs[0].wait(std::chrono::steady_clock::now() + 5s);
    CHECK(res.signal == SIGKILL);
  }
  CHECK_FALSE(dist_test::pid_alive(pid));
  {
    auto procs = dist_test::start_workers("hang", 1, {});
    pid = procs[0].pid();
  }  // the destructor kills and reaps a child still running
  CHECK_FALSE(dist_test::pid_alive(pid));
}
