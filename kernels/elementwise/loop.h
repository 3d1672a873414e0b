#pragma once
// Note [Kernels written once for every device]
// An element-wise kernel is a dtype dispatch around a kernels/math functor; only the loop that
// applies the functor differs between devices. So kernels/elementwise/*.h write each kernel once,
// as a static member of a struct template over a Loop policy, and each backend instantiates and
// registers them with its own loop:
//
//   struct CpuLoop {                                      // kernels/cpu/loops.h
//     template <class F> static void run(TensorIter& iter, const F& f) { cpu_kernel(iter, f); }
//     template <class T, class F> static void run_division(TensorIter& iter, const F& f);
//   };
//   struct GpuLoop { ... gpu_kernel(iter, f) on the iterator's device ... };  // kernels/cuda
//
// A Loop provides run(iter, functor) and run_division<T>(iter, functor) for the integer
// divisions, whose zero divisors raise ZeroDivisionError instead of trapping on the CPU or giving
// garbage on a GPU (each device checks in its own way: a pass before the CPU's loop, inside the
// GPU's kernel, Note [Integer division by zero on a device] in kernels/cuda/loops.cuh). Functors
// are structs with EMBER_HOST_DEVICE call operators, never lambdas, so the same object runs in a
// CPU loop and in a CUDA kernel.

#include "core/tensor_iter.h"

// EMBER_REGISTER_KERNEL for a static member kernel `fn` of a kernels struct such as
// UnaryKernels<CpuLoop>.
#define EMBER_REGISTER_KERNEL_OF(stub, device, kernels, fn)                         \
  static ::ember::KernelRegistrar<std::remove_reference_t<decltype(stub.table[0])>> \
      stub##_##fn##_registrar(stub, device, &kernels::fn)
