// The host API: devices, device memory over capacity, virtual memory, streams as ordered
// queues, events, async copies and memsets.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;
using Catch::Contains;

namespace {

__global__ void scale(float* data, float factor, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) data[i] *= factor;
}

__global__ void fails_always() { throw std::runtime_error("kernel failure"); }

}  // namespace

TEST_CASE("the simulated device presents sm_90", "[cuda][sim][runtime]") {
  REQUIRE(device_count() >= 1);
  const DeviceProperties& p = properties(0);
  CHECK(p.major == 9);
  CHECK(p.minor == 0);
  CHECK(p.warp_size == 32);
  CHECK(p.max_threads_per_block == 1024);
  CHECK(p.shared_per_block == 48 << 10);
  CHECK(p.total_memory > 0);
  REQUIRE_THROWS_WITH(properties(device_count()), Contains("does not exist"));
  REQUIRE_THROWS_WITH(device_malloc(-1, 4), Contains("device_malloc: device -1"));
}

TEST_CASE("device_malloc counts against the capacity and returns nullptr over it",
          "[cuda][sim][runtime]") {
  size_t before = memory_in_use(0);
  size_t capacity = properties(0).total_memory;
  void* a = device_malloc(0, 1 << 20);
  REQUIRE(a != nullptr);
  CHECK(memory_in_use(0) == before + (1 << 20));
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK(device_malloc(0, capacity) == nullptr);
  CHECK(device_malloc(0, capacity - memory_in_use(0) + 1) == nullptr);
  device_free(0, a);
  CHECK(memory_in_use(0) == before);
  int local = 0;
  REQUIRE_THROWS_WITH(device_free(0, &local), Contains("not a live device_malloc allocation"));
}

TEST_CASE("reserve, map, unmap and release virtual memory", "[cuda][sim][runtime]") {
  size_t g = granularity();
  CHECK(g == size_t{2} << 20);
  size_t before = memory_in_use(0);
  auto* base = static_cast<char*>(reserve(0, 4 * g));
  REQUIRE(base != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(base) % g == 0);
  CHECK(memory_in_use(0) == before);  // a reservation counts nothing
  REQUIRE(map(0, base + g, 2 * g));
  CHECK(memory_in_use(0) == before + 2 * g);
  base[g] = 7;  // mapped memory is usable
  base[3 * g - 1] = 8;
  CHECK(base[g] == 7);
  REQUIRE_THROWS_WITH(map(0, base + g, g), Contains("mapped already"));
  REQUIRE_THROWS_WITH(map(0, base + 1, g), Contains("granularity-aligned"));
  size_t over = (properties(0).total_memory / g + 1) * g;  // more than the device has
  void* huge = reserve(0, over);
  REQUIRE(huge != nullptr);
  CHECK_FALSE(map(0, huge, over));
  release(0, huge, over);
  unmap(0, base + g, g);
  CHECK(memory_in_use(0) == before + g);
  REQUIRE_THROWS_WITH(unmap(0, base + g, g), Contains("not mapped"));
  release(0, base, 4 * g);  // releases the mapped rest too
  CHECK(memory_in_use(0) == before);
}

TEST_CASE("a stream runs its work in order, streams overlap", "[cuda][sim][runtime]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  Stream* s = stream_create(0);
  const int n = 1000;
  std::vector<float> host(n, 1.0f), back(n, 0.0f);
  auto* device = static_cast<float*>(device_malloc(0, n * sizeof(float)));
  memcpy_async(device, host.data(), n * sizeof(float), s);
  launch({"scale", dim3((n + 127) / 128), dim3(128), 0, s}, scale, device, 3.0f, n);
  launch({"scale", dim3((n + 127) / 128), dim3(128), 0, s}, scale, device, 2.0f, n);
  memcpy_async(back.data(), device, n * sizeof(float), s);
  std::vector<int> order;
  enqueue(s, [&] { order.push_back(1); });
  memset_async(device, 0, n * sizeof(float), s);
  enqueue(s, [&] { order.push_back(2); });
  stream_synchronize(s);
  CHECK(stream_query(s));
  for (int i = 0; i < n; ++i) REQUIRE(back[i] == 6.0f);
  CHECK(device[n - 1] == 0.0f);
  CHECK(order == std::vector<int>{1, 2});

  // A blocked stream does not hold up another one.
  Stream* other = stream_create(0);
  std::atomic<bool> release{false}, other_ran{false};
  enqueue(s, [&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  enqueue(other, [&] { other_ran = true; });
  stream_synchronize(other);
  CHECK(other_ran);
  CHECK_FALSE(stream_query(s));
  release = true;
  stream_synchronize(s);
  device_free(0, device);
  stream_destroy(other);
  stream_destroy(s);
}

TEST_CASE("events order streams and time them", "[cuda][sim][runtime]") {
  Stream* a = stream_create(0);
  Stream* b = stream_create(0);
  Event* start = event_create(true);
  Event* done = event_create(true);
  CHECK(event_query(done));  // never recorded: complete
  std::atomic<bool> release{false};
  std::vector<int> order;
  std::mutex m;
  event_record(start, a);
  enqueue(a, [&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(m);
    order.push_back(1);
  });
  event_record(done, a);
  stream_wait_event(b, done);  // b waits for a's work before its own
  enqueue(b, [&] {
    std::lock_guard<std::mutex> lock(m);
    order.push_back(2);
  });
  CHECK_FALSE(event_query(done));
  REQUIRE_THROWS_WITH(event_elapsed_ms(start, done), Contains("not been reached"));
  release = true;
  event_synchronize(done);
  CHECK(event_query(done));
  stream_synchronize(b);
  CHECK(order == std::vector<int>{1, 2});
  CHECK(event_elapsed_ms(start, done) >= 4.0f);
  Event* untimed = event_create(false);
  event_record(untimed, a);
  stream_synchronize(a);
  REQUIRE_THROWS_WITH(event_elapsed_ms(start, untimed), Contains("enable_timing"));
  event_destroy(untimed);
  event_destroy(start);
  event_destroy(done);
  stream_destroy(a);
  stream_destroy(b);
}

TEST_CASE("an async error is reported at the stream's synchronisation naming the kernel",
          "[cuda][sim][runtime]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  Stream* s = stream_create(0);
  std::vector<float> data(10, 1.0f);
  launch({"fails_always", dim3(1), dim3(1), 0, s}, fails_always);
  launch({"scale", dim3(1), dim3(32), 0, s}, scale, data.data(), 2.0f, 10);  // still runs
  REQUIRE_THROWS_WITH(stream_synchronize(s),
                      Contains("kernel 'fails_always'") && Contains("kernel failure"));
  CHECK(data[9] == 2.0f);
  stream_synchronize(s);  // reported once
  launch({"fails_always", dim3(1), dim3(1), 0, s}, fails_always);
  REQUIRE_THROWS_WITH(device_synchronize(0), Contains("kernel 'fails_always'"));
  stream_destroy(s);
}
