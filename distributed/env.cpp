#include "distributed/env.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "distributed/error.h"
#include "distributed/hash_store.h"
#include "distributed/prefix_store.h"
#include "distributed/tcp_store.h"

namespace ember::dist {

namespace {

constexpr const char* kOp = "rank_info_from_env";

[[noreturn]] void bad(const std::string& detail) {
  throw Error(ErrorKind::Usage, kOp, -1, -1, -1, detail);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// A decimal integer in [min, max]: no sign other than '-', no spaces, no trailing text.
int parse_int(const char* name, const std::string& text, int min, int max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  const bool digits = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) ||
                                        (text[0] == '-' && text.size() > 1));
  if (!digits || errno != 0 || end != text.c_str() + text.size()) {
    bad(std::string(name) + "='" + text.substr(0, 64) + "' is not an integer");
  }
  if (v < min || v > max) {
    bad(std::string(name) + "=" + text + " is out of range (" + std::to_string(min) + ".." +
        std::to_string(max) + ")");
  }
  return static_cast<int>(v);
}

int required(const char* name, int min, int max) {
  auto v = env(name);
  if (!v) bad(std::string(name) + " is not set");
  return parse_int(name, *v, min, max);
}

int optional_int(const char* name, int fallback, int min, int max) {
  auto v = env(name);
  return v ? parse_int(name, *v, min, max) : fallback;
}

constexpr int kMaxWorld = 1 << 24;

// Fills local_rank / local_world_size from two variables, defaulting to one node.
void local_from(RankInfo& info, const char* rank_var, const char* size_var) {
  info.local_world_size = optional_int(size_var, info.world_size, 1, info.world_size);
  info.local_rank = optional_int(rank_var, info.rank, 0, kMaxWorld);
}

void from_slurm(RankInfo& info) {
  info.rank = required("SLURM_PROCID", 0, kMaxWorld);
  info.world_size = required("SLURM_NTASKS", 1, kMaxWorld);
  info.local_rank = optional_int("SLURM_LOCALID", 0, 0, kMaxWorld);
  if (auto v = env("SLURM_NTASKS_PER_NODE")) {
    info.local_world_size = slurm_tasks_per_node(*v, "SLURM_NTASKS_PER_NODE").at(0);
  } else if (auto s = env("SLURM_STEP_TASKS_PER_NODE")) {
    const auto per_node = slurm_tasks_per_node(*s, "SLURM_STEP_TASKS_PER_NODE");
    const int node = optional_int("SLURM_NODEID", 0, 0, kMaxWorld);
    if (node >= static_cast<int>(per_node.size())) {
      bad("SLURM_NODEID=" + std::to_string(node) + " but SLURM_STEP_TASKS_PER_NODE='" + *s +
          "' lists " + std::to_string(per_node.size()) + " nodes");
    }
    info.local_world_size = per_node[node];
  } else {
    info.local_world_size = info.world_size;
  }
  if (!env("MASTER_ADDR")) {
    const char* var = env("SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                      : env("SLURM_NODELIST")   ? "SLURM_NODELIST"
                                                : nullptr;
    if (var != nullptr) info.master_addr = slurm_first_host(*env(var), var);
  }
}

}  // namespace

std::vector<int> slurm_tasks_per_node(const std::string& spec, const char* variable) {
  std::vector<int> out;
  size_t i = 0;
  auto fail = [&] { bad(std::string(variable) + "='" + spec + "' is not a tasks-per-node list"); };
  while (i < spec.size()) {
    size_t j = i;
    while (j < spec.size() && std::isdigit(static_cast<unsigned char>(spec[j]))) ++j;
    if (j == i || j - i > 7) fail();
    const int count = std::stoi(spec.substr(i, j - i));
    int repeat = 1;
    if (j < spec.size() && spec[j] == '(') {
      if (j + 1 >= spec.size() || spec[j + 1] != 'x') fail();
      size_t k = j + 2;
      const size_t digits = k;
      while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k]))) ++k;
      if (k == digits || k - digits > 7 || k >= spec.size() || spec[k] != ')') fail();
      repeat = std::stoi(spec.substr(digits, k - digits));
      j = k + 1;
    }
    if (count < 1 || repeat < 1 || out.size() + repeat > static_cast<size_t>(kMaxWorld)) fail();
    out.insert(out.end(), static_cast<size_t>(repeat), count);
    if (j < spec.size()) {
      if (spec[j] != ',' || j + 1 == spec.size()) fail();
      ++j;
    }
    i = j;
  }
  if (out.empty()) fail();
  return out;
}

