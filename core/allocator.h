#pragma once
// Allocators. Every byte of tensor memory comes from the allocator registered for its device
// type; each keeps statistics so that memory claims (a graph freed after backward, checkpointing)
// can be tested: bytes in use and reserved, their peaks, live blocks, and total allocations made
// (Note [Allocator statistics]). The interface is what a caching device allocator needs: an
// allocation names its stream and record_stream() marks a block used by another one (Note
// [Allocations and streams]); a slot holds the pinned-host allocator (Note [Pinned host memory]).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/device.h"
#include "core/stream.h"

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

// Note [Allocator statistics]
// The statistics use the CUDA caching allocator's vocabulary (PyTorch's torch.cuda.memory_stats),
// so a test or a benchmark reads the CPU and a device the same way:
// - allocated: bytes handed to live storages (what was asked for), now and at its peak;
// - reserved: bytes the allocator holds from the system -- every live block at its rounded size
//   plus the cached free blocks (cudaMalloc'd segments on a device); reserved >= allocated;
// - allocation counts: live blocks now and at the peak, and all allocations ever made.
// reset_peak_stats() sets every peak to its current value. The CPU's per-thread small-block
// lists (Note [Small-block cache]) count as reserved but not as cached_bytes; they are returned
// when their thread exits, not by empty_cache().
struct MemoryStats {
  int64_t allocated_bytes = 0;       // bytes currently held by live tensors' storages
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes has been since the last reset
  int64_t num_allocations = 0;       // live blocks now
  int64_t total_allocations = 0;     // allocations made since the start of the process
  int64_t cached_bytes = 0;    // freed large blocks kept for reuse (CPU: Note [Large-block cache])
  int64_t reserved_bytes = 0;  // bytes held from the system: live blocks and cached ones
  int64_t peak_reserved_bytes = 0;   // the most reserved_bytes has been since the last reset
  int64_t peak_num_allocations = 0;  // the most num_allocations has been since the last reset
};

// Note [Allocations and streams]
// A caching device allocator keeps freed blocks per stream: a block freed while a kernel queued
// on stream s may still use it can be handed out again at once to work on s (which runs in
// order), but not to another stream. So an allocation names its stream (by default the current
// stream of the device, which also names the device index), and a tensor used on a second
// stream is marked with record_stream(), so that its block returns to the pool only once the
// work on that stream is done. On the CPU every op has finished when it returns, so the stream
// is checked and otherwise ignored, and record_stream does nothing.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
  // An allocation for work on `stream` (Note [Allocations and streams]). The default checks
  // that the stream is on the allocator's device type and calls allocate(nbytes).
  virtual DataPtr allocate(size_t nbytes, const Stream& stream);
  // Marks ptr's block as used by stream too. The default checks the devices and does nothing.
  virtual void record_stream(const DataPtr& ptr, const Stream& stream);
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  // The statistics of one device of the allocator's type, for an allocator serving several
  // (the CUDA caching allocator). The defaults are stats() and reset_peak_stats().
  virtual MemoryStats device_stats(int device) const;
  virtual void reset_peak_device_stats(int device);
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
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes) override;
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  void empty_cache() override;

 private:
  static void free_block(void* ctx, void* data);
  std::atomic<int64_t> allocated_{0}, peak_{0}, live_{0}, total_{0}, peak_live_{0};
};

// The allocator for a device type; throws naming the device when none is registered (a cuda
// tensor in a CPU-only build).
Allocator* get_allocator(DeviceType t);
void set_allocator(DeviceType t, Allocator* allocator);

MemoryStats memory_stats(Device device = kCPU);
void reset_peak_memory_stats(Device device = kCPU);
// Frees the blocks the device's allocator keeps for reuse.
void empty_cache(Device device = kCPU);
// PyTorch's torch.cuda.memory_allocated / max_memory_allocated / memory_reserved /
// max_memory_reserved, for any device (Note [Allocator statistics]).
int64_t memory_allocated(Device device = kCPU);
int64_t max_memory_allocated(Device device = kCPU);
int64_t memory_reserved(Device device = kCPU);
int64_t max_memory_reserved(Device device = kCPU);
// Marks the storage behind ptr as used by stream (Note [Allocations and streams]); the stream
// must be on ptr's device.
void record_stream(const DataPtr& ptr, const Stream& stream);

// Note [Pinned host memory]
// Page-locked host memory (cudaHostAlloc) lets host-to-device copies run asynchronously. It
// needs the CUDA driver, so the CUDA backend installs the pinned-host allocator with
// set_pinned_allocator(); core has none. Asking for it in a CPU-only build is an error
// (get_pinned_allocator() throws, saying ember was built without CUDA), as PyTorch's
// pin_memory() is without an accelerator: a caller that asked for pinned memory by name gets
// told it does not exist. Code for which pinning is only a hint checks has_pinned_allocator()
// and falls back to ordinary memory: DataLoader's pin_memory option is such a hint (it changes
// nothing in a CPU-only build, as data/dataloader.h documents), and is to pin through this slot
// when one is installed.
bool has_pinned_allocator();
Allocator* get_pinned_allocator();
// Installs (or, with null, removes) the pinned-host allocator; returns the previous one.
Allocator* set_pinned_allocator(Allocator* allocator);

}  // namespace ember
