// ember-run: starts a data-parallel job (like torchrun).
//
//   ember-run --nproc-per-node 2 ember-train --model mlp --epochs 1
//   # two nodes: node 0 serves the store at its --master-addr:--master-port
//   node0$ ember-run --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr node0 PROGRAM ...
//   node1$ ember-run --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr node0 PROGRAM ...
//
// Each launcher starts --nproc-per-node copies of PROGRAM with RANK (node_rank * nproc +
// local rank), WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node), MASTER_ADDR,
// MASTER_PORT, EMBER_STORE_HOSTED=1 (distributed/env.h: the launcher serves the store) and
// EMBER_RESTART_COUNT set. Node 0's launcher hosts the TCPStoreServer on every interface at
// --master-port (0: a free one, single node only); every launcher is a client of it.
//
// Note [ember-run's protocol]
// All launchers meet in the store under "ember-run/<attempt>/": each sets joined/<node> and
// waits up to --rdzv-timeout for the others (the error names the nodes missing). Children run;
// a launcher whose child exits abnormally publishes the root cause with compare_set on
// "failed" (the first one wins, so every node reports the same cause), and every launcher
// watches that key (every 100 ms) while its children run. On a failure each launcher sends
// SIGTERM to its children, SIGKILL after --grace seconds, and either restarts the group (a new
// attempt, up to --max-restarts times) or prints the root cause and exits with its status (the
// exit code, or 128 + the signal). A node whose children all succeed sets done/<node> and
// waits for the other nodes' done keys (or a failure). Before exiting, nodes other than 0 set
// left/<node> and node 0 waits for them (a few seconds at most), so that the store outlives
// everyone's last call. A launcher that loses the store stops its children and exits 1.
// SIGINT / SIGTERM to a launcher are forwarded to its children and end the job without a
// restart (exit 128 + the signal).
//
// Exit status: 0 when every rank exited 0; the root cause's status; 1 for a launcher error
// (rendezvous timeout, lost store); 2 for bad arguments; 127 when PROGRAM cannot be found.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_values.h"
#include "distributed/error.h"
#include "distributed/tcp_store.h"
#include "run_group.h"

namespace {

using namespace ember;
using examples::ChildExit;
using examples::ChildSpec;
using examples::WorkerGroup;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  milliseconds rdzv_timeout{300000};
  milliseconds grace{5000};
  int max_restarts = 0;
  std::vector<std::string> command;
};

int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const char c = static_cast<char>(sig);
  const ssize_t ignored = ::write(g_signal_pipe[1], &c, 1);
  (void)ignored;
  errno = saved;
}

void install_signals() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe failed");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGCHLD}) ::sigaction(sig, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, nullptr);
}

// The first SIGINT / SIGTERM received since the last call (0: none); SIGCHLD is only a wake-up.
int take_signal() {
  int got = 0;
  unsigned char buf[64];  // the handler writes each signal number as one byte
  for (;;) {
    const ssize_t n = ::read(g_signal_pipe[0], buf, sizeof buf);
    if (n <= 0) return got;
    for (ssize_t i = 0; i < n; ++i)
      if (got == 0 && (buf[i] == SIGINT || buf[i] == SIGTERM)) got = buf[i];
  }
}

void say(const std::string& s) { std::fprintf(stderr, "ember-run: %s\n", s.c_str()); }

std::string key(int attempt, const std::string& rest) {
  return "ember-run/" + std::to_string(attempt) + "/" + rest;
}

// A failure as stored under "failed": "<status> <final 0|1> <description>".
struct Failure {
  int status = 1;
  bool final = false;  // no restart (an interrupt)
  std::string text;
};

std::string encode(const Failure& f) {
  return std::to_string(f.status) + " " + (f.final ? "1" : "0") + " " + f.text;
}

