#pragma once
// The kernel dispatch table.
//
// Each op family declares a DispatchStub per kernel: a table with one function pointer per
// device type. kernels/cpu/*.cpp fills the CPU slot and kernels/cuda/*.cu the CUDA slot, with
// EMBER_REGISTER_KERNEL at static-initialisation time. The op (core/ops/*.cpp) checks its
// inputs, prepares its output, then calls `stub(device_type, args...)`. A missing slot (a cuda
// tensor in a CPU-only build) is an ember::Error naming the op and the device.
//
//   // core/ops/binary.h
//   using binary_fn = void (*)(TensorIter&, const Scalar& alpha);
//   EMBER_DECLARE_DISPATCH(binary_fn, add_stub);
//   // core/ops/binary.cpp
//   EMBER_DEFINE_DISPATCH(add_stub);
//   // kernels/cpu/binary.cpp
//   EMBER_REGISTER_KERNEL(add_stub, DeviceType::CPU, add_kernel);

#include <type_traits>
#include <utility>

#include "core/device.h"
#include "core/error.h"

namespace ember {

template <class FnPtr>
struct DispatchStub {
  const char* name;
  FnPtr table[kNumDeviceTypes] = {};

  explicit constexpr DispatchStub(const char* n) : name(n) {}

  template <class... Args>
  decltype(auto) operator()(DeviceType device, Args&&... args) const {
    FnPtr fn = table[static_cast<int>(device)];
    EMBER_CHECK(fn != nullptr, name, ": no kernel for device ", device_type_name(device),
                device == DeviceType::CUDA && !cuda_is_built()
                    ? " (ember was built without CUDA)"
                    : "");
    return fn(std::forward<Args>(args)...);
  }
};

template <class FnPtr>
struct KernelRegistrar {
  KernelRegistrar(DispatchStub<FnPtr>& stub, DeviceType device, FnPtr fn) {
    stub.table[static_cast<int>(device)] = fn;
  }
};

}  // namespace ember

#define EMBER_DECLARE_DISPATCH(FnPtrType, stub) extern ::ember::DispatchStub<FnPtrType> stub
#define EMBER_DEFINE_DISPATCH(stub) decltype(stub) stub(#stub)
#define EMBER_REGISTER_KERNEL(stub, device, fn) \
  static ::ember::KernelRegistrar<std::remove_reference_t<decltype(stub.table[0])>> \
      stub##_##fn##_registrar(stub, device, fn)
