#include "core/cuda_caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/stream.h"

namespace ember {

// ---- configuration (Note [Allocator config]) ---------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "True") return true;
  if (value == "false" || value == "False") return false;
  EMBER_ERROR("EMBER_CUDA_ALLOC_CONF: ", key, " must be true or false, got '", value, "'");
}

size_t parse_megabytes(const std::string& key, const std::string& value) {
  const bool digits = !value.empty() && value.size() <= 9 &&
                      value.find_first_not_of("0123456789") == std::string::npos;
  EMBER_CHECK(digits && std::stoll(value) > 0, "EMBER_CUDA_ALLOC_CONF: ", key,
              " must be a positive number of MiB, got '", value, "'");
  return static_cast<size_t>(std::stoll(value)) << 20;
}

}  // namespace

CUDAAllocatorConfig CUDAAllocatorConfig::parse(const std::string& alloc_conf,
                                               const char* no_caching) {
  CUDAAllocatorConfig c;
  size_t pos = 0;
  while (pos <= alloc_conf.size()) {
    size_t comma = alloc_conf.find(',', pos);
    if (comma == std::string::npos) comma = alloc_conf.size();
    const std::string item = trim(alloc_conf.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    EMBER_CHECK(colon != std::string::npos,
                "EMBER_CUDA_ALLOC_CONF: expected key:value (e.g. expandable_segments:true), got '",
                item, "'");
    const std::string key = trim(item.substr(0, colon)), value = trim(item.substr(colon + 1));
    if (key == "backend") {
      EMBER_CHECK(value == "caching" || value == "native",
                  "EMBER_CUDA_ALLOC_CONF: backend must be caching or native, got '", value, "'");
      c.backend = value == "native" ? Backend::native : Backend::caching;
    } else if (key == "expandable_segments") {
      c.expandable_segments = parse_bool(key, value);
    } else if (key == "max_split_size_mb") {
      c.max_split_size = parse_megabytes(key, value);
    } else {
      EMBER_ERROR("EMBER_CUDA_ALLOC_CONF: unknown option '", key,
                  "' (the options are backend, expandable_segments, max_split_size_mb)");
    }
  }
  if (no_caching != nullptr && *no_caching != '\0') {
    const std::string v = trim(no_caching);
    EMBER_CHECK(v == "0" || v == "1", "EMBER_CUDA_NO_CACHING must be 0 or 1, got '", v, "'");
    if (v == "1") c.backend = Backend::native;
  }
  return c;
}

CUDAAllocatorConfig CUDAAllocatorConfig::from_env() {
  const char* conf = std::getenv("EMBER_CUDA_ALLOC_CONF");
  return parse(conf ? conf : "", std::getenv("EMBER_CUDA_NO_CACHING"));
}

std::string format_memory_size(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes), a = b < 0 ? -b : b;
  if (a < 1024) {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  } else if (a < 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024);
  } else if (a < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

// ---- blocks, pools, segments -------------------------------------------------------------------

namespace detail {

namespace {

using A = CUDACachingAllocator;

struct BlockPool;
struct ExpandableSegment;

// A piece of a segment: handed out (allocated), waiting for record_stream events, or free in
// its pool. prev/next link the blocks of one segment in address order.
struct Block {
  Block(CUDADeviceCache* o, Stream s, size_t n, char* p, BlockPool* pl)
      : owner(o), stream(s), size(n), ptr(p), pool(pl) {}
  CUDADeviceCache* owner;
  Stream stream;  // the stream it was allocated for (Note [Stream-aware reuse])
  size_t size;    // bytes, a multiple of kMinBlockSize
  char* ptr;
  BlockPool* pool;
  size_t requested = 0;  // bytes asked for, while allocated
  Block* prev = nullptr;
  Block* next = nullptr;
  ExpandableSegment* segment = nullptr;  // null: a raw_alloc'd segment
  bool allocated = false;
  bool counted_split = false;  // counted as inactive split while in its pool
  int event_count = 0;         // record_stream events not yet completed
  uint64_t freed_at = 0;       // when it last returned to its pool (Note [Releasing the cache])
  std::vector<Stream> stream_uses;

  bool is_split() const { return prev != nullptr || next != nullptr; }
  bool in_pool() const { return !allocated && event_count == 0; }
};

// Note [Caching allocator pools]: best fit is the first block not below (stream, size, 0).
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream.id() != b->stream.id()) return a->stream.id() < b->stream.id();
    if (a->size != b->size) return a->size < b->size;
    return std::less<const char*>()(a->ptr, b->ptr);
  }
};

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  std::set<Block*, BlockOrder> blocks;
  bool is_small;
  StatPool stat() const { return is_small ? kSmallPool : kLargePool; }
};

