// The CUDA caching allocator (core/cuda_caching_allocator.h) without a device: each test builds
// its own allocator over a fake DeviceMemoryProvider (two devices of 64 MiB that count bytes and
// hand out made-up addresses, never touched) and uses the fake cuda backend of
// tests/fake_device.h for streams and events (a stream is busy while backend.busy holds its id).

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/cuda_memory.h"
#include "core/device_memory.h"
#include "fake_device.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::FakeCudaScope;

namespace {

constexpr size_t MiB = size_t{1} << 20;
using Config = CUDAAllocatorConfig;

class FakeMemoryProvider final : public DeviceMemoryProvider {
 public:
  explicit FakeMemoryProvider(size_t capacity = 64 * MiB, bool expandable = true)
      : capacity_(capacity), expandable_(expandable) {}

  int device_count() const override { return 2; }
  size_t total_memory(int) const override { return capacity_; }
  void* raw_alloc(int device, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (used[device] + bytes > capacity_) {
      ++failed;
      return nullptr;
    }
    used[device] += bytes;
    alloc_sizes.push_back(bytes);
    void* p = take_addresses(bytes);
    segments[p] = {device, bytes};
    return p;
  }
  void raw_free(int device, void* p) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = segments.find(p);
    if (it == segments.end() || it->second.first != device) {
      ++bad_calls;
      return;
    }
    used[device] -= it->second.second;
    segments.erase(it);
    ++raw_frees;
  }
  bool supports_expandable() const override { return expandable_; }
  size_t granularity() const override { return 2 * MiB; }
  void* reserve(int, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    void* p = take_addresses(bytes);
    reservations[p] = bytes;
    return p;
  }
  bool map(int device, void* p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!page_range_reserved(p, bytes)) ++bad_calls;
    if (used[device] + bytes > capacity_) {
      ++failed;
      return false;
    }
    used[device] += bytes;
    mapped[device] += bytes;
    return true;
  }
  void unmap(int device, void* p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!page_range_reserved(p, bytes) || bytes > mapped[device]) ++bad_calls;
    used[device] -= bytes;
    mapped[device] -= bytes;
  }
  void release(int, void* p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reservations.find(p);
    if (it == reservations.end() || it->second != bytes) {
      ++bad_calls;
      return;
    }
    reservations.erase(it);
  }

  size_t used[2] = {}, mapped[2] = {};
  std::vector<size_t> alloc_sizes;                   // raw_alloc sizes, in order
  std::map<void*, std::pair<int, size_t>> segments;  // live raw_alloc'd segments
  std::map<void*, size_t> reservations;              // live reserved ranges
  int raw_frees = 0, failed = 0, bad_calls = 0;

 private:
  // Made-up addresses, 2 MiB aligned, with a gap after each range.
  void* take_addresses(size_t bytes) {
    const uintptr_t p = next_;
    next_ += (bytes + 2 * MiB - 1) / (2 * MiB) * (2 * MiB) + 2 * MiB;
    return reinterpret_cast<void*>(p);
  }
  bool page_range_reserved(void* p, size_t bytes) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [base, size] : reservations) {
      const auto b = reinterpret_cast<uintptr_t>(base);
      if (a >= b && a + bytes <= b + size)
        return (a - b) % (2 * MiB) == 0 && bytes % (2 * MiB) == 0;
    }
    return false;
  }

  size_t capacity_;
  bool expandable_;
  std::mutex mu_;
  uintptr_t next_ = uintptr_t{1} << 40;
};

Stream s0() { return default_stream(Device("cuda:0")); }
// The fake addresses as numbers (Catch would print a char* as a string).
uintptr_t addr(const DataPtr& p) { return reinterpret_cast<uintptr_t>(p.get()); }

Config expandable() {
  Config c;
  c.expandable_segments = true;
  return c;
}

}  // namespace

