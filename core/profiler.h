#pragma once
// The profiler: which ops, backward nodes and kernels ran, for how long, on which thread and
// device, with which input shapes, and how much memory each one took -- torch.profiler for ember.
//
//   profiler::ProfilerOptions opt;
//   opt.record_shapes = true;
//   opt.profile_memory = true;
//   profiler::Profiler prof(opt);
//   prof.start();
//   for (int i = 0; i < 20; ++i) { train_step(); prof.step(); }
//   profiler::Result r = prof.stop();
//   std::cout << r.table(profiler::SortBy::self_time, 15);  // one row per name, heaviest first
//   r.export_chrome_trace("trace.json");                      // chrome://tracing, ui.perfetto.dev
//
// Note [What the profiler records]
// - op: every differentiable op's forward, from the autograd Op recorder (autograd/op.h), under
//   its forward name ("linear", "cross_entropy"), with grad mode on or off. Composite ops nest:
//   the ops they are made of are their children.
// - backward: every node the autograd engine runs ("AddmmBackward"), on the thread that runs it.
//   An op and its backward node carry the same sequence number, and the chrome trace draws an
//   arrow from one to the other.
// - kernel: every call through a dispatch stub (core/dispatch.h), named by device and stub:
//   "cpu::add", "cuda::batched_gemm", "cpu->cuda::copy". An op's self time is then its own
//   overhead (checks, shapes, allocation, recording) and its kernels' time is what the
//   computation took. On a cuda device the kernel range is the host's launch cost.
// - device: each hand-written CUDA kernel, timed on its stream by a pair of events around its
//   launch (kernels/cuda/common.cuh's launch_kernel), charged to the host range that launched it
//   (its "device time"). The times come from the device's clock, aligned to the host's at start().
//   On the simulator they are the simulator's, which never stand for GPU speed.
// - module: each nn::Module called through operator() ("nn.Linear", "nn.Sequential"): the ops
//   of a layer's forward are its children.
// - user: ranges named by code (core/record_function.h): "DataLoader.next" (the training loop
//   waiting for a batch: a data-bound loop shows it), "DataLoader.fetch" (on the thread that
//   loads), "Optimizer.step", "ddp.bucket" (a bucket's communication), "ProfilerStep#N", and
//   "cudaStreamSynchronize" / "cudaDeviceSynchronize": the host waiting for a cuda device (the
//   names of the runtime calls, as PyTorch's profiler shows them; under the op that waited,
//   such as copy_ for an item(); Note [Sync debug mode] in core/cuda.h finds them too).
// - mark: instants, such as an autotuner's choice for a shape ("gemm autotune: ...").
// - memory (with profile_memory): each storage allocated or freed, charged to the innermost open
//   range of the thread (a range's "self memory" is what it allocated minus what it freed).
//
// Only one profiler records at a time in a process: starting a second one is an error. The
// profiler measures; nothing it does changes a result.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/record_function.h"
#include "core/stream.h"

