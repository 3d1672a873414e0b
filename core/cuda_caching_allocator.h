#pragma once
// The caching allocator of cuda memory, modelled on PyTorch's CUDACachingAllocator (its design,
// not its code). cudaMalloc and cudaFree are slow and synchronise the device, so device memory
// is taken from the driver in large segments (DeviceMemoryProvider, core/device_memory.h) that
// are cut into blocks for tensors and kept when the tensors die, for the next allocation.
//
// Note [Caching allocator pools]
// Per device there are two pools of free blocks:
// - small: requests up to kSmallSize (1 MiB), carved out of kSmallBuffer (2 MiB) segments;
// - large: bigger requests; a request below kMinLargeAlloc (10 MiB) takes a kLargeBuffer
//   (20 MiB) segment, a bigger one a segment of its size rounded up to kRoundLarge (2 MiB).
// Every request is rounded up to a multiple of kMinBlockSize (512 bytes), so blocks stay
// aligned for vector loads. A pool keeps its free blocks in a set ordered by (stream, size,
// address); an allocation takes the smallest free block of its stream that fits (best fit). A
// block larger than needed is split when the rest is worth keeping (small pool: at least 512
// bytes; large pool: more than 1 MiB), and the rest stays in the pool. When a block is freed it
// merges with free neighbours of its segment, so freeing the middle of three blocks and then its
// neighbours leaves one block again. The option max_split_size_mb (Note [Allocator config])
// stops large blocks from being split at all: a request below the limit never takes a block
// above it, and a request above it takes a block at most kLargeBuffer bigger, unsplit, so huge
// cached blocks are not whittled down into fragments.
//
// Note [Stream-aware reuse]
// A block belongs to the stream it was allocated for (Note [Allocations and streams] in
// core/allocator.h), and a freed block goes back to that stream's part of the pool: work on the
// same stream runs in order, so it may reuse the block at once. A block used on other streams
// too (record_stream) is held back when freed: an Event is recorded on each of those streams,
// and the block returns to its pool when all of them have completed. Pending events are queried
// at the start of every allocation on the device, and synchronised before an out-of-memory
// retry.
//
// Note [Out of memory]
// When neither a cached block nor a new segment fits, the allocator waits for the device (so
// every pending record_stream event completes), takes a block the events held back if one fits,
// else gives every wholly free segment (and the free tails of expandable segments) back to the
// provider and tries a new segment once more (num_alloc_retries counts these retries; Note
// [Releasing the cache] in the .cpp says why the wait releases the lock). If that fails it raises
// ember::Error: "CUDA out of memory on cuda:0: tried to allocate 30.00 MiB (total capacity
// 64.00 MiB, allocated 5.00 MiB, max allocated 5.00 MiB, reserved 20.00 MiB, max reserved
// 20.00 MiB)", with a hint about expandable segments when much of the reserved memory is free
// but fragmented. num_ooms counts these errors.
//
// Note [Expandable segments]
// With expandable_segments:true each (stream, pool) has one segment that grows in place: it
// reserves the device's capacity of address space once and maps more pages (the provider's
// granularity, 2 MiB) at its end when no free block fits. A request that finds the segment's
// last block free maps only what that block lacks. So memory freed by one allocation is usable
// by a bigger one later, instead of staying in a segment of the wrong size: a 5 MiB tensor no
// longer pins a 20 MiB segment. Splitting keeps any rest of at least 512 bytes. Releasing the
// cache unmaps the whole free pages at the segment's end (free blocks in its middle stay
// mapped, unlike PyTorch's, which unmaps those too).
//
// Note [Allocator config]
// EMBER_CUDA_ALLOC_CONF holds comma-separated key:value options, like PYTORCH_CUDA_ALLOC_CONF:
// - backend:caching (default) or backend:native -- native bypasses the cache: every allocation
//   is its own raw_alloc of exactly the requested size and every free a raw_free (after the
//   block's streams have finished), so AddressSanitizer's redzones guard each tensor in
//   simulator builds. EMBER_CUDA_NO_CACHING=1 also selects it.
// - expandable_segments:true|false (default false; Note [Expandable segments]);
// - max_split_size_mb:N (default unlimited; Note [Caching allocator pools]).
// A bad key or value raises ember::Error naming it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device_memory.h"

namespace ember {

// The options of Note [Allocator config].
struct CUDAAllocatorConfig {
  enum class Backend { caching, native };
  Backend backend = Backend::caching;
  bool expandable_segments = false;
  size_t max_split_size = std::numeric_limits<size_t>::max();  // bytes; max: no limit

