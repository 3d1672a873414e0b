// The simulator's host API: devices, memory, streams, events and kernel launches. ember's
// kernels/cuda backend calls these in a sim build where a real build calls the CUDA runtime.
//
// Note [Streams in the simulator]
// A stream is an ordered queue of host work (kernels, copies, memsets, event records, waits,
// enqueue'd callbacks) drained by its own executor thread, created on first use. A kernel's
// blocks spread over the worker pool (EMBER_SIM_WORKERS). Work on one stream runs in order;
// work on different streams overlaps, and the default stream is an ordinary stream (no legacy
// implicit synchronisation with the others). An error while work runs (a detector, an exception
// thrown by a kernel) is kept and rethrown by the stream's next stream_synchronize or
// device_synchronize, naming the kernel; later work on the stream still runs. Events record a
// host timestamp when the stream reaches them.
#pragma once

// clang-format off
#include "kernels/cuda/sim/qualifiers.h"  // before any CUDA header
// clang-format on

#include <vector_types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda/sim/error.h"

namespace ember::sim {

struct DeviceProperties {
  std::string name = "ember simulated sm_90";
  int major = 9, minor = 0;
  size_t total_memory = size_t{16} << 30;
  int multiprocessor_count = 132;
  int max_threads_per_block = 1024;
  int warp_size = 32;
  int max_grid[3] = {2147483647, 65535, 65535};
  int max_block[3] = {1024, 1024, 64};
  size_t shared_per_block = 48 << 10;
  size_t shared_per_block_optin = 227 << 10;
  size_t shared_per_multiprocessor = 228 << 10;
  int regs_per_block = 65536;
  int max_threads_per_multiprocessor = 2048;
  int clock_rate_khz = 1980000;
  int memory_bus_width = 5120;
  size_t l2_cache_bytes = 50 << 20;
};

int device_count();                              // EMBER_SIM_DEVICES, default 1
const DeviceProperties& properties(int device);  // EMBER_SIM_MEMORY sets total_memory (e.g.
                                                 // "2GiB", "512MiB"; default 16 GiB)

// Device memory: host memory counted against the device's capacity; nullptr when it would
// exceed it. New memory is filled per EMBER_SIM_FILL (nan: 0xFF bytes, the default; zero; none).
// Each allocation is its own heap block (ASan puts redzones around it).
void* device_malloc(int device, size_t bytes);
void device_free(int device, void* p);
size_t memory_in_use(int device);

// Virtual memory for expandable segments: reserve address space (counts nothing), map/unmap
// granularity-aligned ranges of it (counted; map returns false when over capacity).
size_t granularity();  // 2 MiB like a GPU
void* reserve(int device, size_t bytes);
bool map(int device, void* p, size_t bytes);
void unmap(int device, void* p, size_t bytes);
void release(int device, void* p, size_t bytes);

void* host_malloc(size_t bytes);  // "pinned" host memory
void host_free(void* p);

class Stream;
class Event;

Stream* default_stream(int device);
Stream* stream_create(int device);
void stream_destroy(Stream* stream);  // waits for its work first
int stream_device(Stream* stream);
bool stream_query(Stream* stream);        // drained?
void stream_synchronize(Stream* stream);  // rethrows the stream's pending async error
void device_synchronize(int device);      // every stream of device; rethrows
void memcpy_async(void* dst, const void* src, size_t n, Stream* stream);
void memset_async(void* dst, int value, size_t n, Stream* stream);
void enqueue(Stream* stream, std::function<void()> work);  // host work in stream order
Event* event_create(bool enable_timing);
void event_destroy(Event* event);
void event_record(Event* event, Stream* stream);
bool event_query(Event* event);
void event_synchronize(Event* event);
void stream_wait_event(Stream* stream, Event* event);
float event_elapsed_ms(Event* start, Event* end);

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): opts the
// kernel in to more than 48 KiB of dynamic shared memory (up to shared_per_block_optin).
void set_max_dynamic_shared(const void* kernel, size_t bytes);
// Runs `kernel` in fiber mode from now on (Note [Loop mode and fiber mode] in engine.h).
void use_fibers(const void* kernel);

struct LaunchConfig {
  const char* name;
  dim3 grid, block;
  size_t dynamic_shared = 0;
  Stream* stream = nullptr;  // null: default stream of device 0
};

namespace detail {
void launch_erased(const LaunchConfig& config, const void* kernel,
                   void (*invoke)(const void* kernel, void* args), std::shared_ptr<void> args);
}  // namespace detail

// Checks the launch like a GPU (threads <= 1024, block dims, grid y/z <= 65535, grid x >= 1,
// dynamic + static shared within 48 KiB or the opted-in maximum) and throws at once on a bad
// configuration; then enqueues the kernel on the stream. Errors while it runs (a detector, an
// exception thrown by the kernel) are reported at the stream's next synchronisation naming
// the kernel (EMBER_SIM_SYNC=1 runs each launch before returning and throws at once).
// The arguments are converted to the kernel's parameter types and copied, like CUDA's.
template <class... Params, class... Args>
void launch(const LaunchConfig& config, void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "launch: the number of arguments differs from the kernel's parameters");
  using Tuple = std::tuple<std::decay_t<Params>...>;
  auto tuple = std::make_shared<Tuple>(std::forward<Args>(args)...);
  auto invoke = [](const void* k, void* a) {
    auto fn = reinterpret_cast<void (*)(Params...)>(const_cast<void*>(k));
    std::apply(fn, *static_cast<Tuple*>(a));
  };
  detail::launch_erased(config, reinterpret_cast<const void*>(kernel), invoke, std::move(tuple));
}

}  // namespace ember::sim
