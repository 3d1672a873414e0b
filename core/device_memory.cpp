#include "core/device_memory.h"

#include <atomic>

#include "core/cuda_caching_allocator.h"

namespace ember {

namespace {
std::atomic<DeviceMemoryProvider*> g_provider{nullptr};  // constant-initialised
}  // namespace

DeviceMemoryProvider* set_device_memory_provider(DeviceMemoryProvider* provider) {
  DeviceMemoryProvider* old = g_provider.exchange(provider);
  // Never destroyed: tensors that die during static destruction still return their blocks. It
  // asks the provider nothing until first used (the provider may not be ready yet).
  set_allocator(DeviceType::CUDA, provider ? new CUDACachingAllocator(provider) : nullptr);
  return old;
}

DeviceMemoryProvider* get_device_memory_provider() { return g_provider.load(); }

}  // namespace ember
