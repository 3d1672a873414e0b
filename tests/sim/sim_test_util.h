// Helpers for the simulator's tests: options for one test, and running a launch to completion.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "kernels/cuda/sim/sim.h"

namespace sim_test {

// Sets the simulator's options for the scope of a test and restores them afterwards.
class ScopedOptions {
 public:
  explicit ScopedOptions(const ember::sim::Options& o) : saved_(ember::sim::options()) {
    ember::sim::set_options(o);
  }
  ~ScopedOptions() { ember::sim::set_options(saved_); }

 private:
  ember::sim::Options saved_;
};

inline ember::sim::Options base_options() {
  ember::sim::Options o = ember::sim::options();
  o.schedule = ember::sim::Schedule::forward;
  o.racecheck = true;
  o.fill = ember::sim::Fill::nan;
  o.sync = false;
  return o;
}

// Waits for the default stream of device 0; returns the error message ("" when none).
inline std::string sync_error() {
  try {
    ember::sim::stream_synchronize(ember::sim::default_stream(0));
  } catch (const ember::sim::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sim_test
