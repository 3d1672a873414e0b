#pragma once
// The ops' host waits, reported per the sync debug mode (Note [Sync debug mode] in core/cuda.h).
//
// Every stream or device synchronisation of the runtime (kernels/cuda/runtime.h) calls
// note_host_wait after it waited, so a wait nobody announced is still reported (and, in mode
// Error, raised once the wait is over: raising before it could leave a copy landing in a buffer
// the unwinding frees). An op that knows it will wait announces it first with a HostWait, which
// reports -- and in mode Error raises before anything is queued -- and keeps the runtime's
// report quiet for its lifetime. Explicit waits (synchronize(), Stream/Event::synchronize,
// EMBER_CUDA_LAUNCH_BLOCKING's) hold a QuietWait.

namespace ember::kernels::cuda {

// The calling thread's waits are not reported while one is alive.
class QuietWait {
 public:
  QuietWait();
  ~QuietWait();
  QuietWait(const QuietWait&) = delete;
  QuietWait& operator=(const QuietWait&) = delete;
  static bool active();
};

// An op about to make the host wait for `device`: nothing (mode Off), one line on stderr the
// first time `op` waits (Warn), or an ember::Error naming op and device (Error).
class HostWait {
 public:
  HostWait(const char* op, int device);
  ~HostWait();
  HostWait(const HostWait&) = delete;
  HostWait& operator=(const HostWait&) = delete;
};

// The runtime's report of a wait it just made (outside any QuietWait).
void note_host_wait(const char* op, int device);

}  // namespace ember::kernels::cuda