std::string slurm_first_host(const std::string& nodelist, const char* variable) {
  auto fail = [&](const char* why) {
    bad(std::string(variable) + "='" + nodelist + "' is not a Slurm node list (" + why + ")");
  };
  std::string host;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    const char c = nodelist[i];
    if (c == ']') fail("a ']' without '['");
    if (c != '[') {
      host += c;
      ++i;
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) fail("a '[' without ']'");
    // The first entry of the range list: up to '-' or ','.
    const std::string inner = nodelist.substr(i + 1, close - i - 1);
    const std::string first = inner.substr(0, inner.find_first_of("-,"));
    if (first.empty()) fail("an empty range");
    for (char d : first)
      if (!std::isdigit(static_cast<unsigned char>(d))) fail("a range that is not numeric");
    host += first;
    i = close + 1;
  }
  if (host.empty()) fail("no host");
  return host;
}

RankInfo rank_info_from_env() {
  RankInfo info;
  if (env("RANK") || env("WORLD_SIZE")) {
    info.source = "env";
    info.world_size = required("WORLD_SIZE", 1, kMaxWorld);
    info.rank = required("RANK", 0, kMaxWorld);
    local_from(info, "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  } else if (env("OMPI_COMM_WORLD_RANK") || env("OMPI_COMM_WORLD_SIZE")) {
    info.source = "ompi";
    info.world_size = required("OMPI_COMM_WORLD_SIZE", 1, kMaxWorld);
    info.rank = required("OMPI_COMM_WORLD_RANK", 0, kMaxWorld);
    local_from(info, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (env("PMI_RANK") || env("PMI_SIZE")) {
    info.source = "pmi";
    info.world_size = required("PMI_SIZE", 1, kMaxWorld);
    info.rank = required("PMI_RANK", 0, kMaxWorld);
    local_from(info, "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
  } else if (env("SLURM_PROCID")) {
    info.source = "slurm";
    from_slurm(info);
  }
  auto check_below = [](const char* what, int v, const char* of, int n) {
    if (v >= n) {
      bad(std::string(what) + " " + std::to_string(v) + " is not below " + of + " " +
          std::to_string(n));
    }
  };
  check_below("the rank", info.rank, "the world size", info.world_size);
  check_below("the local rank", info.local_rank, "the local world size", info.local_world_size);
  check_below("the local world size", info.local_world_size - 1, "the world size", info.world_size);
  if (auto addr = env("MASTER_ADDR")) {
    if (addr->empty()) bad("MASTER_ADDR is empty");
    info.master_addr = *addr;
  } else if (info.source != "slurm" && info.local_world_size < info.world_size) {
    bad("MASTER_ADDR is not set, and the job spans " + std::to_string(info.world_size) +
        " ranks with " + std::to_string(info.local_world_size) +
        " on this node (where is rank 0's store?)");
  }
  info.master_port = optional_int("MASTER_PORT", 29500, 1, 65535);
  info.restart_count = optional_int("EMBER_RESTART_COUNT", 0, 0, 1 << 30);
  if (auto h = env("EMBER_STORE_HOSTED")) info.store_hosted = !h->empty() && *h != "0";
  return info;
}

std::shared_ptr<Store> store_from_env(const RankInfo& info, std::chrono::milliseconds timeout) {
  std::shared_ptr<Store> base;
  if (info.world_size == 1 && !info.store_hosted) {
    base = std::make_shared<HashStore>(timeout);
  } else {
    TCPStoreOptions o;
    o.is_server = info.rank == 0 && !info.store_hosted;
    o.world_size = info.store_hosted ? -1 : info.world_size;
    o.timeout = timeout;
    base = std::make_shared<TCPStore>(info.master_addr, info.master_port, o);
  }
  return std::make_shared<PrefixStore>("run" + std::to_string(info.restart_count), base);
}

}  // namespace ember::dist
