#include "core/device_memory.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda_caching_allocator.h"

namespace ember {

namespace {
std::atomic<DeviceMemoryProvider*> g_provider{nullptr};  // constant-initialised

// Every allocator set_device_memory_provider made. Never destroyed (tensors that die during
// static destruction still return their blocks), but kept reachable from here, so a program
// that swaps providers (a test) does not leak them in LeakSanitizer's eyes.
std::mutex g_made_mutex;
std::vector<std::unique_ptr<CUDACachingAllocator>>* g_made = nullptr;
}  // namespace

DeviceMemoryProvider* set_device_memory_provider(DeviceMemoryProvider* provider) {
  DeviceMemoryProvider* old = g_provider.exchange(provider);
  // It asks the provider nothing until first used (the provider may not be ready yet).
  CUDACachingAllocator* allocator = nullptr;
  if (provider) {
    std::lock_guard<std::mutex> lock(g_made_mutex);
    if (g_made == nullptr) g_made = new std::vector<std::unique_ptr<CUDACachingAllocator>>();
    g_made->push_back(std::make_unique<CUDACachingAllocator>(provider));
    allocator = g_made->back().get();
  }
  set_allocator(DeviceType::CUDA, allocator);
  return old;
}

DeviceMemoryProvider* get_device_memory_provider() { return g_provider.load(); }

}  // namespace ember
