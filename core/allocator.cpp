#include "core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

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

// Note [Small-block cache]
// Small tensors are created and destroyed at a high rate (every op on a few elements allocates
// its output), and an aligned malloc/free pair costs about as much as the op itself. Blocks up to
// kMaxCachedBytes are therefore kept on per-thread free lists by power-of-two size class and
// reused. The statistics count what tensors hold (the requested bytes of live blocks), not what
// the cache keeps; cached blocks are returned to the system when their thread exits.
namespace {
constexpr size_t kMinClassBytes = 64;
constexpr size_t kMaxCachedBytes = 64 * 1024;
constexpr int kNumClasses = 11;  // 64 B .. 64 KiB
constexpr int kMaxBlocksPerClass = 64;

int size_class(size_t nbytes) {
  int c = 0;
  size_t s = kMinClassBytes;
  while (s < nbytes) {
    s <<= 1;
    ++c;
  }
  return c;
}

// Note [Allocator statistics]: reserved bytes change only when a block comes from or goes back to
// the system, never on a cache hit, so the fast paths pay nothing for them.
std::atomic<int64_t> g_reserved{0}, g_peak_reserved{0};

void raise_peak(std::atomic<int64_t>& peak, int64_t now) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now)) {
  }
}

void add_reserved(size_t bytes) {
  int64_t b = static_cast<int64_t>(bytes);
  raise_peak(g_peak_reserved, g_reserved.fetch_add(b) + b);
}
void sub_reserved(size_t bytes) { g_reserved.fetch_sub(static_cast<int64_t>(bytes)); }

// Set once a thread's cache is destroyed: tensors that die later on that thread (a global
// tensor destroyed at exit) free their blocks directly. A bool needs no destructor, so reading
// it is always safe.
thread_local bool t_cache_destroyed = false;

struct BlockCache {
  void* blocks[kNumClasses][kMaxBlocksPerClass];
  int count[kNumClasses] = {};
  ~BlockCache() {
    t_cache_destroyed = true;
    for (int c = 0; c < kNumClasses; ++c) {
      for (int i = 0; i < count[c]; ++i) std::free(blocks[c][i]);
      sub_reserved(static_cast<size_t>(count[c]) * (kMinClassBytes << c));
    }
  }
};

// The calling thread's cache, or null once it has been destroyed.
BlockCache* block_cache() {
  if (t_cache_destroyed) return nullptr;
  thread_local BlockCache cache;
  return &cache;
}

// Note [Large-block cache]
// A fresh large block comes from mmap and every one of its pages faults on first touch; on the
// virtual machines ember is developed on that makes `c = a + b` on 10^7 floats several times
// slower than the arithmetic. Blocks above kMaxCachedBytes are therefore rounded up to a multiple
// of kLargeRound and kept, up to kMaxLargeCacheBytes in all, for the next request of the same
// rounded size (a training loop asks for the same sizes every step). empty_cache() returns them.
constexpr size_t kLargeRound = 64 * 1024;
constexpr size_t kMaxLargeCacheBytes = size_t{1} << 30;

size_t large_block_bytes(size_t nbytes) {
  return (nbytes + kLargeRound - 1) / kLargeRound * kLargeRound;
}

struct LargeCache {
  std::mutex mu;
  std::unordered_multimap<size_t, void*> blocks;
  size_t bytes = 0;
};

// Never destroyed: tensors that die during static destruction can still return their blocks.
LargeCache& large_cache() {
  static LargeCache* cache = new LargeCache;
  return *cache;
}
}  // namespace

DataPtr CPUAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, kCPU);
  EMBER_CHECK(nbytes < (size_t{1} << 46), "CPUAllocator: refusing an absurd allocation of ", nbytes,
              " bytes");
  void* p = nullptr;
  if (nbytes <= kMaxCachedBytes) {
    int c = size_class(nbytes);
    BlockCache* cache = block_cache();
    if (cache && cache->count[c] > 0) {
      p = cache->blocks[c][--cache->count[c]];
    } else {
      p = std::aligned_alloc(kAlignment, kMinClassBytes << c);
      if (p) add_reserved(kMinClassBytes << c);
    }
  } else {
    size_t bytes = large_block_bytes(nbytes);
    LargeCache& cache = large_cache();
    {
      std::lock_guard<std::mutex> lk(cache.mu);
      auto it = cache.blocks.find(bytes);
      if (it != cache.blocks.end()) {
        p = it->second;
        cache.blocks.erase(it);
        cache.bytes -= bytes;
      }
    }
    if (!p) {
      p = std::aligned_alloc(kAlignment, bytes);
      if (p) add_reserved(bytes);
    }
  }
  EMBER_CHECK(p != nullptr, "CPUAllocator: out of memory allocating ", nbytes, " bytes");
  void* ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(nbytes));
  int64_t now = allocated_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  int64_t live = live_.fetch_add(1) + 1;
  if (live > peak_live_.load(std::memory_order_relaxed)) raise_peak(peak_live_, live);
  total_.fetch_add(1);
  return DataPtr(p, ctx, &CPUAllocator::free_block, kCPU);
}

