#pragma once
// gpu_kernel(iter, functor): the CUDA counterpart of kernels/cpu/loops.h's cpu_kernel. It applies
// an element-wise functor (the same kernels/math functors the CPU loops apply) to every element
// of a TensorIter on its cuda device, on the current stream:
//
//   gpu_kernel(iter, math::AddOp<float>{alpha});   // out = a + alpha * b
//
// Operand 0 is the output, the inputs follow; the functor's argument types say how each input is
// read (the op converted them to the computing dtype first, Note [Computing dtype and output
// casts] in core/tensor_iter.h), and a cast reads one dtype and writes another.
//
// Note [Two element-wise paths]
// - Contiguous: every operand contiguous over the iteration. Each thread handles VEC consecutive
//   elements with one aligned vector load per input and one vector store -- 128 bits for 4
//   float32, which is what lets an element-wise kernel reach the device's copy bandwidth. VEC is
//   4, 2 or 1: the largest that every operand's pointer alignment allows with no vector wider
//   than 16 bytes (two float64). The last partial vector of the tensor is done element by
//   element.
// - Strided: anything else (broadcasts, transposed views, a tensor with storage offset). Each
//   thread turns its linear index into an offset per operand with the iteration's sizes and
//   byte strides (OffsetCalculator), in 32-bit arithmetic.
// Both index in 32 bits (Note [32-bit indexing]): an iteration too large is split first.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "core/tensor_iter.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device_checks.h"
#include "kernels/math/function_traits.h"

namespace ember::kernels::cuda {

constexpr int kElementwiseThreads = 128;
constexpr int kMaxIterDims = 16;

// Pointers to the operands' first elements (output first).
template <int N>
struct OperandData {
  char* ptr[N];
};

// Linear index -> byte offset of each of N operands, for the coalesced iteration shape
// (dim 0 fastest).
template <int N>
struct OffsetCalculator {
  int ndim = 0;
  int32_t sizes[kMaxIterDims];
  int32_t strides[kMaxIterDims][N];

  EMBER_HOST_DEVICE void offsets(int32_t linear, int32_t (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = 0; d < ndim; ++d) {
      const int32_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) out[k] += i * strides[d][k];
    }
  }
};

template <class T, int VEC>
struct alignas(sizeof(T) * VEC) AlignedVector {
  T val[VEC];
};

namespace detail {

// Loads input I's VEC elements starting at element `base` into `buf` (a vector load).
template <int VEC, class T>
__device__ __forceinline__ void load_vector(unsigned char* buf, const char* src, int32_t base) {
  *reinterpret_cast<AlignedVector<T, VEC>*>(buf) =
      *reinterpret_cast<const AlignedVector<T, VEC>*>(src + base * static_cast<int32_t>(sizeof(T)));
}

template <class T>
__device__ __forceinline__ const T& element(const unsigned char* buf, int v) {
  return reinterpret_cast<const T*>(buf)[v];
}

template <int VEC, class F, int N, size_t... I>
__device__ __forceinline__ void vectorized_step(int32_t base, const F& f,
                                                const OperandData<N>& data,
                                                std::index_sequence<I...>) {
  using traits = math::function_traits<F>;
  using R = typename traits::result;
  // Every input is loaded before the output is stored: an in-place op's output is an input.
  alignas(16) unsigned char in[sizeof...(I) + 1][VEC * 8];
  int loads[] = {
      0, (load_vector<VEC, typename traits::template arg<I>>(in[I], data.ptr[I + 1], base), 0)...};
  (void)loads;
  (void)in;  // a functor without inputs (fill) loads nothing
  AlignedVector<R, VEC> out;
  for (int v = 0; v < VEC; ++v) {
    out.val[v] = f(element<typename traits::template arg<I>>(in[I], v)...);
  }
  *reinterpret_cast<AlignedVector<R, VEC>*>(data.ptr[0] + base * static_cast<int32_t>(sizeof(R))) =
      out;
}

template <class F, int N, size_t... I>
__device__ __forceinline__ void scalar_step(const F& f, const OperandData<N>& data,
                                            const int32_t (&off)[N], std::index_sequence<I...>) {
  using traits = math::function_traits<F>;
  using R = typename traits::result;
  *reinterpret_cast<R*>(data.ptr[0] + off[0]) = f(
      *reinterpret_cast<const typename traits::template arg<I>*>(data.ptr[I + 1] + off[I + 1])...);
}

}  // namespace detail