TEST_CASE("cuda allocator: requests are rounded to 512 bytes, small and large pools",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr a = alloc.allocate(1, s0());
  DataPtr b = alloc.allocate(100, s0());
  CHECK(a.device() == Device("cuda:0"));
  CHECK(addr(b) == addr(a) + 512);        // both carved out of one 2 MiB small segment
  DataPtr c = alloc.allocate(MiB, s0());  // still small
  CUDAMemoryStats s = alloc.memory_stats(0);
  CHECK(s.allocated_bytes == 101 + static_cast<int64_t>(MiB));
  CHECK(s.active[kAllPools].current == 1024 + static_cast<int64_t>(MiB));
  CHECK(s.reserved[kSmallPool].current == static_cast<int64_t>(2 * MiB));
  CHECK(s.segment_count[kSmallPool].current == 1);
  CHECK(s.reserved[kLargePool].current == 0);

  DataPtr d = alloc.allocate(MiB + 1, s0());       // large: a 20 MiB segment
  DataPtr e = alloc.allocate(24 * MiB + 1, s0());  // large, >= 10 MiB: rounded to 2 MiB
  s = alloc.memory_stats(0);
  CHECK(s.active[kLargePool].current == static_cast<int64_t>(MiB + 512 + 24 * MiB + 512));
  CHECK(s.reserved[kLargePool].current == static_cast<int64_t>(20 * MiB + 26 * MiB));
  CHECK(s.segment_count[kAllPools].current == 3);
  CHECK(mem.alloc_sizes == std::vector<size_t>{2 * MiB, 20 * MiB, 26 * MiB});
  CHECK(s.reserved_bytes == s.reserved[kAllPools].current);
  CHECK(s.num_allocations == 5);

  DataPtr zero = alloc.allocate(0, s0());
  CHECK(zero.get() == nullptr);
  CHECK(alloc.memory_stats(0).num_allocations == 5);
}

TEST_CASE("cuda allocator: a freed block is reused by the next request of its size",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr p = alloc.allocate(3000, s0());
  uintptr_t first = addr(p);
  p.reset();
  CHECK(alloc.memory_stats(0).allocated_bytes == 0);
  CHECK(alloc.memory_stats(0).cached_bytes == static_cast<int64_t>(2 * MiB));
  DataPtr q = alloc.allocate(2900, s0());  // the same 3072-byte block
  CHECK(addr(q) == first);
  DataPtr big = alloc.allocate(30 * MiB, s0());
  uintptr_t big_addr = addr(big);
  big.reset();
  DataPtr big2 = alloc.allocate(29 * MiB, s0());
  CHECK(addr(big2) == big_addr);
  CHECK(mem.alloc_sizes.size() == 2);
  CHECK(alloc.memory_stats(0).total_allocations == 4);
}

TEST_CASE("cuda allocator: blocks split off a segment coalesce again when freed",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr a = alloc.allocate(4 * MiB, s0());
  DataPtr b = alloc.allocate(4 * MiB, s0());
  DataPtr c = alloc.allocate(4 * MiB, s0());
  uintptr_t base = addr(a);
  CHECK(addr(b) == base + 4 * MiB);
  CHECK(addr(c) == base + 8 * MiB);
  CHECK(mem.alloc_sizes == std::vector<size_t>{20 * MiB});
  CUDAMemoryStats s = alloc.memory_stats(0);
  CHECK(s.inactive_split[kLargePool].current == static_cast<int64_t>(8 * MiB));  // the rest
  CHECK(s.inactive_split_count[kLargePool].current == 1);

  b.reset();  // the middle: no free neighbour yet
  s = alloc.memory_stats(0);
  CHECK(s.inactive_split_count[kAllPools].current == 2);
  CHECK(s.inactive_split[kAllPools].current == static_cast<int64_t>(12 * MiB));
  a.reset();  // merges with b
  CHECK(alloc.memory_stats(0).inactive_split_count[kAllPools].current == 2);
  c.reset();  // merges with a+b and the rest: one whole segment again
  s = alloc.memory_stats(0);
  CHECK(s.inactive_split_count[kAllPools].current == 0);
  CHECK(s.inactive_split[kAllPools].current == 0);
  CHECK(s.cached_bytes == static_cast<int64_t>(20 * MiB));
  CHECK(s.active_count[kAllPools].current == 0);

  DataPtr whole = alloc.allocate(20 * MiB, s0());  // fits only if the block is whole again
  CHECK(addr(whole) == base);
  CHECK(mem.alloc_sizes.size() == 1);
}

