// CUDA kernels for the reduction family (core/ops/reduce.h): the same math ops and accumulator
// types as kernels/cpu/reduce.cpp, run by the engine of kernels/cuda/reduce.cuh; each kernel
// picks the op and a store functor that turns an output's final state into its value.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/ops/reduce.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/math/convert.h"
#include "kernels/math/reduce.h"

namespace ember::kernels::cuda {

namespace detail {

ReduceShape reduce_shape(const ReducePlan& plan) {
  ReduceShape s;
  const auto outer = static_cast<int64_t>(plan.outer_sizes.size());
  const auto inner = static_cast<int64_t>(plan.inner_sizes.size());
  EMBER_CHECK(outer <= kMaxReduceDims && inner <= kMaxReduceDims, plan.op, ": ", outer,
              " kept and ", inner, " reduced dims after merging (input sizes ", plan.input.sizes(),
              ", strides ", plan.input.strides(), "); the CUDA reduction takes up to ",
              kMaxReduceDims, " of each: make the input contiguous first");
  s.outer_ndim = static_cast<int>(outer);
  s.inner_ndim = static_cast<int>(inner);
  for (int64_t d = 0; d < outer; ++d) {
    s.outer_sizes[d] = plan.outer_sizes[d];
    s.outer_strides[d] = plan.outer_strides[d];
  }
  for (int64_t d = 0; d < inner; ++d) {
    s.inner_sizes[d] = plan.inner_sizes[d];
    s.inner_strides[d] = plan.inner_strides[d];
  }
  s.num_outputs = plan.num_outputs;
  s.reduce_size = plan.reduce_size;
  return s;
}

ReduceLayout reduce_layout(const ReduceShape& s, int sms) {
  constexpr int kMaxThreads = 512;
  constexpr int64_t kMinPerThread = 16;  // elements a thread folds at least, before splitting
  ReduceLayout l;
  const int64_t r = s.reduce_size, n = s.num_outputs;
  const int64_t row_len = s.outer_sizes[s.outer_ndim - 1];
  const int64_t per_state = (r + kIlp - 1) / kIlp;
  l.column = s.outer_strides[s.outer_ndim - 1] == 1 && row_len >= 4 &&
             s.inner_strides[s.inner_ndim - 1] != 1 && r > 1;
  if (l.column) {
    l.bx = pow2_at_least(row_len, 32);
    l.by = pow2_at_least(per_state, kMaxThreads / l.bx);
    l.outputs_per_block = l.bx;
  } else {
    l.bx = pow2_at_least(per_state, kMaxThreads);
    l.by = pow2_at_least(n, kMaxThreads / l.bx);
    l.outputs_per_block = l.by;
  }
  // Note [Two-pass reductions]: split the range when the outputs alone give too few blocks.
  const int64_t blocks = (n + l.outputs_per_block - 1) / l.outputs_per_block;
  const int64_t target = 4 * static_cast<int64_t>(sms > 0 ? sms : 1);
  const int64_t per_block_min = static_cast<int64_t>(l.split_threads()) * kIlp * kMinPerThread;
  l.chunk_size = r;
  if (blocks < target && r >= 2 * per_block_min) {
    int64_t chunks = std::min<int64_t>(target / blocks, r / per_block_min);
    chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
    l.chunk_size = (r + chunks - 1) / chunks;
    l.chunk_size = (l.chunk_size + 15) / 16 * 16;  // pieces start 16-element aligned
    l.chunks = (r + l.chunk_size - 1) / l.chunk_size;
  }
  return l;
}

bool vector_loads_fit(const ReduceShape& s, const ReduceLayout& l, const void* data, size_t elem) {
  if (l.column || elem > 16 || 16 % elem != 0) return false;
  if (s.inner_ndim != 1 || s.inner_strides[0] != 1) return false;
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0) return false;
  const auto v = static_cast<int64_t>(16 / elem);
  if (s.reduce_size < v * l.bx) return false;  // too short for every thread to load a vector
  for (int d = 0; d < s.outer_ndim; ++d)
    if (s.outer_sizes[d] > 1 && s.outer_strides[d] % v != 0) return false;
  return l.chunks == 1 || l.chunk_size % v == 0;
}

}  // namespace detail

namespace {

using math::convert;
using math::sum_acc_t;
using math::sum_out_t;

template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

// ---- store functors: output o's final state -> out[o] ------------------------------------------

// out[o] = state.
template <class T>
struct StoreValue {
  T* out;
  template <class A>
  __device__ void operator()(int64_t o, const A& acc) const {
    out[o] = convert<T>(acc);
  }
};

// out[o] = state / n (mean).
template <class T, class A>
struct StoreMean {
  T* out;
  A n;
  __device__ void operator()(int64_t o, const A& acc) const { out[o] = convert<T>(acc / n); }
};

// out[o] = sqrt(state) (2-norm).
template <class T>
struct StoreSqrt {
  T* out;
  template <class A>
  __device__ void operator()(int64_t o, const A& acc) const {
    out[o] = convert<T>(std::sqrt(acc));
  }
};

// out[o] = state^(1/p) (p-norm).
template <class T, class A>
struct StoreRoot {
  T* out;
  A inv_p;
  __device__ void operator()(int64_t o, const A& acc) const {
    out[o] = convert<T>(std::pow(acc, inv_p));
  }
};

// Variance or standard deviation from a Welford state.
template <class T>
struct StoreVariance {
  T* out;
  int64_t correction;
  bool take_sqrt;
  __device__ void operator()(int64_t o, const math::WelfordState<double>& acc) const {
    const double v = math::WelfordOp<double>::variance(acc, correction);
    out[o] = convert<T>(take_sqrt ? std::sqrt(v) : v);
  }
};

// The index, and the value when `values` is not null.
template <class T>
struct StoreValueIndex {
  T* values;
  int64_t* indices;
  template <class A>
  __device__ void operator()(int64_t o, const math::ValueIndex<A>& acc) const {
    if (values) values[o] = convert<T>(acc.value);
    indices[o] = acc.index;
  }
};

template <class T>
struct StoreLogSumExp {
  T* out;
  template <class A>
  __device__ void operator()(int64_t o, const math::MaxSumExp<A>& acc) const {
    out[o] = convert<T>(math::LogSumExpOp<A>::result(acc));
  }
};

// Runs op and store over the plan; every op goes through here so each (dtype, op, store)
// instantiation is declared to use collectives once (common.cuh's uses_collectives).
template <class scalar_t, class Op, class Store>
void run(const ReducePlan& plan, const Op& op, const Store& store) {
  uses_collectives(&reduce_kernel<scalar_t, Op, Store>);
  gpu_reduce<scalar_t>(plan, op, store);
}

// ---- the kernels ----------------------------------------------------------------------------

void sum_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), "sum", [&] {
    using O = sum_out_t<scalar_t>;
    run<scalar_t>(plan, math::SumOp<sum_acc_t<scalar_t>>{}, StoreValue<O>{out_ptr<O>(plan.out)});
  });
}

