// kernels/cuda/runtime.h on the CUDA runtime and driver (EMBER_CUDA=real).
//
// Note [No link to the driver]
// ember links the CUDA runtime statically and never links libcuda (the driver): a machine
// without an NVIDIA driver has no libcuda.so.1, and a program that needed it could not even start
// there, let alone skip its CUDA tests. The few driver calls (the virtual-memory API behind
// expandable segments) are looked up at run time through the runtime's
// cudaGetDriverEntryPointByVersion, on first use.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/record_function.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sync_debug.h"

namespace ember::kernels::cuda {

namespace {

// The last kernel launched on each stream (Note [Checked CUDA calls]).
std::mutex g_launch_mutex;
std::unordered_map<void*, const char*> g_last_kernel;

std::string last_kernel_hint(void* stream) {
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  auto it = g_last_kernel.find(stream);
  std::string hint =
      it == g_last_kernel.end()
          ? std::string()
          : std::string("; the last kernel launched on this stream was ") + it->second;
  return hint +
         " (kernel errors are reported asynchronously: EMBER_CUDA_LAUNCH_BLOCKING=1 "
         "reports each at its launch)";
}

// The driver's virtual-memory functions, found at run time (Note [No link to the driver]).
struct DriverApi {
  decltype(&cuGetErrorString) get_error_string = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
  decltype(&cuMemAddressReserve) mem_address_reserve = nullptr;
  decltype(&cuMemAddressFree) mem_address_free = nullptr;
  decltype(&cuMemCreate) mem_create = nullptr;
  decltype(&cuMemRelease) mem_release = nullptr;
  decltype(&cuMemMap) mem_map = nullptr;
  decltype(&cuMemUnmap) mem_unmap = nullptr;
  decltype(&cuMemSetAccess) mem_set_access = nullptr;
  bool ok = false;

  template <class Fn>
  bool find(const char* symbol, Fn& fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess || p == nullptr) {
      cudaGetLastError();
      return false;
    }
    fn = reinterpret_cast<Fn>(p);
    return true;
  }

  DriverApi() {
    ok = find("cuGetErrorString", get_error_string) && find("cuDeviceGet", device_get) &&
         find("cuDeviceGetAttribute", device_get_attribute) &&
         find("cuMemGetAllocationGranularity", mem_get_allocation_granularity) &&
         find("cuMemAddressReserve", mem_address_reserve) &&
         find("cuMemAddressFree", mem_address_free) && find("cuMemCreate", mem_create) &&
         find("cuMemRelease", mem_release) && find("cuMemMap", mem_map) &&
         find("cuMemUnmap", mem_unmap) && find("cuMemSetAccess", mem_set_access);
  }
};

const DriverApi& driver() {
  static const DriverApi api;
  return api;
}

const DriverApi& checked_driver(const char* op) {
  const DriverApi& api = driver();
  EMBER_CHECK(api.ok, op, ": the CUDA driver's virtual memory API is not available");
  return api;
}

[[noreturn]] void fail(cudaError_t e, const char* op, const char* call, const std::string& tail) {
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  EMBER_CHECK(false, op, ": ", call, " failed: ", cudaGetErrorString(e), " (", cudaGetErrorName(e),
              ")", tail);
  std::abort();  // unreachable: EMBER_CHECK(false) throws
}

void check(cudaError_t e, const char* op, const char* call) {
  if (EMBER_UNLIKELY(e != cudaSuccess)) fail(e, op, call, "");
}

void check_driver(CUresult r, const char* op, const char* call) {
  if (EMBER_LIKELY(r == CUDA_SUCCESS)) return;
  const char* msg = nullptr;
  if (driver().get_error_string) driver().get_error_string(r, &msg);
  EMBER_CHECK(false, op, ": ", call, " failed: ", msg ? msg : "unknown driver error");
}

cudaStream_t as_stream(NativeStream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(NativeEvent e) { return static_cast<cudaEvent_t>(e); }

struct DeviceCount {
  int count = 0;
  std::string reason;
  DeviceCount() {
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      count = 0;
      reason = cudaGetErrorString(e);
      cudaGetLastError();
    } else if (count == 0) {
      reason = "no CUDA-capable device is detected";
    }
  }
};

const DeviceCount& devices() {
  static const DeviceCount d;
  return d;
}

// The physical allocations behind mapped ranges of expandable segments.
std::mutex g_vm_mutex;
std::unordered_map<uintptr_t, CUmemGenericAllocationHandle> g_vm_handles;

CUmemAllocationProp vm_prop(int device) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

int device_count() { return devices().count; }
const char* no_device_reason() { return devices().reason.c_str(); }

DeviceProperties properties(int device) {
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, device), "get_device_properties", "cudaGetDeviceProperties");
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  out.multiprocessor_count = p.multiProcessorCount;
  out.max_threads_per_block = p.maxThreadsPerBlock;
  out.warp_size = p.warpSize;
  out.shared_memory_per_block = static_cast<int64_t>(p.sharedMemPerBlock);
  out.shared_memory_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  out.is_simulated = false;
  return out;
}

