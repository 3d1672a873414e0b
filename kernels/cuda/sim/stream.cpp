// Streams, events and kernel launches (Note [Streams in the simulator] in runtime.h).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cuda/sim/engine.h"
#include "kernels/cuda/sim/runtime.h"

namespace ember::sim {

class Stream {
 public:
  explicit Stream(int device) : device_(device) {}

  int device() const { return device_; }

  void push(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!executor_.joinable()) executor_ = std::thread([this] { drain(); });
    queue_.push_back(std::move(work));
    ++pending_;
    wake_.notify_all();
  }

  bool idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_ == 0;
  }

  // Waits until every queued item ran, leaving a pending error for the next synchronisation;
  // returns at once when called from this stream's own executor (its work waiting on itself).
  void wait_quietly() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (executor_.joinable() && executor_.get_id() == std::this_thread::get_id()) return;
    drained_.wait(lock, [&] { return pending_ == 0; });
  }

  // Waits until every queued item ran; returns (and clears) the first error since the last
  // synchronisation.
  std::exception_ptr wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    drained_.wait(lock, [&] { return pending_ == 0; });
    std::exception_ptr e = error_;
    error_ = nullptr;
    return e;
  }

  ~Stream() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      drained_.wait(lock, [&] { return pending_ == 0; });
      stop_ = true;
      wake_.notify_all();
    }
    if (executor_.joinable()) executor_.join();
  }

 private:
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr failure;
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      work = nullptr;
      lock.lock();
      if (failure && !error_) error_ = failure;
      if (--pending_ == 0) drained_.notify_all();
    }
  }

  int device_;
  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::deque<std::function<void()>> queue_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread executor_;
};

namespace {

struct EventState {
  std::mutex mutex;
  std::condition_variable reached;
  uint64_t recorded = 0;   // records issued
  uint64_t completed = 0;  // records the stream has reached
  std::chrono::steady_clock::time_point time;
};

struct Registry {
  std::mutex mutex;
  std::vector<Stream*> defaults;
  std::vector<Stream*> streams;  // every live stream, defaults included
  std::map<const void*, detail::KernelInfo*> kernels;
};

// Never destroyed: executor threads may still run when the process exits.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void check_stream(Stream* s, const char* call) {
  if (!s) fail(std::string(call) + ": null stream");
}

void rethrow(const std::exception_ptr& e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace

class Event {
 public:
  explicit Event(bool timing) : timing(timing), state(std::make_shared<EventState>()) {}
  bool timing;
  std::shared_ptr<EventState> state;
};

Stream* default_stream(int device) {
  properties(device);  // checks the device
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.defaults.empty()) r.defaults.assign(static_cast<size_t>(device_count()), nullptr);
  Stream*& s = r.defaults[static_cast<size_t>(device)];
  if (!s) {
    s = new Stream(device);
    r.streams.push_back(s);
  }
  return s;
}

Stream* stream_create(int device) {
  properties(device);
  auto* s = new Stream(device);
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().streams.push_back(s);
  return s;
}

void stream_destroy(Stream* stream) {
  check_stream(stream, "stream_destroy");
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (Stream* d : r.defaults) {
      if (d == stream) fail("stream_destroy: the default stream cannot be destroyed");
    }
    r.streams.erase(std::remove(r.streams.begin(), r.streams.end(), stream), r.streams.end());
  }
  delete stream;
}

int stream_device(Stream* stream) {
  check_stream(stream, "stream_device");
  return stream->device();
}

bool stream_query(Stream* stream) {
  check_stream(stream, "stream_query");
  return stream->idle();
}

void stream_synchronize(Stream* stream) {
  check_stream(stream, "stream_synchronize");
  rethrow(stream->wait());
}

void device_synchronize(int device) {
  properties(device);
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    for (Stream* s : registry().streams) {
      if (s->device() == device) streams.push_back(s);
    }
  }
  std::exception_ptr first;
  for (Stream* s : streams) {
    std::exception_ptr e = s->wait();
    if (e && !first) first = e;
  }
  rethrow(first);
}