// Note [Expandable segments]: [base, base + mapped) is backed and covered by blocks; `last` is
// the block ending at base + mapped.
struct ExpandableSegment {
  char* base;
  size_t reserved;
  size_t mapped = 0;
  Block* last = nullptr;
};

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

size_t round_size(size_t nbytes) {
  return nbytes < A::kMinBlockSize ? A::kMinBlockSize : round_up(nbytes, A::kMinBlockSize);
}

size_t segment_size(size_t size, bool small) {
  if (small) return A::kSmallBuffer;
  if (size < A::kMinLargeAlloc) return A::kLargeBuffer;
  return round_up(size, A::kRoundLarge);
}

void increase(StatArray& a, StatPool pool, int64_t n) {
  for (int i : {static_cast<int>(kAllPools), static_cast<int>(pool)}) {
    a[i].current += n;
    a[i].peak = std::max(a[i].peak, a[i].current);
    a[i].allocated += n;
  }
}

void decrease(StatArray& a, StatPool pool, int64_t n) {
  for (int i : {static_cast<int>(kAllPools), static_cast<int>(pool)}) {
    a[i].current -= n;
    a[i].freed += n;
  }
}

void reset_peaks(StatArray& a) {
  for (Stat& s : a) s.peak = s.current;
}

int64_t i64(size_t n) { return static_cast<int64_t>(n); }

}  // namespace

// One device's pools, segments and statistics, behind one lock.
class CUDADeviceCache {
 public:
  CUDADeviceCache(int device, DeviceMemoryProvider* provider, const CUDAAllocatorConfig* config)
      : device_(device), provider_(provider), config_(config) {}
  ~CUDADeviceCache() { release_cached(std::numeric_limits<uint64_t>::max()); }

  DataPtr allocate(size_t nbytes, const Stream& stream);
  void record_stream(void* ptr, const Stream& stream);
  void empty_cache();
  CUDAMemoryStats stats() const;
  void reset_peak();

  // The DataPtr deleter: ctx is the Block.
  static void delete_block(void* ctx, void*) {
    Block* b = static_cast<Block*>(ctx);
    b->owner->free(b);
  }

 private:
  void free(Block* b) noexcept;
  Block* allocate_native(size_t nbytes, const Stream& stream);
  Block* allocate_cached(size_t nbytes, const Stream& stream, std::unique_lock<std::mutex>& lock);
  Block* take_free_block(BlockPool& pool, const Stream& stream, size_t size);
  Block* new_memory(BlockPool& pool, const Stream& stream, size_t size);
  Block* grow_expandable(BlockPool& pool, const Stream& stream, size_t size);
  void split(Block* b, size_t size);
  void free_block(Block* b);
  void merge(Block* dst, Block* src);
  void pool_insert(Block* b);
  void pool_erase(Block* b);
  void insert_events(Block* b) noexcept;
  void process_events();
  uint64_t wait_for_device(std::unique_lock<std::mutex>& lock);
  void release_cached(uint64_t freed_before);
  [[noreturn]] void raise_oom(size_t nbytes);

