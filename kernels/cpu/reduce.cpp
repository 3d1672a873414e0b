// CPU kernels for the reduction family (core/ops/reduce.h): each picks the math op
// (kernels/math/reduce.h), its accumulator type, and how a final state becomes an output value;
// the engine in kernels/cpu/reduce_utils.h does the iteration, threading and pairwise merging.

#include "core/ops/reduce.h"

#include <cmath>
#include <type_traits>

#include "kernels/cpu/reduce_utils.h"
#include "kernels/math/convert.h"
#include "kernels/math/reduce.h"

namespace ember::kernels::cpu {

namespace {

using math::convert;
using math::scan_acc_t;
using math::sum_acc_t;
using math::sum_out_t;

template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

void sum_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), "sum", [&] {
    using A = sum_acc_t<scalar_t>;
    auto* out = out_ptr<sum_out_t<scalar_t>>(plan.out);
    reduce_with<scalar_t>(plan, math::SumOp<A>{},
                          [&](int64_t o, A acc) { out[o] = convert<sum_out_t<scalar_t>>(acc); });
  });
}

void mean_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "mean", [&] {
    using A = opmath_t<scalar_t>;
    auto* out = out_ptr<scalar_t>(plan.out);
    const A n = static_cast<A>(plan.reduce_size);
    reduce_with<scalar_t>(plan, math::SumOp<A>{},
                          [&](int64_t o, A acc) { out[o] = convert<scalar_t>(acc / n); });
  });
}

void prod_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), "prod", [&] {
    using A = sum_acc_t<scalar_t>;
    auto* out = out_ptr<sum_out_t<scalar_t>>(plan.out);
    reduce_with<scalar_t>(plan, math::ProdOp<A>{},
                          [&](int64_t o, A acc) { out[o] = convert<sum_out_t<scalar_t>>(acc); });
  });
}

// Welford in double for every floating dtype: var is sensitive to cancellation.
void var_kernel(const ReducePlan& plan, int64_t correction, bool take_sqrt) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), plan.op, [&] {
    using Op = math::WelfordOp<double>;
    auto* out = out_ptr<scalar_t>(plan.out);
    reduce_with<scalar_t>(plan, Op{}, [&](int64_t o, const Op::acc_t& acc) {
      double v = Op::variance(acc, correction);
      out[o] = convert<scalar_t>(take_sqrt ? std::sqrt(v) : v);
    });
  });
}

// Values of max / min (amax, amin, max(), min()): exact in the input's own type.
void minmax_kernel(const ReducePlan& plan, bool is_max) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    auto* out = out_ptr<scalar_t>(plan.out);
    auto store = [&](int64_t o, A acc) { out[o] = convert<scalar_t>(acc); };
    if (is_max) {
      reduce_with<scalar_t>(plan, math::MinMaxOp<A, true>{}, store);
    } else {
      reduce_with<scalar_t>(plan, math::MinMaxOp<A, false>{}, store);
    }
  });
}

// max(dim) / min(dim) / argmax / argmin: the index, and the value when plan.out is defined.
void arg_minmax_kernel(const ReducePlan& plan, bool is_max) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    scalar_t* values = plan.out.defined() ? out_ptr<scalar_t>(plan.out) : nullptr;
    int64_t* indices = out_ptr<int64_t>(plan.indices);
    auto store = [&](int64_t o, const math::ValueIndex<A>& acc) {
      if (values) values[o] = convert<scalar_t>(acc.value);
      indices[o] = acc.index;
    };
    if (is_max) {
      reduce_with<scalar_t>(plan, math::ArgMinMaxOp<A, true>{}, store);
    } else {
      reduce_with<scalar_t>(plan, math::ArgMinMaxOp<A, false>{}, store);
    }
  });
}

void logsumexp_kernel(const ReducePlan& plan) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "logsumexp", [&] {
    using Op = math::LogSumExpOp<opmath_t<scalar_t>>;
    auto* out = out_ptr<scalar_t>(plan.out);
    reduce_with<scalar_t>(plan, Op{}, [&](int64_t o, const typename Op::acc_t& acc) {
      out[o] = convert<scalar_t>(Op::result(acc));
    });
  });
}

