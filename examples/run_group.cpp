#include "run_group.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ember::examples {

namespace {

using Clock = std::chrono::steady_clock;

void write_stderr(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(2, s.data() + done, s.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // stderr is gone: nothing better to do with the children's lines
    }
  }
}

}  // namespace

std::string ChildExit::describe() const {
  std::string s = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") ";
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    s += "was killed by signal " + std::to_string(signal) + " (SIG" + (name ? name : "?") + ")";
  } else {
    s += "exited with code " + std::to_string(code);
  }
  if (!last_line.empty()) s += ": " + last_line;
  return s;
}

std::string find_program(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

WorkerGroup::~WorkerGroup() {
  for (auto& c : children_) {
    if (!c.exited) {
      ::kill(-c.pid, SIGKILL);
      ::kill(c.pid, SIGKILL);
      int status = 0;
      while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (c.err_fd >= 0) ::close(c.err_fd);
  }
}

void WorkerGroup::start(const std::vector<ChildSpec>& specs) {
  const pid_t parent = ::getpid();
  for (const auto& spec : specs) {
    // Everything the child needs is made before fork: only async-signal-safe calls after it.
    std::vector<std::string> argv_s = spec.argv;
    std::vector<std::string> env_s = spec.env;
    std::vector<char*> argv;
    argv.reserve(argv_s.size() + 1);
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    envp.reserve(env_s.size() + 1);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string exec_failed = "ember-run: cannot execute " + spec.path + "\n";
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    }
    // Signals stay blocked across fork until the child has reset the launcher's handlers: a
    // SIGTERM sent right after fork must kill the child, not run the launcher's handler in it.
    sigset_t all, saved;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved);
    const pid_t pid = ::fork();
    if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);  // the launcher died before prctl
      ::dup2(fds[1], 2);
      // The launcher's handlers and ignored signals must not leak into the program.
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(spec.path.c_str(), argv.data(), envp.data());
      const ssize_t ignored = ::write(2, exec_failed.data(), exec_failed.size());
      (void)ignored;
      ::_exit(127);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    Child c;
    c.rank = spec.rank;
    c.pid = pid;
    c.err_fd = fds[0];
    children_.push_back(std::move(c));
  }
}

void WorkerGroup::emit(Child& c, const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  write_stderr("[rank " + std::to_string(c.rank) + "] " + line + "\n");
  if (line.find_first_not_of(" \t") != std::string::npos) c.last_line = line;
}

// Reads what the child's pipe holds. With `drain`, keeps reading until EOF or until nothing has
// come for 100 ms (a grandchild may hold the pipe open).
void WorkerGroup::pump(Child& c, bool drain) {
  if (c.err_fd < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(c.err_fd, buf, sizeof buf);
    if (n > 0) {
      c.partial.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = c.partial.find('\n')) != std::string::npos) {
        emit(c, c.partial.substr(0, nl));
        c.partial.erase(0, nl + 1);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!drain) return;
      pollfd p{c.err_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) continue;
    }
    // EOF, an error, or a drain that went quiet: the stream is over.
    if (!c.partial.empty()) emit(c, c.partial);
    c.partial.clear();
    ::close(c.err_fd);
    c.err_fd = -1;
    return;
  }
}

std::vector<ChildExit> WorkerGroup::poll(std::chrono::milliseconds max_wait, int wake_fd) {
  std::vector<ChildExit> exits;
  const auto deadline = Clock::now() + max_wait;
  for (;;) {
    for (auto& c : children_) {
      if (c.exited) continue;
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r != c.pid) continue;
      c.exited = true;
      pump(c, true);
      ChildExit e;
      e.rank = c.rank;
      e.pid = c.pid;
      if (WIFSIGNALED(status)) {
        e.signal = WTERMSIG(status);
      } else {
        e.code = WEXITSTATUS(status);
      }
      e.last_line = c.last_line;
      exits.push_back(e);
    }
    if (!exits.empty()) return exits;
    std::vector<pollfd> fds;
    if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
    for (auto& c : children_)
      if (c.err_fd >= 0) fds.push_back({c.err_fd, POLLIN, 0});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return exits;
    // At most 50 ms at a time: a child exiting is seen by waitpid, not by the pipes.
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, 50)));
    if (n < 0 && errno != EINTR) return exits;
    bool woken = false;
    for (const auto& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == wake_fd) {
        woken = true;
        continue;
      }
      for (auto& c : children_)
        if (c.err_fd == p.fd) pump(c, false);
    }
    if (woken) return exits;
  }
}

bool WorkerGroup::all_exited() const {
  for (const auto& c : children_)
    if (!c.exited) return false;
  return true;
}

void WorkerGroup::signal_all(int sig) {
  for (const auto& c : children_) {
    if (c.exited) continue;
    ::kill(-c.pid, sig);  // its process group (it may have started helpers)
    ::kill(c.pid, sig);   // in case it left the group
  }
}

void WorkerGroup::stop(int first, std::chrono::milliseconds grace) {
  signal_all(first);
  const auto deadline = Clock::now() + grace;
  while (!all_exited() && Clock::now() < deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    poll(std::max(left, std::chrono::milliseconds(1)), -1);
  }
  if (!all_exited()) signal_all(SIGKILL);
  while (!all_exited()) poll(std::chrono::milliseconds(100), -1);
  for (auto& c : children_) pump(c, true);
}

std::vector<pid_t> WorkerGroup::pids() const {
  std::vector<pid_t> p;
  for (const auto& c : children_) p.push_back(c.pid);
  return p;
}

}  // namespace ember::examples
