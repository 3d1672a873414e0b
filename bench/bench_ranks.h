#pragma once
// The multi-process launch the distributed benchmarks share (bench_dist, bench_ddp): the program
// starts itself once per rank as `/proc/self/exe --rank R WORLD STORE_PATH ARGS...`, the ranks
// meet through a FileStore at STORE_PATH in a fresh temporary directory, and the parent waits
// for all of them -- up to `timeout`, killing every rank when one fails or time runs out. A rank
// sets PR_SET_PDEATHSIG itself (bench::die_with_parent) so that none outlives the parent.

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ember::bench {

inline void die_with_parent() { prctl(PR_SET_PDEATHSIG, SIGKILL); }

// Returns 0 when every rank exited 0, else 1 (the failure is printed, prefixed with `name`).
inline int run_ranks(const char* name, int world, const std::vector<std::string>& args,
                     std::chrono::seconds timeout) {
  char dir[] = "/tmp/ember_bench_ranks_XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string store = std::string(dir) + "/store";
  std::vector<pid_t> pids;
  int status_all = 0;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv_s = {"/proc/self/exe", "--rank", std::to_string(r),
                                       std::to_string(world), store};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(argv_s.size() + 1);
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
      std::perror("posix_spawn");
      status_all = 1;
      break;
    }
    pids.push_back(pid);
  }
  if (status_all != 0)
    for (pid_t p : pids) kill(p, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t alive = pids.size();
  while (alive > 0) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      --alive;
      if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && status_all == 0) {
        std::fprintf(stderr, "%s: a rank failed (status %d); stopping the others\n", name, status);
        status_all = 1;
        for (pid_t p : pids) kill(p, SIGKILL);
      }
    } else if (done < 0) {
      break;  // no children left
    } else if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: timed out after %lld s\n", name,
                   static_cast<long long>(timeout.count()));
      for (pid_t p : pids) kill(p, SIGKILL);
      status_all = 1;
      while (waitpid(-1, nullptr, 0) > 0) {
      }
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::remove(store.c_str());
  rmdir(dir);
  return status_all;
}

}  // namespace ember::bench
