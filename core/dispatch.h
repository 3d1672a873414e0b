#pragma once
// The kernel dispatch table.
//
// Each op family declares a DispatchStub per kernel: a table with one function pointer per
// device type. kernels/cpu/*.cpp fills the CPU slot and kernels/cuda/*.cu the CUDA slot, with
// EMBER_REGISTER_KERNEL at static-initialisation time. The op (core/ops/*.cpp) checks its
// inputs, prepares its output, then calls `stub(device_type, args...)`. A missing slot (a cuda
// tensor in a CPU-only build) is an ember::Error naming the op and the device.
//
//   // core/ops/binary.h: the stub, declared and defined in one line
//   using binary_fn = void (*)(TensorIter&, const Scalar& alpha);
//   EMBER_DECLARE_DISPATCH(binary_fn, add_stub);
//   // core/ops/binary.cpp: native::add calls add_stub(iter.device().type, iter, alpha)
//   // kernels/cpu/binary.cpp
//   EMBER_REGISTER_KERNEL(add_stub, DeviceType::CPU, add_kernel);
//
// Note [Stub registry]
// Every stub made with EMBER_DECLARE_DISPATCH (or its device-pair form) is listed: dispatch_stubs()
// gives each one's name and which device slots hold a kernel, stubs_missing(device) the names of
// those without a kernel for `device` (tests/test_dispatch_registry.cpp fails for any stub without
// a CPU kernel; a new backend lists what it still lacks). The listing must not disturb the static
// registration: a DispatchStub is constant-initialised (its constructor is constexpr), so its
// table is all nullptr before any dynamic initialiser runs, and kernels may fill it from other
// translation units in any order. A dynamic constructor could run after a registration and
// wipe the slot. So the stub stays as it is and EMBER_DECLARE_DISPATCH also defines a
// StubListing object next to it (both inline variables: one of each in the program), whose
// (dynamic) constructor adds the stub's address to a list held in a function-local static (made on
// first use, so the order in which translation units initialise does not matter). The list holds
// addresses only; slots are read when dispatch_stubs() is called, after static initialisation.

#include <array>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/record_function.h"

namespace ember {

namespace detail {
// A kernel call inside a profiler range "cpu::add" (core/record_function.h), out of line so
// that the unprofiled call stays a plain (tail) call with no cleanup to run.
template <class FnPtr, class... Args>
EMBER_NOINLINE decltype(auto) call_recorded(const char* name, DeviceType device, DeviceType source,
                                            FnPtr fn, Args&&... args) {
  profiler::RecordFunction range(name, device, source);
  return fn(std::forward<Args>(args)...);
}
}  // namespace detail

template <class FnPtr>
struct DispatchStub {
  const char* name;
  FnPtr table[kNumDeviceTypes] = {};

  explicit constexpr DispatchStub(const char* n) : name(n) {}

  // Whether a kernel is registered for `device`.
  bool has_kernel(DeviceType device) const { return table[static_cast<int>(device)] != nullptr; }

