// Streams, events, DeviceGuard and StreamGuard (core/stream.h): the CPU's trivial stream, and a
// stand-in cuda backend (tests/fake_device.h) for what a device backend plugs in.

#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "fake_device.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::FakeCudaScope;

TEST_CASE("cpu streams are in-order and always done", "[core][stream]") {
  CHECK(default_stream(kCPU) == Stream());
  CHECK(default_stream(kCPU).is_default());
  CHECK(current_stream(kCPU) == default_stream(kCPU));
  Stream a = new_stream(kCPU), b = new_stream(kCPU);
  CHECK(a != b);
  CHECK(a.id() > 0);
  CHECK(a.device() == kCPU);
  CHECK(a.query());
  a.synchronize();
  synchronize(kCPU);
  CHECK(device_count(DeviceType::CPU) == 1);
  CHECK(current_device(DeviceType::CPU) == 0);
  CHECK(a.str() == "stream " + std::to_string(a.id()) + " on cpu");
}

TEST_CASE("StreamGuard sets and restores the current stream, also on exceptions",
          "[core][stream]") {
  Stream a = new_stream(kCPU), b = new_stream(kCPU);
  {
    StreamGuard g(a);
    CHECK(current_stream(kCPU) == a);
    CHECK(g.original_stream() == default_stream(kCPU));
    {
      StreamGuard inner(b);
      CHECK(current_stream(kCPU) == b);
    }
    CHECK(current_stream(kCPU) == a);
  }
  CHECK(current_stream(kCPU) == default_stream(kCPU));
  try {
    StreamGuard g(a);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(current_stream(kCPU) == default_stream(kCPU));
  set_current_stream(b);
  CHECK(current_stream(kCPU) == b);
  set_current_stream(default_stream(kCPU));
  CHECK_THROWS_WITH(set_current_stream(Stream(kCPU, -1)), Contains("set_current_stream"));
}

TEST_CASE("the current stream is thread-local", "[core][stream]") {
  Stream a = new_stream(kCPU);
  StreamGuard g(a);
  Stream seen;
  std::thread t([&] { seen = current_stream(kCPU); });
  t.join();
  CHECK(seen == default_stream(kCPU));
  CHECK(current_stream(kCPU) == a);
}

TEST_CASE("cpu events record host time", "[core][stream]") {
  Event never;
  CHECK_FALSE(never.was_recorded());
  CHECK(never.query());
  never.synchronize();

  Event start(DeviceType::CPU, true), stop(DeviceType::CPU, true);
  start.record();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.record(current_stream(kCPU));
  CHECK(stop.query());
  stop.synchronize();
  CHECK(start.device() == kCPU);
  const double ms = start.elapsed_ms(stop);
  CHECK(ms >= 15.0);
  CHECK(ms < 5000.0);
  stop.block(new_stream(kCPU));

  Event moved(std::move(start));
  CHECK(moved.was_recorded());
  CHECK_FALSE(start.was_recorded());  // NOLINT(bugprone-use-after-move): moved-from is empty
  CHECK(moved.elapsed_ms(stop) == ms);

  Event untimed;
  untimed.record();
  CHECK_THROWS_WITH(untimed.elapsed_ms(stop), Contains("enable_timing"));
  Event unrecorded(DeviceType::CPU, true);
  CHECK_THROWS_WITH(stop.elapsed_ms(unrecorded), Contains("recorded"));
  CHECK_THROWS_WITH(untimed.record(Stream(Device("cuda:0"), 0)),
                    Contains("Event::record") && Contains("cuda:0"));
}

TEST_CASE("without a cuda backend every cuda stream call is a clear error", "[core][stream]") {
  if (cuda_is_built()) return;  // "this build has a CUDA backend"
  CHECK_FALSE(has_device_backend(DeviceType::CUDA));
  CHECK(device_count(DeviceType::CUDA) == 0);
  CHECK_THROWS_WITH(current_stream(Device("cuda")),
                    Contains("current_stream") && Contains("built without CUDA"));
  CHECK_THROWS_WITH(DeviceGuard(Device("cuda:1")),
                    Contains("DeviceGuard") && Contains("built without CUDA"));
  CHECK_THROWS_WITH(StreamGuard(Stream(Device("cuda:0"), 3)),
                    Contains("StreamGuard") && Contains("built without CUDA"));
  CHECK_THROWS_WITH(current_device(DeviceType::CUDA), Contains("current_device"));
  CHECK_THROWS_WITH(new_stream(Device("cuda")), Contains("new_stream"));
  Event e(DeviceType::CUDA);
  CHECK_THROWS_WITH(e.record(), Contains("built without CUDA"));
}

TEST_CASE("DeviceGuard sets the current device per thread and tells the backend",
          "[core][stream]") {
  FakeCudaScope fake;
  CHECK(device_count(DeviceType::CUDA) == 2);
  CHECK(current_device(DeviceType::CUDA) == 0);
  {
    DeviceGuard g(Device("cuda:1"));
    CHECK(current_device(DeviceType::CUDA) == 1);
    CHECK(g.original_device() == Device("cuda:0"));
    CHECK(current_device(DeviceType::CPU) == 0);  // one index per device type
    int other_thread = -1;
    std::thread t([&] { other_thread = current_device(DeviceType::CUDA); });
    t.join();
    CHECK(other_thread == 0);
    {
      DeviceGuard same(Device("cuda:1"));  // no change: the backend is not called
      CHECK(current_device(DeviceType::CUDA) == 1);
    }
  }
  CHECK(current_device(DeviceType::CUDA) == 0);
  CHECK(fake.backend.set_device_calls == std::vector<int>{1, 0});
  CHECK_THROWS_WITH(
      DeviceGuard(Device("cuda:2")),
      Contains("DeviceGuard") && Contains("device index 2 is out of range for cuda (2 devices)"));
  CHECK_THROWS_WITH(set_current_device(Device("cuda:7")),
                    Contains("set_current_device") && Contains("index 7"));
  CHECK(current_device(DeviceType::CUDA) == 0);
}

TEST_CASE("each device has its own current stream, StreamGuard also sets the device",
          "[core][stream]") {
  FakeCudaScope fake;
  const Device d0("cuda:0"), d1("cuda:1");
  Stream s1 = new_stream(d1);
  CHECK(s1.device() == d1);
  CHECK(current_stream(d1) == default_stream(d1));
  {
    StreamGuard g(s1);
    CHECK(current_stream(d1) == s1);
    CHECK(current_stream(d0) == default_stream(d0));
    CHECK(current_device(DeviceType::CUDA) == 1);
    CHECK(g.original_stream() == default_stream(d1));
  }
  CHECK(current_stream(d1) == default_stream(d1));
  CHECK(current_device(DeviceType::CUDA) == 0);
  CHECK_THROWS_WITH(set_current_stream(Stream(Device("cuda:5"), 1)),
                    Contains("set_current_stream") && Contains("index 5"));
  CHECK_THROWS_WITH(current_stream(Device("cuda:2")), Contains("current_stream"));

  // Stream state goes through the backend.
  fake.backend.busy[s1.id()] = true;
  CHECK_FALSE(s1.query());
  s1.synchronize();
  CHECK(s1.query());
}

TEST_CASE("device events go through the backend and refuse streams of other device types",
          "[core][stream]") {
  FakeCudaScope fake;
  const Device d0("cuda:0"), d1("cuda:1");
  Stream s0 = new_stream(d0), t0 = new_stream(d0), s1 = new_stream(d1);
  {
    Event start(DeviceType::CUDA, true), stop(DeviceType::CUDA, true);
    {
      StreamGuard g(s0);
      start.record();  // the current stream of the current device
    }
    fake.backend.clock_ms = 2.5;
    fake.backend.busy[s0.id()] = true;
    stop.record(s0);
    CHECK(stop.device() == d0);
    CHECK_FALSE(stop.query());
    CHECK_THROWS_WITH(start.elapsed_ms(stop), Contains("completed"));
    stop.synchronize();
    CHECK(stop.query());
    CHECK(start.elapsed_ms(stop) == 2.5);

    stop.block(t0);
    REQUIRE(fake.backend.blocks.size() == 1);
    CHECK(fake.backend.blocks[0] == std::make_pair(s0.id(), t0.id()));

    CHECK_THROWS_WITH(stop.record(s1),
                      Contains("Event::record") && Contains("cuda:0") && Contains("cuda:1"));
    // A stream of another cuda device may wait for the event (cudaStreamWaitEvent allows it).
    stop.block(s1);
    REQUIRE(fake.backend.blocks.size() == 2);
    CHECK(fake.backend.blocks[1] == std::make_pair(s0.id(), s1.id()));
    CHECK_THROWS_WITH(stop.block(new_stream(kCPU)), Contains("Event::block"));
    Event other(DeviceType::CUDA, true);
    other.record(s1);
    CHECK_THROWS_WITH(start.elapsed_ms(other), Contains("cuda:0") && Contains("cuda:1"));
    CHECK(fake.backend.events_created == 3);
  }
  CHECK(fake.backend.events_destroyed == 3);
}
