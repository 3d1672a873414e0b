// ember-run (examples/ember_run.cpp) run for real, with tests/dist/probe/dist_rank_probe as its
// workers: the variables each rank gets, the root cause's report and exit status, SIGKILL after
// --grace, restarts, two launchers on loopback, and no process left behind.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.h"

using namespace ember;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

#ifdef EMBER_RUN_PATH

namespace {

// args: the launcher's arguments separated by '|'; "{node}" becomes the worker's rank.
std::vector<std::string> split_args(const std::string& s, int node) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, '|')) {
    if (cur == "{node}") cur = std::to_string(node);
    out.push_back(cur);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : "|") + a;
  return s;
}

// Starts `nodes` launchers (harness ranks), each `ember-run ARGS... PROBE PROBE_ARGS...`.
std::vector<dist_test::Proc> start_launchers(const std::vector<std::string>& run_args,
                                             const std::vector<std::string>& probe_args,
                                             int nodes = 1) {
  std::vector<std::string> all = run_args;
  all.push_back(DIST_RANK_PROBE_PATH);
  all.insert(all.end(), probe_args.begin(), probe_args.end());
  dist_test::RunOptions o;
  o.params["args"] = join(all);
  return dist_test::start_workers("ember_run_exec", nodes, o);
}

dist_test::RankResult finish(dist_test::Proc& p, std::chrono::seconds timeout = 30s) {
  return p.wait(Clock::now() + timeout);
}

// Whether the process is gone (a zombie nobody reaped counts as gone: it runs no more).
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  return close == std::string::npos || (close + 2 < stat.size() && stat[close + 2] == 'Z');
}

bool all_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds within = 3000ms) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    bool ok = true;
    for (pid_t p : pids) ok = ok && gone(p);
    if (ok) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

pid_t read_pid(const std::string& dir, int rank, int restart = 0) {
  std::ifstream f(dir + "/pid." + std::to_string(rank) + "." + std::to_string(restart));
  pid_t p = -1;
  f >> p;
  return p;
}

// Waits (bounded) until every rank has written its pid.
std::vector<pid_t> wait_pids(const std::string& dir, int ranks, std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  std::vector<pid_t> pids;
  while (Clock::now() < deadline) {
    pids.clear();
    for (int r = 0; r < ranks; ++r) pids.push_back(read_pid(dir, r));
    if (std::find(pids.begin(), pids.end(), -1) == pids.end()) return pids;
    std::this_thread::sleep_for(20ms);
  }
  return pids;
}