  const int device_;
  DeviceMemoryProvider* const provider_;
  const CUDAAllocatorConfig* const config_;
  mutable std::mutex mu_;
  BlockPool small_{true}, large_{false};
  std::unordered_map<void*, Block*> live_;        // allocated blocks by address
  std::deque<std::pair<Event, Block*>> pending_;  // record_stream events of freed blocks
  std::vector<Event> spare_events_;               // completed events, for reuse
  std::map<std::pair<int64_t, bool>, std::unique_ptr<ExpandableSegment>> expandable_;
  CUDAMemoryStats stats_;
  uint64_t free_count_ = 0;  // blocks returned to a pool so far: the clock of Block::freed_at
};

DataPtr CUDADeviceCache::allocate(size_t nbytes, const Stream& stream) {
  const Device device(DeviceType::CUDA, device_);
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, device);
  std::unique_lock<std::mutex> lock(mu_);
  process_events();
  Block* b = config_->backend == CUDAAllocatorConfig::Backend::native
                 ? allocate_native(nbytes, stream)
                 : allocate_cached(nbytes, stream, lock);
  b->allocated = true;
  b->requested = nbytes;
  live_[b->ptr] = b;
  const StatPool p = b->pool->stat();
  increase(stats_.allocated, p, i64(nbytes));
  increase(stats_.allocation_count, p, 1);
  increase(stats_.active, p, i64(b->size));
  increase(stats_.active_count, p, 1);
  return DataPtr(b->ptr, b, &CUDADeviceCache::delete_block, device);
}

// Note [Allocator config]: backend:native, one raw_alloc per allocation.
Block* CUDADeviceCache::allocate_native(size_t nbytes, const Stream& stream) {
  void* p =
      nbytes <= provider_->total_memory(device_) ? provider_->raw_alloc(device_, nbytes) : nullptr;
  if (p == nullptr) raise_oom(nbytes);
  BlockPool& pool = nbytes <= A::kSmallSize ? small_ : large_;
  increase(stats_.reserved, pool.stat(), i64(nbytes));
  increase(stats_.segment_count, pool.stat(), 1);
  return new Block(this, stream, nbytes, static_cast<char*>(p), &pool);
}

Block* CUDADeviceCache::allocate_cached(size_t nbytes, const Stream& stream,
                                        std::unique_lock<std::mutex>& lock) {
  // A request beyond the capacity cannot succeed (and must not overflow the rounding).
  if (nbytes > provider_->total_memory(device_)) raise_oom(nbytes);
  const size_t size = round_size(nbytes);
  BlockPool& pool = size <= A::kSmallSize ? small_ : large_;
  Block* b = take_free_block(pool, stream, size);
  if (b == nullptr) b = new_memory(pool, stream, size);
  if (b == nullptr) {  // Note [Out of memory]
    ++stats_.num_alloc_retries;
    const uint64_t freed_before = wait_for_device(lock);
    b = take_free_block(pool, stream, size);  // a block the events held back
    if (b == nullptr) {
      release_cached(freed_before);
      b = new_memory(pool, stream, size);
    }
  }
  if (b == nullptr) raise_oom(nbytes);
  split(b, size);
  return b;
}

Block* CUDADeviceCache::take_free_block(BlockPool& pool, const Stream& stream, size_t size) {
  Block key(this, stream, size, nullptr, &pool);
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream.id() != stream.id()) return nullptr;
  Block* b = *it;
  const size_t max_split = config_->max_split_size;
  if (!config_->expandable_segments) {
    if (size < max_split && b->size >= max_split) return nullptr;  // keep big blocks whole
    if (size >= max_split && b->size >= size + A::kLargeBuffer) return nullptr;  // too wasteful
  }
  pool_erase(b);
  return b;
}

