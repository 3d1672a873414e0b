// The CUDA backend's memory: raw device memory for the caching allocator (a DeviceMemoryProvider,
// core/device_memory.h, over which set_device_memory_provider installs core's
// CUDACachingAllocator as the cuda allocator) and the pinned-host allocator (Note [Pinned host
// memory] in core/allocator.h), both on kernels/cuda/runtime.h, installed at static initialisation.

#include <atomic>
#include <mutex>

#include "core/allocator.h"
#include "core/device_memory.h"
#include "core/error.h"
#include "kernels/cuda/runtime.h"

namespace ember::kernels::cuda {

namespace {

class RuntimeMemory final : public DeviceMemoryProvider {
 public:
  int device_count() const override { return cuda::device_count(); }
  size_t total_memory(int device) const override { return cuda::total_memory(device); }
  void* raw_alloc(int device, size_t bytes) override { return device_malloc(device, bytes); }
  void raw_free(int device, void* p) override { device_free(device, p); }
  bool supports_expandable() const override { return supports_virtual_memory(); }
  size_t granularity() const override { return vm_granularity(); }
  void* reserve(int device, size_t bytes) override { return vm_reserve(device, bytes); }
  bool map(int device, void* p, size_t bytes) override { return vm_map(device, p, bytes); }
  void unmap(int device, void* p, size_t bytes) override { vm_unmap(device, p, bytes); }
  void release(int device, void* p, size_t bytes) override { vm_release(device, p, bytes); }
};

// Page-locked host blocks, each straight from the runtime (cudaHostAlloc), with the statistics
// of Note [Allocator statistics]. Pinning is slow (it maps pages for the GPU), so a program pins
// a few staging buffers and reuses them, as the DataLoader's pinned batches do.
class PinnedAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes) override {
    EMBER_CHECK(cuda::device_count() > 0,
                "pin_memory: page-locked host memory needs a CUDA device, and there is none (",
                no_device_reason(), ")");
    void* p = host_malloc(nbytes);
    const auto n = static_cast<int64_t>(nbytes);
    const int64_t now = allocated_.fetch_add(n) + n;
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    live_.fetch_add(1);
    total_.fetch_add(1);
    return DataPtr(p, new size_t(nbytes), &PinnedAllocator::free_block, kCPU);
  }
  MemoryStats stats() const override {
    MemoryStats s;
    s.allocated_bytes = allocated_.load();
    s.peak_allocated_bytes = peak_.load();
    s.reserved_bytes = s.allocated_bytes;
    s.peak_reserved_bytes = s.peak_allocated_bytes;
    s.num_allocations = live_.load();
    s.peak_num_allocations = s.num_allocations;
    s.total_allocations = total_.load();
    return s;
  }
  void reset_peak_stats() override { peak_.store(allocated_.load()); }

 private:
  static void free_block(void* ctx, void* data);
  std::atomic<int64_t> allocated_{0}, peak_{0}, live_{0}, total_{0};
};

PinnedAllocator g_pinned;

void PinnedAllocator::free_block(void* ctx, void* data) {
  auto* n = static_cast<size_t*>(ctx);
  g_pinned.allocated_.fetch_sub(static_cast<int64_t>(*n));
  g_pinned.live_.fetch_sub(1);
  delete n;
  host_free(data);
}

RuntimeMemory g_runtime_memory;

struct Install {
  Install() {
    set_device_memory_provider(&g_runtime_memory);  // also installs the caching allocator over it
    set_pinned_allocator(&g_pinned);
  }
} g_install;

}  // namespace

}  // namespace ember::kernels::cuda