// cudaFreeHost synchronises the device before it frees, so memory that a queued copy still reads
// (a pinned batch copied with non_blocking and dropped at once) is never freed under it. The
// simulator does the same: every stream's queued work runs first.
void host_free(void* p) {
  if (!p) return;
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    streams = registry().streams;
  }
  for (Stream* s : streams) s->wait_quietly();
  std::free(p);
}

void memcpy_async(void* dst, const void* src, size_t n, Stream* stream) {
  check_stream(stream, "memcpy_async");
  if (n == 0) return;
  if (!dst || !src) fail("memcpy_async: null pointer for a " + std::to_string(n) + "-byte copy");
  stream->push([=] { std::memmove(dst, src, n); });
}

void memset_async(void* dst, int value, size_t n, Stream* stream) {
  check_stream(stream, "memset_async");
  if (n == 0) return;
  if (!dst) fail("memset_async: null pointer for " + std::to_string(n) + " bytes");
  stream->push([=] { std::memset(dst, value, n); });
}

void enqueue(Stream* stream, std::function<void()> work) {
  check_stream(stream, "enqueue");
  if (!work) fail("enqueue: empty work");
  stream->push(std::move(work));
}

Event* event_create(bool enable_timing) { return new Event(enable_timing); }

void event_destroy(Event* event) { delete event; }

void event_record(Event* event, Stream* stream) {
  if (!event) fail("event_record: null event");
  check_stream(stream, "event_record");
  std::shared_ptr<EventState> s = event->state;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    generation = ++s->recorded;
  }
  stream->push([s, generation] {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->time = std::chrono::steady_clock::now();
    if (s->completed < generation) s->completed = generation;
    s->reached.notify_all();
  });
}

bool event_query(Event* event) {
  if (!event) fail("event_query: null event");
  std::lock_guard<std::mutex> lock(event->state->mutex);
  return event->state->completed >= event->state->recorded;
}

void event_synchronize(Event* event) {
  if (!event) fail("event_synchronize: null event");
  EventState& s = *event->state;
  std::unique_lock<std::mutex> lock(s.mutex);
  uint64_t target = s.recorded;
  s.reached.wait(lock, [&] { return s.completed >= target; });
}

void stream_wait_event(Stream* stream, Event* event) {
  check_stream(stream, "stream_wait_event");
  if (!event) fail("stream_wait_event: null event");
  std::shared_ptr<EventState> s = event->state;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    target = s->recorded;
  }
  if (target == 0) return;  // never recorded: nothing to wait for
  stream->push([s, target] {
    std::unique_lock<std::mutex> lock(s->mutex);
    s->reached.wait(lock, [&] { return s->completed >= target; });
  });
}

float event_elapsed_ms(Event* start, Event* end) {
  if (!start || !end) fail("event_elapsed_ms: null event");
  if (!start->timing || !end->timing) {
    fail("event_elapsed_ms: an event was created without enable_timing");
  }
  std::scoped_lock lock(start->state->mutex, end->state->mutex);
  auto ready = [](const EventState& s) { return s.recorded > 0 && s.completed >= s.recorded; };
  if (!ready(*start->state) || !ready(*end->state)) {
    fail("event_elapsed_ms: an event has not been recorded or not been reached yet");
  }
  return std::chrono::duration<float, std::milli>(end->state->time - start->state->time).count();
}

