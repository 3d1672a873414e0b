#pragma once
// The result and argument types of an element-wise functor (a lambda, a kernels/math functor or a
// function pointer), which the CPU loops (kernels/cpu/loops.h) and the CUDA launcher
// (kernels/cuda/loops.cuh) read to know how to load each operand and store the result.

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace ember::kernels::math {

template <class F>
struct function_traits : function_traits<decltype(&std::decay_t<F>::operator())> {};
template <class C, class R, class... A>
struct function_traits<R (C::*)(A...) const> {
  using result = R;
  using args = std::tuple<A...>;
  static constexpr size_t arity = sizeof...(A);
  template <size_t I>
  using arg = std::decay_t<std::tuple_element_t<I, args>>;
};
template <class C, class R, class... A>
struct function_traits<R (C::*)(A...)> : function_traits<R (C::*)(A...) const> {};
template <class R, class... A>
struct function_traits<R (*)(A...)> {
  using result = R;
  using args = std::tuple<A...>;
  static constexpr size_t arity = sizeof...(A);
  template <size_t I>
  using arg = std::decay_t<std::tuple_element_t<I, args>>;
};

}  // namespace ember::kernels::math
