// Simulated devices and their memory (runtime.h).
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/cuda/sim/options.h"
#include "kernels/cuda/sim/runtime.h"

namespace ember::sim {

namespace {

struct Reservation {
  int device;
  size_t bytes;
  std::vector<bool> mapped;  // per granule
};

struct Devices {
  std::vector<DeviceProperties> properties;
  std::vector<std::atomic<size_t>> in_use;
  std::mutex mutex;
  std::map<const void*, std::pair<int, size_t>> allocations;  // device, bytes
  std::map<const char*, Reservation> reservations;            // by base address

  Devices() : properties(count()), in_use(properties.size()) {
    size_t memory = size_t{16} << 30;
    if (const char* m = std::getenv("EMBER_SIM_MEMORY"); m && *m) {
      memory = parse_bytes(m, "EMBER_SIM_MEMORY");
    }
    for (size_t i = 0; i < properties.size(); ++i) {
      properties[i].total_memory = memory;
      if (properties.size() > 1) properties[i].name += " #" + std::to_string(i);
    }
  }

  static size_t count() {
    const char* d = std::getenv("EMBER_SIM_DEVICES");
    if (!d || !*d) return 1;
    char* end = nullptr;
    long n = std::strtol(d, &end, 10);
    if (*end != '\0' || n < 1 || n > 64) {
      fail(std::string("EMBER_SIM_DEVICES=") + d + ": expected an integer in [1, 64]");
    }
    return static_cast<size_t>(n);
  }
};

// Never destroyed: device memory may be freed by static destructors of the program.
Devices& devices() {
  static Devices* d = new Devices;
  return *d;
}

void check_device(int device, const char* call) {
  int n = static_cast<int>(devices().properties.size());
  if (device < 0 || device >= n) {
    fail(std::string(call) + ": device " + std::to_string(device) + " does not exist (" +
         std::to_string(n) + " simulated device" + (n == 1 ? "" : "s") + ")");
  }
}

bool charge(int device, size_t bytes) {
  auto& used = devices().in_use[static_cast<size_t>(device)];
  size_t capacity = devices().properties[static_cast<size_t>(device)].total_memory;
  size_t now = used.load();
  do {
    if (bytes > capacity || now > capacity - bytes) return false;
  } while (!used.compare_exchange_weak(now, now + bytes));
  return true;
}

void fill_new(void* p, size_t bytes) {
  Fill fill = options().fill;
  if (fill == Fill::nan)
    std::memset(p, 0xFF, bytes);
  else if (fill == Fill::zero)
    std::memset(p, 0, bytes);
}

}  // namespace

int device_count() { return static_cast<int>(devices().properties.size()); }

const DeviceProperties& properties(int device) {
  check_device(device, "properties");
  return devices().properties[static_cast<size_t>(device)];
}

void* device_malloc(int device, size_t bytes) {
  check_device(device, "device_malloc");
  if (!charge(device, bytes)) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
    devices().in_use[static_cast<size_t>(device)] -= bytes;
    return nullptr;
  }
  fill_new(p, bytes);
  std::lock_guard<std::mutex> lock(devices().mutex);
  devices().allocations[p] = {device, bytes};
  return p;
}

void device_free(int device, void* p) {
  check_device(device, "device_free");
  if (!p) return;
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(devices().mutex);
    auto it = devices().allocations.find(p);
    if (it == devices().allocations.end()) {
      fail("device_free: " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
           " is not a live device_malloc allocation");
    }
    if (it->second.first != device) {
      fail("device_free: the pointer belongs to device " + std::to_string(it->second.first) +
           ", not device " + std::to_string(device));
    }
    bytes = it->second.second;
    devices().allocations.erase(it);
  }
  std::free(p);
  devices().in_use[static_cast<size_t>(device)] -= bytes;
}

size_t memory_in_use(int device) {
  check_device(device, "memory_in_use");
  return devices().in_use[static_cast<size_t>(device)].load();
}

size_t granularity() { return size_t{2} << 20; }

