// The simulator's knobs: read once from the environment, changeable by tests and tools.
//
//   EMBER_SIM_WORKERS=N        worker threads running blocks (default: hardware threads;
//                              1 = fully deterministic)
//   EMBER_SIM_SCHEDULE=forward|reverse|shuffle   order of blocks and of threads resuming after
//                              each barrier (default forward); EMBER_SIM_SEED=N for shuffle
//   EMBER_SIM_RACECHECK=0|1    shared-memory race detector (default on)
//   EMBER_SIM_FILL=nan|zero|none   fill of new device memory and of shared memory (default nan:
//                              0xFF bytes, a NaN in every float type)
//   EMBER_SIM_FIBERS=1         every kernel runs its threads as fibers (no loop mode)
//   EMBER_SIM_SYNC=1           each launch runs before returning and throws at once
//   EMBER_SIM_STACK=bytes      fiber stack size ("256KiB"; default 256 KiB, 1 MiB under ASan)
//   EMBER_SIM_DEVICES=N, EMBER_SIM_MEMORY=2GiB   see runtime.h
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::sim {

enum class Schedule { forward, reverse, shuffle };
enum class Fill { nan, zero, none };

struct Options {
  int workers = 1;
  Schedule schedule = Schedule::forward;
  uint64_t seed = 1;
  bool racecheck = true;
  Fill fill = Fill::nan;
  bool force_fibers = false;
  bool sync = false;
  size_t stack_size = 256 << 10;
};

// The current options (the environment's, unless set_options changed them).
const Options& options();
// Replaces the options for launches that start afterwards (tests use this instead of setenv).
void set_options(const Options& options);

// Parses "2GiB", "512MiB", "64KiB", "1G", "4096"; throws Error naming `what` otherwise.
size_t parse_bytes(const std::string& text, const char* what);

const char* to_string(Schedule schedule);

}  // namespace ember::sim