Block* CUDADeviceCache::new_memory(BlockPool& pool, const Stream& stream, size_t size) {
  if (config_->expandable_segments) return grow_expandable(pool, stream, size);
  const size_t bytes = segment_size(size, pool.is_small);
  void* p = provider_->raw_alloc(device_, bytes);
  if (p == nullptr) return nullptr;
  increase(stats_.reserved, pool.stat(), i64(bytes));
  increase(stats_.segment_count, pool.stat(), 1);
  return new Block(this, stream, bytes, static_cast<char*>(p), &pool);
}

// Note [Expandable segments]: maps what the segment's free last block (if any) lacks.
Block* CUDADeviceCache::grow_expandable(BlockPool& pool, const Stream& stream, size_t size) {
  const size_t page = provider_->granularity();
  std::unique_ptr<ExpandableSegment>& seg = expandable_[{stream.id(), pool.is_small}];
  if (!seg) {
    const size_t bytes = round_up(provider_->total_memory(device_), page);
    void* base = provider_->reserve(device_, bytes);
    if (base == nullptr) {
      expandable_.erase({stream.id(), pool.is_small});
      return nullptr;
    }
    seg.reset(new ExpandableSegment{static_cast<char*>(base), bytes});
  }
  Block* last = seg->last;
  const bool extend = last != nullptr && last->in_pool();
  // take_free_block would have found a free last block of the size.
  EMBER_INTERNAL_ASSERT(!extend || last->size < size, "grow_expandable: the last block fits");
  const size_t need = round_up(size - (extend ? last->size : 0), page);
  if (seg->mapped + need > seg->reserved) return nullptr;
  if (!provider_->map(device_, seg->base + seg->mapped, need)) return nullptr;
  increase(stats_.reserved, pool.stat(), i64(need));
  if (seg->mapped == 0) increase(stats_.segment_count, pool.stat(), 1);
  if (extend) {
    pool_erase(last);
    last->size += need;
    seg->mapped += need;
    return last;
  }
  Block* b = new Block(this, stream, need, seg->base + seg->mapped, &pool);
  b->segment = seg.get();
  b->prev = last;
  if (last != nullptr) last->next = b;
  seg->last = b;
  seg->mapped += need;
  return b;
}

// Note [Caching allocator pools]: keeps the rest of a block when it is worth keeping.
void CUDADeviceCache::split(Block* b, size_t size) {
  const size_t rest_bytes = b->size - size;
  const bool keep = b->pool->is_small || config_->expandable_segments
                        ? rest_bytes >= A::kMinBlockSize
                        : size < config_->max_split_size && rest_bytes > A::kSmallSize;
  if (!keep) return;
  Block* rest = new Block(this, b->stream, rest_bytes, b->ptr + size, b->pool);
  rest->segment = b->segment;
  rest->freed_at = b->freed_at;
  rest->prev = b;
  rest->next = b->next;
  if (rest->next != nullptr) rest->next->prev = rest;
  b->next = rest;
  if (rest->segment != nullptr && rest->segment->last == b) rest->segment->last = rest;
  b->size = size;
  pool_insert(rest);
}

void CUDADeviceCache::free(Block* b) noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  const StatPool p = b->pool->stat();
  b->allocated = false;
  decrease(stats_.allocated, p, i64(b->requested));
  decrease(stats_.allocation_count, p, 1);
  live_.erase(b->ptr);
  if (config_->backend == CUDAAllocatorConfig::Backend::caching) {
    if (!b->stream_uses.empty()) insert_events(b);
    if (b->event_count == 0) free_block(b);
    return;
  }
  // backend:native frees at once, once the streams that used the block have finished; it waits
  // without the lock (Note [Releasing the cache]).
  decrease(stats_.active, p, i64(b->size));
  decrease(stats_.active_count, p, 1);
  decrease(stats_.reserved, p, i64(b->size));
  decrease(stats_.segment_count, p, 1);
  lock.unlock();
  b->stream_uses.push_back(b->stream);
  const InternalWait internal;  // Note [Internal waits]
  for (const Stream& s : b->stream_uses) {
    try {
      s.synchronize();
    } catch (...) {  // no backend any more (static destruction): nothing can still run
    }
  }
  provider_->raw_free(device_, b->ptr);
  delete b;
}

