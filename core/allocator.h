#pragma once
// Allocators. Every byte of tensor memory comes from the allocator registered for its device
// type; each keeps statistics so that memory claims (a graph freed after backward, checkpointing)
// can be tested: bytes in use, their peak, live blocks, and total allocations made.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/device.h"

namespace ember {

// An owning pointer to device memory with its own way to free it.
// deleter(ctx, data) is called once when the DataPtr dies (unless deleter is null: borrowed).
class DataPtr {
 public:
  using Deleter = void (*)(void* ctx, void* data);

  DataPtr() = default;
  DataPtr(void* data, void* ctx, Deleter deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(DataPtr&& o) noexcept { *this = std::move(o); }
  DataPtr& operator=(DataPtr&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_;
      ctx_ = o.ctx_;
      deleter_ = o.deleter_;
      device_ = o.device_;
      o.data_ = nullptr;
      o.ctx_ = nullptr;
      o.deleter_ = nullptr;
    }
    return *this;
  }
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  ~DataPtr() { reset(); }

  void* get() const { return data_; }
  Device device() const { return device_; }
  void reset() {
    if (deleter_) deleter_(ctx_, data_);
    data_ = nullptr;
    ctx_ = nullptr;
    deleter_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_;
};

struct MemoryStats {
  int64_t allocated_bytes = 0;       // bytes currently held by live tensors' storages
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes has been since the last reset
  int64_t num_allocations = 0;       // live blocks now
  int64_t total_allocations = 0;     // allocations made since the start of the process
  int64_t cached_bytes = 0;          // freed large blocks kept for reuse (CPU: Note [Large-block cache])
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  // Returns cached, unused blocks to the system.
  virtual void empty_cache() {}
};

// The CPU allocator: 64-byte aligned blocks (a cache line; enough for AVX-512 loads). Small
// blocks are reused through per-thread free lists, large ones through a bounded cache (Notes
// [Small-block cache] and [Large-block cache] in core/allocator.cpp). There is one instance,
// reached through get_allocator(DeviceType::CPU).
class CPUAllocator final : public Allocator {
 public:
  static constexpr size_t kAlignment = 64;
  DataPtr allocate(size_t nbytes) override;
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  void empty_cache() override;

 private:
  static void free_block(void* ctx, void* data);
  std::atomic<int64_t> allocated_{0}, peak_{0}, live_{0}, total_{0};
};

// The allocator for a device type; throws naming the device when none is registered (a cuda
// tensor in a CPU-only build).
Allocator* get_allocator(DeviceType t);
void set_allocator(DeviceType t, Allocator* allocator);

MemoryStats memory_stats(Device device = kCPU);
void reset_peak_memory_stats(Device device = kCPU);
// Frees the blocks the device's allocator keeps for reuse.
void empty_cache(Device device = kCPU);

}  // namespace ember