// Byte offsets of element i of every operand when all are contiguous.
template <class F, int N, size_t... I>
__device__ __forceinline__ void contiguous_offsets(int32_t i, int32_t (&off)[N],
                                                   std::index_sequence<I...>) {
  using traits = math::function_traits<F>;
  off[0] = i * static_cast<int32_t>(sizeof(typename traits::result));
  int fill[] = {
      0, (off[I + 1] = i * static_cast<int32_t>(sizeof(typename traits::template arg<I>)), 0)...};
  (void)fill;
}

// Contiguous path (Note [Two element-wise paths]): thread t does elements [t*VEC, t*VEC + VEC).
// n: the number of elements.
template <int VEC, class F, int N>
__global__ void vectorized_elementwise_kernel(int32_t n, F f, OperandData<N> data) {
  constexpr auto inputs = std::make_index_sequence<math::function_traits<F>::arity>{};
  const int32_t base = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (base + VEC <= n) {
    detail::vectorized_step<VEC>(base, f, data, inputs);
    return;
  }
  for (int32_t i = base; i < n; ++i) {  // the tensor's last, partial vector
    int32_t off[N];
    contiguous_offsets<F>(i, off, inputs);
    detail::scalar_step(f, data, off, inputs);
  }
}

// Strided path: thread t does element t, at the offsets the calculator gives.
template <class F, int N>
__global__ void strided_elementwise_kernel(int32_t n, F f, OperandData<N> data,
                                           OffsetCalculator<N> calc) {
  const int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  int32_t off[N];
  calc.offsets(i, off);
  detail::scalar_step(f, data, off, std::make_index_sequence<math::function_traits<F>::arity>{});
}

namespace detail {

// The largest VEC in {4, 2, 1} that every operand's pointer alignment allows, with no vector
// wider than 16 bytes (a GPU's widest load: 2 doubles, 4 floats).
template <class F, int N, size_t... I>
int vector_width(const OperandData<N>& data, std::index_sequence<I...>) {
  using traits = math::function_traits<F>;
  const size_t sizes[] = {sizeof(typename traits::result),
                          sizeof(typename traits::template arg<I>)...};
  size_t widest = 0;
  for (size_t s : sizes) widest = s > widest ? s : widest;
  for (int vec : {4, 2}) {
    if (widest * static_cast<size_t>(vec) > 16) continue;
    bool ok = true;
    for (int k = 0; k < N; ++k)
      ok = ok && reinterpret_cast<uintptr_t>(data.ptr[k]) % (sizes[k] * vec) == 0;
    if (ok) return vec;
  }
  return 1;
}

template <class F>
void launch_elementwise(const TensorIter& iter, const F& f) {
  using traits = math::function_traits<F>;
  constexpr int N = static_cast<int>(traits::arity) + 1;
  constexpr auto inputs = std::make_index_sequence<traits::arity>{};
  const auto n = static_cast<int32_t>(iter.numel());
  OperandData<N> data;
  for (int k = 0; k < N; ++k) data.ptr[k] = iter.data(k);
  const Stream stream = current_stream(iter.device());
  const int threads = kElementwiseThreads;
  if (iter.is_contiguous()) {
    const int vec = vector_width<F>(data, inputs);
    const unsigned blocks = blocks_for((static_cast<int64_t>(n) + vec - 1) / vec, threads);
    if (vec == 4) {
      launch_kernel("vectorized_elementwise_kernel<4>", &vectorized_elementwise_kernel<4, F, N>,
                    dim3(blocks), dim3(threads), 0, stream, n, f, data);
    } else if (vec == 2) {
      launch_kernel("vectorized_elementwise_kernel<2>", &vectorized_elementwise_kernel<2, F, N>,
                    dim3(blocks), dim3(threads), 0, stream, n, f, data);
    } else {
      launch_kernel("vectorized_elementwise_kernel<1>", &vectorized_elementwise_kernel<1, F, N>,
                    dim3(blocks), dim3(threads), 0, stream, n, f, data);
    }
    return;
  }
  EMBER_CHECK(iter.ndim() <= kMaxIterDims, iter.op_name(), ": ", iter.ndim(),
              " dims after coalescing; the CUDA element-wise kernels take up to ", kMaxIterDims);
  OffsetCalculator<N> calc;
  calc.ndim = iter.ndim();
  for (int d = 0; d < iter.ndim(); ++d) {
    calc.sizes[d] = static_cast<int32_t>(iter.shape()[d]);
    for (int k = 0; k < N; ++k) calc.strides[d][k] = static_cast<int32_t>(iter.strides(k)[d]);
  }
  launch_kernel("strided_elementwise_kernel", &strided_elementwise_kernel<F, N>,
                dim3(blocks_for(n, threads)), dim3(threads), 0, stream, n, f, data, calc);
}

}  // namespace detail