TEST_CASE("cuda allocator: a block is reused only on its stream", "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});
  const Stream s1 = new_stream(Device("cuda:0"));

  DataPtr p = alloc.allocate(1000, s0());
  uintptr_t first = addr(p);
  p.reset();
  DataPtr q = alloc.allocate(1000, s1);
  uintptr_t on_s1 = addr(q);
  CHECK(on_s1 != first);
  CHECK(mem.alloc_sizes.size() == 2);  // s1 got a segment of its own
  DataPtr r = alloc.allocate(1000, s0());
  CHECK(addr(r) == first);
  DataPtr x = alloc.allocate(30 * MiB, s1);  // and the other way round
  const uintptr_t x_addr = addr(x);
  x.reset();
  DataPtr y = alloc.allocate(30 * MiB, s0());
  CHECK(addr(y) != x_addr);

  // allocate(n) uses the current stream of the current device.
  q.reset();
  {
    StreamGuard g(s1);
    DataPtr t = alloc.allocate(1000);
    CHECK(addr(t) == on_s1);
  }
}

TEST_CASE("cuda allocator: record_stream holds a block until the other stream's work is done",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});
  const Stream s1 = new_stream(Device("cuda:0"));

  DataPtr p = alloc.allocate(1000, s0());
  uintptr_t first = addr(p);
  alloc.record_stream(p, s1);
  alloc.record_stream(p, s0());        // its own stream: nothing to wait for
  scope.backend.busy[s1.id()] = true;  // s1 still has work queued
  p.reset();
  CUDAMemoryStats s = alloc.memory_stats(0);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.active[kAllPools].current == 1024);  // freed, but waiting for s1
  CHECK(scope.backend.events_created == 1);

  DataPtr q = alloc.allocate(1000, s0());
  CHECK(addr(q) != first);
  q.reset();
  scope.backend.busy.erase(s1.id());  // s1's work has finished
  DataPtr r = alloc.allocate(1000, s0());
  CHECK(addr(r) == first);
  CHECK(alloc.memory_stats(0).active[kAllPools].current == 1024);

  // Errors: a stream of another device, a pointer the allocator never gave out.
  const DataPtr other = alloc.allocate(1000, default_stream(Device("cuda:1")));
  CHECK_THROWS_WITH(alloc.record_stream(r, default_stream(Device("cuda:1"))),
                    Contains("record_stream") && Contains("cuda:0") && Contains("cuda:1"));
  DataPtr foreign(reinterpret_cast<void*>(4096), nullptr, nullptr, Device("cuda:0"));
  CHECK_THROWS_WITH(alloc.record_stream(foreign, s1), Contains("not a live allocation"));
}

TEST_CASE("cuda allocator: the out-of-memory retry waits for record_stream events",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});
  const Stream s1 = new_stream(Device("cuda:0"));

  DataPtr p = alloc.allocate(40 * MiB, s0());
  uintptr_t first = addr(p);
  alloc.record_stream(p, s1);
  scope.backend.busy[s1.id()] = true;
  p.reset();
  DataPtr q = alloc.allocate(40 * MiB, s0());  // 80 MiB would not fit: waits for s1, reuses p's
  CHECK(addr(q) == first);
  CHECK(scope.backend.busy.count(s1.id()) == 0);
  CHECK(alloc.memory_stats(0).num_alloc_retries == 1);
  CHECK(mem.alloc_sizes.size() == 1);
}

TEST_CASE("cuda allocator: out of memory frees the cache and retries", "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr a = alloc.allocate(40 * MiB, s0());
  a.reset();  // cached: 40 MiB reserved
  DataPtr small = alloc.allocate(100, s0());
  DataPtr b = alloc.allocate(50 * MiB, s0());  // 40 + 2 + 50 > 64: frees the 40 MiB, retries
  CUDAMemoryStats s = alloc.memory_stats(0);
  CHECK(s.num_alloc_retries == 1);
  CHECK(s.num_ooms == 0);
  CHECK(s.reserved_bytes == static_cast<int64_t>(52 * MiB));
  CHECK(mem.raw_frees == 1);
  CHECK(mem.used[0] == 52 * MiB);
}