void norm_kernel(const ReducePlan& plan, double p) {
  EMBER_DISPATCH_FLOATING(plan.input.dtype(), "norm", [&] {
    using A = opmath_t<scalar_t>;
    auto* out = out_ptr<scalar_t>(plan.out);
    auto store_as_is = [&](int64_t o, A acc) { out[o] = convert<scalar_t>(acc); };
    if (p == 1) {
      reduce_with<scalar_t>(plan, math::AbsSumOp<A>{}, store_as_is);
    } else if (p == 2) {
      reduce_with<scalar_t>(plan, math::SquareSumOp<A>{},
                            [&](int64_t o, A acc) { out[o] = convert<scalar_t>(std::sqrt(acc)); });
    } else if (std::isinf(p)) {
      if (p > 0)
        reduce_with<scalar_t>(plan, math::AbsMaxOp<A>{}, store_as_is);
      else
        reduce_with<scalar_t>(plan, math::AbsMinOp<A>{}, store_as_is);
    } else if (p == 0) {
      reduce_with<scalar_t>(plan, math::NonzeroCountOp<A>{}, store_as_is);
    } else {
      math::PowSumOp<A> op;
      op.p = static_cast<A>(p);
      const A inv_p = static_cast<A>(1.0 / p);
      reduce_with<scalar_t>(
          plan, op, [&](int64_t o, A acc) { out[o] = convert<scalar_t>(std::pow(acc, inv_p)); });
    }
  });
}

void all_any_kernel(const ReducePlan& plan, bool is_all) {
  EMBER_DISPATCH_ALL(plan.input.dtype(), plan.op, [&] {
    using A = opmath_t<scalar_t>;
    bool* out = out_ptr<bool>(plan.out);
    auto store = [&](int64_t o, bool acc) { out[o] = acc; };
    if (is_all) {
      reduce_with<scalar_t>(plan, math::AllAnyOp<A, true>{}, store);
    } else {
      reduce_with<scalar_t>(plan, math::AllAnyOp<A, false>{}, store);
    }
  });
}

// ---- scans ---------------------------------------------------------------------------------

// out (contiguous) = scan of `in` along dim, over groups of neighbouring lines (Note [Line
// groups] in reduce_utils.h): line j of a group is in[j * il + k * is], k < len.
constexpr int64_t kScanGroup = 64;

template <class scalar_t, bool kProd>
void scan_lines(const Tensor& out, const Tensor& in, int64_t dim) {
  using A = scan_acc_t<scalar_t>;
  using O = sum_out_t<scalar_t>;
  const scalar_t* src = static_cast<const scalar_t*>(in.data_ptr());
  O* dst = out_ptr<O>(out);
  const int64_t nd = in.dim();
  const int64_t len = nd == 0 ? 1 : in.size(dim);
  const int64_t is = nd == 0 ? 0 : in.stride(dim), os = nd == 0 ? 0 : out.stride(dim);
  const bool grouped = nd >= 2 && dim != nd - 1;
  const int64_t il = grouped ? in.stride(nd - 1) : 0, ol = grouped ? out.stride(nd - 1) : 0;
  for_each_line_group(in, out, dim, kScanGroup, [&](int64_t in_off, int64_t out_off, int64_t w) {
    A acc[kScanGroup];
    for (int64_t j = 0; j < w; ++j) acc[j] = kProd ? A(1) : A(0);
    for (int64_t k = 0; k < len; ++k) {
      const scalar_t* x = src + in_off + k * is;
      O* y = dst + out_off + k * os;
      for (int64_t j = 0; j < w; ++j) {
        A v = convert<A>(x[j * il]);
        acc[j] = kProd ? math::wrapping_mul(acc[j], v) : math::wrapping_add(acc[j], v);
        y[j * ol] = convert<O>(acc[j]);
      }
    }
  });
}

void cumsum_kernel(const Tensor& out, const Tensor& in, int64_t dim) {
  EMBER_DISPATCH_ALL(in.dtype(), "cumsum", [&] { scan_lines<scalar_t, false>(out, in, dim); });
}

void cumprod_kernel(const Tensor& out, const Tensor& in, int64_t dim) {
  EMBER_DISPATCH_ALL(in.dtype(), "cumprod", [&] { scan_lines<scalar_t, true>(out, in, dim); });
}

}  // namespace

EMBER_REGISTER_KERNEL(sum_stub, DeviceType::CPU, sum_kernel);
EMBER_REGISTER_KERNEL(mean_stub, DeviceType::CPU, mean_kernel);
EMBER_REGISTER_KERNEL(prod_stub, DeviceType::CPU, prod_kernel);
EMBER_REGISTER_KERNEL(var_stub, DeviceType::CPU, var_kernel);
EMBER_REGISTER_KERNEL(minmax_stub, DeviceType::CPU, minmax_kernel);
EMBER_REGISTER_KERNEL(arg_minmax_stub, DeviceType::CPU, arg_minmax_kernel);
EMBER_REGISTER_KERNEL(logsumexp_stub, DeviceType::CPU, logsumexp_kernel);
EMBER_REGISTER_KERNEL(norm_stub, DeviceType::CPU, norm_kernel);
EMBER_REGISTER_KERNEL(all_any_stub, DeviceType::CPU, all_any_kernel);
EMBER_REGISTER_KERNEL(cumsum_stub, DeviceType::CPU, cumsum_kernel);
EMBER_REGISTER_KERNEL(cumprod_stub, DeviceType::CPU, cumprod_kernel);

}  // namespace ember::kernels::cpu
