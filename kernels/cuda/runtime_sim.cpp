// kernels/cuda/runtime.h on ember's CUDA simulator (EMBER_CUDA=sim): each call forwards to
// kernels/cuda/sim/runtime.h, and the simulator's errors (ember::sim::Error, which names the
// kernel) become ember::Error naming the ember op too.

#include <exception>
#include <string>

#include "core/error.h"
#include "core/record_function.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sim/runtime.h"
#include "kernels/cuda/sync_debug.h"

namespace ember::kernels::cuda {

namespace {

sim::Stream* as_stream(NativeStream s) { return static_cast<sim::Stream*>(s); }
sim::Event* as_event(NativeEvent e) { return static_cast<sim::Event*>(e); }

// Runs a simulator call; its error becomes an ember::Error naming op.
template <class F>
decltype(auto) forward(const char* op, F&& f) {
  try {
    return f();
  } catch (const sim::Error& e) {
    EMBER_CHECK(false, op, ": ", e.what());
    throw;  // unreachable
  }
}

}  // namespace

int device_count() { return sim::device_count(); }
const char* no_device_reason() { return ""; }

DeviceProperties properties(int device) {
  const sim::DeviceProperties& p = sim::properties(device);
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.total_memory = static_cast<int64_t>(p.total_memory);
  out.multiprocessor_count = p.multiprocessor_count;
  out.max_threads_per_block = p.max_threads_per_block;
  out.warp_size = p.warp_size;
  out.shared_memory_per_block = static_cast<int64_t>(p.shared_per_block);
  out.shared_memory_per_block_optin = static_cast<int64_t>(p.shared_per_block_optin);
  out.is_simulated = true;
  return out;
}

// The simulator has no current device: every call names its device or stream.
void set_device(int) {}

void device_synchronize(int device, const char* op) {
  const profiler::RecordFunction wait("cudaDeviceSynchronize");  // the host waits
  forward(op, [&] { sim::device_synchronize(device); });
  note_host_wait(op, device);
}

void* device_malloc(int device, size_t bytes) {
  return forward("cuda allocator", [&] { return sim::device_malloc(device, bytes); });
}
void device_free(int device, void* p) {
  forward("cuda allocator", [&] { sim::device_free(device, p); });
}
size_t total_memory(int device) { return sim::properties(device).total_memory; }

bool supports_virtual_memory() { return true; }
size_t vm_granularity() { return sim::granularity(); }
void* vm_reserve(int device, size_t bytes) {
  return forward("cuda allocator", [&] { return sim::reserve(device, bytes); });
}
bool vm_map(int device, void* p, size_t bytes) {
  return forward("cuda allocator", [&] { return sim::map(device, p, bytes); });
}
void vm_unmap(int device, void* p, size_t bytes) {
  forward("cuda allocator", [&] { sim::unmap(device, p, bytes); });
}
void vm_release(int device, void* p, size_t bytes) {
  forward("cuda allocator", [&] { sim::release(device, p, bytes); });
}

void* host_malloc(size_t bytes) {
  return forward("pin_memory", [&] { return sim::host_malloc(bytes == 0 ? 1 : bytes); });
}
void host_free(void* p) { sim::host_free(p); }

NativeStream default_native_stream(int device) { return sim::default_stream(device); }
NativeStream create_native_stream(int device) {
  return forward("new_stream", [&] { return sim::stream_create(device); });
}

bool stream_query(NativeStream s) { return sim::stream_query(as_stream(s)); }
void stream_synchronize(NativeStream s, const char* op) {
  const profiler::RecordFunction wait("cudaStreamSynchronize");  // the host waits
  forward(op, [&] { sim::stream_synchronize(as_stream(s)); });
  if (!QuietWait::active()) note_host_wait(op, sim::stream_device(as_stream(s)));
}
void note_launch(NativeStream, const char*) {}  // the simulator's errors name their kernel

NativeEvent event_create(int, bool enable_timing) { return sim::event_create(enable_timing); }
void event_destroy(NativeEvent e) noexcept { sim::event_destroy(as_event(e)); }
void event_record(NativeEvent e, NativeStream s) {
  forward("Event::record", [&] { sim::event_record(as_event(e), as_stream(s)); });
}
bool event_query(NativeEvent e) { return sim::event_query(as_event(e)); }
void event_synchronize(NativeEvent e) {
  forward("Event::synchronize", [&] { sim::event_synchronize(as_event(e)); });
}
void stream_wait_event(NativeStream s, NativeEvent e) {
  forward("Event::block", [&] { sim::stream_wait_event(as_stream(s), as_event(e)); });
}
double event_elapsed_ms(NativeEvent start, NativeEvent end) {
  return forward("Event::elapsed_ms",
                 [&] { return sim::event_elapsed_ms(as_event(start), as_event(end)); });
}

void memcpy_async(void* dst, const void* src, size_t n, NativeStream s, const char* op) {
  if (n == 0) return;
  forward(op, [&] { sim::memcpy_async(dst, src, n, as_stream(s)); });
}
void memset_async(void* dst, int value, size_t n, NativeStream s, const char* op) {
  if (n == 0) return;
  forward(op, [&] { sim::memset_async(dst, value, n, as_stream(s)); });
}

}  // namespace ember::kernels::cuda