void CPUAllocator::free_block(void* ctx, void* data) {
  auto nbytes = static_cast<size_t>(reinterpret_cast<uintptr_t>(ctx));
  CPUAllocator& a = cpu_allocator();
  a.allocated_.fetch_sub(static_cast<int64_t>(nbytes));
  a.live_.fetch_sub(1);
  if (nbytes <= kMaxCachedBytes) {
    int c = size_class(nbytes);
    BlockCache* cache = block_cache();
    if (cache && cache->count[c] < kMaxBlocksPerClass) {
      cache->blocks[c][cache->count[c]++] = data;
      return;
    }
    sub_reserved(kMinClassBytes << c);
  } else {
    size_t bytes = large_block_bytes(nbytes);
    LargeCache& cache = large_cache();
    std::lock_guard<std::mutex> lk(cache.mu);
    if (cache.bytes + bytes <= kMaxLargeCacheBytes) {
      cache.blocks.emplace(bytes, data);
      cache.bytes += bytes;
      return;
    }
    sub_reserved(bytes);
  }
  std::free(data);
}

void CPUAllocator::empty_cache() {
  LargeCache& cache = large_cache();
  std::lock_guard<std::mutex> lk(cache.mu);
  for (auto& kv : cache.blocks) std::free(kv.second);
  sub_reserved(cache.bytes);
  cache.blocks.clear();
  cache.bytes = 0;
}

MemoryStats CPUAllocator::stats() const {
  MemoryStats s;
  {
    LargeCache& cache = large_cache();
    std::lock_guard<std::mutex> lk(cache.mu);
    s.cached_bytes = static_cast<int64_t>(cache.bytes);
  }
  s.allocated_bytes = allocated_.load();
  s.peak_allocated_bytes = peak_.load();
  s.num_allocations = live_.load();
  s.total_allocations = total_.load();
  s.reserved_bytes = g_reserved.load();
  s.peak_reserved_bytes = g_peak_reserved.load();
  s.peak_num_allocations = peak_live_.load();
  return s;
}

void CPUAllocator::reset_peak_stats() {
  peak_.store(allocated_.load());
  g_peak_reserved.store(g_reserved.load());
  peak_live_.store(live_.load());
}

DataPtr Allocator::allocate(size_t nbytes, const Stream& stream) {
  DataPtr p = allocate(nbytes);
  EMBER_CHECK(p.device().type == stream.device_type(), "Allocator::allocate: cannot allocate ",
              device_type_name(p.device().type), " memory for ", stream);
  return p;
}

void Allocator::record_stream(const DataPtr& ptr, const Stream& stream) {
  EMBER_CHECK(ptr.device() == stream.device(), "record_stream: the memory is on ", ptr.device(),
              " but the stream is ", stream);
}

namespace {
// Constant-initialised (the CPU's entry null: cpu_allocator()), so that a backend may call
// set_allocator during static initialisation, in whatever order the translation units run.
Allocator* g_allocators[kNumDeviceTypes] = {};
}  // namespace

Allocator* get_allocator(DeviceType t) {
  Allocator* a = g_allocators[static_cast<int>(t)];
  if (a == nullptr && t == DeviceType::CPU) return &cpu_allocator();
  EMBER_CHECK(a != nullptr, "no allocator for device type ", device_type_name(t),
              ": ember was built without CUDA (configure with -DEMBER_CUDA=real or sim)");
  return a;
}

void set_allocator(DeviceType t, Allocator* allocator) {
  g_allocators[static_cast<int>(t)] = allocator;
}

MemoryStats Allocator::device_stats(int) const { return stats(); }
void Allocator::reset_peak_device_stats(int) { reset_peak_stats(); }

MemoryStats memory_stats(Device device) {
  return get_allocator(device.type)->device_stats(device.index);
}
int64_t memory_allocated(Device device) { return memory_stats(device).allocated_bytes; }
int64_t max_memory_allocated(Device device) { return memory_stats(device).peak_allocated_bytes; }
int64_t memory_reserved(Device device) { return memory_stats(device).reserved_bytes; }
int64_t max_memory_reserved(Device device) { return memory_stats(device).peak_reserved_bytes; }

void record_stream(const DataPtr& ptr, const Stream& stream) {
  get_allocator(ptr.device().type)->record_stream(ptr, stream);
}

namespace {
Allocator* g_pinned_allocator = nullptr;  // Note [Pinned host memory]
}  // namespace

bool has_pinned_allocator() { return g_pinned_allocator != nullptr; }

Allocator* get_pinned_allocator() {
  EMBER_CHECK(g_pinned_allocator != nullptr,
              "get_pinned_allocator: pinned (page-locked) host memory needs the CUDA backend",
              cuda_is_built()
                  ? ", which has not registered one"
                  : ": ember was built without CUDA (configure with -DEMBER_CUDA=real or sim)");
  return g_pinned_allocator;
}

Allocator* set_pinned_allocator(Allocator* allocator) {
  Allocator* old = g_pinned_allocator;
  g_pinned_allocator = allocator;
  return old;
}
void reset_peak_memory_stats(Device device) {
  get_allocator(device.type)->reset_peak_device_stats(device.index);
}
void empty_cache(Device device) { get_allocator(device.type)->empty_cache(); }

}  // namespace ember