Failure decode(const std::string& s) {
  Failure f;
  const size_t a = s.find(' ');
  const size_t b = a == std::string::npos ? a : s.find(' ', a + 1);
  if (b == std::string::npos) {
    f.text = s;
    return f;
  }
  f.status = std::atoi(s.substr(0, a).c_str());
  f.final = s.substr(a + 1, b - a - 1) == "1";
  f.text = s.substr(b + 1);
  return f;
}

class Launcher {
 public:
  explicit Launcher(Options o) : o_(std::move(o)) {}
  int run();

 private:
  void rendezvous(int attempt);
  std::vector<ChildSpec> specs(int attempt, const std::string& path) const;
  // Runs one attempt; returns the job's failure, or none (status 0) on success.
  Failure run_attempt(int attempt, const std::string& path);
  // Publishes `f` unless another node published first; returns the one that won.
  Failure publish(int attempt, const Failure& f);
  bool remote_failure(int attempt, Failure& f);
  void leave(int attempt);

  Options o_;
  std::unique_ptr<dist::TCPStoreServer> server_;
  std::unique_ptr<dist::TCPStore> store_;
  int port_ = 0;
};

std::vector<ChildSpec> Launcher::specs(int attempt, const std::string& path) const {
  std::vector<std::string> base;
  static const char* const kOurs[] = {
      "RANK",        "WORLD_SIZE",  "LOCAL_RANK",         "LOCAL_WORLD_SIZE",   "GROUP_RANK",
      "MASTER_ADDR", "MASTER_PORT", "EMBER_STORE_HOSTED", "EMBER_RESTART_COUNT"};
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool ours = false;
    for (const char* k : kOurs) ours = ours || name == k;
    if (!ours) base.push_back(entry);
  }
  std::vector<ChildSpec> out;
  for (int local = 0; local < o_.nproc; ++local) {
    ChildSpec s;
    s.rank = o_.node_rank * o_.nproc + local;
    s.path = path;
    s.argv = o_.command;
    s.env = base;
    auto set = [&](const char* k, const std::string& v) {
      s.env.push_back(std::string(k) + "=" + v);
    };
    set("RANK", std::to_string(s.rank));
    set("WORLD_SIZE", std::to_string(o_.nnodes * o_.nproc));
    set("LOCAL_RANK", std::to_string(local));
    set("LOCAL_WORLD_SIZE", std::to_string(o_.nproc));
    set("GROUP_RANK", std::to_string(o_.node_rank));
    set("MASTER_ADDR", o_.master_addr);
    set("MASTER_PORT", std::to_string(port_));
    set("EMBER_STORE_HOSTED", "1");
    set("EMBER_RESTART_COUNT", std::to_string(attempt));
    out.push_back(std::move(s));
  }
  return out;
}

void Launcher::rendezvous(int attempt) {
  store_->set(key(attempt, "joined/" + std::to_string(o_.node_rank)), "1");
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(o_.nnodes));
  for (int n = 0; n < o_.nnodes; ++n) keys.push_back(key(attempt, "joined/" + std::to_string(n)));
  const auto deadline = Clock::now() + o_.rdzv_timeout;
  for (;;) {
    if (store_->check(keys)) return;
    if (const int sig = take_signal())
      throw std::runtime_error(std::string("interrupted by SIG") + sigabbrev_np(sig));
    if (Clock::now() >= deadline) break;
    ::usleep(50000);
  }
  std::string missing;
  for (int n = 0; n < o_.nnodes; ++n) {
    if (!store_->check({keys[n]})) missing += (missing.empty() ? "" : ", ") + std::to_string(n);
  }
  throw std::runtime_error("rendezvous timed out after " +
                           std::to_string(o_.rdzv_timeout.count() / 1000.0).substr(0, 5) +
                           " s at " + o_.master_addr + ":" + std::to_string(port_) + ": node(s) " +
                           missing + " of " + std::to_string(o_.nnodes) + " did not join");
}

