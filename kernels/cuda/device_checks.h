#pragma once
// Checks of input values that only a kernel sees (index values, cross-entropy targets, pooling
// indices), reported without making every op wait for the device.
//
// Note [Deferred device checks]
// A kernel cannot throw. A kernel that meets a bad value skips the access (nothing is read or
// written out of bounds) and records what it found in its op's DeviceCheckSlot: the first thread
// to claim the slot's flag (atomicCAS 0 -> 1) writes the value and where it was found. Slots live
// in pinned host memory, which every device reads and writes through the same pointer (unified
// addressing; the simulator's device memory is host memory anyway), so reading one costs no copy.
//
// Reading the slot right after the launch would need a synchronisation per op: the GPU drains,
// the host waits, and the next launch starts from an idle GPU (an embedding, a cross-entropy and
// a max-pool backward in every training step each paid one). So the op does not wait. It records
// an event after its kernels and hands slot, event and a message builder to the registry here
// (DeviceCheck::defer), then returns. The registry raises at the next point where the host waits
// for the device anyway -- Stream::synchronize, cuda::synchronize, Event::synchronize, a copy to
// the host (item(), cpu(), to(kCPU)), nonzero's size read-back -- the Error of the oldest check
// that completed and failed, the op's own message plus where it surfaced:
//   "index_select: index 7 is out of bounds for dimension 0 with size 5 (found on cuda:0 by
//    gather_kernel after the op returned; raised at copy_: CUDA kernels run asynchronously, and
//    EMBER_CUDA_LAUNCH_BLOCKING=1 raises it at the op)"
// With EMBER_CUDA_LAUNCH_BLOCKING=1 the op itself waits and raises the CPU's message unchanged.
//
// So no value computed after a failed check reaches the host without the Error: every way to
// look at device memory from the host goes through one of those points (a non-blocking copy to
// pinned memory is read only after a Stream/Event synchronize). Ops launched after the failed one
// run on whatever it left (an output it skipped elements of), as they would in PyTorch after a
// device-side assert -- but the process stays usable: the Error is an ember::Error, and the
// device is fine. Checks whose event has completed are recycled as new checks are deferred, so
// a loop that never synchronises holds a bounded number (only failed ones wait for a
// synchronisation). A synchronisation raises only checks that completed: one on another stream
// still running waits for a later point. With several failed checks, the oldest is raised and
// the others are dropped (the message says how many).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/stream.h"

namespace ember::kernels::cuda {

// Where a kernel records a bad value (Note [Deferred device checks]); zeroed when handed out.
struct DeviceCheckSlot {
  int flag;  // 0: nothing found; set by the first thread that finds something
  int unused;
  long long value;  // the bad value
  long long where;  // where it was found (the op decides: a position, a row)
  long long pad;
};

// The Error message of a failed check from the slot's value and where.
using CheckMessage = std::function<std::string(int64_t value, int64_t where)>;

// One op's check. Construct it before launching the op's kernels on `stream`, pass slot() to
// them, and call defer() after the last launch. A check destroyed without defer() (the op threw
// on its way) is recycled once its stream gets past the point where it was destroyed, and its
// outcome is ignored.
class DeviceCheck {
 public:
  explicit DeviceCheck(const Stream& stream);
  ~DeviceCheck();
  DeviceCheck(const DeviceCheck&) = delete;
  DeviceCheck& operator=(const DeviceCheck&) = delete;

  DeviceCheckSlot* slot() const { return slot_; }
  // The op's kernels are launched: their finding is raised later (or now, with
  // EMBER_CUDA_LAUNCH_BLOCKING=1). `kernel` names the kernel that checks, for the message.
  void defer(const char* kernel, CheckMessage message);

 private:
  Stream stream_;
  DeviceCheckSlot* slot_;
  bool deferred_ = false;
};

// At a point where the host has waited for the device (`where` names it: "copy_",
// "Stream::synchronize"): raises the Error of the oldest completed check that failed, if any.
void raise_failed_checks(const char* where);

// How many deferred checks are not yet known to have completed, and how many completed and
// failed without being raised yet (tests and diagnostics).
struct DeviceCheckCounts {
  size_t pending = 0;
  size_t failed = 0;
};
DeviceCheckCounts device_check_counts();

}  // namespace ember::kernels::cuda
