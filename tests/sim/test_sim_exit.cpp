// A process may exit while a kernel still runs (a program returns from main with work queued):
// it exits with its own status, and under AddressSanitizer LeakSanitizer reports no leak
// (Note [LeakSanitizer and a worker inside a fiber] in kernels/cuda/sim/fiber.h). The test runs
// a hidden test case of this same binary as a child process and reads its status and output.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim_test_util.h"

extern char** environ;

using namespace ember::sim;
using namespace std::chrono_literals;

namespace {

std::atomic<int> g_running{0};

// Runs for a while on every thread; the child exits long before it ends.
__global__ void runs_for_seconds() {
  g_running.fetch_add(1);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
}

struct ChildResult {
  bool timed_out = false;
  int status = 0;
  std::string output;
};

// Runs this binary with `args`, stdout and stderr to one file, for at most `limit`.
ChildResult run_self(const std::vector<std::string>& args, std::chrono::seconds limit) {
  char path[] = "/tmp/ember_sim_exit_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  std::vector<char*> argv;
  std::string self = "/proc/self/exe";
  argv.push_back(self.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fd);
  ChildResult r;
  if (rc != 0) {
    std::remove(path);
    FAIL("posix_spawn failed: " << rc);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const pid_t done = waitpid(pid, &r.status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &r.status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  r.output = text.str();
  std::remove(path);
  return r;
}

}  // namespace

// The child: a kernel whose threads run as fibers is in flight when the process exits.
TEST_CASE("(child) exits with status 0 while a fiber-mode kernel runs", "[.][sim_exit_child]") {
  Options o = sim_test::base_options();
  o.force_fibers = true;
  o.workers = 2;
  set_options(o);
  launch({"runs_for_seconds", dim3(2), dim3(32)}, runs_for_seconds);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (g_running.load() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  REQUIRE(g_running.load() >= 2);  // both workers are inside a fiber now
  std::exit(0);
}

TEST_CASE("a process that exits while a kernel runs exits cleanly, with no leak reported",
          "[cuda][sim][launch]") {
  const ChildResult r = run_self({"[sim_exit_child]"}, 60s);
  INFO(r.output);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
  CHECK(r.output.find("LeakSanitizer") == std::string::npos);
}