void mean_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "mean", [&] {
    using A = opmath_t<scalar_t>;
    run<scalar_t>(
        plan, math::SumOp<A>{},
        StoreMean<scalar_t, A>{out_ptr<scalar_t>(plan.out), static_cast<A>(plan.reduce_size)});
  });
}

void prod_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), "prod", [&] {
    using O = sum_out_t<scalar_t>;
    run<scalar_t>(plan, math::ProdOp<sum_acc_t<scalar_t>>{}, StoreValue<O>{out_ptr<O>(plan.out)});
  });
}

// Welford in double for every floating dtype, as on the CPU.
void var_kernel(const ReducePlan& plan, int64_t correction, bool take_sqrt) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), plan.op, [&] {
    run<scalar_t>(plan, math::WelfordOp<double>{},
                  StoreVariance<scalar_t>{out_ptr<scalar_t>(plan.out), correction, take_sqrt});
  });
}

void minmax_kernel(const ReducePlan& plan, bool is_max) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    const StoreValue<scalar_t> store{out_ptr<scalar_t>(plan.out)};
    if (is_max) {
      run<scalar_t>(plan, math::MinMaxOp<A, true>{}, store);
    } else {
      run<scalar_t>(plan, math::MinMaxOp<A, false>{}, store);
    }
  });
}

void arg_minmax_kernel(const ReducePlan& plan, bool is_max) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    const StoreValueIndex<scalar_t> store{
        plan.out.defined() ? out_ptr<scalar_t>(plan.out) : nullptr, out_ptr<int64_t>(plan.indices)};
    if (is_max) {
      run<scalar_t>(plan, math::ArgMinMaxOp<A, true>{}, store);
    } else {
      run<scalar_t>(plan, math::ArgMinMaxOp<A, false>{}, store);
    }
  });
}

void logsumexp_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "logsumexp", [&] {
    run<scalar_t>(plan, math::LogSumExpOp<opmath_t<scalar_t>>{},
                  StoreLogSumExp<scalar_t>{out_ptr<scalar_t>(plan.out)});
  });
}

void norm_kernel(const ReducePlan& plan, double p) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "norm", [&] {
    using A = opmath_t<scalar_t>;
    scalar_t* out = out_ptr<scalar_t>(plan.out);
    const StoreValue<scalar_t> as_is{out};
    if (p == 1) {
      run<scalar_t>(plan, math::AbsSumOp<A>{}, as_is);
    } else if (p == 2) {
      run<scalar_t>(plan, math::SquareSumOp<A>{}, StoreSqrt<scalar_t>{out});
    } else if (std::isinf(p)) {
      if (p > 0)
        run<scalar_t>(plan, math::AbsMaxOp<A>{}, as_is);
      else
        run<scalar_t>(plan, math::AbsMinOp<A>{}, as_is);
    } else if (p == 0) {
      run<scalar_t>(plan, math::NonzeroCountOp<A>{}, as_is);
    } else {
      math::PowSumOp<A> op;
      op.p = static_cast<A>(p);
      run<scalar_t>(plan, op, StoreRoot<scalar_t, A>{out, static_cast<A>(1.0 / p)});
    }
  });
}

void all_any_kernel(const ReducePlan& plan, bool is_all) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    const StoreValue<bool> store{out_ptr<bool>(plan.out)};
    if (is_all) {
      run<scalar_t>(plan, math::AllAnyOp<A, true>{}, store);
    } else {
      run<scalar_t>(plan, math::AllAnyOp<A, false>{}, store);
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(sum_stub, DeviceType::CUDA, sum_kernel);
EMBER_REGISTER_KERNEL(mean_stub, DeviceType::CUDA, mean_kernel);
EMBER_REGISTER_KERNEL(prod_stub, DeviceType::CUDA, prod_kernel);
EMBER_REGISTER_KERNEL(var_stub, DeviceType::CUDA, var_kernel);
EMBER_REGISTER_KERNEL(minmax_stub, DeviceType::CUDA, minmax_kernel);
EMBER_REGISTER_KERNEL(arg_minmax_stub, DeviceType::CUDA, arg_minmax_kernel);
EMBER_REGISTER_KERNEL(logsumexp_stub, DeviceType::CUDA, logsumexp_kernel);
EMBER_REGISTER_KERNEL(norm_stub, DeviceType::CUDA, norm_kernel);
EMBER_REGISTER_KERNEL(all_any_stub, DeviceType::CUDA, all_any_kernel);

}  // namespace ember::kernels::cuda
