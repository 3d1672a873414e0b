#include "core/stream.h"

#include <atomic>
#include <chrono>
#include <ostream>

#include "core/error.h"

namespace ember {

namespace {

// The CPU: one in-order host "stream" (every op has finished when it returns); events hold the
// host time they were recorded at.
class CPUBackend final : public DeviceBackend {
 public:
  int device_count() const override { return 1; }
  void set_device(int) override {}
  int64_t new_stream(Device) override { return next_id_.fetch_add(1); }
  bool query_stream(const Stream&) const override { return true; }
  void synchronize_stream(const Stream&) const override {}
  void synchronize_device(int) const override {}

  void* create_event(Device, bool) override { return new int64_t(0); }
  void destroy_event(void* event, Device) noexcept override { delete static_cast<int64_t*>(event); }
  void record_event(void* event, const Stream&) override {
    *static_cast<int64_t*>(event) = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count();
  }
  bool query_event(void*) const override { return true; }
  void synchronize_event(void*) const override {}
  void block_stream(void*, const Stream&) const override {}
  double elapsed_ms(void* start, void* end) const override {
    return static_cast<double>(*static_cast<int64_t*>(end) - *static_cast<int64_t*>(start)) * 1e-6;
  }

 private:
  std::atomic<int64_t> next_id_{1};
};

CPUBackend& cpu_backend() {
  static CPUBackend b;
  return b;
}

DeviceBackend* g_backends[kNumDeviceTypes] = {};

// Note [Current device and current stream]: zero-initialised, so a new thread is on device 0 and
// the default streams without any thread-local constructor running.
thread_local int t_current_device[kNumDeviceTypes];
thread_local int64_t t_current_stream[kNumDeviceTypes][kMaxDevicesPerType];

const char* no_backend_hint(DeviceType type) {
  return type == DeviceType::CUDA && !cuda_is_built()
             ? ": ember was built without CUDA (configure with -DEMBER_CUDA=real or sim)"
             : "";
}

// The backend of device.type, after checking device's index against its device count.
DeviceBackend* checked_backend(Device device, const char* op) {
  DeviceBackend* b = get_device_backend(device.type, op);
  const int n = b->device_count();
  EMBER_CHECK(device.index >= 0 && device.index < n && device.index < kMaxDevicesPerType, op,
              ": device index ", device.index, " is out of range for ",
              device_type_name(device.type), " (", n, n == 1 ? " device)" : " devices)");
  return b;
}

DeviceBackend* backend_or_null(DeviceType type) {
  DeviceBackend* b = g_backends[static_cast<int>(type)];
  return b == nullptr && type == DeviceType::CPU ? &cpu_backend() : b;
}

// The current device of device.type, after checking device against its backend.
Device checked_current_device(Device device, const char* op) {
  checked_backend(device, op);
  return Device(device.type, t_current_device[static_cast<int>(device.type)]);
}

// A guard's way back: the device was current when the guard began, so its index is valid. A
// destructor must not throw, so a backend that fails here (or was removed) is ignored.
void restore_device(Device device) {
  int& cur = t_current_device[static_cast<int>(device.type)];
  if (cur == device.index) return;
  cur = device.index;
  try {
    if (DeviceBackend* b = backend_or_null(device.type)) b->set_device(device.index);
  } catch (...) {
  }
}

}  // namespace

DeviceProperties DeviceBackend::properties(int index) const {
  EMBER_CHECK(false, "get_device_properties: the backend of device ", index,
              " reports no properties");
  return {};
}

DeviceBackend* get_device_backend(DeviceType type, const char* op) {
  DeviceBackend* b = backend_or_null(type);
  EMBER_CHECK(b != nullptr, op, ": no ", device_type_name(type), " backend", no_backend_hint(type));
  return b;
}

bool has_device_backend(DeviceType type) {
  return type == DeviceType::CPU || g_backends[static_cast<int>(type)] != nullptr;
}

DeviceBackend* set_device_backend(DeviceType type, DeviceBackend* backend) {
  DeviceBackend* old = g_backends[static_cast<int>(type)];
  g_backends[static_cast<int>(type)] = backend;
  return old;
}

// ---- streams ----------------------------------------------------------------------------------

bool Stream::query() const {
  return checked_backend(device_, "Stream::query")->query_stream(*this);
}

void Stream::synchronize() const {
  checked_backend(device_, "Stream::synchronize")->synchronize_stream(*this);
}

std::string Stream::str() const { return "stream " + std::to_string(id_) + " on " + device_.str(); }

std::ostream& operator<<(std::ostream& os, const Stream& s) { return os << s.str(); }

Stream default_stream(Device device) {
  checked_backend(device, "default_stream");
  return Stream(device, 0);
}

Stream new_stream(Device device) {
  int64_t id = checked_backend(device, "new_stream")->new_stream(device);
  EMBER_INTERNAL_ASSERT(id > 0, "new_stream: the backend returned stream id ", id);
  return Stream(device, id);
}

Stream current_stream(Device device) {
  checked_backend(device, "current_stream");
  return Stream(device, t_current_stream[static_cast<int>(device.type)][device.index]);
}

void set_current_stream(const Stream& stream) {
  checked_backend(stream.device(), "set_current_stream");
  EMBER_CHECK(stream.id() >= 0, "set_current_stream: invalid stream id ", stream.id());
  t_current_stream[static_cast<int>(stream.device_type())][stream.device().index] = stream.id();
}

// ---- devices ----------------------------------------------------------------------------------

int device_count(DeviceType type) {
  return has_device_backend(type) ? get_device_backend(type, "device_count")->device_count() : 0;
}

int current_device(DeviceType type) {
  get_device_backend(type, "current_device");
  return t_current_device[static_cast<int>(type)];
}

void set_current_device(Device device) {
  DeviceBackend* b = checked_backend(device, "set_current_device");
  int& cur = t_current_device[static_cast<int>(device.type)];
  if (cur == device.index) return;
  b->set_device(device.index);
  cur = device.index;
}

namespace {
thread_local int t_internal_waits = 0;
}  // namespace

InternalWait::InternalWait() { ++t_internal_waits; }
InternalWait::~InternalWait() { --t_internal_waits; }
bool InternalWait::active() { return t_internal_waits > 0; }

void synchronize(Device device) {
  checked_backend(device, "synchronize")->synchronize_device(device.index);
}

// ---- events -----------------------------------------------------------------------------------

Event::Event(Event&& other) noexcept
    : type_(other.type_),
      enable_timing_(other.enable_timing_),
      was_recorded_(other.was_recorded_),
      device_(other.device_),
      handle_(other.handle_) {
  other.handle_ = nullptr;
  other.was_recorded_ = false;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event dying(std::move(*this));  // frees this event's handle on return
    type_ = other.type_;
    enable_timing_ = other.enable_timing_;
    was_recorded_ = other.was_recorded_;
    device_ = other.device_;
    handle_ = other.handle_;
    other.handle_ = nullptr;
    other.was_recorded_ = false;
  }
  return *this;
}