Failure Launcher::publish(int attempt, const Failure& f) {
  const std::string mine = encode(f);
  try {
    const std::string won =
        dist::to_string(store_->compare_set(key(attempt, "failed"), {}, dist::to_bytes(mine)));
    return decode(won);
  } catch (const dist::Error& e) {
    say("cannot publish the failure to the store: " + std::string(e.what()));
    return f;
  }
}

bool Launcher::remote_failure(int attempt, Failure& f) {
  if (!store_->check({key(attempt, "failed")})) return false;
  f = decode(store_->get_string(key(attempt, "failed")));
  return true;
}

Failure Launcher::run_attempt(int attempt, const std::string& path) {
  WorkerGroup group;
  group.start(specs(attempt, path));
  auto next_check = Clock::now();
  bool done_set = false;
  for (;;) {
    for (const ChildExit& e : group.poll(milliseconds(100), g_signal_pipe[0])) {
      if (e.ok()) continue;
      Failure f;
      f.status = e.status();
      f.text = e.describe();
      if (o_.nnodes > 1) f.text += " on node " + std::to_string(o_.node_rank);
      Failure won = publish(attempt, f);
      group.stop(SIGTERM, o_.grace);
      return won;
    }
    if (const int sig = take_signal()) {
      say(std::string("got SIG") + sigabbrev_np(sig) + ", stopping the workers");
      Failure f;
      f.status = 128 + sig;
      f.final = true;
      f.text = "node " + std::to_string(o_.node_rank) + "'s launcher was interrupted by SIG" +
               sigabbrev_np(sig);
      group.stop(sig, o_.grace);
      publish(attempt, f);
      return f;  // this node reports its own interrupt
    }
    if (group.all_exited() && !done_set) {
      if (o_.nnodes == 1) return Failure{0, false, ""};
      store_->set(key(attempt, "done/" + std::to_string(o_.node_rank)), "1");
      done_set = true;
    }
    if (o_.nnodes > 1 && Clock::now() >= next_check) {
      next_check = Clock::now() + milliseconds(100);
      Failure f;
      try {
        if (remote_failure(attempt, f)) {
          group.stop(SIGTERM, o_.grace);
          return f;
        }
        if (done_set) {
          std::vector<std::string> keys;
          keys.reserve(static_cast<size_t>(o_.nnodes));
          for (int n = 0; n < o_.nnodes; ++n)
            keys.push_back(key(attempt, "done/" + std::to_string(n)));
          if (store_->check(keys)) return Failure{0, false, ""};
        }
      } catch (const dist::Error& e) {
        // A worker that failed while the store did not answer (a lost link fails both) is the
        // root cause this node can see; the lost store only explains the rest.
        Failure own{1, true, "lost the store: " + std::string(e.what())};
        for (const ChildExit& x : group.poll(milliseconds(0), g_signal_pipe[0])) {
          if (x.ok() || own.status != 1 || own.text.rfind("lost", 0) != 0) continue;
          own.status = x.status();
          own.text = x.describe() + " on node " + std::to_string(o_.node_rank) +
                     " (and then lost the store: " + e.what() + ")";
        }
        group.stop(SIGTERM, o_.grace);
        return own;
      }
    }
  }
}

void Launcher::leave(int attempt) {
  try {
    if (o_.node_rank != 0) {
      store_->set(key(attempt, "left/" + std::to_string(o_.node_rank)), "1");
      return;
    }
    std::vector<std::string> keys;
    for (int n = 1; n < o_.nnodes; ++n) keys.push_back(key(attempt, "left/" + std::to_string(n)));
    if (!keys.empty()) store_->wait(keys, std::min(o_.rdzv_timeout, milliseconds(10000)));
  } catch (const dist::Error&) {
    // A node that is gone cannot read the store any more: nothing to wait for.
  }
}

