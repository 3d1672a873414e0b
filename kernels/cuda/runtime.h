#pragma once
// ember's host API for its CUDA backend: the few runtime calls the backend makes (devices,
// memory, streams, events, copies), each checked. There are two implementations behind this one
// header, chosen by the build (DESIGN.md "Devices and the CUDA simulator"):
//   runtime_real.cpp  EMBER_CUDA=real: the CUDA runtime and driver (cudaMallocAsync is not used:
//                     the caching allocator in core/cuda_caching_allocator.h does that work);
//   runtime_sim.cpp   EMBER_CUDA=sim: ember's CUDA simulator (kernels/cuda/sim/runtime.h).
// Nothing else in ember calls cudaXxx or ember::sim directly, so the simulator never needs to
// re-implement the CUDA runtime's symbols, and a reader finds every call the backend makes here.
//
// Note [Checked CUDA calls]
// Every call is checked: a failure raises ember::Error naming the ember op that made it and the
// call ("copy_: cudaMemcpyAsync failed: an illegal memory access was encountered"). A kernel
// fails asynchronously: its launch returns, and the error surfaces at a later synchronisation.
// So each stream remembers the last kernel launched on it, and an error met while synchronising
// names it ("... the last kernel launched on stream 0 of cuda:0 was vectorized_kernel<AddOp>");
// EMBER_CUDA_LAUNCH_BLOCKING=1 synchronises after every launch so the error names the culprit
// at once (the simulator's errors always name their kernel; EMBER_SIM_SYNC=1 is its blocking
// mode).

#include <cstddef>
#include <cstdint>

#include "core/stream.h"

namespace ember::kernels::cuda {

// A runtime stream or event handle: cudaStream_t / cudaEvent_t, or the simulator's.
using NativeStream = void*;
using NativeEvent = void*;

// ---- devices ----------------------------------------------------------------------------------
// The usable devices; 0 when there is no driver or no GPU (never an error: a CPU-only machine
// running a real build skips its CUDA tests).
int device_count();
// Why device_count() is 0 ("no CUDA-capable device is detected"), or empty.
const char* no_device_reason();
DeviceProperties properties(int device);
// properties(device).multiprocessor_count, looked up once per device (cudaGetDeviceProperties
// takes milliseconds, and kernels size their grids with it on every launch).
int multiprocessor_count(int device);
void set_device(int device);
void device_synchronize(int device, const char* op);
// Whether EMBER_CUDA_LAUNCH_BLOCKING=1 asks for a synchronisation after every launch.
bool launch_blocking();

// ---- memory -----------------------------------------------------------------------------------
// Device memory; nullptr when the device is out of memory (other failures raise).
void* device_malloc(int device, size_t bytes);
void device_free(int device, void* p);
size_t total_memory(int device);
// Virtual memory for the allocator's expandable segments (reserve an address range, then map and
// unmap granularity-aligned pieces of it); supports_virtual_memory() false: not available.
bool supports_virtual_memory();
size_t vm_granularity();
void* vm_reserve(int device, size_t bytes);
bool vm_map(int device, void* p, size_t bytes);  // false when out of memory
void vm_unmap(int device, void* p, size_t bytes);
void vm_release(int device, void* p, size_t bytes);
// Page-locked host memory (plain host memory in the simulator).
void* host_malloc(size_t bytes);
void host_free(void* p);

// ---- streams and events -----------------------------------------------------------------------
// The device's default (legacy) stream, and new non-default streams.
NativeStream default_native_stream(int device);
NativeStream create_native_stream(int device);
// The native handle of an ember stream of a cuda device (kernels/cuda/backend.cpp keeps the map).
NativeStream native_stream(const Stream& stream);
// The current stream of the current cuda device, as native handle.
NativeStream current_native_stream(int device);
bool stream_query(NativeStream s);
void stream_synchronize(NativeStream s, const char* op);
// Remembers the kernel just launched on s, for Note [Checked CUDA calls].
void note_launch(NativeStream s, const char* kernel);

NativeEvent event_create(int device, bool enable_timing);
void event_destroy(NativeEvent e) noexcept;
void event_record(NativeEvent e, NativeStream s);
bool event_query(NativeEvent e);
void event_synchronize(NativeEvent e);
void stream_wait_event(NativeStream s, NativeEvent e);
double event_elapsed_ms(NativeEvent start, NativeEvent end);

// ---- copies -----------------------------------------------------------------------------------
// n bytes from src to dst in stream order (host<->device, device<->device, peers); `op` names the
// ember op for errors.
void memcpy_async(void* dst, const void* src, size_t n, NativeStream s, const char* op);
void memset_async(void* dst, int value, size_t n, NativeStream s, const char* op);

}  // namespace ember::kernels::cuda