std::map<std::string, std::string> read_env(const std::string& dir, int rank, int restart = 0) {
  std::map<std::string, std::string> m;
  std::ifstream f(dir + "/env." + std::to_string(rank) + "." + std::to_string(restart));
  std::string line;
  while (std::getline(f, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

}  // namespace

// The harness child becomes ember-run (execv keeps its PR_SET_PDEATHSIG and process group).
DIST_WORKER(ember_run_exec) {
  std::vector<std::string> a = split_args(args.param("args"), args.rank);
  a.insert(a.begin(), EMBER_RUN_PATH);
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::perror("execv ember-run");
  return 127;
}

TEST_CASE("ember-run: 2 nodes x 2 processes on loopback get their variables and meet",
          "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  const std::string port = std::to_string(dist_test::free_port());
  auto procs =
      start_launchers({"--nnodes", "2", "--node-rank", "{node}", "--nproc-per-node", "2",
                       "--master-addr", "127.0.0.1", "--master-port", port, "--rdzv-timeout", "20"},
                      {"--out", dir, "--store"}, 2);
  auto r0 = finish(procs[0]);
  auto r1 = finish(procs[1]);
  INFO(r0.summary() << "\n" << r0.output << "\n" << r1.summary() << "\n" << r1.output);
  REQUIRE(r0.ok());
  REQUIRE(r1.ok());
  for (int rank = 0; rank < 4; ++rank) {
    auto env = read_env(dir, rank);
    INFO("rank " << rank);
    CHECK(env["RANK"] == std::to_string(rank));
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["LOCAL_RANK"] == std::to_string(rank % 2));
    CHECK(env["LOCAL_WORLD_SIZE"] == "2");
    CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");
    CHECK(env["MASTER_PORT"] == port);
    CHECK(env["EMBER_STORE_HOSTED"] == "1");
    CHECK(env["EMBER_RESTART_COUNT"] == "0");
  }
  CHECK_THAT(r0.output, Catch::Contains("[rank 1] probe: rank 1 met 4 ranks in the store"));
  CHECK_THAT(r1.output, Catch::Contains("[rank 3] probe: rank 3 met 4 ranks in the store"));
}

TEST_CASE("ember-run: the first failure is the root cause, named, and its code is the exit",
          "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  SECTION("an exit code") {
    auto procs = start_launchers(
        {"--nproc-per-node", "3", "--master-port", "0", "--grace", "2"},
        {"--out", dir, "--fail-rank", "1", "--code", "3", "--fail-after", "0.3", "--sleep", "30"});
    auto r = finish(procs[0]);
    INFO(r.summary() << "\n" << r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.seconds < 10);
    const pid_t p1 = read_pid(dir, 1);
    CHECK_THAT(r.output, Catch::Contains("ember-run: rank 1 (pid " + std::to_string(p1) +
                                         ") exited with code 3: probe: rank 1 fails with code 3"));
    CHECK_THAT(r.output, Catch::Contains("[rank 1] probe: rank 1 fails with code 3"));
    CHECK(all_gone({read_pid(dir, 0), p1, read_pid(dir, 2)}));
  }
  SECTION("a signal") {
    auto procs = start_launchers({"--nproc-per-node", "2", "--master-port", "0"},
                                 {"--out", dir, "--fail-rank", "0", "--kill-self", "9",
                                  "--fail-after", "0.2", "--sleep", "30"});
    auto r = finish(procs[0]);
    INFO(r.summary() << "\n" << r.output);
    CHECK(r.exit_code == 128 + 9);
    CHECK_THAT(r.output, Catch::Contains("rank 0 (pid ") &&
                             Catch::Contains("was killed by signal 9 (SIGKILL): probe: rank 0 "
                                             "kills itself with signal 9"));
    CHECK(all_gone({read_pid(dir, 0), read_pid(dir, 1)}));
  }
}

TEST_CASE("ember-run: a child that ignores SIGTERM gets SIGKILL after --grace",
          "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  auto procs = start_launchers({"--nproc-per-node", "2", "--master-port", "0", "--grace", "1"},
                               {"--out", dir, "--fail-rank", "0", "--code", "5", "--fail-after",
                                "0.5", "--ignore-term", "--sleep", "30"});
  auto r = finish(procs[0]);
  INFO(r.summary() << "\n" << r.output);
  CHECK(r.exit_code == 5);
  CHECK(r.seconds > 1.4);  // 0.5 s before the failure, then the full grace
  CHECK(r.seconds < 8);
  CHECK(all_gone({read_pid(dir, 0), read_pid(dir, 1)}, 1000ms));
}

TEST_CASE("ember-run: killing the launcher with SIGKILL kills its children", "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  auto procs = start_launchers({"--nproc-per-node", "2", "--master-port", "0"},
                               {"--out", dir, "--sleep", "30"});
  const auto pids = wait_pids(dir, 2, 10000ms);
  REQUIRE(std::find(pids.begin(), pids.end(), -1) == pids.end());
  procs[0].signal(SIGKILL);
  finish(procs[0], 5s);
  CHECK(all_gone(pids));
}

TEST_CASE("ember-run: SIGTERM is forwarded to the children and ends the job", "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  auto procs =
      start_launchers({"--nproc-per-node", "2", "--master-port", "0", "--max-restarts", "3"},
                      {"--out", dir, "--sleep", "30"});
  const auto pids = wait_pids(dir, 2, 10000ms);
  REQUIRE(std::find(pids.begin(), pids.end(), -1) == pids.end());
  procs[0].signal(SIGTERM);  // the launcher's own process group: its children are in theirs
  auto r = finish(procs[0], 10s);
  INFO(r.summary() << "\n" << r.output);
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK(r.seconds < 8);
  CHECK_THAT(r.output, Catch::Contains("interrupted by SIGTERM"));
  CHECK_THAT(r.output, !Catch::Contains("restarting"));
  CHECK(all_gone(pids));
}

