#include "kernels/cuda/sim/options.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "kernels/cuda/sim/error.h"

namespace ember::sim {

void fail(const std::string& message) { throw Error(message); }

namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

long env_int(const char* name, long fallback) {
  const char* value = env(name);
  if (!value) return fallback;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (*end != '\0') fail(std::string(name) + "=" + value + " is not an integer");
  return parsed;
}

Options from_environment() {
  Options o;
#if defined(__SANITIZE_ADDRESS__)
  o.stack_size = 1 << 20;  // ASan's redzones make frames several times larger
#endif
  unsigned hw = std::thread::hardware_concurrency();
  o.workers = static_cast<int>(env_int("EMBER_SIM_WORKERS", hw ? hw : 1));
  if (o.workers < 1) fail("EMBER_SIM_WORKERS must be >= 1");
  if (const char* s = env("EMBER_SIM_SCHEDULE")) {
    std::string v = s;
    if (v == "forward")
      o.schedule = Schedule::forward;
    else if (v == "reverse")
      o.schedule = Schedule::reverse;
    else if (v == "shuffle")
      o.schedule = Schedule::shuffle;
    else
      fail("EMBER_SIM_SCHEDULE=" + v + ": expected forward, reverse or shuffle");
  }
  o.seed = static_cast<uint64_t>(env_int("EMBER_SIM_SEED", 1));
  o.racecheck = env_int("EMBER_SIM_RACECHECK", 1) != 0;
  if (const char* s = env("EMBER_SIM_FILL")) {
    std::string v = s;
    if (v == "nan")
      o.fill = Fill::nan;
    else if (v == "zero")
      o.fill = Fill::zero;
    else if (v == "none")
      o.fill = Fill::none;
    else
      fail("EMBER_SIM_FILL=" + v + ": expected nan, zero or none");
  }
  o.force_fibers = env_int("EMBER_SIM_FIBERS", 0) != 0;
  o.sync = env_int("EMBER_SIM_SYNC", 0) != 0;
  if (const char* s = env("EMBER_SIM_STACK")) o.stack_size = parse_bytes(s, "EMBER_SIM_STACK");
  if (o.stack_size < (16 << 10)) fail("EMBER_SIM_STACK must be at least 16KiB");
  return o;
}

std::mutex options_mutex;

Options& current() {
  static Options options = from_environment();
  return options;
}

}  // namespace

const Options& options() {
  std::lock_guard<std::mutex> lock(options_mutex);
  return current();
}

void set_options(const Options& options) {
  if (options.workers < 1) fail("set_options: workers must be >= 1");
  if (options.stack_size < (16 << 10)) fail("set_options: stack_size must be at least 16KiB");
  std::lock_guard<std::mutex> lock(options_mutex);
  current() = options;
}

size_t parse_bytes(const std::string& text, const char* what) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) fail(std::string(what) + "=" + text + ": expected a size like 2GiB or 512MiB");
  unsigned long long value = std::stoull(text.substr(0, i));
  std::string unit = text.substr(i);
  unsigned long long scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB" || unit == "KB")
    scale = 1ull << 10;
  else if (unit == "M" || unit == "MiB" || unit == "MB")
    scale = 1ull << 20;
  else if (unit == "G" || unit == "GiB" || unit == "GB")
    scale = 1ull << 30;
  else if (unit == "T" || unit == "TiB" || unit == "TB")
    scale = 1ull << 40;
  else
    fail(std::string(what) + "=" + text + ": unknown unit '" + unit + "' (B, KiB, MiB, GiB, TiB)");
  return static_cast<size_t>(value * scale);
}

const char* to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::forward:
      return "forward";
    case Schedule::reverse:
      return "reverse";
    case Schedule::shuffle:
      return "shuffle";
  }
  return "?";
}

}  // namespace ember::sim