// Note [Stream-aware reuse]: one event on each extra stream; the block waits for them all.
void CUDADeviceCache::insert_events(Block* b) noexcept {
  for (const Stream& s : b->stream_uses) {
    try {
      Event e(DeviceType::CUDA);
      if (!spare_events_.empty()) {
        e = std::move(spare_events_.back());
        spare_events_.pop_back();
      }
      e.record(s);
      pending_.emplace_back(std::move(e), b);
      ++b->event_count;
    } catch (...) {  // the stream cannot be recorded on (its backend is gone): nothing to wait for
    }
  }
  b->stream_uses.clear();
}

void CUDADeviceCache::process_events() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!it->first.query()) {
      ++it;
      continue;
    }
    Block* b = it->second;
    spare_events_.push_back(std::move(it->first));
    it = pending_.erase(it);
    if (--b->event_count == 0) free_block(b);
  }
}

// Note [Releasing the cache]
// Memory may go back to the provider only when no queued work can still use it, so releasing
// the cache waits for the device first. It waits without the lock: work on a stream may free
// tensors (a host callback holding one) and so need the lock to finish. A block freed while the
// lock was released may still be in use, so only blocks that were back in their pool before the
// wait (freed_at up to the count returned here) are released. Waiting for the device also
// completes every pending record_stream event of the device.
uint64_t CUDADeviceCache::wait_for_device(std::unique_lock<std::mutex>& lock) {
  const uint64_t freed_before = free_count_;
  if (has_device_backend(DeviceType::CUDA)) {
    lock.unlock();
    const InternalWait internal;  // Note [Internal waits]
    ember::synchronize(Device(DeviceType::CUDA, device_));
    lock.lock();
  }
  process_events();
  return freed_before;
}

// A block back in its pool, merged with its free neighbours.
void CUDADeviceCache::free_block(Block* b) {
  const StatPool p = b->pool->stat();
  decrease(stats_.active, p, i64(b->size));
  decrease(stats_.active_count, p, 1);
  for (Block* n : {b->prev, b->next}) {
    if (n != nullptr && n->in_pool()) merge(b, n);
  }
  b->freed_at = ++free_count_;
  pool_insert(b);
}

void CUDADeviceCache::merge(Block* dst, Block* src) {
  pool_erase(src);
  if (src == dst->prev) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  dst->size += src->size;
  if (dst->segment != nullptr && dst->segment->last == src) dst->segment->last = dst;
  delete src;
}

void CUDADeviceCache::pool_insert(Block* b) {
  b->pool->blocks.insert(b);
  b->counted_split = b->is_split();
  if (b->counted_split) {
    increase(stats_.inactive_split, b->pool->stat(), i64(b->size));
    increase(stats_.inactive_split_count, b->pool->stat(), 1);
  }
}

void CUDADeviceCache::pool_erase(Block* b) {
  b->pool->blocks.erase(b);
  if (b->counted_split) {
    decrease(stats_.inactive_split, b->pool->stat(), i64(b->size));
    decrease(stats_.inactive_split_count, b->pool->stat(), 1);
    b->counted_split = false;
  }
}

