// CPU kernels of the fused cross-entropy (core/ops/cross_entropy.h, Note [Fused cross-entropy]):
// a row at a time, the max, then the sum of exp in double (Note [Rows in lanes] in
// kernels/cpu/rows.h), the loss; the backward rebuilds the probabilities from lse. Both run their
// rows compiled for AVX-512 or AVX2 where the CPU has them (with_cpu_isa, kernels/cpu/isa.h).

#include "core/ops/cross_entropy.h"

#include <cmath>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/rows.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

using math::convert;

void cross_entropy_kernel(const native::CrossEntropyRows& out, const Tensor& logits,
                          const Tensor& target, const Tensor& weight, int64_t ignore_index,
                          double label_smoothing) {
  EMBER_DISPATCH_FLOATING(logits.dtype(), "cross_entropy", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const int64_t M = logits.size(0), C = logits.size(1);
    const T* x = static_cast<const T*>(logits.data_ptr());
    const int64_t* t = target.data_ptr<int64_t>();
    const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
    A* loss = static_cast<A*>(out.loss.data_ptr());
    A* wrow = static_cast<A*>(out.weight.data_ptr());
    A* lse = static_cast<A*>(out.lse.data_ptr());
    const double e = label_smoothing;
    parallel_for(0, M, 1, [&](int64_t begin, int64_t end) {
      with_cpu_isa([&]() EMBER_INLINE_LAMBDA {
        for (int64_t i = begin; i < end; ++i) {
          const T* xr = x + i * C;
          const A m = contiguous_row_max(xr, C);
          const A l = m + static_cast<A>(std::log(contiguous_row_sum_exp(xr, m, C)));
          lse[i] = l;
          if (t[i] == ignore_index) {
            loss[i] = A(0);
            wrow[i] = A(0);
            continue;
          }
          const A wt = w ? convert<A>(w[t[i]]) : A(1);
          double v = -static_cast<double>(wt) * static_cast<double>(convert<A>(xr[t[i]]) - l);
          if (e > 0) {
            double smooth = 0;
            for (int64_t c = 0; c < C; ++c) {
              const A lp = convert<A>(xr[c]) - l;
              smooth -= static_cast<double>(w ? convert<A>(w[c]) * lp : lp);
            }
            v = (1 - e) * v + e / static_cast<double>(C) * smooth;
          }
          loss[i] = static_cast<A>(v);
          wrow[i] = wt;
        }
      });
    });
  });
}

void cross_entropy_backward_kernel(const Tensor& grad_logits, const Tensor& grad_rows,
                                   const Tensor& logits, const Tensor& target, const Tensor& weight,
                                   const Tensor& lse, int64_t ignore_index,
                                   double label_smoothing) {
  EMBER_DISPATCH_FLOATING(logits.dtype(), "cross_entropy_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const int64_t M = logits.size(0), C = logits.size(1);
    const T* x = static_cast<const T*>(logits.data_ptr());
    const int64_t* t = target.data_ptr<int64_t>();
    const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
    const A* gr = static_cast<const A*>(grad_rows.data_ptr());
    const A* l = static_cast<const A*>(lse.data_ptr());
    T* dx = static_cast<T*>(grad_logits.data_ptr());
    const A e = static_cast<A>(label_smoothing), e_c = static_cast<A>(label_smoothing / C);
    A w_sum = static_cast<A>(C);
    if (w && label_smoothing > 0) {
      double s = 0;
      for (int64_t c = 0; c < C; ++c) s += convert<double>(w[c]);
      w_sum = static_cast<A>(s);
    }
    parallel_for(0, M, 1, [&](int64_t begin, int64_t end) {
      with_cpu_isa([&]() EMBER_INLINE_LAMBDA {
        for (int64_t i = begin; i < end; ++i) {
          T* dr = dx + i * C;
          if (t[i] == ignore_index) {
            for (int64_t c = 0; c < C; ++c) dr[c] = convert<T>(A(0));
            continue;
          }
          const A wt = w ? convert<A>(w[t[i]]) : A(1);
          const A a = gr[i] * (A(1) - e) * wt, ge = gr[i] * e_c, li = l[i];
          const T* xr = x + i * C;
          // Every class as a non-target one (p * a), then the target's own value over it.
          const auto grad = [&](int64_t c, A p, A target_one) EMBER_INLINE_LAMBDA {
            A v = a * (p - target_one);
            if (label_smoothing > 0) v += ge * (p * w_sum - (w ? convert<A>(w[c]) : A(1)));
            return convert<T>(v);
          };
          if (label_smoothing > 0) {
            for (int64_t c = 0; c < C; ++c) dr[c] = grad(c, exp_of(convert<A>(xr[c]) - li), A(0));
          } else {
            contiguous_exp_scale(xr, li, a, dr, C);  // a * p, p * a: the same product
          }
          dr[t[i]] = grad(t[i], exp_of(convert<A>(xr[t[i]]) - li), A(1));
        }
      });
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(cross_entropy_stub, DeviceType::CPU, cross_entropy_kernel);
EMBER_REGISTER_KERNEL(cross_entropy_backward_stub, DeviceType::CPU, cross_entropy_backward_kernel);

}  // namespace ember::kernels::cpu
