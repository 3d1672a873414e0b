// dist_rank_probe: the program the launcher tests start under ember-run (tests/dist/
// test_launcher.cpp). It reports what it was given and fails on request:
//
//   --out DIR        write DIR/env.<RANK>.<EMBER_RESTART_COUNT> (the launcher's variables, one
//                    K=V a line) and DIR/pid.<RANK>.<EMBER_RESTART_COUNT> (its pid)
//   --store          meet every rank in the job's store (distributed/env.h) before going on
//   --fail-rank R    rank R fails: exits with --code C (default 1) after printing a last line
//                    "probe: rank R fails with code C" to stderr; or --kill-self SIG kills it
//   --fail-until K   ... only while EMBER_RESTART_COUNT < K
//   --fail-after S   seconds before failing (default 0)
//   --sleep S        then sleep S seconds (every rank that does not fail) and exit 0
//   --ignore-term    ignore SIGTERM
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "distributed/env.h"

namespace {

std::string env_or(const char* k, const char* fallback) {
  const char* v = std::getenv(k);
  return v ? v : fallback;
}

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  bool store = false, ignore_term = false;
  int fail_rank = -1, code = 1, kill_self = 0, fail_until = 1 << 30;
  double fail_after = 0, sleep_s = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--out")
      out = next();
    else if (a == "--store")
      store = true;
    else if (a == "--fail-rank")
      fail_rank = std::atoi(next().c_str());
    else if (a == "--code")
      code = std::atoi(next().c_str());
    else if (a == "--kill-self")
      kill_self = std::atoi(next().c_str());
    else if (a == "--fail-until")
      fail_until = std::atoi(next().c_str());
    else if (a == "--fail-after")
      fail_after = std::atof(next().c_str());
    else if (a == "--sleep")
      sleep_s = std::atof(next().c_str());
    else if (a == "--ignore-term")
      ignore_term = true;
    else {
      std::fprintf(stderr, "dist_rank_probe: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (ignore_term) ::signal(SIGTERM, SIG_IGN);
  const int rank = std::atoi(env_or("RANK", "0").c_str());
  const int restart = std::atoi(env_or("EMBER_RESTART_COUNT", "0").c_str());
  if (!out.empty()) {
    const std::string suffix = std::to_string(rank) + "." + std::to_string(restart);
    {
      std::ofstream f(out + "/env." + suffix + ".tmp");
      for (const char* k :
           {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
            "MASTER_PORT", "EMBER_STORE_HOSTED", "EMBER_RESTART_COUNT"})
        f << k << "=" << env_or(k, "") << "\n";
    }
    std::rename((out + "/env." + suffix + ".tmp").c_str(), (out + "/env." + suffix).c_str());
    std::ofstream(out + "/pid." + suffix) << ::getpid() << "\n";
  }
  std::fprintf(stderr, "probe: rank %d started\n", rank);
  if (store) {
    try {
      const auto info = ember::dist::rank_info_from_env();
      auto s = ember::dist::store_from_env(info, std::chrono::seconds(20));
      ember::dist::store_barrier(*s, "probe", info.world_size, std::chrono::seconds(20));
      std::fprintf(stderr, "probe: rank %d met %d ranks in the store\n", rank, info.world_size);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "probe: %s\n", e.what());
      return 9;
    }
  }
  if (rank == fail_rank && restart < fail_until) {
    sleep_seconds(fail_after);
    if (kill_self != 0) {
      std::fprintf(stderr, "probe: rank %d kills itself with signal %d\n", rank, kill_self);
      ::signal(kill_self, SIG_DFL);
      ::kill(::getpid(), kill_self);
      sleep_seconds(5);
    }
    std::fprintf(stderr, "probe: rank %d fails with code %d\n", rank, code);
    return code;
  }
  sleep_seconds(sleep_s);
  return 0;
}
