#pragma once
// Raw device memory for the caching allocator. core knows no CUDA, so the CUDA backend (real or
// simulated, in kernels/cuda) hands core its device memory through this interface, and the
// caching allocator (core/cuda_caching_allocator.h) carves tensors' blocks out of it.
//
// Note [Device memory providers]
// A provider is the thinnest layer over the driver: cudaMalloc/cudaFree for whole segments and,
// for expandable segments (Note [Expandable segments] in core/cuda_caching_allocator.h), the
// virtual memory calls (cuMemAddressReserve, cuMemCreate + cuMemMap, cuMemUnmap,
// cuMemAddressFree). It keeps no cache and no statistics of its own. The allocator calls it with
// its per-device lock held, from any thread, so every method must be thread-safe. The allocator
// never hands back memory that queued work may still use: it synchronises the device before it
// frees or unmaps cached segments (as cudaFree does implicitly), so a provider need not.
//
// The CUDA backend installs its provider at static-initialisation time:
//
//   // kernels/cuda/device_memory.cpp
//   static CudaMemoryProvider provider;
//   static bool installed = (ember::set_device_memory_provider(&provider), true);
//
// which also makes a CUDACachingAllocator over it the allocator of DeviceType::CUDA.

#include <cstddef>

namespace ember {

class DeviceMemoryProvider {
 public:
  virtual ~DeviceMemoryProvider() = default;
  // The number of devices; the allocator serves indices 0 .. device_count() - 1.
  virtual int device_count() const = 0;
  // The device's memory capacity in bytes (cudaDeviceProp::totalGlobalMem), quoted in
  // out-of-memory errors and the upper bound of an expandable segment.
  virtual size_t total_memory(int device) const = 0;
  // A new segment of at least `bytes` bytes, aligned to at least 512 bytes; nullptr when the
  // device is out of memory (never throws for that).
  virtual void* raw_alloc(int device, size_t bytes) = 0;
  // Returns a segment raw_alloc gave out.
  virtual void raw_free(int device, void* p) = 0;

  // Virtual memory for expandable segments; supports_expandable() false: the option is refused.
  virtual bool supports_expandable() const = 0;
  // The page size of map/unmap (2 MiB on current GPUs); sizes and offsets passed to map and
  // unmap are multiples of it.
  virtual size_t granularity() const = 0;
  // Reserves `bytes` of address space (nothing is counted against the capacity); nullptr when
  // the address space cannot be reserved.
  virtual void* reserve(int device, size_t bytes) = 0;
  // Backs [p, p + bytes) of a reserved range with memory; false when out of memory.
  virtual bool map(int device, void* p, size_t bytes) = 0;
  // Returns the memory behind [p, p + bytes), a range map backed.
  virtual void unmap(int device, void* p, size_t bytes) = 0;
  // Gives back a reserved range whose pages are all unmapped.
  virtual void release(int device, void* p, size_t bytes) = 0;
};

// Installs the device memory provider (null removes it) and makes a CUDACachingAllocator over
// it, configured by EMBER_CUDA_ALLOC_CONF at its first allocation, the allocator of
// DeviceType::CUDA (Note [Device memory providers]). Returns the previous provider.
DeviceMemoryProvider* set_device_memory_provider(DeviceMemoryProvider* provider);
// The installed provider, or null (a build without CUDA).
DeviceMemoryProvider* get_device_memory_provider();

}  // namespace ember
