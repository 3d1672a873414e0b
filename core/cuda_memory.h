#pragma once
// The cuda memory functions of torch.cuda, for the caching allocator of DeviceType::CUDA
// (core/cuda_caching_allocator.h):
//
//   ember::cuda::reset_peak_memory_stats();
//   train_step();
//   std::cout << ember::cuda::max_memory_allocated() << "\n" << ember::cuda::memory_summary();
//
// `device` is a cuda device index; -1 (the default) means the calling thread's current cuda
// device. The first six work with any cuda allocator (Note [Allocator statistics] in
// core/allocator.h); memory_stats and memory_summary need the caching allocator (the one
// set_device_memory_provider installs) and name the one installed otherwise.

#include <cstdint>
#include <string>

#include "core/cuda_caching_allocator.h"

namespace ember::cuda {

// Bytes asked for by live cuda tensors, now and at the peak since the last reset.
int64_t memory_allocated(int device = -1);
int64_t max_memory_allocated(int device = -1);
// Bytes the allocator holds from the device (live blocks and its cache), now and at the peak.
int64_t memory_reserved(int device = -1);
int64_t max_memory_reserved(int device = -1);
// Sets every peak of the device's statistics to its current value.
void reset_peak_memory_stats(int device = -1);
// Returns the cached, unused segments of every device to the driver.
void empty_cache();

// All statistics of the device (the counts of segments and split blocks, retries, OOMs).
CUDAMemoryStats memory_stats(int device = -1);
// A readable table of memory_stats (CUDACachingAllocator::memory_summary).
std::string memory_summary(int device = -1);

// The installed cuda allocator as the caching allocator; throws naming `op` when it is another.
CUDACachingAllocator& caching_allocator(const char* op);

}  // namespace ember::cuda
