// The CUDA DeviceBackend (Note [Device backends plug in through DeviceBackend] in
// core/stream.h): ember's streams and events on the runtime of kernels/cuda/runtime.h, real or
// simulated.
//
// Note [CUDA stream ids]
// An ember Stream is a (device, id) value. Id 0 is the device's default stream; new_stream()
// creates a runtime stream and hands out the next id, its index in the device's table plus one.
// Runtime streams are never destroyed (PyTorch pools its streams the same way), so a Stream value
// stays valid for the life of the process and copying it costs nothing.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "core/error.h"
#include "core/stream.h"
#include "kernels/cuda/device_checks.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sync_debug.h"

namespace ember::kernels::cuda {

namespace {

struct StreamTable {
  std::mutex mutex;
  std::deque<NativeStream> streams[kMaxDevicesPerType];  // id - 1 -> runtime stream
};

StreamTable& stream_table() {
  static StreamTable t;
  return t;
}

struct CudaEvent {
  NativeEvent native;
  Device device;
};

class CUDABackend final : public DeviceBackend {
 public:
  int device_count() const override { return cuda::device_count(); }
  void set_device(int index) override { cuda::set_device(index); }

  int64_t new_stream(Device device) override {
    NativeStream s = create_native_stream(device.index);
    StreamTable& t = stream_table();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.streams[device.index].push_back(s);
    return static_cast<int64_t>(t.streams[device.index].size());
  }
  bool query_stream(const Stream& s) const override { return stream_query(native_stream(s)); }
  void synchronize_stream(const Stream& s) const override {
    {
      const QuietWait quiet;  // an explicit wait: Note [Sync debug mode]
      stream_synchronize(native_stream(s), "Stream::synchronize");
    }
    raise_failed_checks("Stream::synchronize");  // Note [Deferred device checks]
  }
  void synchronize_device(int index) const override {
    {
      const QuietWait quiet;
      device_synchronize(index, "synchronize");
    }
    raise_failed_checks("synchronize");
  }

  void* create_event(Device device, bool enable_timing) override {
    return new CudaEvent{event_create(device.index, enable_timing), device};
  }
  void destroy_event(void* event, Device) noexcept override {
    auto* e = static_cast<CudaEvent*>(event);
    event_destroy(e->native);
    delete e;
  }
  void record_event(void* event, const Stream& stream) override {
    cuda::event_record(static_cast<CudaEvent*>(event)->native, native_stream(stream));
  }
  bool query_event(void* event) const override {
    return cuda::event_query(static_cast<CudaEvent*>(event)->native);
  }
  void synchronize_event(void* event) const override {
    cuda::event_synchronize(static_cast<CudaEvent*>(event)->native);
    raise_failed_checks("Event::synchronize");
  }
  void block_stream(void* event, const Stream& stream) const override {
    stream_wait_event(native_stream(stream), static_cast<CudaEvent*>(event)->native);
  }
  double elapsed_ms(void* start, void* end) const override {
    return event_elapsed_ms(static_cast<CudaEvent*>(start)->native,
                            static_cast<CudaEvent*>(end)->native);
  }
  DeviceProperties properties(int index) const override { return cuda::properties(index); }
};

}  // namespace

int multiprocessor_count(int device) {
  EMBER_INTERNAL_ASSERT(device >= 0 && device < kMaxDevicesPerType, "multiprocessor_count: device ",
                        device);
  static std::atomic<int> counts[kMaxDevicesPerType] = {};  // 0: not looked up yet
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    n = properties(device).multiprocessor_count;
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

// One reading of the environment for both runtimes (Note [Checked CUDA calls]).
bool launch_blocking() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_CUDA_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

NativeStream native_stream(const Stream& stream) {
  EMBER_INTERNAL_ASSERT(stream.device().is_cuda(), "native_stream of ", stream);
  const int device = stream.device().index;
  if (stream.id() == 0) return default_native_stream(device);
  StreamTable& t = stream_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto& streams = t.streams[device];
  EMBER_CHECK(stream.id() > 0 && stream.id() <= static_cast<int64_t>(streams.size()), stream,
              " was never created by new_stream");
  return streams[static_cast<size_t>(stream.id() - 1)];
}

NativeStream current_native_stream(int device) {
  return native_stream(current_stream(Device::cuda(device)));
}

EMBER_REGISTER_DEVICE_BACKEND(DeviceType::CUDA, CUDABackend);

}  // namespace ember::kernels::cuda
