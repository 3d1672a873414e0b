// CPU kernels of the optimizers' fused updates (Note [Fused optimizer steps] in
// core/ops/optim.h): one pass over contiguous data, split over the thread pool, applying the
// functors of kernels/math/optim.h element by element in opmath_t. Each chunk makes its own
// functor (a local the compiler knows no store can alias, so the loop vectorises; a functor
// read through a reference would be reloaded after every store of a float).

#include "core/ops/optim.h"

#include <type_traits>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/math/optim.h"

namespace ember::kernels::cpu {

namespace {

using math::static_bool;

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

void sgd_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                     const SgdCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "SGD", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    T* p = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* b = data_or_null<T>(momentum_buffer);
    static_bool(b != nullptr, [&](auto has_momentum) {
      constexpr bool kMomentum = decltype(has_momentum)::value;
      parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
        // A local copy: stores through T* cannot alias it, so the loop vectorises.
        const auto op = math::SgdStep<M, kMomentum>::from(c);
        for (int64_t i = begin; i < end; ++i) {
          M pi = static_cast<M>(p[i]);
          M bi{};
          if constexpr (kMomentum) bi = op.first ? M{} : static_cast<M>(b[i]);
          op(pi, static_cast<M>(g[i]), bi);
          if constexpr (kMomentum) b[i] = static_cast<T>(bi);
          p[i] = static_cast<T>(pi);
        }
      });
    });
  });
}

void adam_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq,
                      const AdamCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), c.decoupled ? "AdamW" : "Adam", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    T* p = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* m = exp_avg.data_ptr<T>();
    T* v = exp_avg_sq.data_ptr<T>();
    T* v_max = data_or_null<T>(max_exp_avg_sq);
    static_bool(v_max != nullptr, [&](auto use_max) {
      constexpr bool kAmsgrad = decltype(use_max)::value;
      parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
        // A local copy: stores through T* cannot alias it, so the loop vectorises.
        const auto op = math::AdamStep<M, kAmsgrad>::from(c);
        for (int64_t i = begin; i < end; ++i) {
          M pi = static_cast<M>(p[i]);
          M mi = static_cast<M>(m[i]);
          M vi = static_cast<M>(v[i]);
          M vmax_i{};
          if constexpr (kAmsgrad) vmax_i = static_cast<M>(v_max[i]);
          op(pi, static_cast<M>(g[i]), mi, vi, vmax_i);
          m[i] = static_cast<T>(mi);
          v[i] = static_cast<T>(vi);
          if constexpr (kAmsgrad) v_max[i] = static_cast<T>(vmax_i);
          p[i] = static_cast<T>(pi);
        }
      });
    });
  });
}

void rmsprop_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                         const Tensor& grad_avg, const Tensor& momentum_buffer,
                         const RmspropCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "RMSprop", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    T* p = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* sq = square_avg.data_ptr<T>();
    T* ga = data_or_null<T>(grad_avg);
    T* b = data_or_null<T>(momentum_buffer);
    static_bool(ga != nullptr, [&](auto is_centered) {
      static_bool(b != nullptr, [&](auto has_momentum) {
        constexpr bool kCentered = decltype(is_centered)::value;
        constexpr bool kMomentum = decltype(has_momentum)::value;
        parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
          // A local copy: stores through T* cannot alias it, so the loop vectorises.
          const auto op = math::RmspropStep<M, kCentered, kMomentum>::from(c);
          for (int64_t i = begin; i < end; ++i) {
            M pi = static_cast<M>(p[i]);
            M sqi = static_cast<M>(sq[i]);
            M gai{}, bi{};
            if constexpr (kCentered) gai = static_cast<M>(ga[i]);
            if constexpr (kMomentum) bi = static_cast<M>(b[i]);
            op(pi, static_cast<M>(g[i]), sqi, gai, bi);
            sq[i] = static_cast<T>(sqi);
            if constexpr (kCentered) ga[i] = static_cast<T>(gai);
            if constexpr (kMomentum) b[i] = static_cast<T>(bi);
            p[i] = static_cast<T>(pi);
          }
        });
      });
    });
  });
}

void adagrad_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& sum,
                         const AdagradCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "Adagrad", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    T* p = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* s = sum.data_ptr<T>();
    parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      // A local copy: stores through T* cannot alias it, so the loop vectorises.
      const auto op = math::AdagradStep<M>::from(c);
      for (int64_t i = begin; i < end; ++i) {
        M pi = static_cast<M>(p[i]);
        M si = static_cast<M>(s[i]);
        op(pi, static_cast<M>(g[i]), si);
        s[i] = static_cast<T>(si);
        p[i] = static_cast<T>(pi);
      }
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(sgd_step_stub, DeviceType::CPU, sgd_step_kernel);
EMBER_REGISTER_KERNEL(adam_step_stub, DeviceType::CPU, adam_step_kernel);
EMBER_REGISTER_KERNEL(rmsprop_step_stub, DeviceType::CPU, rmsprop_step_kernel);
EMBER_REGISTER_KERNEL(adagrad_step_stub, DeviceType::CPU, adagrad_step_kernel);

}  // namespace ember::kernels::cpu