namespace detail {

// A functor of two or three arguments with argument K fixed to a CPU scalar's value (Note [CPU
// scalars on a device] in core/tensor_iter.h): BindArg<F, 0> of a binary f is
// x -> f(value, x), BindArg<F, 1> is x -> f(x, value). The value is a member, so it reaches the
// kernel as part of its arguments.
template <class F, int K, size_t Arity = math::function_traits<F>::arity>
struct BindArg;

template <class F, int K>
struct BindArg<F, K, 2> {
  using traits = math::function_traits<F>;
  using Bound = typename traits::template arg<K>;
  using X = typename traits::template arg<1 - K>;
  F f;
  Bound value;
  EMBER_HOST_DEVICE typename traits::result operator()(X x) const {
    if constexpr (K == 0) {
      return f(value, x);
    } else {
      return f(x, value);
    }
  }
};

template <class F, int K>
struct BindArg<F, K, 3> {
  using traits = math::function_traits<F>;
  using Bound = typename traits::template arg<K>;
  using X = typename traits::template arg<K == 0 ? 1 : 0>;
  using Y = typename traits::template arg<K == 2 ? 1 : 2>;
  F f;
  Bound value;
  EMBER_HOST_DEVICE typename traits::result operator()(X x, Y y) const {
    if constexpr (K == 0) {
      return f(value, x, y);
    } else if constexpr (K == 1) {
      return f(x, value, y);
    } else {
      return f(x, y, value);
    }
  }
};

// The value of the CPU scalar operand i, as the functor's argument type T.
template <class T>
T cpu_scalar_value(const TensorIter& iter, int i) {
  EMBER_INTERNAL_ASSERT(iter.tensor(i).element_size() == sizeof(T), iter.op_name(),
                        ": CPU scalar of ", iter.tensor(i).element_size(),
                        " bytes for an argument of ", sizeof(T));
  T value;
  std::memcpy(&value, iter.cpu_scalar_data(i), sizeof(T));
  return value;
}

// gpu_kernel once no CPU scalar is left: split for 32-bit indexing where needed, launch.
template <class F>
void launch_split(const TensorIter& iter, const F& f) {
  for (int i = 0; i < iter.ntensors(); ++i) {
    EMBER_INTERNAL_ASSERT(!iter.is_cpu_scalar(i), iter.op_name(),
                          ": a CPU scalar operand reached a kernel that cannot bind it");
  }
  if (iter.can_use_32bit_indexing()) {
    launch_elementwise(iter, f);
    return;
  }
  for (const TensorIter& sub : iter.with_32bit_indexing()) launch_elementwise(sub, f);
}

// Input K of iter is a CPU scalar: bind its value into f, launch over the other operands.
template <int K, class F>
void launch_bound(const TensorIter& iter, const F& f) {
  using B = BindArg<F, K>;
  launch_split(iter.without_operand(1 + K), B{f, cpu_scalar_value<typename B::Bound>(iter, 1 + K)});
}

}  // namespace detail