// Gives back every wholly free segment and the free pages at the end of expandable segments,
// of blocks freed up to `freed_before` (Note [Releasing the cache]).
void CUDADeviceCache::release_cached(uint64_t freed_before) {
  std::vector<Block*> whole;
  for (BlockPool* pool : {&small_, &large_}) {
    for (Block* b : pool->blocks) {
      if (b->segment == nullptr && !b->is_split() && b->freed_at <= freed_before)
        whole.push_back(b);
    }
  }
  std::vector<ExpandableSegment*> trim;
  const size_t page = provider_->granularity();
  for (auto& entry : expandable_) {
    ExpandableSegment* seg = entry.second.get();
    Block* last = seg->last;
    if (last != nullptr && last->in_pool() && last->freed_at <= freed_before &&
        round_up(static_cast<size_t>(last->ptr - seg->base), page) < seg->mapped)
      trim.push_back(seg);
  }
  spare_events_.clear();
  for (Block* b : whole) {
    pool_erase(b);
    provider_->raw_free(device_, b->ptr);
    decrease(stats_.reserved, b->pool->stat(), i64(b->size));
    decrease(stats_.segment_count, b->pool->stat(), 1);
    delete b;
  }
  for (ExpandableSegment* seg : trim) {
    Block* last = seg->last;
    const StatPool p = last->pool->stat();
    const bool small = last->pool->is_small;
    const int64_t stream_id = last->stream.id();
    const size_t keep = round_up(static_cast<size_t>(last->ptr - seg->base), page);
    const size_t bytes = seg->mapped - keep;
    pool_erase(last);
    provider_->unmap(device_, seg->base + keep, bytes);
    decrease(stats_.reserved, p, i64(bytes));
    seg->mapped = keep;
    if (last->ptr == seg->base + keep) {
      seg->last = last->prev;
      if (last->prev != nullptr) last->prev->next = nullptr;
      delete last;
    } else {
      last->size -= bytes;
      pool_insert(last);
    }
    if (seg->mapped == 0) {
      decrease(stats_.segment_count, p, 1);
      provider_->release(device_, seg->base, seg->reserved);
      expandable_.erase({stream_id, small});
    }
  }
}

void CUDADeviceCache::empty_cache() {
  std::unique_lock<std::mutex> lock(mu_);
  release_cached(wait_for_device(lock));
}

void CUDADeviceCache::record_stream(void* ptr, const Stream& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  EMBER_CHECK(it != live_.end(), "record_stream: ", ptr,
              " is not a live allocation of the cuda caching allocator on cuda:", device_);
  Block* b = it->second;
  if (stream == b->stream) return;
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end())
    b->stream_uses.push_back(stream);
}

// Note [Out of memory]
void CUDADeviceCache::raise_oom(size_t nbytes) {
  ++stats_.num_ooms;
  const Stat& a = stats_.allocated[kAllPools];
  const Stat& r = stats_.reserved[kAllPools];
  const int64_t idle = r.current - stats_.active[kAllPools].current;
  std::string hint;
  if (idle > 0 && config_->backend == CUDAAllocatorConfig::Backend::caching &&
      !config_->expandable_segments && provider_->supports_expandable()) {
    hint = detail::str("; ", format_memory_size(idle),
                       " is reserved but free in partly used segments: "
                       "EMBER_CUDA_ALLOC_CONF=expandable_segments:true avoids this fragmentation");
  }
  EMBER_ERROR("CUDA out of memory on cuda:", device_, ": tried to allocate ",
              format_memory_size(i64(nbytes)), " (total capacity ",
              format_memory_size(i64(provider_->total_memory(device_))), ", allocated ",
              format_memory_size(a.current), ", max allocated ", format_memory_size(a.peak),
              ", reserved ", format_memory_size(r.current), ", max reserved ",
              format_memory_size(r.peak), ")", hint);
}

CUDAMemoryStats CUDADeviceCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CUDAMemoryStats s = stats_;
  s.allocated_bytes = s.allocated[kAllPools].current;
  s.peak_allocated_bytes = s.allocated[kAllPools].peak;
  s.num_allocations = s.allocation_count[kAllPools].current;
  s.peak_num_allocations = s.allocation_count[kAllPools].peak;
  s.total_allocations = s.allocation_count[kAllPools].allocated;
  s.reserved_bytes = s.reserved[kAllPools].current;
  s.peak_reserved_bytes = s.reserved[kAllPools].peak;
  s.cached_bytes = s.reserved_bytes - s.active[kAllPools].current;
  return s;
}

