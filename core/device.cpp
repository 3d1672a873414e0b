#include "core/device.h"

#include <ostream>

#include "core/error.h"

namespace ember {

Device::Device(const std::string& spec) {
  if (spec == "cpu") {
    type = DeviceType::CPU;
    index = 0;
    return;
  }
  if (spec.rfind("cuda", 0) == 0) {
    type = DeviceType::CUDA;
    index = 0;
    if (spec.size() == 4) return;
    EMBER_CHECK(spec[4] == ':' && spec.size() > 5, "Device: cannot parse device string '", spec,
                "' (expected cpu, cuda or cuda:N)");
    int idx = 0;
    for (size_t i = 5; i < spec.size(); ++i) {
      EMBER_CHECK(spec[i] >= '0' && spec[i] <= '9' && idx < 100000,
                  "Device: cannot parse device string '", spec, "' (expected cpu, cuda or cuda:N)");
      idx = idx * 10 + (spec[i] - '0');
    }
    index = idx;
    return;
  }
  EMBER_ERROR("Device: cannot parse device string '", spec, "' (expected cpu, cuda or cuda:N)");
}

const char* device_type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

bool cuda_is_built() {
#if defined(EMBER_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

}  // namespace ember