Event::~Event() {
  if (handle_ == nullptr) return;
  if (DeviceBackend* b = backend_or_null(type_)) b->destroy_event(handle_, device_);
}

void Event::record(const Stream& stream) {
  EMBER_CHECK(stream.device_type() == type_, "Event::record: cannot record a ",
              device_type_name(type_), " event on ", stream);
  DeviceBackend* b = checked_backend(stream.device(), "Event::record");
  if (handle_ == nullptr) {
    handle_ = b->create_event(stream.device(), enable_timing_);
    device_ = stream.device();
  }
  EMBER_CHECK(stream.device() == device_, "Event::record: the event belongs to ", device_,
              " and cannot be recorded on ", stream);
  b->record_event(handle_, stream);
  was_recorded_ = true;
}

void Event::record() { record(current_stream(Device(type_, current_device(type_)))); }

bool Event::query() const {
  if (!was_recorded_) return true;
  return get_device_backend(type_, "Event::query")->query_event(handle_);
}

void Event::synchronize() const {
  if (!was_recorded_) return;
  get_device_backend(type_, "Event::synchronize")->synchronize_event(handle_);
}

void Event::block(const Stream& stream) const {
  EMBER_CHECK(stream.device_type() == type_, "Event::block: a ", device_type_name(type_),
              " event cannot block ", stream);
  DeviceBackend* b = checked_backend(stream.device(), "Event::block");
  if (!was_recorded_) return;
  // A stream of another device of the same type may wait too (cudaStreamWaitEvent allows it):
  // that is how a copy between two GPUs orders itself after the source's work.
  b->block_stream(handle_, stream);
}

double Event::elapsed_ms(const Event& end) const {
  EMBER_CHECK(enable_timing_ && end.enable_timing_,
              "Event::elapsed_ms: both events must be created with enable_timing=true");
  EMBER_CHECK(was_recorded_ && end.was_recorded_,
              "Event::elapsed_ms: both events must be recorded first");
  EMBER_CHECK(type_ == end.type_ && device_ == end.device_, "Event::elapsed_ms: events on ",
              device_, " and ", end.device_, " (both must be on one device)");
  EMBER_CHECK(query() && end.query(),
              "Event::elapsed_ms: both events must have completed (synchronize first)");
  return get_device_backend(type_, "Event::elapsed_ms")->elapsed_ms(handle_, end.handle_);
}

// ---- guards -----------------------------------------------------------------------------------

DeviceGuard::DeviceGuard(Device device)
    : original_(checked_current_device(device, "DeviceGuard")), current_(device) {
  set_current_device(device);
}

DeviceGuard::~DeviceGuard() { restore_device(original_); }

StreamGuard::StreamGuard(const Stream& stream)
    : original_device_(checked_current_device(stream.device(), "StreamGuard")),
      original_stream_(ember::current_stream(stream.device())),
      current_stream_(stream) {
  set_current_stream(stream);
  set_current_device(stream.device());
}

StreamGuard::~StreamGuard() {
  const Device d = original_stream_.device();
  t_current_stream[static_cast<int>(d.type)][d.index] = original_stream_.id();
  restore_device(original_device_);
}

}  // namespace ember
