#pragma once
// A stand-in "cuda" backend for the device-plumbing tests: two devices whose memory is host
// memory, so a CPU-only build can exercise everything core does for a device (streams, events,
// guards, device allocations, cross-device copies) without a GPU. Installing it replaces the
// cuda backend (and, with FakeCudaAllocator, the cuda allocator) for one scope.

#include <ember/ember.h>

#include <cstdlib>
#include <map>
#include <vector>

namespace ember::testing {

class FakeCudaBackend final : public DeviceBackend {
 public:
  struct FakeEvent {
    Device device;
    Stream stream;
    double time_ms = 0;
  };

  int device_count() const override { return 2; }
  void set_device(int index) override { set_device_calls.push_back(index); }
  int64_t new_stream(Device) override { return next_id++; }
  bool query_stream(const Stream& s) const override { return busy.count(s.id()) == 0; }
  void synchronize_stream(const Stream& s) const override { busy.erase(s.id()); }
  void synchronize_device(int) const override { busy.clear(); }

  void* create_event(Device device, bool) override {
    ++events_created;
    return new FakeEvent{device, Stream(device, 0)};
  }
  void destroy_event(void* event, Device) noexcept override {
    ++events_destroyed;
    delete static_cast<FakeEvent*>(event);
  }
  void record_event(void* event, const Stream& stream) override {
    auto* e = static_cast<FakeEvent*>(event);
    e->stream = stream;
    e->time_ms = clock_ms;
  }
  bool query_event(void* event) const override {
    return busy.count(static_cast<FakeEvent*>(event)->stream.id()) == 0;
  }
  void synchronize_event(void* event) const override {
    busy.erase(static_cast<FakeEvent*>(event)->stream.id());
  }
  void block_stream(void* event, const Stream& stream) const override {
    blocks.push_back({static_cast<FakeEvent*>(event)->stream.id(), stream.id()});
  }
  double elapsed_ms(void* start, void* end) const override {
    return static_cast<FakeEvent*>(end)->time_ms - static_cast<FakeEvent*>(start)->time_ms;
  }

  std::vector<int> set_device_calls;
  int64_t next_id = 1;
  mutable std::map<int64_t, bool> busy;                     // stream ids with unfinished work
  mutable std::vector<std::pair<int64_t, int64_t>> blocks;  // (event's stream, waiting stream)
  double clock_ms = 0;
  int events_created = 0, events_destroyed = 0;
};

// Host memory labelled as a cuda device; remembers the stream of each allocation.
class FakeCudaAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes) override {
    return allocate(nbytes, current_stream(Device("cuda")));
  }
  DataPtr allocate(size_t nbytes, const Stream& stream) override {
    streams.push_back(stream);
    void* p = std::malloc(nbytes == 0 ? 1 : nbytes);
    return DataPtr(
        p, nullptr, [](void*, void* data) { std::free(data); }, stream.device());
  }
  void record_stream(const DataPtr& ptr, const Stream& stream) override {
    Allocator::record_stream(ptr, stream);
    recorded.push_back(stream);
  }
  MemoryStats stats() const override { return {}; }
  void reset_peak_stats() override {}

  std::vector<Stream> streams, recorded;
};

// Installs the fake backend (and optionally the allocator) for a scope, then restores the
// previous ones and the thread's cuda device.
struct FakeCudaScope {
  FakeCudaBackend backend;
  FakeCudaAllocator allocator;
  DeviceBackend* old_backend;
  Allocator* old_allocator = nullptr;
  bool with_allocator;

  explicit FakeCudaScope(bool install_allocator = false)
      : old_backend(set_device_backend(DeviceType::CUDA, &backend)),
        with_allocator(install_allocator) {
    if (with_allocator) {
      old_allocator = cuda_is_built() ? get_allocator(DeviceType::CUDA) : nullptr;
      set_allocator(DeviceType::CUDA, &allocator);
    }
  }
  ~FakeCudaScope() {
    set_current_device(Device("cuda:0"));
    set_current_stream(default_stream(Device("cuda:0")));
    set_current_stream(default_stream(Device("cuda:1")));
    if (with_allocator) set_allocator(DeviceType::CUDA, old_allocator);
    set_device_backend(DeviceType::CUDA, old_backend);
  }
};

}  // namespace ember::testing
