#include "core/cuda.h"

#include "core/error.h"

namespace ember::cuda {

namespace {
int resolve(int index) { return index < 0 ? current_device() : index; }
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

}  // namespace ember::cuda