void set_device(int device) { check(cudaSetDevice(device), "set_device", "cudaSetDevice"); }

void device_synchronize(int device, const char* op) {
  const profiler::RecordFunction wait("cudaDeviceSynchronize");  // the host waits
  int old = 0;
  check(cudaGetDevice(&old), op, "cudaGetDevice");
  check(cudaSetDevice(device), op, "cudaSetDevice");
  const cudaError_t e = cudaDeviceSynchronize();
  cudaSetDevice(old);
  if (e != cudaSuccess) fail(e, op, "cudaDeviceSynchronize", last_kernel_hint(nullptr));
  note_host_wait(op, device);
}

void* device_malloc(int device, size_t bytes) {
  int old = 0;
  check(cudaGetDevice(&old), "cuda allocator", "cudaGetDevice");
  if (old != device) check(cudaSetDevice(device), "cuda allocator", "cudaSetDevice");
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (old != device) cudaSetDevice(old);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(e, "cuda allocator", "cudaMalloc");
  return p;
}

void device_free(int device, void* p) {
  int old = 0;
  check(cudaGetDevice(&old), "cuda allocator", "cudaGetDevice");
  if (old != device) check(cudaSetDevice(device), "cuda allocator", "cudaSetDevice");
  const cudaError_t e = cudaFree(p);
  if (old != device) cudaSetDevice(old);
  check(e, "cuda allocator", "cudaFree");
}

size_t total_memory(int device) { return static_cast<size_t>(properties(device).total_memory); }

bool supports_virtual_memory() {
  int dev = 0, supported = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  const DriverApi& api = driver();
  if (!api.ok) return false;
  CUdevice cu_dev;
  if (api.device_get(&cu_dev, dev) != CUDA_SUCCESS) return false;
  if (api.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                               cu_dev) != CUDA_SUCCESS)
    return false;
  return supported != 0;
}

size_t vm_granularity() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cuda allocator", "cudaGetDevice");
  CUmemAllocationProp prop = vm_prop(dev);
  size_t g = 0;
  check_driver(checked_driver("cuda allocator")
                   .mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "cuda allocator", "cuMemGetAllocationGranularity");
  return g;
}

void* vm_reserve(int, size_t bytes) {
  CUdeviceptr p = 0;
  check_driver(checked_driver("cuda allocator").mem_address_reserve(&p, bytes, 0, 0, 0),
               "cuda allocator", "cuMemAddressReserve");
  return reinterpret_cast<void*>(p);
}