TEST_CASE("cuda allocator: out of memory names the request and the four figures",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr a = alloc.allocate(30 * MiB, s0());
  CHECK_THROWS_WITH(alloc.allocate(40 * MiB, s0()),
                    Contains("CUDA out of memory on cuda:0: tried to allocate 40.00 MiB") &&
                        Contains("total capacity 64.00 MiB") && Contains("allocated 30.00 MiB") &&
                        Contains("max allocated 30.00 MiB") && Contains("reserved 30.00 MiB") &&
                        Contains("max reserved 30.00 MiB"));
  CHECK(alloc.memory_stats(0).num_ooms == 1);
  CHECK(alloc.memory_stats(0).num_alloc_retries == 1);
  CHECK_THROWS_WITH(alloc.allocate(size_t{1} << 62, default_stream(Device("cuda:1"))),
                    Contains("CUDA out of memory on cuda:1: tried to allocate 4294967296.00 GiB"));
  CHECK(alloc.memory_stats(1).num_ooms == 1);
  DataPtr b = alloc.allocate(30 * MiB, s0());  // still usable afterwards
  CHECK(alloc.memory_stats(0).allocated_bytes == static_cast<int64_t>(60 * MiB));
  CHECK(format_memory_size(100) == "100 bytes");
  CHECK(format_memory_size(1536) == "1.50 KiB");
  CHECK(format_memory_size(int64_t{3} << 30) == "3.00 GiB");
}

TEST_CASE("cuda allocator: peaks and reset_peak_memory_stats", "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr a = alloc.allocate(10 * MiB, s0());
  DataPtr b = alloc.allocate(20 * MiB, s0());
  b.reset();
  MemoryStats s = alloc.device_stats(0);
  CHECK(s.allocated_bytes == static_cast<int64_t>(10 * MiB));
  CHECK(s.peak_allocated_bytes == static_cast<int64_t>(30 * MiB));
  CHECK(s.peak_num_allocations == 2);
  CHECK(s.reserved_bytes == static_cast<int64_t>(30 * MiB));
  alloc.empty_cache();
  s = alloc.device_stats(0);
  CHECK(s.reserved_bytes == static_cast<int64_t>(10 * MiB));
  CHECK(s.peak_reserved_bytes == static_cast<int64_t>(30 * MiB));
  alloc.reset_peak_device_stats(0);
  s = alloc.device_stats(0);
  CHECK(s.peak_allocated_bytes == static_cast<int64_t>(10 * MiB));
  CHECK(s.peak_reserved_bytes == static_cast<int64_t>(10 * MiB));
  CHECK(s.peak_num_allocations == 1);
  CHECK(alloc.device_stats(1).peak_allocated_bytes == 0);  // per device

  // The same through the user functions, once the allocator is the cuda allocator.
  Allocator* old = cuda_is_built() ? get_allocator(DeviceType::CUDA) : nullptr;
  set_allocator(DeviceType::CUDA, &alloc);
  DataPtr c = alloc.allocate(4 * MiB, s0());
  c.reset();
  CHECK(cuda::memory_allocated() == static_cast<int64_t>(10 * MiB));
  CHECK(cuda::max_memory_allocated(0) == static_cast<int64_t>(14 * MiB));
  CHECK(cuda::memory_reserved() == static_cast<int64_t>(10 * MiB + 20 * MiB));
  CHECK(cuda::max_memory_reserved() == static_cast<int64_t>(30 * MiB));
  CHECK(memory_allocated(Device("cuda:0")) == static_cast<int64_t>(10 * MiB));
  CHECK(memory_allocated(Device("cuda:1")) == 0);
  cuda::reset_peak_memory_stats();
  CHECK(cuda::max_memory_allocated() == static_cast<int64_t>(10 * MiB));
  cuda::empty_cache();
  CHECK(cuda::memory_reserved() == static_cast<int64_t>(10 * MiB));
  CHECK(cuda::memory_stats().segment_count[kAllPools].current == 1);
  {
    DeviceGuard g(Device("cuda:1"));
    CHECK(cuda::memory_allocated() == 0);  // the current device
    CHECK(alloc.stats().allocated_bytes == 0);
  }
  CHECK(alloc.stats().allocated_bytes == static_cast<int64_t>(10 * MiB));
  CHECK_THROWS_WITH(cuda::memory_allocated(5), Contains("device index 5 is out of range"));
  set_allocator(DeviceType::CUDA, old);
}

