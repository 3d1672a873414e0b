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

}  // namespace ember::cuda