  // Parses an EMBER_CUDA_ALLOC_CONF string (empty: the defaults) and the value of
  // EMBER_CUDA_NO_CACHING (null or empty: unset; "1" forces backend:native, "0" does nothing).
  static CUDAAllocatorConfig parse(const std::string& alloc_conf, const char* no_caching = nullptr);
  // parse() of the environment variables.
  static CUDAAllocatorConfig from_env();
};

// One statistic, as in torch.cuda.memory_stats: its value now, its peak since the last reset,
// and the sums of all increases and decreases.
struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
};
// A statistic for both pools together and for each one.
enum StatPool : int { kAllPools = 0, kLargePool = 1, kSmallPool = 2 };
using StatArray = std::array<Stat, 3>;

// One device's statistics (Note [Allocator statistics] in core/allocator.h): the MemoryStats
// summary every allocator reports, and the detail of the caching allocator.
struct CUDAMemoryStats : MemoryStats {
  StatArray allocated;             // bytes asked for by live allocations
  StatArray active;                // bytes of blocks in use: live ones at their rounded size,
                                   // and freed ones still waiting for a record_stream event
  StatArray reserved;              // bytes of segments held from the provider
  StatArray inactive_split;        // bytes of free blocks in partly used segments
  StatArray allocation_count;      // live allocations
  StatArray active_count;          // active blocks
  StatArray segment_count;         // segments
  StatArray inactive_split_count;  // free blocks in partly used segments
  int64_t num_alloc_retries = 0;   // allocations that had to free the cache and retry
  int64_t num_ooms = 0;            // out-of-memory errors raised
};

namespace detail {
class CUDADeviceCache;
}

// The caching allocator of cuda memory (Notes above), over one DeviceMemoryProvider; thread-safe
// (one lock per device). It must outlive every allocation it made. allocate(nbytes) uses the
// current stream of the current cuda device; stats() and reset_peak_stats() are those of the
// current cuda device, device_stats(i) and reset_peak_device_stats(i) of device i, and
// empty_cache() releases the cache of every device.
class CUDACachingAllocator final : public Allocator {
 public:
  static constexpr size_t kMinBlockSize = 512;
  static constexpr size_t kSmallSize = size_t{1} << 20;
  static constexpr size_t kSmallBuffer = size_t{2} << 20;
  static constexpr size_t kLargeBuffer = size_t{20} << 20;
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;
  static constexpr size_t kRoundLarge = size_t{2} << 20;

  // Uses `config`; throws if it asks for expandable segments the provider cannot give.
  CUDACachingAllocator(DeviceMemoryProvider* provider, const CUDAAllocatorConfig& config);
  // Asks the provider nothing until first used; then reads CUDAAllocatorConfig::from_env() (a
  // bad value throws there, and at every call after, rather than at static initialisation).
  explicit CUDACachingAllocator(DeviceMemoryProvider* provider);
  ~CUDACachingAllocator() override;
  CUDACachingAllocator(const CUDACachingAllocator&) = delete;
  CUDACachingAllocator& operator=(const CUDACachingAllocator&) = delete;

  DataPtr allocate(size_t nbytes) override;
  DataPtr allocate(size_t nbytes, const Stream& stream) override;
  void record_stream(const DataPtr& ptr, const Stream& stream) override;
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  MemoryStats device_stats(int device) const override;
  void reset_peak_device_stats(int device) override;
  void empty_cache() override;

  CUDAMemoryStats memory_stats(int device) const;
  // A table like torch.cuda.memory_summary(): allocated, active, reserved and inactive-split
  // memory and the counts, each now, at its peak, allocated and freed in total, for both pools
  // and each one.
  std::string memory_summary(int device) const;
  // The provider's device count.
  int device_count() const;
  // The configuration in use (reading the environment first for the lazy constructor).
  const CUDAAllocatorConfig& config() const;

 private:
  void init() const;
  detail::CUDADeviceCache& device_cache(int device, const char* op) const;

  DeviceMemoryProvider* provider_;
  bool config_given_;
  mutable std::once_flag init_once_;
  mutable CUDAAllocatorConfig config_;
  mutable std::vector<std::unique_ptr<detail::CUDADeviceCache>> devices_;
};

// "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB": the units of the error messages and summaries.
std::string format_memory_size(int64_t bytes);

}  // namespace ember
