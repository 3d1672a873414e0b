// The profiler's recording side and the Profiler's schedule. The report (tables, traces) is
// core/profiler_report.cpp.
//
// Note [Profiler buffers]
// A session (start() to stop()) has a generation number. Each thread records into a buffer of
// its own, made at its first event of the session and listed in the session, so that recording
// takes only the buffer's own mutex, which nobody else holds except stop() while it takes the
// events out. A thread-local shared_ptr keeps the thread's buffer; the session's list keeps it
// too, so the events of a thread that exits before stop() are not lost. A handle names the
// generation it was opened in: an end() whose generation is not its thread's buffer's (a range
// opened in an earlier session) is dropped.

#include "core/profiler.h"

#include <chrono>
#include <mutex>

#include "core/error.h"
#include "core/profiler_internal.h"
#include "core/tensor.h"

namespace ember::profiler {

namespace detail {

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_memory{false};
std::atomic<bool> g_shapes{false};
std::atomic<bool> g_kernels{false};
std::atomic<bool> g_cuda{false};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

struct ThreadBuffer {
  std::mutex mutex;
  uint32_t generation = 0;
  int thread = 0;
  int32_t open = -1;  // the innermost open range
  std::vector<RawEvent> events;
  std::vector<std::unique_ptr<DeviceRecord>> device;
};

struct Session {
  std::mutex mutex;
  int64_t start_ns = 0;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<std::unique_ptr<DeviceOrigin>> origins;
};

Session& session() {
  static Session* s = new Session();  // never destroyed: threads may record during exit
  return *s;
}

// The generation of the running session, or of the last one.
std::atomic<uint32_t> g_generation{0};

// Note [Recording while a thread exits]
// A thread's buffer is held by a thread_local, destroyed when the thread exits, and other
// thread_locals destroyed after it may still free tensors (the autocast weight cache), which
// records a memory event. So the holder's destructor sets a flag that is trivially destructible
// (readable until the thread is gone), and a thread that is exiting records nothing.
thread_local bool t_exiting = false;
struct BufferHolder {
  std::shared_ptr<ThreadBuffer> buffer;
  ~BufferHolder() { t_exiting = true; }
};
thread_local BufferHolder t_holder;

// The calling thread's buffer for the running session, made and listed on first use; null
// while the thread exits.
ThreadBuffer* buffer() {
  if (t_exiting) return nullptr;
  std::shared_ptr<ThreadBuffer>& mine = t_holder.buffer;
  const uint32_t gen = g_generation.load(std::memory_order_acquire);
  if (!mine || mine->generation != gen) {
    Session& s = session();
    auto fresh = std::make_shared<ThreadBuffer>();
    fresh->generation = gen;
    std::lock_guard<std::mutex> lock(s.mutex);
    fresh->thread = static_cast<int>(s.buffers.size());
    // A session that ended (and maybe another began) since `gen` was read: record nowhere.
    if (g_generation.load(std::memory_order_relaxed) == gen) s.buffers.push_back(fresh);
    mine = std::move(fresh);
  }
  return mine.get();
}

// The calling thread's buffer if it has one for the session of `generation`.
ThreadBuffer* buffer_of(uint32_t generation) {
  if (t_exiting) return nullptr;
  const std::shared_ptr<ThreadBuffer>& mine = t_holder.buffer;
  return mine && mine->generation == generation ? mine.get() : nullptr;
}

Handle push_range(RawEvent e) {
  ThreadBuffer* b = buffer();
  if (b == nullptr) return {};
  std::lock_guard<std::mutex> lock(b->mutex);
  e.parent = b->open;
  e.start_ns = now_ns();
  b->events.push_back(std::move(e));
  b->open = static_cast<int32_t>(b->events.size() - 1);
  return {b->generation, b->open};
}

}  // namespace

Handle begin(const char* name, Category category, uint8_t device_a, uint8_t device_b) {
  RawEvent e;
  e.name = name;
  e.category = category;
  e.device_a = device_a;
  e.device_b = device_b;
  return push_range(std::move(e));
}

Handle begin_owned(std::string name, Category category) {
  RawEvent e;
  e.owned = std::move(name);
  e.category = category;
  return push_range(std::move(e));
}

void end(Handle h) {
  const int64_t t = now_ns();
  ThreadBuffer* b = buffer_of(h.generation);
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mutex);
  if (h.index >= static_cast<int32_t>(b->events.size())) return;  // taken by stop()
  RawEvent& e = b->events[static_cast<size_t>(h.index)];
  e.end_ns = t;
  b->open = e.parent;
}

