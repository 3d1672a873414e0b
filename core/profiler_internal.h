#pragma once
// What the profiler's recording side (core/profiler.cpp) hands to its report
// (core/profiler_report.cpp): the raw events of each thread, as recorded. Not installed API.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/record_function.h"
#include "core/stream.h"

namespace ember::profiler::detail {

// One event as a thread recorded it. Times are steady-clock nanoseconds.
struct RawEvent {
  const char* name = nullptr;  // static storage; or null, and then `owned` is the name
  std::string owned;
  Category category = Category::user;
  uint8_t device_a = kNoDevice;  // kernels: the stub's device (a copy's destination)
  uint8_t device_b = kNoDevice;  // copies: the source device
  int32_t parent = -1;           // index in the same thread's events of the enclosing range
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // 0 while open
  int64_t sequence_nr = -1;
  int64_t bytes = 0;  // memory events
  Device device;      // memory events
  std::string shapes;
};

// A CUDA kernel timed by two events, launched while `parent` was the innermost open range.
struct DeviceRecord {
  const char* name = nullptr;
  int32_t parent = -1;
  Stream stream;
  ember::Event start{DeviceType::CUDA, true};
  ember::Event end{DeviceType::CUDA, true};
};

// The device clock's origin for one device: an event recorded when the session started, and the
// host time (steady-clock ns) at which it completed.
struct DeviceOrigin {
  Device device;
  ember::Event event{DeviceType::CUDA, true};
  int64_t host_ns = 0;
};

// What one thread recorded in one session.
struct ThreadEvents {
  int thread = 0;
  std::vector<RawEvent> events;
  std::vector<std::unique_ptr<DeviceRecord>> device;
};

// Everything a session recorded, taken out of the threads' buffers at its stop.
struct Recording {
  int64_t start_ns = 0;
  int64_t stop_ns = 0;
  std::vector<ThreadEvents> threads;
  std::vector<std::unique_ptr<DeviceOrigin>> origins;
};

int64_t now_ns();

}  // namespace ember::profiler::detail
