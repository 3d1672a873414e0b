#include "core/allocator.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace ember {

namespace {
CPUAllocator& cpu_allocator() {
  static CPUAllocator a;
  return a;
}
}  // namespace

// The block's size travels in the deleter's ctx word (no side allocation per block), so that
// free_block can update the statistics of the one CPU allocator.

DataPtr CPUAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, kCPU);
  EMBER_CHECK(nbytes < (size_t{1} << 46), "CPUAllocator: refusing an absurd allocation of ",
              nbytes, " bytes");
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  EMBER_CHECK(p != nullptr, "CPUAllocator: out of memory allocating ", nbytes, " bytes");
  void* ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(nbytes));
  int64_t now = allocated_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  live_.fetch_add(1);
  total_.fetch_add(1);
  return DataPtr(p, ctx, &CPUAllocator::free_block, kCPU);
}

void CPUAllocator::free_block(void* ctx, void* data) {
  auto nbytes = static_cast<int64_t>(reinterpret_cast<uintptr_t>(ctx));
  CPUAllocator& a = cpu_allocator();
  a.allocated_.fetch_sub(nbytes);
  a.live_.fetch_sub(1);
  std::free(data);
}

MemoryStats CPUAllocator::stats() const {
  MemoryStats s;
  s.allocated_bytes = allocated_.load();
  s.peak_allocated_bytes = peak_.load();
  s.num_allocations = live_.load();
  s.total_allocations = total_.load();
  return s;
}

void CPUAllocator::reset_peak_stats() { peak_.store(allocated_.load()); }

namespace {
Allocator* g_allocators[kNumDeviceTypes] = {&cpu_allocator(), nullptr};
}  // namespace

Allocator* get_allocator(DeviceType t) {
  Allocator* a = g_allocators[static_cast<int>(t)];
  EMBER_CHECK(a != nullptr, "no allocator for device type ", device_type_name(t),
              ": ember was built without CUDA (configure with -DEMBER_CUDA=real or sim)");
  return a;
}

void set_allocator(DeviceType t, Allocator* allocator) {
  g_allocators[static_cast<int>(t)] = allocator;
}

MemoryStats memory_stats(Device device) { return get_allocator(device.type)->stats(); }
void reset_peak_memory_stats(Device device) { get_allocator(device.type)->reset_peak_stats(); }

}  // namespace ember