int Launcher::run() {
  const std::string path = examples::find_program(o_.command[0]);
  if (path.empty()) {
    say("cannot find the program '" + o_.command[0] + "'");
    return 127;
  }
  install_signals();
  port_ = o_.master_port;
  try {
    if (o_.node_rank == 0) {
      server_ = std::make_unique<dist::TCPStoreServer>("", o_.master_port);
      port_ = server_->port();
    }
    dist::TCPStoreOptions so;
    so.timeout = o_.rdzv_timeout;
    store_ = std::make_unique<dist::TCPStore>(o_.master_addr, port_, so);
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
  for (int attempt = 0;; ++attempt) {
    try {
      rendezvous(attempt);
    } catch (const std::exception& e) {
      say(e.what());
      return 1;
    }
    Failure f;
    try {
      f = run_attempt(attempt, path);
    } catch (const std::exception& e) {
      say(e.what());
      return 1;
    }
    if (f.status == 0) {
      leave(attempt);
      return 0;
    }
    if (!f.final && attempt < o_.max_restarts) {
      say(f.text);
      say("restarting the workers (restart " + std::to_string(attempt + 1) + " of " +
          std::to_string(o_.max_restarts) + ")");
      continue;
    }
    say(f.text);
    leave(attempt);
    return f.status;
  }
}

}  // namespace

// The setup before the first try only throws on a programming error (a malformed option),
// which should end the program loudly.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  Options o;
  std::string nproc = "1", nnodes = "1", node_rank = "0", port = "29500", rdzv = "300", grace = "5",
              restarts = "0";
  CLI::App app{"ember-run: starts PROGRAM once per rank, like torchrun"};
  app.add_option("--nproc-per-node", nproc, "processes on this node")->capture_default_str();
  app.add_option("--nnodes", nnodes, "nodes in the job")->capture_default_str();
  app.add_option("--node-rank", node_rank, "this node, 0 to nnodes-1")->capture_default_str();
  app.add_option("--master-addr", o.master_addr, "the address of node 0 (the store)")
      ->capture_default_str();
  app.add_option("--master-port", port, "the store's port (0: a free one, one node only)")
      ->capture_default_str();
  app.add_option("--rdzv-timeout", rdzv, "seconds for all nodes to meet")->capture_default_str();
  app.add_option("--grace", grace, "seconds between SIGTERM and SIGKILL when stopping")
      ->capture_default_str();
  app.add_option("--max-restarts", restarts, "restarts of the whole group after a failure")
      ->capture_default_str();
  app.prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    using examples::parse_int;
    using examples::parse_real;
    o.nproc = static_cast<int>(parse_int("--nproc-per-node", nproc, 1, 4096));
    o.nnodes = static_cast<int>(parse_int("--nnodes", nnodes, 1, 65536));
    o.node_rank = static_cast<int>(parse_int("--node-rank", node_rank, 0, o.nnodes - 1));
    o.master_port = static_cast<int>(parse_int("--master-port", port, 0, 65535));
    o.rdzv_timeout = milliseconds(
        static_cast<int64_t>(1000 * parse_real("--rdzv-timeout", rdzv, 0.0, 86400.0 * 7, false)));
    o.grace =
        milliseconds(static_cast<int64_t>(1000 * parse_real("--grace", grace, 0.0, 3600.0, true)));
    o.max_restarts = static_cast<int>(parse_int("--max-restarts", restarts, 0, 1000000));
    if (o.master_port == 0 && o.nnodes > 1) {
      throw examples::UsageError("--master-port 0 (a free port) needs --nnodes 1");
    }
    if (o.master_addr.empty()) throw examples::UsageError("--master-addr must not be empty");
    o.command = app.remaining();
    if (o.command.empty())
      throw examples::UsageError("no PROGRAM given (ember-run [options] PROGRAM ARGS...)");
  } catch (const examples::UsageError& e) {
    std::fprintf(stderr, "ember-run: error: %s\n", e.what());
    return 2;
  }
  return Launcher(o).run();
}
