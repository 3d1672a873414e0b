#pragma once
// ember::cuda: the user's view of the CUDA devices, as torch.cuda is PyTorch's.
//
//   if (ember::cuda::is_available()) {
//     auto props = ember::cuda::get_device_properties(0);  // "NVIDIA H200", sm_90, 139 GiB...
//     Tensor x = ember::randn({1024, 1024}).cuda();         // to(Device::cuda(0))
//     ember::cuda::synchronize();                           // wait for the queued work
//   }
//
// With EMBER_CUDA=real these are the GPUs the driver shows; with EMBER_CUDA=sim they are the
// simulated sm_90 devices (EMBER_SIM_DEVICES=N presents N; the README's "The CUDA simulator"); with
// EMBER_CUDA=off there are none: is_available() is false and the rest raise ember::Error saying
// ember was built without CUDA. The memory functions (memory_allocated, memory_summary...) are in
// core/cuda_memory.h.

#include <string>

#include "core/stream.h"

namespace ember::cuda {

// Whether a CUDA backend is built in and at least one device is usable.
bool is_available();
// The number of usable devices (0 without a backend).
int device_count();
// Whether the devices are the CUDA simulator's (EMBER_CUDA=sim).
bool is_simulated();
// The calling thread's current device index, and setting it (Note [Current device and current
// stream] in core/stream.h).
int current_device();
void set_device(int index);
// Blocks until all work queued on every stream of the device has finished; a kernel that failed
// asynchronously raises its error here. index -1: the current device.
void synchronize(int index = -1);
// The device's name, compute capability, memory and limits.
DeviceProperties get_device_properties(int index = -1);

// Note [Sync debug mode]
// Whether an op that makes the host wait for a cuda device warns or raises, as
// torch.cuda.set_sync_debug_mode does: a training step meant to keep the GPU busy finds its
// hidden synchronisations. The ops that wait: a copy between host and device memory (item(),
// cpu(), to()), unless it is non_blocking with pinned host memory; nonzero (and masked_select,
// boolean-mask indexing), whose result size is read back; a copy between two devices that needs
// a staging tensor. Explicit waits (synchronize(), Stream::synchronize, Event::synchronize) and
// autotuning's timed trials are never reported. Warn prints one line to stderr the first time
// each op waits; Error raises ember::Error before the op waits, naming it.
// EMBER_CUDA_SYNC_DEBUG=warn|error (or off) sets the mode when the process first asks for it.
enum class SyncDebugMode { Off, Warn, Error };
void set_sync_debug_mode(SyncDebugMode mode);
SyncDebugMode get_sync_debug_mode();
namespace detail {
// EMBER_CUDA_SYNC_DEBUG's value (null or empty: Off); anything else is an Error naming it.
SyncDebugMode parse_sync_debug_mode(const char* value);
}  // namespace detail

}  // namespace ember::cuda
