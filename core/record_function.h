#pragma once
// The profiler's recording side: what the rest of ember calls to say "this range of time was X".
// The profiler itself (starting, stopping, the tables and traces) is core/profiler.h.
//
//   {
//     profiler::RecordFunction range("DataLoader.next");  // a range on the calling thread
//     ...
//   }                                                      // closed here
//   profiler::mark("gemm autotune: 512x512x512 NN -> variant 5");  // an instant
//
// Note [Profiler cost when off]
// Ranges are opened on every op and every kernel call, so a range must cost next to nothing
// when no profiler runs: the constructor reads one relaxed atomic flag and the destructor tests
// one integer. Nothing is allocated, no clock is read, no name is formatted. Names are `const
// char*` with static storage (op names, stub names, kernel names are literals) so that even a
// running profiler copies a pointer, not a string; a name built at run time goes through the
// std::string constructor, which copies it only when a profiler runs.
//
// Note [Ranges nest per thread]
// Each thread records into its own buffer, and its ranges nest like its stack frames: a range
// opened inside another is its child (an op's kernels are children of the op, the ops a backward
// formula calls are children of the backward node). The report (core/profiler.h) computes a
// range's self time as its duration minus its children's. A range still open when the profiler
// stops is closed at the stop and marked unfinished; a range opened while one profiler ran and
// closed after the next one started is dropped (each session has its own generation number).

#include <atomic>
#include <cstdint>
#include <string>

#include "core/device.h"

namespace ember {
class Tensor;
class Stream;
}  // namespace ember

namespace ember::profiler {

// What a recorded event is (Note [What the profiler records] in core/profiler.h).
enum class Category : uint8_t {
  op,        // a differentiable op's forward (autograd/op.h): "linear", "mul"
  backward,  // a backward node run by the engine: "MulBackward"
  kernel,    // a kernel called through a dispatch stub, on the host: "cpu::add"
  device,    // a CUDA kernel on the device, timed by events: "vectorized_kernel<AddOp>"
  module,    // an nn::Module's forward through operator(): "nn.Linear"
  user,      // a range named by the caller: "DataLoader.next", "ProfilerStep#3"
  mark,      // an instant: an autotuner's choice
  memory,    // an allocation (bytes > 0) or a free (bytes < 0) of tensor storage
};
const char* category_name(Category c);

namespace detail {

// Whether a profiler is recording (Note [Profiler cost when off]), and whether it records
// memory and input shapes.
extern std::atomic<bool> g_enabled;
extern std::atomic<bool> g_memory;
extern std::atomic<bool> g_shapes;
extern std::atomic<bool> g_kernels;
extern std::atomic<bool> g_cuda;

// A recorded range: its session's generation and its index in the thread's buffer.
struct Handle {
  uint32_t generation = 0;
  int32_t index = -1;
  bool valid() const { return index >= 0; }
};

// kNoDevice marks an event that is not tied to a device type.
constexpr uint8_t kNoDevice = 0xff;

Handle begin(const char* name, Category category, uint8_t device_a = kNoDevice,
             uint8_t device_b = kNoDevice);
Handle begin_owned(std::string name, Category category);
void end(Handle h);
// Attaches an op's input shapes ("[[2, 3], [3]]") to an open range.
void set_shapes(Handle h, const Tensor* const* inputs, size_t n);
// Attaches an autograd sequence number (the forward op's node's; the backward node's own).
void set_sequence_nr(Handle h, uint64_t sequence_nr);
// An allocation (bytes > 0) or a free (bytes < 0) of tensor storage on device.
void record_memory(int64_t bytes, Device device);
void record_mark(std::string name);
// A device kernel's timing (core/profiler.h's DeviceKernelTimer): the start event is recorded
// on the stream by device_begin, the end event by device_end, which hands both to the profiler.
void* device_begin(const char* name, const Stream& stream);
void device_end(void* state);
void device_abandon(void* state) noexcept;

}  // namespace detail

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }
inline bool memory_enabled() { return detail::g_memory.load(std::memory_order_relaxed); }

// A range on the calling thread, from construction to destruction (Note [Ranges nest per
// thread]). Costs one flag read when no profiler runs (Note [Profiler cost when off]).
class RecordFunction {
 public:
  // `name` must outlive the profiler's report: a literal.
  explicit RecordFunction(const char* name, Category category = Category::user) {
    if (enabled()) handle_ = detail::begin(name, category);
  }
  // A name made at run time ("ProfilerStep#3"); copied only while a profiler runs.
  explicit RecordFunction(const std::string& name, Category category = Category::user) {
    if (enabled()) handle_ = detail::begin_owned(name, category);
  }
  // A kernel call through a dispatch stub on `device` (and from `source`, for a copy stub).
  RecordFunction(const char* stub_name, DeviceType device, DeviceType source) {
    if (enabled() && detail::g_kernels.load(std::memory_order_relaxed))
      handle_ = detail::begin(stub_name, Category::kernel, static_cast<uint8_t>(device),
                              static_cast<uint8_t>(source));
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;
  ~RecordFunction() { end(); }

  bool active() const { return handle_.valid(); }
  // Closes the range before the end of the scope.
  void end() {
    if (handle_.valid()) detail::end(handle_);
    handle_ = {};
  }
  void set_shapes(const Tensor* const* inputs, size_t n) {
    if (handle_.valid() && detail::g_shapes.load(std::memory_order_relaxed))
      detail::set_shapes(handle_, inputs, n);
  }
  void set_sequence_nr(uint64_t nr) {
    if (handle_.valid()) detail::set_sequence_nr(handle_, nr);
  }

 private:
  detail::Handle handle_;
};

// An instant event (an autotuner's choice, a checkpoint written); nothing when no profiler runs.
inline void mark(const std::string& name) {
  if (enabled()) detail::record_mark(name);
}

}  // namespace ember::profiler