TEST_CASE("ember-run: --max-restarts restarts the whole group", "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  SECTION("succeeds on the third attempt") {
    auto procs = start_launchers(
        {"--nproc-per-node", "2", "--master-port", "0", "--max-restarts", "2", "--grace", "1"},
        {"--out", dir, "--fail-rank", "1", "--code", "4", "--fail-until", "2", "--fail-after",
         "0.1", "--sleep", "0.2"});
    auto r = finish(procs[0]);
    INFO(r.summary() << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("restart 1 of 2") && Catch::Contains("restart 2 of 2"));
    for (int attempt = 0; attempt < 3; ++attempt) {
      CHECK(read_env(dir, 0, attempt)["EMBER_RESTART_COUNT"] == std::to_string(attempt));
      CHECK(read_env(dir, 1, attempt)["RANK"] == "1");
    }
  }
  SECTION("gives up after the last restart with the root cause's code") {
    auto procs = start_launchers(
        {"--nproc-per-node", "2", "--master-port", "0", "--max-restarts", "1", "--grace", "1"},
        {"--out", dir, "--fail-rank", "1", "--code", "4", "--fail-after", "0.1", "--sleep", "30"});
    auto r = finish(procs[0]);
    INFO(r.summary() << "\n" << r.output);
    CHECK(r.exit_code == 4);
    CHECK(std::filesystem::exists(dir + "/env.1.1"));
    CHECK_FALSE(std::filesystem::exists(dir + "/env.1.2"));
    CHECK(all_gone({read_pid(dir, 0, 0), read_pid(dir, 0, 1), read_pid(dir, 1, 1)}));
  }
}

TEST_CASE("ember-run: a node that never joins is named within --rdzv-timeout", "[dist][launcher]") {
  const std::string port = std::to_string(dist_test::free_port());
  auto procs = start_launchers(
      {"--nnodes", "3", "--node-rank", "{node}", "--master-port", port, "--rdzv-timeout", "1"},
      {"--sleep", "0"}, 2);  // nodes 0 and 1 of 3
  auto r0 = finish(procs[0], 10s);
  auto r1 = finish(procs[1], 10s);
  INFO(r0.summary() << "\n" << r0.output << "\n" << r1.output);
  CHECK(r0.exit_code == 1);
  CHECK(r0.seconds < 5);
  CHECK_THAT(r0.output, Catch::Contains("node(s) 2 of 3 did not join"));
  CHECK(r1.exit_code == 1);
}

TEST_CASE("ember-run: a failure on one node stops the other node with the same root cause",
          "[dist][launcher]") {
  const std::string dir = dist_test::scratch_dir();
  const std::string port = std::to_string(dist_test::free_port());
  auto procs = start_launchers(
      {"--nnodes", "2", "--node-rank", "{node}", "--nproc-per-node", "2", "--master-port", port,
       "--rdzv-timeout", "20", "--grace", "1"},
      {"--out", dir, "--fail-rank", "3", "--code", "6", "--fail-after", "0.5", "--sleep", "30"}, 2);
  auto r0 = finish(procs[0]);
  auto r1 = finish(procs[1]);
  INFO(r0.summary() << "\n" << r0.output << "\n" << r1.summary() << "\n" << r1.output);
  CHECK(r0.exit_code == 6);
  CHECK(r1.exit_code == 6);
  CHECK(r0.seconds < 10);
  const std::string cause = "rank 3 (pid " + std::to_string(read_pid(dir, 3)) +
                            ") exited with code 6: probe: rank 3 fails with code 6 on node 1";
  CHECK_THAT(r0.output, Catch::Contains(cause));
  CHECK_THAT(r1.output, Catch::Contains(cause));
  std::vector<pid_t> pids;
  for (int r = 0; r < 4; ++r) pids.push_back(read_pid(dir, r));
  CHECK(all_gone(pids));
}

#else
TEST_CASE("ember-run: not built (EMBER_BUILD_EXAMPLES=OFF)", "[dist][launcher]") {
  WARN("the launcher tests need ember-run");
}
#endif
