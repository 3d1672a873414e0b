// Note [Sync debug mode] in core/cuda.h; kernels/cuda/sync_debug.h.

#include "kernels/cuda/sync_debug.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "core/cuda.h"
#include "core/error.h"

namespace ember::kernels::cuda {

namespace {

thread_local int t_quiet_depth = 0;

void report(const char* op, int device) {
  const ember::cuda::SyncDebugMode mode = ember::cuda::get_sync_debug_mode();
  if (mode == ember::cuda::SyncDebugMode::Off) return;
  EMBER_CHECK(mode != ember::cuda::SyncDebugMode::Error, op,
              ": makes the host wait for cuda:", device,
              " (a synchronisation), and the sync debug mode is error "
              "(cuda::set_sync_debug_mode, EMBER_CUDA_SYNC_DEBUG)");
  static std::mutex mutex;
  static std::set<std::string>* const warned = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned->insert(op).second) return;
  std::fprintf(stderr,
               "ember: %s makes the host wait for cuda:%d (a synchronisation; sync debug mode "
               "warn: later waits of %s are not reported)\n",
               op, device, op);
}

}  // namespace

QuietWait::QuietWait() { ++t_quiet_depth; }
QuietWait::~QuietWait() { --t_quiet_depth; }
bool QuietWait::active() { return t_quiet_depth > 0; }

HostWait::HostWait(const char* op, int device) {
  if (!QuietWait::active()) report(op, device);  // may raise: nothing is queued yet
  ++t_quiet_depth;
}
HostWait::~HostWait() { --t_quiet_depth; }

void note_host_wait(const char* op, int device) {
  if (!QuietWait::active()) report(op, device);
}

}  // namespace ember::kernels::cuda