// Note [One physical allocation per granule]
// The caching allocator maps an expandable segment's growth and later unmaps its free tail
// (CudaCachingAllocator::release_cached), and the tail it gives back can start inside an earlier
// growth and span several. The driver cannot unmap part of what one cuMemMap mapped, so every
// granule (2 MiB on current GPUs) gets its own cuMemCreate + cuMemMap and its own handle, keyed
// by its address, and any granule-aligned range can be unmapped piece by piece (PyTorch's
// expandable segments do the same). The simulator maps granule by granule too.
namespace {

void vm_unmap_granules(const DriverApi& api, CUdeviceptr ptr, size_t bytes, size_t g) {
  for (size_t off = 0; off < bytes; off += g) {
    check_driver(api.mem_unmap(ptr + off, g), "cuda allocator", "cuMemUnmap");
    CUmemGenericAllocationHandle h;
    {
      std::lock_guard<std::mutex> lock(g_vm_mutex);
      auto it = g_vm_handles.find(static_cast<uintptr_t>(ptr + off));
      EMBER_INTERNAL_ASSERT(it != g_vm_handles.end(), "vm_unmap of a granule never mapped");
      h = it->second;
      g_vm_handles.erase(it);
    }
    check_driver(api.mem_release(h), "cuda allocator", "cuMemRelease");
  }
}

}  // namespace

bool vm_map(int device, void* p, size_t bytes) {
  CUmemAllocationProp prop = vm_prop(device);
  const DriverApi& api = checked_driver("cuda allocator");
  const size_t g = vm_granularity();
  EMBER_INTERNAL_ASSERT(bytes % g == 0 && reinterpret_cast<uintptr_t>(p) % g == 0,
                        "vm_map of a range not aligned to the granularity ", g);
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (size_t off = 0; off < bytes; off += g) {
    CUmemGenericAllocationHandle h;
    const CUresult r = api.mem_create(&h, g, &prop, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      vm_unmap_granules(api, ptr, off, g);  // all or nothing: give back this call's granules
      return false;
    }
    check_driver(r, "cuda allocator", "cuMemCreate");
    const CUresult m = api.mem_map(ptr + off, g, 0, h, 0);
    if (m != CUDA_SUCCESS) api.mem_release(h);
    check_driver(m, "cuda allocator", "cuMemMap");
    std::lock_guard<std::mutex> lock(g_vm_mutex);
    g_vm_handles[static_cast<uintptr_t>(ptr + off)] = h;
  }
  check_driver(api.mem_set_access(ptr, bytes, &access, 1), "cuda allocator", "cuMemSetAccess");
  return true;
}

void vm_unmap(int, void* p, size_t bytes) {
  vm_unmap_granules(checked_driver("cuda allocator"), reinterpret_cast<CUdeviceptr>(p), bytes,
                    vm_granularity());
}

void vm_release(int, void* p, size_t bytes) {
  check_driver(
      checked_driver("cuda allocator").mem_address_free(reinterpret_cast<CUdeviceptr>(p), bytes),
      "cuda allocator", "cuMemAddressFree");
}

void* host_malloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    EMBER_CHECK(false, "pin_memory: out of page-locked host memory allocating ", bytes, " bytes");
  }
  check(e, "pin_memory", "cudaHostAlloc");
  return p;
}

void host_free(void* p) { check(cudaFreeHost(p), "pin_memory", "cudaFreeHost"); }

namespace {

// A runtime stream created on `device` (the current device restored after).
cudaStream_t create_stream_on(int device, unsigned flags, const char* op) {
  int old = 0;
  check(cudaGetDevice(&old), op, "cudaGetDevice");
  if (old != device) check(cudaSetDevice(device), op, "cudaSetDevice");
  cudaStream_t s = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&s, flags);
  if (old != device) cudaSetDevice(old);
  check(e, op, "cudaStreamCreateWithFlags");
  return s;
}

}  // namespace