TEST_CASE("cuda allocator: empty_cache returns unused segments and keeps used ones",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});

  DataPtr keep = alloc.allocate(100, s0());
  DataPtr x = alloc.allocate(2 * MiB + 1, s0());
  DataPtr y = alloc.allocate(30 * MiB, default_stream(Device("cuda:1")));
  x.reset();
  y.reset();
  CHECK(mem.used[0] == 22 * MiB);
  CHECK(mem.used[1] == 30 * MiB);
  alloc.empty_cache();
  CHECK(mem.used[0] == 2 * MiB);  // keep's small segment stays
  CHECK(mem.used[1] == 0);
  CHECK(mem.raw_frees == 2);
  CHECK(alloc.memory_stats(0).reserved_bytes == static_cast<int64_t>(2 * MiB));
  CHECK(alloc.memory_stats(1).segment_count[kAllPools].current == 0);
  keep.reset();
  alloc.empty_cache();
  CHECK(mem.segments.empty());
  CHECK(mem.bad_calls == 0);
}

TEST_CASE("cuda allocator: expandable segments grow instead of fragmenting",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  SECTION("the default allocator cannot place 46 MiB next to a 5 MiB tensor") {
    FakeMemoryProvider mem;
    CUDACachingAllocator alloc(&mem, Config{});
    DataPtr a = alloc.allocate(5 * MiB, s0());  // pins a 20 MiB segment
    CHECK_THROWS_WITH(alloc.allocate(46 * MiB, s0()),
                      Contains("CUDA out of memory") && Contains("expandable_segments:true"));
    CHECK(alloc.memory_stats(0).reserved_bytes == static_cast<int64_t>(20 * MiB));
  }
  SECTION("an expandable segment maps only what it needs") {
    FakeMemoryProvider mem;
    CUDACachingAllocator alloc(&mem, expandable());
    DataPtr a = alloc.allocate(5 * MiB, s0());  // maps 6 MiB
    CHECK(alloc.memory_stats(0).reserved_bytes == static_cast<int64_t>(6 * MiB));
    DataPtr b = alloc.allocate(46 * MiB, s0());  // the free 1 MiB tail and 46 MiB more pages
    CHECK(addr(b) == addr(a) + 5 * MiB);
    CUDAMemoryStats s = alloc.memory_stats(0);
    CHECK(s.reserved_bytes == static_cast<int64_t>(52 * MiB));
    CHECK(s.segment_count[kAllPools].current == 1);
    CHECK(mem.alloc_sizes.empty());
    CHECK(mem.mapped[0] == 52 * MiB);

    // Freed memory in the segment serves a bigger request later, in place.
    b.reset();
    DataPtr c = alloc.allocate(58 * MiB, s0());
    CHECK(addr(c) == addr(a) + 5 * MiB);
    CHECK(alloc.memory_stats(0).reserved_bytes == static_cast<int64_t>(64 * MiB));

    // Releasing the cache unmaps the free pages at the end, then the whole segment.
    c.reset();
    alloc.empty_cache();
    CHECK(mem.mapped[0] == 6 * MiB);
    CHECK(alloc.memory_stats(0).reserved_bytes == static_cast<int64_t>(6 * MiB));
    DataPtr d = alloc.allocate(600, s0());  // small pool: its own expandable segment
    CHECK(mem.reservations.size() == 2);
    a.reset();
    d.reset();
    alloc.empty_cache();
    CHECK(mem.mapped[0] == 0);
    CHECK(mem.reservations.empty());
    CUDAMemoryStats e = alloc.memory_stats(0);
    CHECK(e.reserved_bytes == 0);
    CHECK(e.segment_count[kAllPools].current == 0);
    CHECK(mem.bad_calls == 0);
  }
  SECTION("expandable segments need a provider with virtual memory") {
    FakeMemoryProvider mem(64 * MiB, /*expandable=*/false);
    CHECK_THROWS_WITH(CUDACachingAllocator(&mem, expandable()), Contains("expandable_segments"));
  }
}