// Applies f to every element of iter on its cuda device (see the top of this file). The
// functor's arity must match the iterator's inputs; iterations that do not fit 32-bit indexing
// are split (Note [32-bit indexing]). A CPU scalar input of a functor of two or three arguments
// is bound into it and the launch runs over the other operands (Note [CPU scalars on a device]).
template <class F>
void gpu_kernel(const TensorIter& iter, const F& f) {
  using traits = math::function_traits<F>;
  constexpr int arity = static_cast<int>(traits::arity);
  EMBER_INTERNAL_ASSERT(iter.ninputs() == arity && iter.noutputs() == 1, iter.op_name(),
                        ": functor arity does not match the operands");
  if (iter.numel() == 0) return;
  if constexpr (arity == 2 || arity == 3) {
    if (iter.is_cpu_scalar(1)) return detail::launch_bound<0>(iter, f);
    if (iter.is_cpu_scalar(2)) return detail::launch_bound<1>(iter, f);
    if constexpr (arity == 3) {
      if (iter.is_cpu_scalar(3)) return detail::launch_bound<2>(iter, f);
    }
  }
  detail::launch_split(iter, f);
}

// Records a bad value and where it was found in the op's slot: the first thread to claim the
// slot writes them (Note [Deferred device checks] in kernels/cuda/device_checks.h).
__device__ __forceinline__ void record_bad_value(DeviceCheckSlot* slot, int64_t value,
                                                 int64_t where) {
  if (atomicCAS(&slot->flag, 0, 1) == 0) {
    slot->value = static_cast<long long>(value);
    slot->where = static_cast<long long>(where);
  }
}

// Note [Integer division by zero on a device]
// On the CPU, integer division (div with rounding_mode floor or trunc, remainder) looks for a
// zero divisor before it writes and raises ZeroDivisionError. Looking first on a GPU means
// reading a flag back: the host would wait for the device on every integer division. So the
// division kernel itself checks: RecordZeroDivisor wraps the functor (which gives 0 for a zero
// divisor, and never traps -- nor would the simulator, which runs kernels on the CPU) and records
// any zero in the op's DeviceCheckSlot; the op defers the check (Note [Deferred device checks] in
// kernels/cuda/device_checks.h), and the next synchronisation raises the CPU's message. Unlike
// the CPU, the failed op has written its output (0 where the divisor was 0). A divisor given as a
// number (Note [CPU scalars on a device]) is checked on the host before the launch, as on the CPU.
template <class F, class T>
struct RecordZeroDivisor {
  F f;
  DeviceCheckSlot* slot;
  __device__ T operator()(T a, T b) const {
    if (b == T(0)) record_bad_value(slot, 0, 0);
    return f(a, b);
  }
};

// The CUDA Loop policy for the kernels written once for every device (Note [Kernels written once
// for every device] in kernels/elementwise/loop.h): gpu_kernel on the iterator's device.
struct GpuLoop {
  template <class F>
  static void run(TensorIter& iter, const F& f) {
    DeviceGuard guard(iter.device());
    gpu_kernel(iter, f);
  }

  // Integer division (Note [Integer division by zero on a device]).
  template <class T, class F>
  static void run_division(TensorIter& iter, const F& f) {
    if constexpr (std::is_integral_v<T>) {
      if (!iter.is_cpu_scalar(2)) {
        DeviceGuard guard(iter.device());
        DeviceCheck check(current_stream(iter.device()));
        gpu_kernel(iter, RecordZeroDivisor<F, T>{f, check.slot()});
        check.defer("elementwise_kernel", [op = std::string(iter.op_name())](int64_t, int64_t) {
          return ::ember::detail::str(op, ": ZeroDivisionError (integer division by zero)");
        });
        return;
      }
      // A divisor given as a number is checked here.
      EMBER_CHECK(detail::cpu_scalar_value<T>(iter, 2) != T(0), iter.op_name(),
                  ": ZeroDivisionError (integer division by zero)");
    }
    run(iter, f);
  }
};

}  // namespace ember::kernels::cuda