namespace detail {

namespace {

KernelInfo& kernel_info(const void* kernel) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  KernelInfo*& info = r.kernels[kernel];
  if (!info) info = new KernelInfo;
  return *info;
}

std::string dims(const dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

}  // namespace

void launch_erased(const LaunchConfig& config, const void* kernel,
                   void (*invoke)(const void* kernel, void* args), std::shared_ptr<void> args) {
  std::string name = config.name ? config.name : "?";
  auto bad = [&](const std::string& why) {
    fail("launch of kernel '" + name + "' with grid " + dims(config.grid) + ", block " +
         dims(config.block) + ", " + std::to_string(config.dynamic_shared) +
         " bytes of dynamic shared memory: " + why);
  };
  if (!kernel) bad("null kernel");
  Stream* stream = config.stream ? config.stream : default_stream(0);
  const DeviceProperties& p = properties(stream->device());
  const dim3& b = config.block;
  const dim3& g = config.grid;
  for (int i = 0; i < 3; ++i) {
    unsigned bv = i == 0 ? b.x : i == 1 ? b.y : b.z;
    unsigned gv = i == 0 ? g.x : i == 1 ? g.y : g.z;
    const char* axis = i == 0 ? "x" : i == 1 ? "y" : "z";
    if (bv == 0 || bv > static_cast<unsigned>(p.max_block[i])) {
      bad(std::string("block.") + axis + " must be in [1, " + std::to_string(p.max_block[i]) + "]");
    }
    if (gv == 0 || gv > static_cast<unsigned>(p.max_grid[i])) {
      bad(std::string("grid.") + axis + " must be in [1, " + std::to_string(p.max_grid[i]) + "]");
    }
  }
  if (uint64_t{b.x} * b.y * b.z > static_cast<uint64_t>(p.max_threads_per_block)) {
    bad("a block may have at most " + std::to_string(p.max_threads_per_block) + " threads, not " +
        std::to_string(uint64_t{b.x} * b.y * b.z));
  }
  KernelInfo& info = kernel_info(kernel);
  size_t optin = info.max_dynamic_shared.load();
  size_t known_static = info.static_shared.load();
  size_t limit = optin ? p.shared_per_block_optin : p.shared_per_block;
  size_t dynamic_limit = optin ? optin : p.shared_per_block;
  if (config.dynamic_shared > dynamic_limit) {
    bad("more dynamic shared memory than the " + std::to_string(dynamic_limit) + " bytes allowed" +
        (optin ? std::string(" (set_max_dynamic_shared)")
               : std::string(" without set_max_dynamic_shared")));
  }
  if (config.dynamic_shared + known_static > limit) {
    bad("with the kernel's " + std::to_string(known_static) +
        " bytes of static shared memory it needs more than the " + std::to_string(limit) +
        " bytes a block may have");
  }

  auto run = std::make_shared<KernelRun>();
  run->name = name;
  run->kernel = kernel;
  run->invoke = invoke;
  run->args = args.get();
  run->grid = g;
  run->block = b;
  run->dynamic_shared = config.dynamic_shared;
  run->shared_limit = limit;
  run->info = &info;
  run->options = options();
  int mode = info.mode.load();
  run->fibers = run->options.force_fibers || info.force_fibers.load() || mode != KernelInfo::loop;
  bool learn = mode == KernelInfo::unknown;
  auto work = [run, args = std::move(args), learn] {
    run_kernel(*run);
    if (learn && !run->options.force_fibers) {
      int expected = KernelInfo::unknown;
      int mode = run->info->used_collective.load() ? KernelInfo::fibers : KernelInfo::loop;
      run->info->mode.compare_exchange_strong(expected, mode);
    }
  };
  stream->push(std::move(work));
  if (run->options.sync) stream_synchronize(stream);
}

}  // namespace detail

void set_max_dynamic_shared(const void* kernel, size_t bytes) {
  if (!kernel) fail("set_max_dynamic_shared: null kernel");
  size_t optin = properties(0).shared_per_block_optin;
  if (bytes > optin) {
    fail("set_max_dynamic_shared: " + std::to_string(bytes) + " bytes is more than the " +
         std::to_string(optin) + " bytes of shared memory a block may opt in to");
  }
  detail::kernel_info(kernel).max_dynamic_shared.store(bytes);
}

void use_fibers(const void* kernel) {
  if (!kernel) fail("use_fibers: null kernel");
  detail::kernel_info(kernel).force_fibers.store(true);
}

}  // namespace ember::sim