  template <class... Args>
  decltype(auto) operator()(DeviceType device, Args&&... args) const {
    FnPtr fn = table[static_cast<int>(device)];
    EMBER_CHECK(
        fn != nullptr, name, ": no kernel for device ", device_type_name(device),
        device == DeviceType::CUDA && !cuda_is_built() ? " (ember was built without CUDA)" : "");
    // Note [What the profiler records]; kept off the common path (Note [Profiler cost when off])
    if (EMBER_UNLIKELY(profiler::enabled()))
      return detail::call_recorded(name, device, device, fn, std::forward<Args>(args)...);
    return fn(std::forward<Args>(args)...);
  }
};

// Note [Device-pair stubs]
// A copy between devices is one kernel per (source, destination) device-type pair: the CPU kernel
// fills (CPU, CPU) and the CUDA backend fills (CPU, CUDA), (CUDA, CPU) and (CUDA, CUDA), because
// only the CUDA side knows how to move bytes across (cudaMemcpyAsync on the current stream,
// pinned staging). A missing pair is an ember::Error naming both device types.
//
//   // core/ops/copy.h                                   // kernels/cpu/copy.cpp
//   EMBER_DECLARE_DEVICE_PAIR_DISPATCH(copy_fn, copy_stub);  EMBER_REGISTER_DEVICE_PAIR_KERNEL(
//   // core/ops/copy.cpp                                     copy_stub, DeviceType::CPU,
//   copy_stub(src_type, dst_type, iter);                     DeviceType::CPU, copy_kernel);
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
    if (EMBER_UNLIKELY(profiler::enabled()))
      return detail::call_recorded(name, dst, src, fn, std::forward<Args>(args)...);
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

// One stub as dispatch_stubs() reports it.
struct StubInfo {
  std::string name;
  std::array<bool, kNumDeviceTypes> has_kernel{};  // by static_cast<int>(DeviceType)
};

// Every stub defined in the program (Note [Stub registry]), in the order they were listed.
std::vector<StubInfo> dispatch_stubs();
// The names of the stubs without a kernel for `device`.
std::vector<std::string> stubs_missing(DeviceType device);

namespace detail {
// A type-erased reference to one DispatchStub<FnPtr>.
struct StubRecord {
  const void* stub;
  const char* (*name)(const void* stub);
  bool (*has_kernel)(const void* stub, DeviceType device);
};
// Adds a stub to the list (called by StubListing during static initialisation).
void list_stub(const StubRecord& record);
}  // namespace detail

// Lists a stub at static-initialisation time (EMBER_DECLARE_DISPATCH defines one per stub).
struct StubListing {
  template <class FnPtr>
  explicit StubListing(const DispatchStub<FnPtr>& stub) {
    using Stub = DispatchStub<FnPtr>;
    detail::list_stub(
        {&stub, [](const void* s) { return static_cast<const Stub*>(s)->name; },
         [](const void* s, DeviceType d) { return static_cast<const Stub*>(s)->has_kernel(d); }});
  }
  // A device-pair stub counts as having a kernel for `device` when it has both directions
  // between that device and the CPU (for the CPU itself: CPU -> CPU).
  template <class FnPtr>
  explicit StubListing(const DevicePairDispatchStub<FnPtr>& stub) {
    using Stub = DevicePairDispatchStub<FnPtr>;
    detail::list_stub({&stub, [](const void* s) { return static_cast<const Stub*>(s)->name; },
                       [](const void* s, DeviceType d) {
                         const Stub* p = static_cast<const Stub*>(s);
                         return p->has_kernel(DeviceType::CPU, d) &&
                                p->has_kernel(d, DeviceType::CPU);
                       }});
  }
};

}  // namespace ember

// Declares and defines a stub, in the family's header: a C++17 inline variable, so there is one
// stub in the program however many files include the header, with no separate definition to
// write. The stub is constant-initialised; its listing is not (Note [Stub registry]).
#define EMBER_DECLARE_DISPATCH(FnPtrType, stub)        \
  inline ::ember::DispatchStub<FnPtrType> stub{#stub}; \
  inline const ::ember::StubListing stub##_listing_ { stub }
#define EMBER_REGISTER_KERNEL(stub, device, fn)                                     \
  static ::ember::KernelRegistrar<std::remove_reference_t<decltype(stub.table[0])>> \
      stub##_##fn##_registrar(stub, device, fn)
#define EMBER_DECLARE_DEVICE_PAIR_DISPATCH(FnPtrType, stub)      \
  inline ::ember::DevicePairDispatchStub<FnPtrType> stub{#stub}; \
  inline const ::ember::StubListing stub##_listing_ { stub }
#define EMBER_REGISTER_DEVICE_PAIR_KERNEL(stub, src, dst, fn)                                    \
  static ::ember::DevicePairKernelRegistrar<std::remove_reference_t<decltype(stub.table[0][0])>> \
      stub##_##fn##_registrar(stub, src, dst, fn)
