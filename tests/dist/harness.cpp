#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

namespace ember::dist_test {

namespace {

std::map<std::string, WorkerFn>& registry() {
  static std::map<std::string, WorkerFn> workers;
  return workers;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct ScratchDirs {
  std::mutex mutex;
  std::vector<std::string> dirs;
  ~ScratchDirs() {
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};

ScratchDirs& scratch_dirs() {
  static ScratchDirs dirs;
  return dirs;
}

}  // namespace

std::string WorkerArgs::param(const std::string& key, const std::string& fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

int WorkerArgs::int_param(const std::string& key, int fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : std::stoi(it->second);
}

RegisterWorker::RegisterWorker(const char* name, WorkerFn fn) { registry()[name] = fn; }

int maybe_run_worker(int argc, char** argv) {
  if (argc < 5 || std::strcmp(argv[1], "--worker") != 0) return -1;
  WorkerArgs args;
  args.name = argv[2];
  args.rank = std::atoi(argv[3]);
  args.world_size = std::atoi(argv[4]);
  for (int i = 5; i < argc; ++i) {
    const std::string kv = argv[i];
    const auto eq = kv.find('=');
    if (eq != std::string::npos) args.params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto it = registry().find(args.name);
  if (it == registry().end()) {
    std::fprintf(stderr, "dist_tests: no worker named '%s'\n", args.name.c_str());
    return 2;
  }
  try {
    const int rc = it->second(args);
    std::fflush(stdout);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %s rank %d: %s\n", args.name.c_str(), args.rank, e.what());
  } catch (...) {
    std::fprintf(stderr, "worker %s rank %d: an unknown exception\n", args.name.c_str(), args.rank);
  }
  std::fflush(stdout);
  return 1;
}

std::string RankResult::summary() const {
  std::string s = "rank " + std::to_string(rank) + ": ";
  if (timed_out) {
    s += "timed out (killed)";
  } else if (signal != 0) {
    s += std::string("killed by signal ") + strsignal(signal);
  } else {
    s += "exit " + std::to_string(exit_code);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, " after %.2f s", seconds);
  return s + buf;
}

Proc::Proc(const std::string& worker, int rank, int world_size, const RunOptions& options,
           const std::string& log_path)
    : rank_(rank), log_path_(log_path), start_(std::chrono::steady_clock::now()) {
  // Everything the child needs is prepared before fork: only async-signal-safe calls after.
  std::vector<std::string> argv_s = {"/proc/self/exe", "--worker", worker, std::to_string(rank),
                                     std::to_string(world_size)};
  for (const auto& [k, v] : options.params) argv_s.push_back(k + "=" + v);
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (options.env.count(key) == 0) env_s.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("dist harness: cannot create " + log_path);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fd);
    throw std::runtime_error(std::string("dist harness: fork failed: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);  // the parent died before prctl
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent, so that signal() never races the child's call
  ::close(fd);
}

Proc::Proc(Proc&& o) noexcept { *this = std::move(o); }

Proc& Proc::operator=(Proc&& o) noexcept {
  if (this != &o) {
    pid_ = o.pid_;
    rank_ = o.rank_;
    log_path_ = std::move(o.log_path_);
    start_ = o.start_;
    reaped_ = o.reaped_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

Proc::~Proc() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
}

void Proc::signal(int sig) const {
  if (pid_ > 0 && !reaped_) ::kill(-pid_, sig);
}

bool Proc::exited() {
  if (pid_ <= 0) return true;
  if (reaped_) return true;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return reaped_;
}

RankResult Proc::wait(std::chrono::steady_clock::time_point deadline) {
  RankResult r;
  r.rank = rank_;
  while (!exited()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = seconds_since(start_);
  if (!r.timed_out) {
    if (WIFEXITED(status_)) r.exit_code = WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) r.signal = WTERMSIG(status_);
  }
  r.output = read_file(log_path_);
  // The child's own children (none normally) go with its group.
  ::kill(-pid_, SIGKILL);
  return r;
}

std::vector<Proc> start_workers(const std::string& name, int world_size,
                                const RunOptions& options) {
  std::vector<int> ranks = options.ranks;
  if (ranks.empty())
    for (int r = 0; r < world_size; ++r) ranks.push_back(r);
  const std::string dir = scratch_dir();
  std::vector<Proc> procs;
  for (int r : ranks) {
    procs.emplace_back(name, r, world_size, options, dir + "/rank" + std::to_string(r) + ".log");
  }
  return procs;
}

std::vector<RankResult> run_workers(const std::string& name, int world_size,
                                    const RunOptions& options) {
  auto procs = start_workers(name, world_size, options);
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::vector<RankResult> results;
  for (auto& p : procs) results.push_back(p.wait(deadline));
  return results;
}

std::string describe(const std::vector<RankResult>& results) {
  std::string s;
  for (const auto& r : results) {
    s += r.summary() + "\n";
    if (!r.output.empty()) s += r.output + (r.output.back() == '\n' ? "" : "\n");
  }
  return s;
}

bool all_ok(const std::vector<RankResult>& results) {
  for (const auto& r : results)
    if (!r.ok()) return false;
  return !results.empty();
}

std::string scratch_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/ember_dist_XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::runtime_error("dist harness: mkdtemp failed: " + std::string(std::strerror(errno)));
  auto& s = scratch_dirs();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.dirs.push_back(templ);
  return templ;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("dist harness: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("dist harness: cannot bind a loopback port");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace ember::dist_test