TEST_CASE("cuda allocator: max_split_size_mb keeps big cached blocks whole",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  Config limited;
  limited.max_split_size = 30 * MiB;
  for (const bool limit : {false, true}) {
    CUDACachingAllocator alloc(&mem, limit ? limited : Config{});
    DataPtr a = alloc.allocate(40 * MiB, s0());
    uintptr_t big = addr(a);
    a.reset();
    DataPtr b = alloc.allocate(4 * MiB, s0());
    // Without a limit the 40 MiB block is split; with one, a new 20 MiB segment is made.
    CHECK((addr(b) == big) == !limit);
    if (limit) {
      DataPtr c = alloc.allocate(35 * MiB, s0());  // above the limit: the 40 MiB block, unsplit
      CHECK(addr(c) == big);
      CHECK(alloc.memory_stats(0).active[kLargePool].current == static_cast<int64_t>(44 * MiB));
    }
    b.reset();
    alloc.empty_cache();
  }
  CHECK(mem.alloc_sizes == std::vector<size_t>{40 * MiB, 40 * MiB, 20 * MiB});

  // Above the limit, a cached block more than 20 MiB too big is not used either.
  CUDACachingAllocator alloc(&mem, limited);
  DataPtr a = alloc.allocate(52 * MiB, s0());
  const uintptr_t big = addr(a);
  a.reset();
  DataPtr b = alloc.allocate(31 * MiB, s0());  // 52 >= 31 + 20: a new 32 MiB segment instead
  CHECK(addr(b) != big);
  CHECK(mem.alloc_sizes.back() == 32 * MiB);
}

TEST_CASE("cuda allocator: EMBER_CUDA_ALLOC_CONF", "[allocator][cuda-alloc]") {
  Config d = Config::parse("");
  CHECK(d.backend == Config::Backend::caching);
  CHECK_FALSE(d.expandable_segments);
  CHECK(d.max_split_size == std::numeric_limits<size_t>::max());
  Config c = Config::parse(" expandable_segments:true, max_split_size_mb:128 ,backend:native");
  CHECK(c.expandable_segments);
  CHECK(c.max_split_size == 128 * MiB);
  CHECK(c.backend == Config::Backend::native);
  CHECK(Config::parse("expandable_segments:False").expandable_segments == false);
  CHECK(Config::parse("", "1").backend == Config::Backend::native);
  CHECK(Config::parse("backend:caching", "0").backend == Config::Backend::caching);

  CHECK_THROWS_WITH(Config::parse("colour:blue"), Contains("unknown option 'colour'"));
  CHECK_THROWS_WITH(Config::parse("expandable_segments:yes"),
                    Contains("expandable_segments must be true or false, got 'yes'"));
  CHECK_THROWS_WITH(Config::parse("max_split_size_mb:0"), Contains("max_split_size_mb"));
  CHECK_THROWS_WITH(Config::parse("max_split_size_mb:-5"), Contains("'-5'"));
  CHECK_THROWS_WITH(Config::parse("max_split_size_mb:99999999999"), Contains("max_split_size_mb"));
  CHECK_THROWS_WITH(Config::parse("backend:fast"), Contains("backend must be caching or native"));
  CHECK_THROWS_WITH(Config::parse("expandable_segments"), Contains("expected key:value"));
  CHECK_THROWS_WITH(Config::parse("", "yes"), Contains("EMBER_CUDA_NO_CACHING"));

  // The lazy constructor reads the environment at its first use.
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  setenv("EMBER_CUDA_ALLOC_CONF", "max_split_size_mb:64,expandable_segments:true", 1);
  {
    CUDACachingAllocator alloc(&mem);
    CHECK(alloc.config().max_split_size == 64 * MiB);
    CHECK(alloc.config().expandable_segments);
  }
  setenv("EMBER_CUDA_ALLOC_CONF", "expandable_segments:maybe", 1);
  {
    CUDACachingAllocator alloc(&mem);
    CHECK_THROWS_WITH(alloc.allocate(10, s0()), Contains("expandable_segments"));
    CHECK_THROWS_WITH(alloc.allocate(10, s0()), Contains("'maybe'"));  // and every time after
  }
  unsetenv("EMBER_CUDA_ALLOC_CONF");
  setenv("EMBER_CUDA_NO_CACHING", "1", 1);
  {
    CUDACachingAllocator alloc(&mem);
    CHECK(alloc.config().backend == Config::Backend::native);
  }
  unsetenv("EMBER_CUDA_NO_CACHING");
}

