// The registry of deferred device checks (Note [Deferred device checks] in
// kernels/cuda/device_checks.h).

#include "kernels/cuda/device_checks.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sync_debug.h"

namespace ember::kernels::cuda {

namespace {

constexpr size_t kSlotsPerChunk = 256;  // one pinned allocation (8 KiB) serves this many checks

// A deferred check: its kernels end before `done` completes.
struct Pending {
  uint64_t seq = 0;
  int device = 0;
  NativeEvent done = nullptr;
  DeviceCheckSlot* slot = nullptr;
  const char* kernel = "";
  CheckMessage message;  // empty: the op threw before defer(), the outcome is ignored
};

// A completed check that found something, waiting for a synchronisation to raise it.
struct Failed {
  uint64_t seq = 0;
  int device = 0;
  const char* kernel = "";
  CheckMessage message;
  int64_t value = 0, where = 0;
};

class Registry {
 public:
  DeviceCheckSlot* take_slot() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_slots_.empty()) {
      auto* chunk =
          static_cast<DeviceCheckSlot*>(host_malloc(kSlotsPerChunk * sizeof(DeviceCheckSlot)));
      chunks_.push_back(chunk);
      for (size_t k = kSlotsPerChunk; k-- > 0;) free_slots_.push_back(chunk + k);
    }
    DeviceCheckSlot* s = free_slots_.back();
    free_slots_.pop_back();
    *s = DeviceCheckSlot{0, 0, 0, 0, 0};  // no kernel holds it: its last event completed
    return s;
  }

  // Registers a check whose kernels are launched on `stream`; recycles the oldest checks that
  // completed meanwhile.
  void add(const Stream& stream, DeviceCheckSlot* slot, const char* kernel, CheckMessage message) {
    const int device = stream.device().index;
    std::lock_guard<std::mutex> lock(mutex_);
    NativeEvent e;
    if (free_events_[device].empty()) {
      e = event_create(device, /*enable_timing=*/false);
    } else {
      e = free_events_[device].back();
      free_events_[device].pop_back();
    }
    event_record(e, native_stream(stream));
    pending_.push_back(Pending{next_seq_++, device, e, slot, kernel, std::move(message)});
    collect_locked(/*all=*/false);
  }

  void recycle(DeviceCheckSlot* slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_slots_.push_back(slot);
  }

  // The oldest failed check that has completed, taken out with every other failed one;
  // `dropped` counts the others. Nothing: seq == UINT64_MAX.
  Failed take_oldest_failure(size_t* dropped) {
    std::lock_guard<std::mutex> lock(mutex_);
    collect_locked(/*all=*/true);
    Failed oldest;
    oldest.seq = UINT64_MAX;
    *dropped = failed_.empty() ? 0 : failed_.size() - 1;
    for (Failed& f : failed_) {
      if (f.seq < oldest.seq) oldest = std::move(f);
    }
    failed_.clear();
    return oldest;
  }

  DeviceCheckCounts counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {pending_.size(), failed_.size()};
  }

 private:
  // Retires completed checks: all of them, or (all == false, on every defer) those at the front
  // until the first still running -- on one stream they complete in order, so the queue stays
  // short at O(1) queries per check.
  void collect_locked(bool all) {
    std::deque<Pending> running;
    while (!pending_.empty()) {
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      if (!event_query(p.done)) {
        running.push_back(std::move(p));
        if (!all) break;
        continue;
      }
      retire_locked(std::move(p));
    }
    while (!running.empty()) {  // back in front, in their order
      pending_.push_front(std::move(running.back()));
      running.pop_back();
    }
  }

  void retire_locked(Pending p) {
    const volatile DeviceCheckSlot* s = p.slot;
    if (s->flag != 0 && p.message) {
      failed_.push_back(Failed{p.seq, p.device, p.kernel, std::move(p.message),
                               static_cast<int64_t>(s->value), static_cast<int64_t>(s->where)});
    }
    free_slots_.push_back(p.slot);
    free_events_[p.device].push_back(p.done);
  }

  std::mutex mutex_;
  std::vector<DeviceCheckSlot*> chunks_;
  std::vector<DeviceCheckSlot*> free_slots_;
  std::vector<NativeEvent> free_events_[kMaxDevicesPerType];
  std::deque<Pending> pending_;
  std::vector<Failed> failed_;
  uint64_t next_seq_ = 0;
};

// Never destroyed: slots may still be written by kernels at exit, and the pinned chunks stay
// reachable (no leak report) as the caching allocators' blocks do.
Registry* const g_registry = new Registry();

}  // namespace

DeviceCheck::DeviceCheck(const Stream& stream) : stream_(stream), slot_(g_registry->take_slot()) {}

DeviceCheck::~DeviceCheck() {
  if (deferred_) return;
  try {
    g_registry->add(stream_, slot_, "", CheckMessage());
  } catch (...) {  // the device failed: the slot is given up rather than reused too early
  }
}

void DeviceCheck::defer(const char* kernel, CheckMessage message) {
  EMBER_INTERNAL_ASSERT(!deferred_, "DeviceCheck::defer called twice");
  deferred_ = true;
  if (launch_blocking()) {  // the op waits and raises the CPU's message as it is
    const QuietWait quiet;  // asked for: Note [Sync debug mode]
    stream_synchronize(native_stream(stream_), kernel);
    const DeviceCheckSlot s = *slot_;
    g_registry->recycle(slot_);
    if (s.flag != 0) throw Error(message(s.value, s.where));
    return;
  }
  g_registry->add(stream_, slot_, kernel, std::move(message));
}

void raise_failed_checks(const char* where) {
  if (InternalWait::active()) return;  // Note [Internal waits]
  size_t dropped = 0;
  Failed f = g_registry->take_oldest_failure(&dropped);
  if (f.seq == UINT64_MAX) return;
  std::string msg = f.message(f.value, f.where);
  msg += detail::str(
      " (found on cuda:", f.device, " by ", f.kernel, " after the op returned",
      dropped ? detail::str(", with ", dropped, " later failed check(s) dropped") : std::string(),
      "; raised at ", where,
      ": CUDA kernels run asynchronously, and EMBER_CUDA_LAUNCH_BLOCKING=1 raises "
      "it at the op)");
  throw Error(msg);
}

DeviceCheckCounts device_check_counts() { return g_registry->counts(); }

}  // namespace ember::kernels::cuda
