#pragma once
// Streams, events and the current device: the device plumbing every backend shares.
//
// A Stream is an in-order queue of work on one device, named by (device, id); id 0 is the
// device's default stream. An Event marks a point in a stream's work: record it on a stream,
// then query it, wait for it on the host (synchronize), make another stream wait for it
// (block), or time the work between two events (elapsed_ms).
//
//   Stream s = new_stream(Device("cuda:0"));
//   {
//     StreamGuard g(s);  // s becomes cuda:0's current stream (and cuda:0 the current device)
//     Event start(DeviceType::CUDA, /*enable_timing=*/true), stop(DeviceType::CUDA, true);
//     start.record();    // on the current stream
//     ... ops on cuda:0 queue on s ...
//     stop.record();
//     stop.synchronize();
//     double ms = start.elapsed_ms(stop);
//   }                              // the previous stream and device are current again
//
// On the CPU every op runs to completion before it returns, so a CPU stream is the trivial
// in-order stream: query() is always true and synchronize() returns at once. new_stream(cpu)
// still hands out distinct ids (all equivalent), so code written for a device runs unchanged on
// the CPU. CPU events record a host timestamp, so elapsed_ms times host work.
//
// Note [Device backends plug in through DeviceBackend]
// core knows no CUDA. Everything device-specific behind streams, events and the current device
// is one small interface, DeviceBackend, with one instance per device type, registered at
// static-initialisation time exactly as kernels fill dispatch stubs:
//
//   // kernels/cuda/stream.cu
//   class CUDABackend final : public DeviceBackend { ... cudaStreamQuery, cudaEventRecord ... };
//   EMBER_REGISTER_DEVICE_BACKEND(DeviceType::CUDA, CUDABackend);
//
// The CPU backend is registered by core itself (core/stream.cpp). A device type with no backend
// (cuda in a CPU-only build) makes every call that needs it an ember::Error naming the call and
// saying ember was built without CUDA. A backend maps stream ids to its native handles (a
// cudaStream_t pool) and event handles to its native events; core never looks inside either.
//
// Note [Current device and current stream]
// As in CUDA and PyTorch, the current device (one index per device type) and the current stream
// (one per device) are thread-local: a new thread starts on device 0 and its default streams.
// core keeps that state (so it behaves the same with every backend and with none) and tells the
// backend when the current device changes (set_device: the CUDA backend calls cudaSetDevice).
// DeviceGuard and StreamGuard change it for a scope and restore it on exit, exceptions included.
// StreamGuard also makes the stream's device current, as PyTorch's does. Every index is checked
// against the backend's device_count(); a stream used with an event or an allocation of another
// device is an error naming the call and both devices.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/device.h"

namespace ember {

// Up to this many devices of one type (PyTorch's C10_COMPILE_TIME_MAX_GPUS is 16).
constexpr int kMaxDevicesPerType = 64;

// A value type: a device and a stream id on it. Cheap to copy and compare.
class Stream {
 public:
  // The CPU's default stream.
  Stream() = default;
  Stream(Device device, int64_t id) : device_(device), id_(id) {}

  Device device() const { return device_; }
  DeviceType device_type() const { return device_.type; }
  int64_t id() const { return id_; }
  bool is_default() const { return id_ == 0; }

  // Whether all work queued on the stream so far has finished.
  bool query() const;
  // Blocks the calling thread until all work queued on the stream so far has finished.
  void synchronize() const;
  std::string str() const;  // "stream 0 on cuda:1"

  friend bool operator==(const Stream& a, const Stream& b) {
    return a.device_ == b.device_ && a.id_ == b.id_;
  }
  friend bool operator!=(const Stream& a, const Stream& b) { return !(a == b); }

 private:
  Device device_;
  int64_t id_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Stream& s);

// The device's default stream (id 0).
Stream default_stream(Device device);
// A new stream on device (CPU: a fresh id, equivalent to every other CPU stream).
Stream new_stream(Device device);
// The calling thread's current stream on device (its default stream until changed).
Stream current_stream(Device device);
// Makes stream the calling thread's current stream on its device.
void set_current_stream(const Stream& stream);

// The number of devices of a type (1 for the cpu; 0 when none is usable).
int device_count(DeviceType type);
// The calling thread's current device index for a device type (always 0 for the cpu).
int current_device(DeviceType type);
// Makes device the calling thread's current device of its type.
void set_current_device(Device device);
// Blocks until all work on every stream of device has finished.
void synchronize(Device device = kCPU);

// Note [Internal waits]
// ember's own waits for a device -- the caching allocator handing memory back, the profiler
// aligning clocks -- hold an InternalWait: a device check that failed is not raised there (it
// waits for the user's next synchronisation, Note [Deferred device checks] in
// kernels/cuda/device_checks.h), since an allocation or a free is no place for it.
class InternalWait {
 public:
  InternalWait();
  ~InternalWait();
  InternalWait(const InternalWait&) = delete;
  InternalWait& operator=(const InternalWait&) = delete;
  // Whether the calling thread is inside one.
  static bool active();
};

// An event on one device type; its device is fixed by the first record(). Move-only: it owns a
// backend handle, created at the first record() (a never-recorded event costs nothing).
class Event {
 public:
  explicit Event(DeviceType type = DeviceType::CPU, bool enable_timing = false)
      : type_(type), enable_timing_(enable_timing) {}
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  DeviceType device_type() const { return type_; }
  // The device of the stream it was last recorded on (undefined before the first record).
  Device device() const { return device_; }
  bool was_recorded() const { return was_recorded_; }
  bool enable_timing() const { return enable_timing_; }