TEST_CASE("cuda allocator: memory_summary is a table of the statistics",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});
  DataPtr a = alloc.allocate(4 * MiB, s0());
  DataPtr b = alloc.allocate(100, s0());
  const std::string t = alloc.memory_summary(0);
  for (const char* row : {"Allocated memory", "Active memory", "Reserved memory",
                          "Inactive split memory", "from large pool", "from small pool", "Segments",
                          "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed", "cuda:0", "OOMs: 0"})
    CHECK_THAT(t, Contains(row));
  CHECK_THAT(t, Contains("22.00 MiB"));  // reserved: a 20 MiB and a 2 MiB segment
  CHECK_THAT(t, Contains("16.00 MiB"));  // the split rest of the large segment
  CHECK_THAT(alloc.memory_summary(1), Contains("cuda:1"));
  CHECK_THROWS_WITH(alloc.memory_summary(2), Contains("device index 2 is out of range"));

  Allocator* old = cuda_is_built() ? get_allocator(DeviceType::CUDA) : nullptr;
  set_allocator(DeviceType::CUDA, &scope.allocator);
  CHECK_THROWS_WITH(cuda::memory_summary(), Contains("not the caching allocator"));
  set_allocator(DeviceType::CUDA, &alloc);
  CHECK(cuda::memory_summary() == t);
  set_allocator(DeviceType::CUDA, old);
}

TEST_CASE("cuda allocator: backend:native gives every allocation its own raw_alloc",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  Config native;
  native.backend = Config::Backend::native;
  CUDACachingAllocator alloc(&mem, native);
  const Stream s1 = new_stream(Device("cuda:0"));

  DataPtr a = alloc.allocate(100, s0());
  DataPtr b = alloc.allocate(100, s0());
  CHECK(mem.alloc_sizes == std::vector<size_t>{100, 100});  // exact sizes: redzones fit tightly
  CHECK(alloc.memory_stats(0).reserved_bytes == 200);
  alloc.record_stream(b, s1);
  scope.backend.busy[s1.id()] = true;
  a.reset();
  CHECK(mem.raw_frees == 1);  // at once, no cache
  b.reset();                  // after waiting for s1
  CHECK(scope.backend.busy.count(s1.id()) == 0);
  CHECK(mem.raw_frees == 2);
  CHECK(mem.used[0] == 0);
  MemoryStats s = alloc.memory_stats(0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.peak_reserved_bytes == 200);
  CHECK_THROWS_WITH(alloc.allocate(65 * MiB, s0()), Contains("CUDA out of memory on cuda:0"));
}

TEST_CASE("cuda allocator: bad devices and streams", "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  CUDACachingAllocator alloc(&mem, Config{});
  CHECK(alloc.device_count() == 2);
  CHECK_THROWS_WITH(alloc.allocate(10, Stream(Device(DeviceType::CUDA, 5), 0)),
                    Contains("CUDACachingAllocator::allocate: device index 5 is out of range"));
  CHECK_THROWS_WITH(alloc.allocate(10, Stream()),
                    Contains("cannot allocate cuda memory for stream 0 on cpu"));
  CHECK_THROWS_WITH(alloc.memory_stats(-1), Contains("device index -1"));
  CHECK_THROWS_WITH(alloc.reset_peak_device_stats(2), Contains("device index 2"));
  CHECK_THROWS_WITH(CUDACachingAllocator(nullptr, Config{}), Contains("no device memory provider"));
}

