// The CUDA backend's memory: raw device memory for the caching allocator (a DeviceMemoryProvider,
// core/device_memory.h, over which set_device_memory_provider installs core's
// CUDACachingAllocator as the cuda allocator) and the pinned-host allocator (Note [Pinned host
// memory] in core/allocator.h), both on kernels/cuda/runtime.h, installed at static initialisation.

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "core/allocator.h"
#include "core/device_memory.h"
#include "core/error.h"
#include "core/stream.h"
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

// Note [Cached pinned blocks]
// Pinning is slow (cudaHostAlloc maps the pages for the GPU), and cudaFreeHost waits for the
// whole device, so a DataLoader pinning a batch per step and dropping it after its copy would
// stall the host on the GPU every step. Freed blocks are kept instead, and an allocation takes
// a kept block of its size class (a power of two, at least 512 bytes) when one is free. A block
// may still be read or written by a copy queued with non_blocking: record_stream (called by the
// copy, kernels/cuda/copy.cu) records an event on that copy's stream, and a block is handed out
// again only once all of its events have completed -- the reuse never waits and never races the
// copy. empty_cache() returns the free blocks to the runtime (after their events). Statistics:
// allocated counts blocks in use (their size class), reserved every block kept.
class PinnedAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes) override {
    EMBER_CHECK(cuda::device_count() > 0,
                "pin_memory: page-locked host memory needs a CUDA device, and there is none (",
                no_device_reason(), ")");
    const size_t size = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    char* p = nullptr;
    for (auto& [base, block] : blocks_) {
      if (!block.in_use && block.size == size && done(block)) {
        p = base;
        break;
      }
    }
    if (p == nullptr) {
      p = static_cast<char*>(host_malloc(size));
      blocks_[p].size = size;
      stats_.reserved_bytes += static_cast<int64_t>(size);
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    }
    Block& b = blocks_[p];
    b.in_use = true;
    b.uses.clear();
    stats_.allocated_bytes += static_cast<int64_t>(size);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    stats_.num_allocations += 1;
    stats_.peak_num_allocations = std::max(stats_.peak_num_allocations, stats_.num_allocations);
    stats_.total_allocations += 1;
    return DataPtr(p, this, &PinnedAllocator::free_block, kCPU);
  }
  void record_stream(const DataPtr& ptr, const Stream& stream) override {
    EMBER_CHECK(stream.device().is_cuda(),
                "record_stream: a pinned block is used by cuda streams, ", "not by ", stream);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.upper_bound(static_cast<char*>(ptr.get()));
    EMBER_CHECK(it != blocks_.begin(), "record_stream: ", ptr.get(), " is not pinned memory");
    --it;
    EMBER_CHECK(it->second.in_use && static_cast<char*>(ptr.get()) < it->first + it->second.size,
                "record_stream: ", ptr.get(), " is not a live pinned block");
    Event e(DeviceType::CUDA);
    e.record(stream);
    it->second.uses.push_back(std::move(e));
  }
  MemoryStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    MemoryStats s = stats_;
    s.cached_bytes = s.reserved_bytes - s.allocated_bytes;
    return s;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
    stats_.peak_num_allocations = stats_.num_allocations;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if (it->second.in_use) {
        ++it;
        continue;
      }
      for (const Event& e : it->second.uses) e.synchronize();
      host_free(it->first);
      stats_.reserved_bytes -= static_cast<int64_t>(it->second.size);
      it = blocks_.erase(it);
    }
  }

 private:
  struct Block {
    size_t size = 0;
    bool in_use = false;
    std::vector<Event> uses;  // after the queued copies that touch it
  };

  static size_t size_class(size_t nbytes) {
    size_t size = 512;
    while (size < nbytes) size *= 2;
    return size;
  }
  static bool done(const Block& b) {
    return std::all_of(b.uses.begin(), b.uses.end(), [](const Event& e) { return e.query(); });
  }
  static void free_block(void* ctx, void* data) {
    auto* self = static_cast<PinnedAllocator*>(ctx);
    std::lock_guard<std::mutex> lock(self->mu_);
    Block& b = self->blocks_.at(static_cast<char*>(data));
    b.in_use = false;
    self->stats_.allocated_bytes -= static_cast<int64_t>(b.size);
    self->stats_.num_allocations -= 1;
  }

  mutable std::mutex mu_;
  std::map<char*, Block> blocks_;
  MemoryStats stats_;
};

// Never destroyed, like the caching allocators (core/device_memory.cpp): a pinned tensor that dies
// during static destruction still returns its block, and the kept blocks stay reachable from
// here, so LeakSanitizer does not report the cache as leaked at exit.
PinnedAllocator* const g_pinned = new PinnedAllocator();

RuntimeMemory g_runtime_memory;

struct Install {
  Install() {
    set_device_memory_provider(&g_runtime_memory);  // also installs the caching allocator over it
    set_pinned_allocator(g_pinned);
  }
} g_install;

}  // namespace

}  // namespace ember::kernels::cuda
