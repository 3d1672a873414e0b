#pragma once
// Device: where a tensor's storage lives. `cpu`, or `cuda:N`. In a build without CUDA, making a
// cuda tensor is a clear error (the allocator and kernel dispatch tables have no cuda entry).

#include <cstdint>
#include <iosfwd>
#include <string>

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // the GPU ordinal; always 0 for the cpu

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(t == DeviceType::CPU ? 0 : i) {}
  // "cpu", "cuda", "cuda:1". Throws ember::Error on anything else.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  static Device cpu() { return Device(DeviceType::CPU, 0); }
  static Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

const char* device_type_name(DeviceType t);
std::ostream& operator<<(std::ostream& os, const Device& d);

inline const Device kCPU{DeviceType::CPU, 0};

// Whether this build has a CUDA backend compiled in (EMBER_CUDA=real or sim).
bool cuda_is_built();

}  // namespace ember
