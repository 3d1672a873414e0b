// The Allocator interface: the CUDA caching allocator's statistics on the CPU allocator (Note
// [Allocator statistics]), allocations and streams (Note [Allocations and streams]), and the
// pinned-host slot (Note [Pinned host memory]).

#include <catch2/catch.hpp>

#include "fake_device.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::FakeCudaAllocator;
using ember::testing::FakeCudaScope;

TEST_CASE("cpu allocator statistics: allocated and reserved, current and peak",
          "[core][allocator]") {
  empty_cache();
  reset_peak_memory_stats();
  const MemoryStats s0 = memory_stats();
  CHECK(s0.reserved_bytes >= s0.allocated_bytes);
  CHECK(s0.peak_reserved_bytes == s0.reserved_bytes);
  CHECK(s0.peak_allocated_bytes == s0.allocated_bytes);
  CHECK(s0.peak_num_allocations == s0.num_allocations);
  CHECK(s0.cached_bytes == 0);

  const int64_t big = 3 * 1024 * 1024 + 5;  // a large block: rounded up, cached when freed
  {
    Tensor t = empty({big}, TensorOptions(kUInt8));
    const MemoryStats s1 = memory_stats();
    CHECK(s1.allocated_bytes == s0.allocated_bytes + big);
    CHECK(s1.reserved_bytes >= s0.reserved_bytes + big);
    CHECK(s1.reserved_bytes >= s1.allocated_bytes);
    CHECK(s1.peak_reserved_bytes >= s1.reserved_bytes);
    CHECK(s1.num_allocations == s0.num_allocations + 1);
    CHECK(s1.peak_num_allocations >= s1.num_allocations);
    CHECK(memory_allocated() == s1.allocated_bytes);
    CHECK(memory_reserved() == s1.reserved_bytes);
  }
  const MemoryStats s2 = memory_stats();
  CHECK(s2.allocated_bytes == s0.allocated_bytes);
  CHECK(s2.peak_allocated_bytes >= s0.allocated_bytes + big);
  CHECK(max_memory_allocated() == s2.peak_allocated_bytes);
  CHECK(s2.cached_bytes >= big);                                    // the freed block is kept...
  CHECK(s2.reserved_bytes == s0.reserved_bytes + s2.cached_bytes);  // ...and still reserved
  {
    Tensor again = empty({big}, TensorOptions(kUInt8));  // a cache hit reserves nothing new
    CHECK(memory_stats().reserved_bytes == s2.reserved_bytes);
  }
  empty_cache();
  const MemoryStats s3 = memory_stats();
  CHECK(s3.cached_bytes == 0);
  CHECK(s3.reserved_bytes == s0.reserved_bytes);
  CHECK(max_memory_reserved() >= s0.reserved_bytes + big);
  reset_peak_memory_stats();
  const MemoryStats s4 = memory_stats();
  CHECK(s4.peak_reserved_bytes == s4.reserved_bytes);
  CHECK(s4.peak_allocated_bytes == s4.allocated_bytes);
  CHECK(s4.peak_num_allocations == s4.num_allocations);

  // Peak counts follow many live blocks.
  {
    std::vector<Tensor> many;
    for (int i = 0; i < 10; ++i) many.push_back(empty({16}));
    CHECK(memory_stats().peak_num_allocations >= s4.num_allocations + 10);
  }
}

TEST_CASE("an allocation names its stream, record_stream checks the devices", "[core][allocator]") {
  Allocator* cpu = get_allocator(DeviceType::CPU);
  DataPtr p = cpu->allocate(128, new_stream(kCPU));
  CHECK(p.get() != nullptr);
  CHECK(p.device() == kCPU);
  record_stream(p, new_stream(kCPU));  // a no-op on the cpu
  CHECK_THROWS_WITH(cpu->allocate(128, Stream(Device("cuda:0"), 0)),
                    Contains("Allocator::allocate") && Contains("cuda:0"));
  CHECK_THROWS_WITH(record_stream(p, Stream(Device("cuda:1"), 2)),
                    Contains("record_stream") && Contains("cpu") && Contains("cuda:1"));
}

TEST_CASE("device tensors are allocated on their device's current stream", "[core][allocator]") {
  FakeCudaScope fake(/*install_allocator=*/true);
  const Device d1("cuda:1");
  Stream s = new_stream(d1);
  Tensor a = empty({4}, TensorOptions().device(Device("cuda:0")));
  Tensor b;
  {
    StreamGuard g(s);
    b = empty({4}, TensorOptions().device(d1));
  }
  REQUIRE(fake.allocator.streams.size() == 2);
  CHECK(fake.allocator.streams[0] == default_stream(Device("cuda:0")));
  CHECK(fake.allocator.streams[1] == s);
  CHECK(b.device() == d1);
  Stream other = new_stream(d1);
  record_stream(b.storage()->data_ptr, other);
  REQUIRE(fake.allocator.recorded.size() == 1);
  CHECK(fake.allocator.recorded[0] == other);
  CHECK_THROWS_WITH(record_stream(b.storage()->data_ptr, new_stream(Device("cuda:0"))),
                    Contains("record_stream") && Contains("cuda:1") && Contains("cuda:0"));
}

TEST_CASE("the pinned-host allocator slot", "[core][allocator]") {
  if (!cuda_is_built()) {
    CHECK_FALSE(has_pinned_allocator());
    CHECK_THROWS_WITH(get_pinned_allocator(),
                      Contains("get_pinned_allocator") && Contains("built without CUDA"));
  }
  FakeCudaAllocator pinned;
  Allocator* old = set_pinned_allocator(&pinned);
  CHECK(has_pinned_allocator());
  CHECK(get_pinned_allocator() == &pinned);
  CHECK(set_pinned_allocator(old) == &pinned);
}
