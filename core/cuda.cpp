#include "core/cuda.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace ember::cuda {

namespace {
int resolve(int index) { return index < 0 ? current_device() : index; }

// -1: not read from EMBER_CUDA_SYNC_DEBUG yet.
std::atomic<int> g_sync_debug{-1};

}  // namespace

bool is_available() { return cuda_is_built() && device_count() > 0; }

int device_count() { return ember::device_count(DeviceType::CUDA); }

bool is_simulated() {
#if defined(EMBER_CUDA_SIM)
  return true;
#else
  return false;
#endif
}

int current_device() { return ember::current_device(DeviceType::CUDA); }

void set_device(int index) { set_current_device(Device(DeviceType::CUDA, index)); }

void synchronize(int index) { ember::synchronize(Device(DeviceType::CUDA, resolve(index))); }

DeviceProperties get_device_properties(int index) {
  const int i = resolve(index);
  const int n = device_count();
  EMBER_CHECK(i >= 0 && i < n, "get_device_properties: device index ", i,
              " is out of range for cuda (", n, n == 1 ? " device)" : " devices)");
  return get_device_backend(DeviceType::CUDA, "get_device_properties")->properties(i);
}

SyncDebugMode detail::parse_sync_debug_mode(const char* v) {
  if (v == nullptr || *v == '\0' || std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0) {
    return SyncDebugMode::Off;
  }
  if (std::strcmp(v, "warn") == 0 || std::strcmp(v, "1") == 0) return SyncDebugMode::Warn;
  if (std::strcmp(v, "error") == 0 || std::strcmp(v, "2") == 0) return SyncDebugMode::Error;
  EMBER_ERROR("EMBER_CUDA_SYNC_DEBUG='", v, "': use off, warn or error (or 0, 1, 2)");
}

void set_sync_debug_mode(SyncDebugMode mode) {
  g_sync_debug.store(static_cast<int>(mode), std::memory_order_relaxed);
}

SyncDebugMode get_sync_debug_mode() {
  int m = g_sync_debug.load(std::memory_order_relaxed);
  if (m < 0) {
    int unread = -1;
    g_sync_debug.compare_exchange_strong(
        unread,
        static_cast<int>(detail::parse_sync_debug_mode(std::getenv("EMBER_CUDA_SYNC_DEBUG"))));
    m = g_sync_debug.load(std::memory_order_relaxed);
  }
  return static_cast<SyncDebugMode>(m);
}

}  // namespace ember::cuda