// Note [A real default stream per device]
// CUDA's legacy default stream is the handle nullptr on every device: which device it means is
// the calling thread's current device at the call. ember's Stream (cuda:1, id 0) must mean
// device 1's stream wherever it is synchronised, recorded on or waited for, so each device gets
// its own runtime stream for id 0, created on first use. It is a blocking stream (not
// cudaStreamNonBlocking): work a library or a user issues on the legacy stream of that device
// still orders with it, as with the legacy stream itself. The simulator keeps one per device
// the same way (kernels/cuda/sim/stream.cpp).
NativeStream default_native_stream(int device) {
  EMBER_INTERNAL_ASSERT(device >= 0 && device < kMaxDevicesPerType, "default stream of device ",
                        device);
  static std::once_flag once[kMaxDevicesPerType];
  static cudaStream_t streams[kMaxDevicesPerType] = {};
  std::call_once(once[device], [device] {
    streams[device] = create_stream_on(device, cudaStreamDefault, "default stream");
  });
  return streams[device];
}

NativeStream create_native_stream(int device) {
  return create_stream_on(device, cudaStreamNonBlocking, "new_stream");
}

bool stream_query(NativeStream s) {
  const cudaError_t e = cudaStreamQuery(as_stream(s));
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  if (e != cudaSuccess) fail(e, "Stream::query", "cudaStreamQuery", last_kernel_hint(s));
  return true;
}

void stream_synchronize(NativeStream s, const char* op) {
  const profiler::RecordFunction wait("cudaStreamSynchronize");  // the host waits
  const cudaError_t e = cudaStreamSynchronize(as_stream(s));
  if (e != cudaSuccess) fail(e, op, "cudaStreamSynchronize", last_kernel_hint(s));
  int device = 0;
  if (!QuietWait::active() && cudaGetDevice(&device) == cudaSuccess) note_host_wait(op, device);
}

void note_launch(NativeStream s, const char* kernel) {
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  g_last_kernel[s] = kernel;
  g_last_kernel[nullptr] = kernel;  // what a device-wide synchronisation names
}

NativeEvent event_create(int device, bool enable_timing) {
  int old = 0;
  check(cudaGetDevice(&old), "Event::record", "cudaGetDevice");
  if (old != device) check(cudaSetDevice(device), "Event::record", "cudaSetDevice");
  cudaEvent_t e = nullptr;
  const cudaError_t r =
      cudaEventCreateWithFlags(&e, enable_timing ? cudaEventDefault : cudaEventDisableTiming);
  if (old != device) cudaSetDevice(old);
  check(r, "Event::record", "cudaEventCreateWithFlags");
  return e;
}

void event_destroy(NativeEvent e) noexcept { cudaEventDestroy(as_event(e)); }

void event_record(NativeEvent e, NativeStream s) {
  check(cudaEventRecord(as_event(e), as_stream(s)), "Event::record", "cudaEventRecord");
}

bool event_query(NativeEvent e) {
  const cudaError_t r = cudaEventQuery(as_event(e));
  if (r == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(r, "Event::query", "cudaEventQuery");
  return true;
}

void event_synchronize(NativeEvent e) {
  const cudaError_t r = cudaEventSynchronize(as_event(e));
  if (r != cudaSuccess) fail(r, "Event::synchronize", "cudaEventSynchronize", "");
}

void stream_wait_event(NativeStream s, NativeEvent e) {
  check(cudaStreamWaitEvent(as_stream(s), as_event(e), 0), "Event::block", "cudaStreamWaitEvent");
}

double event_elapsed_ms(NativeEvent start, NativeEvent end) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, as_event(start), as_event(end)), "Event::elapsed_ms",
        "cudaEventElapsedTime");
  return ms;
}

void memcpy_async(void* dst, const void* src, size_t n, NativeStream s, const char* op) {
  if (n == 0) return;
  const cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, as_stream(s));
  if (e != cudaSuccess) fail(e, op, "cudaMemcpyAsync", last_kernel_hint(s));
}

void memset_async(void* dst, int value, size_t n, NativeStream s, const char* op) {
  if (n == 0) return;
  check(cudaMemsetAsync(dst, value, n, as_stream(s)), op, "cudaMemsetAsync");
}

}  // namespace ember::kernels::cuda