void set_shapes(Handle h, const Tensor* const* inputs, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += ", ";
    s += inputs[i]->defined() ? shape_str(inputs[i]->sizes()) : "[]";
  }
  s += "]";
  ThreadBuffer* b = buffer_of(h.generation);
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mutex);
  if (h.index < static_cast<int32_t>(b->events.size()))
    b->events[static_cast<size_t>(h.index)].shapes = std::move(s);
}

void set_sequence_nr(Handle h, uint64_t sequence_nr) {
  ThreadBuffer* b = buffer_of(h.generation);
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mutex);
  if (h.index < static_cast<int32_t>(b->events.size()))
    b->events[static_cast<size_t>(h.index)].sequence_nr = static_cast<int64_t>(sequence_nr);
}

namespace {

void push_instant(RawEvent e) {
  ThreadBuffer* b = buffer();
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mutex);
  e.parent = b->open;
  e.start_ns = e.end_ns = now_ns();
  b->events.push_back(std::move(e));
}

}  // namespace

void record_memory(int64_t bytes, Device device) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  RawEvent e;
  e.name = bytes >= 0 ? "[memory] alloc" : "[memory] free";
  e.category = Category::memory;
  e.bytes = bytes;
  e.device = device;
  push_instant(std::move(e));
}

void record_mark(std::string name) {
  RawEvent e;
  e.owned = std::move(name);
  e.category = Category::mark;
  push_instant(std::move(e));
}

void* device_begin(const char* name, const Stream& stream) {
  auto r = std::make_unique<DeviceRecord>();
  r->name = name;
  r->stream = stream;
  r->start.record(stream);
  return r.release();
}

void device_end(void* state) {
  std::unique_ptr<DeviceRecord> r(static_cast<DeviceRecord*>(state));
  r->end.record(r->stream);
  ThreadBuffer* b = buffer();
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->mutex);
  r->parent = b->open;
  b->device.push_back(std::move(r));
}

void device_abandon(void* state) noexcept { delete static_cast<DeviceRecord*>(state); }

namespace {

void set_flags(bool on, const ProfilerOptions& o) {
  g_memory.store(on && o.profile_memory, std::memory_order_relaxed);
  g_shapes.store(on && o.record_shapes, std::memory_order_relaxed);
  g_kernels.store(on && o.with_kernels, std::memory_order_relaxed);
  g_cuda.store(on && o.with_cuda && device_count(DeviceType::CUDA) > 0, std::memory_order_relaxed);
  g_enabled.store(on, std::memory_order_seq_cst);
}

// Starts a session: a fresh generation, and each device's clock origin (Note [What the profiler
// records]: device times are aligned to the host's through an event that completed at a known
// host time).
void start_session(const ProfilerOptions& o) {
  Session& s = session();
  std::vector<std::unique_ptr<DeviceOrigin>> origins;
  const int devices = o.with_cuda ? device_count(DeviceType::CUDA) : 0;
  const InternalWait internal;  // Note [Internal waits]
  for (int d = 0; d < devices; ++d) {
    auto origin = std::make_unique<DeviceOrigin>();
    origin->device = Device(DeviceType::CUDA, d);
    synchronize(origin->device);
    origin->event.record(current_stream(origin->device));
    origin->event.synchronize();
    origin->host_ns = now_ns();
    origins.push_back(std::move(origin));
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    EMBER_CHECK(!g_enabled.load(),
                "profiler: start: a profiler is already recording in this "
                "process (only one records at a time)");
    g_generation.store(g_generation.load() + 1, std::memory_order_release);
    s.buffers.clear();
    s.origins = std::move(origins);
    s.start_ns = now_ns();
    set_flags(true, o);
  }
}

// Stops the session and takes its events out of the threads' buffers.
Recording stop_session() {
  Session& s = session();
  Recording rec;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    set_flags(false, ProfilerOptions{});
    rec.stop_ns = now_ns();
    rec.start_ns = s.start_ns;
    buffers.swap(s.buffers);
    rec.origins = std::move(s.origins);
  }
  for (const auto& b : buffers) {
    std::lock_guard<std::mutex> lock(b->mutex);
    ThreadEvents t;
    t.thread = b->thread;
    t.events.swap(b->events);
    t.device.swap(b->device);
    b->open = -1;
    rec.threads.push_back(std::move(t));
  }
  return rec;
}

}  // namespace

}  // namespace detail