TEST_CASE("cuda allocator: concurrent allocations on two devices", "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem(1024 * MiB);  // no retry: it would synchronise the fake backend
  CUDACachingAllocator alloc(&mem, Config{});
  std::vector<Stream> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(new_stream(Device(DeviceType::CUDA, i % 2)));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<DataPtr> live(8);
      for (int i = 0; i < 2000; ++i) {
        const size_t n = rng() % 3 == 0 ? rng() % (4 * MiB) : rng() % 4096;
        live[rng() % live.size()] = alloc.allocate(n, streams[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int d = 0; d < 2; ++d) {
    const CUDAMemoryStats s = alloc.memory_stats(d);
    CHECK(s.allocated_bytes == 0);
    CHECK(s.active[kAllPools].current == 0);
    CHECK(s.inactive_split_count[kAllPools].current == 0);  // everything coalesced
    CHECK(s.total_allocations > 0);
  }
  alloc.empty_cache();
  CHECK(mem.segments.empty());
  CHECK(mem.bad_calls == 0);
}

TEST_CASE("cuda allocator: set_device_memory_provider installs the caching allocator",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  FakeMemoryProvider mem;
  Allocator* old_allocator = cuda_is_built() ? get_allocator(DeviceType::CUDA) : nullptr;
  DeviceMemoryProvider* old = set_device_memory_provider(&mem);
  CHECK(get_device_memory_provider() == &mem);
  auto* installed = dynamic_cast<CUDACachingAllocator*>(get_allocator(DeviceType::CUDA));
  REQUIRE(installed != nullptr);
  {
    DataPtr p = installed->allocate(1000, s0());
    CHECK(cuda::memory_allocated(0) == 1000);
    CHECK(mem.used[0] == 2 * MiB);
  }
  cuda::empty_cache();
  CHECK(mem.used[0] == 0);
  set_device_memory_provider(old);
  set_allocator(DeviceType::CUDA, old_allocator);
}

namespace {
// The fake backend, with a hook run when a device is synchronised: the work that finishes then
// may free tensors (a host callback holding the last reference to one).
class HookedBackend final : public DeviceBackend {
 public:
  int device_count() const override { return fake.device_count(); }
  void set_device(int index) override { fake.set_device(index); }
  int64_t new_stream(Device device) override { return fake.new_stream(device); }
  bool query_stream(const Stream& s) const override { return fake.query_stream(s); }
  void synchronize_stream(const Stream& s) const override { fake.synchronize_stream(s); }
  void synchronize_device(int index) const override {
    if (on_synchronize) on_synchronize();
    fake.synchronize_device(index);
  }
  void* create_event(Device device, bool timing) override {
    return fake.create_event(device, timing);
  }
  void destroy_event(void* e, Device device) noexcept override { fake.destroy_event(e, device); }
  void record_event(void* e, const Stream& s) override { fake.record_event(e, s); }
  bool query_event(void* e) const override { return fake.query_event(e); }
  void synchronize_event(void* e) const override { fake.synchronize_event(e); }
  void block_stream(void* e, const Stream& s) const override { fake.block_stream(e, s); }
  double elapsed_ms(void* a, void* b) const override { return fake.elapsed_ms(a, b); }

  mutable ember::testing::FakeCudaBackend fake;
  std::function<void()> on_synchronize;
};
}  // namespace

TEST_CASE("cuda allocator: releasing the cache waits for the device without its lock",
          "[allocator][cuda-alloc]") {
  FakeCudaScope scope;
  HookedBackend backend;
  DeviceBackend* old = set_device_backend(DeviceType::CUDA, &backend);
  {
    FakeMemoryProvider mem;
    CUDACachingAllocator alloc(&mem, Config{});
    DataPtr cached = alloc.allocate(10 * MiB, s0());
    cached.reset();
    DataPtr held = alloc.allocate(20 * MiB, s0());  // held by work still running on the device
    std::future<void> freed;
    bool freed_in_time = false;
    backend.on_synchronize = [&] {  // empty_cache synchronises cuda:0, then cuda:1
      if (freed.valid()) return;
      // The work finishes on another thread and drops its tensor; that takes the lock.
      freed = std::async(std::launch::async, [&] { held.reset(); });
      freed_in_time = freed.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    };
    alloc.empty_cache();
    backend.on_synchronize = nullptr;
    freed.get();
    CHECK(freed_in_time);
    // The segment freed during the wait stays (its work may have run on), the older one went.
    CHECK(mem.alloc_sizes == std::vector<size_t>{10 * MiB, 20 * MiB});
    CHECK(mem.raw_frees == 1);
    CHECK(mem.used[0] == 20 * MiB);
    alloc.empty_cache();
    CHECK(mem.used[0] == 0);
  }
  set_device_backend(DeviceType::CUDA, old);
}