namespace ember::profiler {

struct ProfilerOptions {
  bool record_shapes = false;   // input shapes of each op (a few microseconds per op)
  bool profile_memory = false;  // allocations and frees, charged to ranges
  bool with_kernels = true;     // kernel ranges of the dispatch stubs
  bool with_cuda = true;        // device timing of CUDA kernels (two events per launch)
};

// torch.profiler.schedule: with Profiler::step() called after each training step, skip `wait`
// steps, record `warmup` steps and throw them away (the first steps pay one-time costs), then
// record `active` steps and hand them to on_trace_ready; repeat that `repeat` times (0: until
// stop()). `skip_first` steps are skipped once, before the first cycle. The default records
// every step from start() to stop().
struct Schedule {
  int64_t skip_first = 0;
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 0;  // 0: no schedule
  int64_t repeat = 0;
};

// One recorded event, as the report sees it (torch.autograd.profiler.FunctionEvent). Times are
// microseconds since start().
struct FunctionEvent {
  std::string name;  // the display name ("linear", "cpu::add", "MulBackward")
  Category category = Category::user;
  int thread = 0;  // 0, 1, ... in the order threads first recorded; device events: the stream
  Device device;   // kernels and device events: their device; memory: the allocation's device
  double start_us = 0;
  double duration_us = 0;
  double self_us = 0;              // duration minus the durations of the children (same thread)
  double device_us = 0;            // device time of the CUDA kernels launched inside this range
  int64_t parent = -1;             // index of the enclosing range in Result::events(), or -1
  int depth = 0;                   // 0 for a range with no parent
  std::string shapes;              // op input shapes, with record_shapes: "[[64, 784], [128, 784]]"
  int64_t sequence_nr = -1;        // op and backward: the autograd sequence number linking them
  int64_t memory_bytes = 0;        // memory events: +allocated / -freed; ranges: their self memory
  int64_t total_memory_bytes = 0;  // ranges: memory of the range and all its descendants
  bool unfinished = false;         // still open when the profiler stopped
};

// One row of key_averages(): every event of a name (and category, and shapes when grouped).
struct Average {
  std::string name;
  Category category = Category::user;
  std::string shapes;  // with group_by_shapes
  int64_t count = 0;
  double total_us = 0;
  double self_us = 0;
  double device_us = 0;
  int64_t self_memory_bytes = 0;
  int64_t total_memory_bytes = 0;
  double avg_us() const { return count > 0 ? total_us / static_cast<double>(count) : 0.0; }
};

namespace detail {
struct Recording;
}
class Result;
namespace detail {
// Builds the report from a stopped session's events (core/profiler_report.cpp).
Result make_result(Recording&& recording);
}  // namespace detail

enum class SortBy { self_time, total_time, device_time, count, self_memory };

// What a profiler recorded between start() (or a schedule's active phase) and stop().
class Result {
 public:
  Result() = default;
  // Events in recording order per thread, threads one after the other; parents come before their
  // children. Memory events are listed too.
  const std::vector<FunctionEvent>& events() const { return events_; }
  // The events of one category.
  std::vector<FunctionEvent> events(Category category) const;
  // One row per (name, category[, shapes]), ordered by `sort`. Device events count their device
  // time as their total and self time.
  std::vector<Average> key_averages(bool group_by_shapes = false,
                                    SortBy sort = SortBy::self_time) const;
  // key_averages() as a text table (torch's prof.key_averages().table()), at most row_limit rows
  // (0: all), with the totals below it.
  std::string table(SortBy sort = SortBy::self_time, size_t row_limit = 20,
                    bool group_by_shapes = false) const;
  // The ranges as an indented tree, thread by thread, in the order they began: each line its
  // name, kind, duration and (when recorded) shapes. At most max_lines lines (0: all), ranges
  // deeper than max_depth left out. Reads like a call stack of the step: the forward's ops under
  // their modules, then the backward nodes with the ops of their formulas.
  std::string tree(size_t max_lines = 200, int max_depth = 16) const;
  // The Chrome trace event format (chrome://tracing, ui.perfetto.dev): one track per thread and
  // per device stream, arrows from ops to their backward nodes, a memory counter per device.
  std::string chrome_trace() const;
  // Writes chrome_trace() to path atomically (core/atomic_file.h).
  void export_chrome_trace(const std::string& path) const;
  // The wall time the result covers, and the number of threads that recorded.
  double wall_us() const { return wall_us_; }
  int num_threads() const { return num_threads_; }
  // The Profiler's step at which the recording began (0 without a schedule), and how many
  // steps (step() calls) it holds.
  int64_t first_step() const { return first_step_; }
  int64_t num_steps() const { return num_steps_; }

 private:
  friend Result detail::make_result(detail::Recording&& recording);
  friend class Profiler;
  std::vector<FunctionEvent> events_;
  double wall_us_ = 0;
  int num_threads_ = 0;
  int64_t first_step_ = 0, num_steps_ = 0;
};

class Profiler {
 public:
  explicit Profiler(ProfilerOptions options = {}, Schedule schedule = {},
                    std::function<void(const Result&)> on_trace_ready = {});
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler();  // stops recording (the events are dropped) if still running

  // Starts the schedule at step 0, recording at once without one. An error if any profiler in
  // the process is already recording.
  void start();
  // Marks the end of a training step: advances the schedule; each step is a "ProfilerStep#N"
  // range in the trace.
  void step();
  // Stops recording and returns what the current (or, without a schedule, the only) recording
  // holds; with a schedule, an active phase cut short by stop() is handed to on_trace_ready too.
  Result stop();

  bool running() const { return running_; }
  int64_t step_num() const { return step_; }
  // Whether the schedule records the current step (always, without a schedule).
  bool recording() const { return recording_; }

 private:
  enum class Phase { skip, wait, warmup, active };
  Phase phase_at(int64_t step) const;
  void begin_recording();
  Result end_recording();
  void enter_step();

  ProfilerOptions options_;
  Schedule schedule_;
  std::function<void(const Result&)> on_trace_ready_;
  bool running_ = false;
  bool recording_ = false;
  int64_t step_ = 0;
  int64_t recording_from_ = 0;  // the step at which the current recording began
  std::unique_ptr<RecordFunction> step_range_;
};

// Times one CUDA kernel launch on its stream for the profiler (Note [What the profiler records]):
// records an event before the launch and one after, when a profiler with with_cuda runs, and
// costs one flag read otherwise.
//   DeviceKernelTimer timer(name, stream);  launch ...;  timer.finish();
class DeviceKernelTimer {
 public:
  DeviceKernelTimer(const char* name, const Stream& stream) {
    if (enabled() && detail::g_cuda.load(std::memory_order_relaxed))
      state_ = detail::device_begin(name, stream);
  }
  DeviceKernelTimer(const DeviceKernelTimer&) = delete;
  DeviceKernelTimer& operator=(const DeviceKernelTimer&) = delete;
  // A launch that failed (an exception before finish()) records nothing.
  ~DeviceKernelTimer() {
    if (state_ != nullptr) detail::device_abandon(state_);
  }
  void finish() {
    if (state_ != nullptr) detail::device_end(state_);
    state_ = nullptr;
  }

 private:
  void* state_ = nullptr;
};

}  // namespace ember::profiler
