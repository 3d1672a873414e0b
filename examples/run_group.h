#pragma once
// The processes one ember-run starts on its node (examples/ember_run.cpp): started with
// fork + execve, each in its own process group and with PR_SET_PDEATHSIG (SIGKILL) so none
// outlives the launcher; each child's stderr comes through a pipe, is passed on to the
// launcher's stderr prefixed "[rank N] ", and its last line is kept for the root-cause report.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ember::examples {

struct ChildSpec {
  int rank = 0;                   // the global rank: the "[rank N] " prefix
  std::string path;               // the program, resolved (find_program)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "K=V" entries: the whole environment
};

struct ChildExit {
  int rank = 0;
  pid_t pid = -1;
  int code = 0;           // when it exited
  int signal = 0;         // when a signal ended it
  std::string last_line;  // its last non-empty stderr line
  bool ok() const { return signal == 0 && code == 0; }
  // 128 + signal, or the exit code: what ember-run exits with when this is the root cause.
  int status() const { return signal != 0 ? 128 + signal : code; }
  // "rank 1 (pid 123) exited with code 3: <last line>"
  std::string describe() const;
};

// The program's path: `name` itself when it has a '/', else the first executable in $PATH;
// "" when none.
std::string find_program(const std::string& name);

class WorkerGroup {
 public:
  WorkerGroup() = default;
  ~WorkerGroup();  // kills (SIGKILL) and reaps whatever still runs
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // Starts every child; throws std::runtime_error when fork or pipe fails.
  void start(const std::vector<ChildSpec>& specs);
  // Passes stderr on and reaps children for up to `max_wait` (returning early when `wake_fd`
  // becomes readable or a child exits). Returns the children that exited during the call.
  std::vector<ChildExit> poll(std::chrono::milliseconds max_wait, int wake_fd);
  bool all_exited() const;
  // Sends `sig` to every running child's process group.
  void signal_all(int sig);
  // Stops the group: `first` (SIGTERM) to every running child, up to `grace` for them to exit,
  // then SIGKILL; returns when every child is reaped.
  void stop(int first, std::chrono::milliseconds grace);
  std::vector<pid_t> pids() const;

 private:
  struct Child {
    int rank = 0;
    pid_t pid = -1;
    int err_fd = -1;  // the read end of its stderr pipe (-1 after EOF)
    std::string partial;
    std::string last_line;
    bool exited = false;
  };
  void pump(Child& c, bool drain);
  void emit(Child& c, const std::string& line);
  std::vector<Child> children_;
};

}  // namespace ember::examples