void CUDADeviceCache::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  for (StatArray* a : {&stats_.allocated, &stats_.active, &stats_.reserved, &stats_.inactive_split,
                       &stats_.allocation_count, &stats_.active_count, &stats_.segment_count,
                       &stats_.inactive_split_count})
    reset_peaks(*a);
}

}  // namespace detail

// ---- the allocator
// -------------------------------------------------------------------------------

namespace {
void check_config(const CUDAAllocatorConfig& c, const DeviceMemoryProvider* provider) {
  EMBER_CHECK(!c.expandable_segments || provider->supports_expandable(),
              "EMBER_CUDA_ALLOC_CONF: expandable_segments:true needs virtual memory, which this "
              "device memory provider does not support");
}
}  // namespace

CUDACachingAllocator::CUDACachingAllocator(DeviceMemoryProvider* provider,
                                           const CUDAAllocatorConfig& config)
    : provider_(provider), config_given_(true), config_(config) {
  EMBER_CHECK(provider != nullptr, "CUDACachingAllocator: no device memory provider");
  init();
}

CUDACachingAllocator::CUDACachingAllocator(DeviceMemoryProvider* provider)
    : provider_(provider), config_given_(false) {
  EMBER_CHECK(provider != nullptr, "CUDACachingAllocator: no device memory provider");
}

CUDACachingAllocator::~CUDACachingAllocator() = default;

void CUDACachingAllocator::init() const {
  std::call_once(init_once_, [this] {
    CUDAAllocatorConfig c = config_given_ ? config_ : CUDAAllocatorConfig::from_env();
    check_config(c, provider_);
    config_ = c;
    const int n = provider_->device_count();
    for (int i = 0; i < n; ++i)
      devices_.push_back(std::make_unique<detail::CUDADeviceCache>(i, provider_, &config_));
  });
}

const CUDAAllocatorConfig& CUDACachingAllocator::config() const {
  init();
  return config_;
}

int CUDACachingAllocator::device_count() const {
  init();
  return static_cast<int>(devices_.size());
}

detail::CUDADeviceCache& CUDACachingAllocator::device_cache(int device, const char* op) const {
  const int n = device_count();
  EMBER_CHECK(device >= 0 && device < n, op, ": device index ", device,
              " is out of range for cuda (", n, n == 1 ? " device)" : " devices)");
  return *devices_[static_cast<size_t>(device)];
}

DataPtr CUDACachingAllocator::allocate(size_t nbytes) {
  return allocate(nbytes,
                  current_stream(Device(DeviceType::CUDA, current_device(DeviceType::CUDA))));
}

DataPtr CUDACachingAllocator::allocate(size_t nbytes, const Stream& stream) {
  EMBER_CHECK(stream.device_type() == DeviceType::CUDA,
              "CUDACachingAllocator::allocate: cannot allocate cuda memory for ", stream);
  return device_cache(stream.device().index, "CUDACachingAllocator::allocate")
      .allocate(nbytes, stream);
}

void CUDACachingAllocator::record_stream(const DataPtr& ptr, const Stream& stream) {
  Allocator::record_stream(ptr, stream);
  if (ptr.get() == nullptr) return;
  device_cache(ptr.device().index, "record_stream").record_stream(ptr.get(), stream);
}

MemoryStats CUDACachingAllocator::stats() const {
  return device_stats(current_device(DeviceType::CUDA));
}

void CUDACachingAllocator::reset_peak_stats() {
  reset_peak_device_stats(current_device(DeviceType::CUDA));
}

MemoryStats CUDACachingAllocator::device_stats(int device) const { return memory_stats(device); }

void CUDACachingAllocator::reset_peak_device_stats(int device) {
  device_cache(device, "reset_peak_memory_stats").reset_peak();
}

void CUDACachingAllocator::empty_cache() {
  for (int i = 0; i < device_count(); ++i) devices_[static_cast<size_t>(i)]->empty_cache();
}

CUDAMemoryStats CUDACachingAllocator::memory_stats(int device) const {
  return device_cache(device, "memory_stats").stats();
}

}  // namespace ember