const char* category_name(Category c) {
  switch (c) {
    case Category::op:
      return "op";
    case Category::backward:
      return "backward";
    case Category::kernel:
      return "kernel";
    case Category::device:
      return "device";
    case Category::module:
      return "module";
    case Category::user:
      return "user";
    case Category::mark:
      return "mark";
    case Category::memory:
      return "memory";
  }
  return "?";
}

// ---- Profiler --------------------------------------------------------------------------------

Profiler::Profiler(ProfilerOptions options, Schedule schedule,
                   std::function<void(const Result&)> on_trace_ready)
    : options_(options), schedule_(schedule), on_trace_ready_(std::move(on_trace_ready)) {
  for (int64_t v :
       {schedule.skip_first, schedule.wait, schedule.warmup, schedule.active, schedule.repeat})
    EMBER_CHECK(v >= 0, "profiler: schedule: skip_first ", schedule.skip_first, ", wait ",
                schedule.wait, ", warmup ", schedule.warmup, ", active ", schedule.active,
                ", repeat ", schedule.repeat, " must all be >= 0");
  EMBER_CHECK(schedule.active > 0 || (schedule.wait == 0 && schedule.warmup == 0 &&
                                      schedule.repeat == 0 && schedule.skip_first == 0),
              "profiler: schedule: wait, warmup, repeat and skip_first need active > 0");
}

Profiler::~Profiler() {
  if (!running_) return;
  step_range_.reset();
  if (recording_) (void)detail::stop_session();
}

Profiler::Phase Profiler::phase_at(int64_t step) const {
  if (schedule_.active == 0) return Phase::active;
  if (step < schedule_.skip_first) return Phase::skip;
  const int64_t cycle = schedule_.wait + schedule_.warmup + schedule_.active;
  const int64_t k = step - schedule_.skip_first;
  if (schedule_.repeat > 0 && k >= cycle * schedule_.repeat) return Phase::skip;
  const int64_t at = k % cycle;
  if (at < schedule_.wait) return Phase::wait;
  if (at < schedule_.wait + schedule_.warmup) return Phase::warmup;
  return Phase::active;
}

void Profiler::begin_recording() {
  detail::start_session(options_);
  recording_ = true;
  recording_from_ = step_;
}

Result Profiler::end_recording() {
  step_range_.reset();
  recording_ = false;
  Result r = detail::make_result(detail::stop_session());
  r.first_step_ = recording_from_;
  r.num_steps_ = step_ - recording_from_;
  return r;
}

// Opens the current step's range and, with a schedule, starts recording at the step where a
// warm-up or an active phase begins.
void Profiler::enter_step() {
  const Phase p = phase_at(step_);
  if ((p == Phase::warmup || p == Phase::active) && !recording_) begin_recording();
  if (recording_ && schedule_.active > 0)
    step_range_ = std::make_unique<RecordFunction>("ProfilerStep#" + std::to_string(step_));
}

void Profiler::start() {
  EMBER_CHECK(!running_, "profiler: start: this profiler is already running");
  EMBER_CHECK(!enabled(),
              "profiler: start: a profiler is already recording in this process "
              "(only one records at a time)");
  running_ = true;
  step_ = 0;
  enter_step();
}

void Profiler::step() {
  EMBER_CHECK(running_, "profiler: step: the profiler is not running (call start() first)");
  const Phase was = phase_at(step_);
  step_range_.reset();
  ++step_;
  const Phase next = phase_at(step_);
  if (schedule_.active > 0 && recording_) {
    if (was == Phase::warmup && next == Phase::active) {
      // The warm-up's events are thrown away: a fresh session for the active steps.
      (void)end_recording();
      begin_recording();
    } else if (was == Phase::active && next != Phase::active) {
      Result r = end_recording();
      if (on_trace_ready_) on_trace_ready_(r);
    } else if (was == Phase::active && next == Phase::active &&
               (step_ - schedule_.skip_first) %
                       (schedule_.wait + schedule_.warmup + schedule_.active) ==
                   0) {
      // Back-to-back cycles (wait = warmup = 0): one result per cycle.
      Result r = end_recording();
      if (on_trace_ready_) on_trace_ready_(r);
    }
  }
  enter_step();
}

Result Profiler::stop() {
  EMBER_CHECK(running_, "profiler: stop: the profiler is not running");
  running_ = false;
  if (!recording_) {
    step_range_.reset();
    return Result();
  }
  const bool cut_short = schedule_.active > 0 && phase_at(step_) == Phase::active;
  Result r = end_recording();
  if (cut_short && on_trace_ready_) on_trace_ready_(r);
  return r;
}

}  // namespace ember::profiler
