#pragma once
// The multi-process harness of the distributed tests (dist_tests). A test starts `world_size`
// copies of the dist_tests binary, each running one named worker function as one rank, and
// checks how they ended:
//
//   DIST_WORKER(allreduce_sum) {             // runs in each child process; args.rank, ...
//     auto pg = make_group(args);            // (a helper of the test file)
//     ...
//     DIST_EXPECT(x.item<float>() == 3.0f, "rank ", args.rank, ": got ", x.item<float>());
//     return 0;
//   }
//   TEST_CASE("gloo: allreduce sums over 3 ranks", "[dist]") {
//     auto results = dist_test::run_workers("allreduce_sum", 3, {});
//     INFO(dist_test::describe(results));    // every rank's end and output, on failure
//     CHECK(dist_test::all_ok(results));     // every rank exited 0
//   }
//
// Children are started with fork + exec of /proc/self/exe (never a bare fork: the parent has
// threads), in their own process group, with PR_SET_PDEATHSIG so that none outlives the test.
// Every wait is bounded: at the deadline all children are killed (SIGKILL) and the result
// says timed_out. A worker returns its exit status; an exception escaping it prints what() and
// exits 1; DIST_EXPECT throws with its message.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember::dist_test {

struct WorkerArgs {
  std::string name;
  int rank = 0;
  int world_size = 1;
  std::map<std::string, std::string> params;  // key=value from RunOptions::params
  std::string param(const std::string& key, const std::string& fallback = "") const;
  int int_param(const std::string& key, int fallback) const;
};

using WorkerFn = int (*)(const WorkerArgs&);

struct RegisterWorker {
  RegisterWorker(const char* name, WorkerFn fn);
};

// Runs the worker named argv[2] if argv[1] is "--worker" (argv: --worker NAME RANK SIZE k=v...);
// returns -1 when argv is not a worker's (then main runs Catch2).
int maybe_run_worker(int argc, char** argv);

struct RunOptions {
  std::chrono::milliseconds timeout{60000};   // for the whole run
  std::map<std::string, std::string> params;  // passed to every rank
  std::map<std::string, std::string> env;     // set in every child
  std::vector<int> ranks;                     // which ranks to start (default: all)
};

struct RankResult {
  int rank = -1;
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  double seconds = 0;  // from start to exit
  std::string output;  // its stdout and stderr
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  std::string summary() const;
};

// One child process running a worker.
class Proc {
 public:
  Proc() = default;
  Proc(const std::string& worker, int rank, int world_size, const RunOptions& options,
       const std::string& log_path);
  Proc(Proc&& other) noexcept;
  Proc& operator=(Proc&& other) noexcept;
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;
  ~Proc();  // kills the child (and its group) if it still runs, and reaps it

  pid_t pid() const { return pid_; }
  void signal(int sig) const;  // to the child's process group
  // Waits until the child exits or the deadline; at the deadline kills it (SIGKILL) and
  // reports timed_out.
  RankResult wait(std::chrono::steady_clock::time_point deadline);
  // Whether it has exited (reaps it then).
  bool exited();

 private:
  pid_t pid_ = -1;
  int rank_ = -1;
  std::string log_path_;
  std::chrono::steady_clock::time_point start_;
  bool reaped_ = false;
  int status_ = 0;
};

// Starts ranks 0..world_size-1 (or options.ranks) of worker `name`.
std::vector<Proc> start_workers(const std::string& name, int world_size, const RunOptions& options);
// start_workers, then waits for every rank up to options.timeout.
std::vector<RankResult> run_workers(const std::string& name, int world_size,
                                    const RunOptions& options = {});
// A summary of every rank, for a failed REQUIRE:  INFO(describe(r)); CHECK(all_ok(r));
std::string describe(const std::vector<RankResult>& results);
bool all_ok(const std::vector<RankResult>& results);

// A fresh empty directory under $TMPDIR (removed at exit of the test process).
std::string scratch_dir();
// A TCP port that was free a moment ago (bind to port 0 on loopback).
int free_port();
// Whether any process of this test's children still exists (for "leaves no process behind").
bool pid_alive(pid_t pid);

namespace detail {
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}
}  // namespace detail

}  // namespace ember::dist_test

#define DIST_WORKER(name)                                                                  \
  static int name##_worker(const ::ember::dist_test::WorkerArgs& args);                    \
  static const ::ember::dist_test::RegisterWorker name##_registered(#name, name##_worker); \
  static int name##_worker([[maybe_unused]] const ::ember::dist_test::WorkerArgs& args)

#define DIST_EXPECT(cond, ...)                                                                \
  do {                                                                                        \
    if (!(cond))                                                                              \
      throw std::runtime_error(::ember::dist_test::detail::cat(__FILE__, ":", __LINE__, ": ", \
                                                               #cond, ": ", __VA_ARGS__));    \
  } while (0)
