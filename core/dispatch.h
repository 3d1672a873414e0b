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

// Note [Device-pair stubs]
// A copy between devices is one kernel per (source, destination) device-type pair: the CPU kernel
// fills (CPU, CPU) and the CUDA backend fills (CPU, CUDA), (CUDA, CPU) and (CUDA, CUDA), because
// only the CUDA side knows how to move bytes across (cudaMemcpyAsync on the current stream,
// pinned staging). A missing pair is an ember::Error naming both device types.
//
//   // core/ops/copy.cpp                    // kernels/cpu/copy.cpp
//   EMBER_DEFINE_DISPATCH(copy_stub);       EMBER_REGISTER_DEVICE_PAIR_KERNEL(copy_stub,
//   copy_stub(src_type, dst_type, iter);        DeviceType::CPU, DeviceType::CPU, copy_kernel);
template <class FnPtr>
struct DevicePairDispatchStub {
  const char* name;
  FnPtr table[kNumDeviceTypes][kNumDeviceTypes] = {};  // [src][dst]

  explicit constexpr DevicePairDispatchStub(const char* n) : name(n) {}

  bool has_kernel(DeviceType src, DeviceType dst) const {
    return table[static_cast<int>(src)][static_cast<int>(dst)] != nullptr;
  }

  template <class... Args>
  decltype(auto) operator()(DeviceType src, DeviceType dst, Args&&... args) const {
    FnPtr fn = table[static_cast<int>(src)][static_cast<int>(dst)];
    EMBER_CHECK(fn != nullptr, name, ": no kernel from ", device_type_name(src), " to ",
                device_type_name(dst),
                (src == DeviceType::CUDA || dst == DeviceType::CUDA) && !cuda_is_built()
                    ? " (ember was built without CUDA)"
                    : "");
    return fn(std::forward<Args>(args)...);
  }
};

template <class FnPtr>
struct DevicePairKernelRegistrar {
  DevicePairKernelRegistrar(DevicePairDispatchStub<FnPtr>& stub, DeviceType src, DeviceType dst,
                            FnPtr fn) {
    stub.table[static_cast<int>(src)][static_cast<int>(dst)] = fn;
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
#define EMBER_DECLARE_DEVICE_PAIR_DISPATCH(FnPtrType, stub) \
  extern ::ember::DevicePairDispatchStub<FnPtrType> stub
#define EMBER_REGISTER_DEVICE_PAIR_KERNEL(stub, src, dst, fn)                                    \
  static ::ember::DevicePairKernelRegistrar<std::remove_reference_t<decltype(stub.table[0][0])>> \
      stub##_##fn##_registrar(stub, src, dst, fn)
#define EMBER_REGISTER_KERNEL(stub, device, fn) \
  static ::ember::KernelRegistrar<std::remove_reference_t<decltype(stub.table[0])>> \
      stub##_##fn##_registrar(stub, device, fn)
