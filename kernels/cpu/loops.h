#pragma once
// CPU loops over a TensorIter: cpu_kernel(iter, functor) applies an element-wise functor to every
// element, the functor's argument types selecting how operands are read:
//
//   cpu_kernel(iter, [](float a, float b) -> float { return a + b; });
//
// The output is operand 0, inputs follow. When every operand is contiguous along the row the
// loop is a plain indexed loop the compiler vectorises; otherwise it steps byte strides (a
// stride of 0 is a broadcast operand). The same functors run on CUDA (kernels/math).

#include <atomic>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/tensor_iter.h"
#include "kernels/cpu/convert16.h"
#include "kernels/math/function_traits.h"

namespace ember::kernels::cpu {

using math::function_traits;

namespace detail {

// Note [16-bit loops compiled for AVX2]
// A float16 or bfloat16 element-wise op converts every operand to float and the result back
// (core/half.h). Those conversions are integer shuffles that baseline x86-64 (SSE2) vectorises
// poorly -- 4 lanes, no 32 -> 16-bit pack -- so on a CPU with AVX2 the contiguous loop runs as
// a copy of itself compiled for AVX2 (the same source, twice the lanes). Only the ISA differs:
// no FMA is enabled, so no multiply-add is contracted and the results are bit for bit those of
// the portable loop. The target attribute applies to this function alone; the functors inlined
// into it are compiled for AVX2 there, and their out-of-line copies, if any, stay baseline.
template <class... T>
constexpr bool uses_16bit_float = ((std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) || ...);

template <class F, class R, class... A>
__attribute__((target("avx2"))) void contiguous_loop_avx2(F& op, R* out, int64_t n,
                                                          const A*... in) {
  for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]...);
}

template <class F, size_t... I>
inline void basic_loop(char** data, const int64_t* strides, int64_t n, F& op,
                       std::index_sequence<I...>) {
  using traits = function_traits<F>;
  using R = typename traits::result;
  using Args = typename traits::args;
  const bool contiguous =
      strides[0] == sizeof(R) &&
      ((strides[I + 1] == sizeof(std::tuple_element_t<I, Args>)) && ... && true);
  if (contiguous) {
    R* out = reinterpret_cast<R*>(data[0]);
    if constexpr (uses_16bit_float<R, std::tuple_element_t<I, Args>...>) {
      if (use_avx2()) {  // Note [16-bit loops compiled for AVX2]
        contiguous_loop_avx2(
            op, out, n, reinterpret_cast<const std::tuple_element_t<I, Args>*>(data[I + 1])...);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(reinterpret_cast<const std::tuple_element_t<I, Args>*>(data[I + 1])[i]...);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<R*>(data[0] + i * strides[0]) =
          op(*reinterpret_cast<const std::tuple_element_t<I, Args>*>(data[I + 1] +
                                                                     i * strides[I + 1])...);
    }
  }
}
}  // namespace detail

// Runs op over every element; the iteration is parallel above the grain size.
template <class F>
void cpu_kernel(const TensorIter& iter, F op) {
  using traits = function_traits<F>;
  EMBER_INTERNAL_ASSERT(iter.ninputs() == static_cast<int>(traits::arity) && iter.noutputs() == 1,
                        iter.op_name(), ": functor arity does not match the operands");
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    // A local copy: the compiler then knows the functor's members (alpha, bounds) cannot
    // change when the loop writes the output, and vectorises without an aliasing check.
    F local = op;
    detail::basic_loop(data, strides, n, local, std::make_index_sequence<traits::arity>{});
  });
}

// The CPU's Loop policy for the kernels written once for every device (Note [Kernels written
// once for every device] in kernels/elementwise/loop.h).
struct CpuLoop {
  template <class F>
  static void run(TensorIter& iter, const F& f) {
    cpu_kernel(iter, f);
  }

  // Integer division raises ZeroDivisionError instead of trapping: a read-only pass over the
  // divisor (operand 2) looks for zeros before anything is written, so a failed op leaves its
  // output untouched.
  template <class T, class F>
  static void run_division(TensorIter& iter, const F& f) {
    if constexpr (std::is_integral_v<T>) {
      std::atomic<bool> found{false};
      iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
        const char* p = data[2];
        const int64_t s = strides[2];
        bool zero = false;
        for (int64_t i = 0; i < n; ++i) zero |= *reinterpret_cast<const T*>(p + i * s) == T(0);
        if (zero) found.store(true, std::memory_order_relaxed);
      });
      EMBER_CHECK(!found.load(), iter.op_name(), ": ZeroDivisionError (integer division by zero)");
    }
    cpu_kernel(iter, f);
  }
};

}  // namespace ember::kernels::cpu