  // Marks the point after all work queued so far on stream (default: the current stream of the
  // current device of this event's type). Later records must use a stream of the same device.
  void record(const Stream& stream);
  void record();
  // Whether the recorded work has finished (true for an event never recorded).
  bool query() const;
  // Blocks the calling thread until the recorded work has finished.
  void synchronize() const;
  // Makes all future work on stream wait for this event (no host blocking). The stream may be on
  // another device of the event's type.
  void block(const Stream& stream) const;
  // Milliseconds between this event and end; both recorded, completed, with enable_timing.
  double elapsed_ms(const Event& end) const;

 private:
  DeviceType type_;
  bool enable_timing_;
  bool was_recorded_ = false;
  Device device_;
  void* handle_ = nullptr;  // the backend's event (Note [Device backends plug in ...])
};

// Sets the calling thread's current device of device.type for a scope; restores it on exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  Device original_device() const { return original_; }
  Device current_device() const { return current_; }

 private:
  Device original_, current_;
};

// Makes stream the current stream of its device, and its device the current device, for a
// scope; restores both on exit.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

  Stream original_stream() const { return original_stream_; }
  Stream current_stream() const { return current_stream_; }

 private:
  Device original_device_;
  Stream original_stream_, current_stream_;
};

// What a device reports about itself (cudaDeviceProp's essentials; the simulator presents an
// sm_90 device, is_simulated true).
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int64_t total_memory = 0;  // bytes
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  int64_t shared_memory_per_block = 0;        // without opt-in
  int64_t shared_memory_per_block_optin = 0;  // the most a kernel may opt in to
  bool is_simulated = false;
};

// What a device type provides for streams, events and the current device (Note [Device backends
// plug in through DeviceBackend]). Indices and streams reaching a backend are already checked
// (index < device_count(), stream of the right device type). Event handles are the backend's:
// create_event makes one for a device, the other event calls get it back.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual int device_count() const = 0;
  // Called when the current device of this type changes (Note [Current device and current
  // stream]); the CUDA backend calls cudaSetDevice. When a guard restores the previous device an
  // exception from here is swallowed (a destructor must not throw).
  virtual void set_device(int index) = 0;
  // A fresh stream id on device, never 0 (0 is the default stream).
  virtual int64_t new_stream(Device device) = 0;
  virtual bool query_stream(const Stream& stream) const = 0;
  virtual void synchronize_stream(const Stream& stream) const = 0;
  virtual void synchronize_device(int index) const = 0;

  virtual void* create_event(Device device, bool enable_timing) = 0;
  // Called once for every handle create_event returned, when its Event dies.
  virtual void destroy_event(void* event, Device device) noexcept = 0;
  virtual void record_event(void* event, const Stream& stream) = 0;
  virtual bool query_event(void* event) const = 0;
  virtual void synchronize_event(void* event) const = 0;
  virtual void block_stream(void* event, const Stream& stream) const = 0;
  virtual double elapsed_ms(void* start, void* end) const = 0;
  // The properties of device index; the default says the backend reports none.
  virtual DeviceProperties properties(int index) const;
};

// The backend of a device type; throws naming `op` when none is registered.
DeviceBackend* get_device_backend(DeviceType type, const char* op);
bool has_device_backend(DeviceType type);
// Installs (or, with null, removes) the backend of a device type; returns the previous one.
DeviceBackend* set_device_backend(DeviceType type, DeviceBackend* backend);

struct DeviceBackendRegistrar {
  DeviceBackendRegistrar(DeviceType type, DeviceBackend* backend) {
    set_device_backend(type, backend);
  }
};

}  // namespace ember

// Registers a statically allocated backend of class Impl for a device type.
#define EMBER_REGISTER_DEVICE_BACKEND(device_type, Impl)                        \
  static Impl ember_device_backend_##Impl;                                      \
  static ::ember::DeviceBackendRegistrar ember_device_backend_registrar_##Impl( \
      device_type, &ember_device_backend_##Impl)