void* reserve(int device, size_t bytes) {
  check_device(device, "reserve");
  size_t g = granularity();
  if (bytes == 0 || bytes % g != 0) {
    fail("reserve: " + std::to_string(bytes) + " bytes is not a positive multiple of the " +
         std::to_string(g) + "-byte granularity");
  }
  // Over-reserve to align the start to the granularity, then trim.
  size_t span = bytes + g;
  void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + g - 1) / g * g;
  if (aligned > start) munmap(p, aligned - start);
  uintptr_t end = aligned + bytes;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  auto* base = reinterpret_cast<char*>(aligned);
  std::lock_guard<std::mutex> lock(devices().mutex);
  devices().reservations[base] = Reservation{device, bytes, std::vector<bool>(bytes / g, false)};
  return base;
}

namespace {

// The reservation holding [p, p + bytes) on `device` and the first granule's index; throws Error
// naming `call` when the range is not granularity-aligned inside one reservation.
std::pair<Reservation*, size_t> find_range(int device, void* p, size_t bytes, const char* call) {
  size_t g = granularity();
  auto* c = static_cast<char*>(p);
  auto& rs = devices().reservations;
  auto it = rs.upper_bound(c);
  if (it == rs.begin()) fail(std::string(call) + ": the address is not in a reserved range");
  --it;
  Reservation& r = it->second;
  size_t offset = static_cast<size_t>(c - it->first);
  if (offset >= r.bytes) fail(std::string(call) + ": the address is not in a reserved range");
  if (r.device != device) {
    fail(std::string(call) + ": the range was reserved on device " + std::to_string(r.device) +
         ", not device " + std::to_string(device));
  }
  if (offset % g != 0 || bytes == 0 || bytes % g != 0 || offset + bytes > r.bytes) {
    fail(std::string(call) + ": [offset " + std::to_string(offset) + ", +" + std::to_string(bytes) +
         ") is not a granularity-aligned range inside the " + std::to_string(r.bytes) +
         "-byte reservation");
  }
  return {&r, offset / g};
}

}  // namespace

bool map(int device, void* p, size_t bytes) {
  check_device(device, "map");
  std::lock_guard<std::mutex> lock(devices().mutex);
  auto [r, first] = find_range(device, p, bytes, "map");
  size_t n = bytes / granularity();
  for (size_t i = first; i < first + n; ++i) {
    if (r->mapped[i]) fail("map: part of the range is mapped already");
  }
  if (!charge(device, bytes)) return false;
  if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
    devices().in_use[static_cast<size_t>(device)] -= bytes;
    fail(std::string("map: mprotect failed: ") + std::strerror(errno));
  }
  for (size_t i = first; i < first + n; ++i) r->mapped[i] = true;
  fill_new(p, bytes);
  return true;
}

void unmap(int device, void* p, size_t bytes) {
  check_device(device, "unmap");
  std::lock_guard<std::mutex> lock(devices().mutex);
  auto [r, first] = find_range(device, p, bytes, "unmap");
  size_t n = bytes / granularity();
  for (size_t i = first; i < first + n; ++i) {
    if (!r->mapped[i]) fail("unmap: part of the range is not mapped");
  }
  madvise(p, bytes, MADV_DONTNEED);
  mprotect(p, bytes, PROT_NONE);
  for (size_t i = first; i < first + n; ++i) r->mapped[i] = false;
  devices().in_use[static_cast<size_t>(device)] -= bytes;
}

void release(int device, void* p, size_t bytes) {
  check_device(device, "release");
  std::lock_guard<std::mutex> lock(devices().mutex);
  auto it = devices().reservations.find(static_cast<char*>(p));
  if (it == devices().reservations.end()) fail("release: the address is not a reservation's start");
  if (it->second.bytes != bytes || it->second.device != device) {
    fail("release: the reservation has " + std::to_string(it->second.bytes) + " bytes on device " +
         std::to_string(it->second.device) + ", not " + std::to_string(bytes) + " on device " +
         std::to_string(device));
  }
  size_t mapped = 0;
  for (bool m : it->second.mapped) mapped += m;
  devices().in_use[static_cast<size_t>(device)] -= mapped * granularity();
  munmap(p, bytes);
  devices().reservations.erase(it);
}

void* host_malloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return nullptr;
  return p;
}

}  // namespace ember::sim
