// CUDA kernels of the optimizers' fused updates (Note [Fused optimizer steps] in
// core/ops/optim.h): one launch per parameter, thread i updating element i of the parameter and
// of each of its states in registers with the functors of kernels/math/optim.h -- the same
// functors, in the same opmath_t, with the same roundings as the CPU loops of
// kernels/cpu/optim.cpp. The states the options use (momentum, amsgrad, centered) are template
// parameters, as on the CPU.
//
// The coefficients are computed on the host per step (core/ops/optim.h) and passed by value, so
// no step counter lives on the device. The simulator gives the CPU's bits; on a GPU nvcc
// contracts the functors' a * b + c into fmas, so a step may differ from the CPU's in the last
// ulp or so (PyTorch's CUDA optimizers differ from its CPU ones the same way).
//
// Every tensor is contiguous (core stages strided ones), of the parameter's dtype and shape;
// n elements, indexed in 64 bits (a grid-stride loop).

#include <algorithm>
#include <type_traits>

#include "core/dtype.h"
#include "core/ops/optim.h"
#include "kernels/cuda/common.cuh"
#include "kernels/math/optim.h"

namespace ember::kernels::cuda {

namespace {

using math::static_bool;

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535u * 4u;  // a grid-stride loop covers the rest

#define EMBER_GRID_STRIDE_LOOP(i, n)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// param p, grad g, momentum_buffer b (null without kMomentum): all (n,).
template <class T, bool kMomentum>
__global__ void sgd_kernel(int64_t n, T* p, const T* g, T* b,
                           math::SgdStep<opmath_t<T>, kMomentum> op) {
  using M = opmath_t<T>;
  EMBER_GRID_STRIDE_LOOP(i, n) {
    M pi = static_cast<M>(p[i]);
    M bi{};
    if constexpr (kMomentum) bi = op.first ? M{} : static_cast<M>(b[i]);
    op(pi, static_cast<M>(g[i]), bi);
    if constexpr (kMomentum) b[i] = static_cast<T>(bi);
    p[i] = static_cast<T>(pi);
  }
}

// param p, grad g, exp_avg m, exp_avg_sq v, max_exp_avg_sq v_max (null without kAmsgrad).
template <class T, bool kAmsgrad>
__global__ void adam_kernel(int64_t n, T* p, const T* g, T* m, T* v, T* v_max,
                            math::AdamStep<opmath_t<T>, kAmsgrad> op) {
  using M = opmath_t<T>;
  EMBER_GRID_STRIDE_LOOP(i, n) {
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
}

// param p, grad g, square_avg sq, grad_avg ga (null unless kCentered), momentum_buffer b (null
// unless kMomentum).
template <class T, bool kCentered, bool kMomentum>
__global__ void rmsprop_kernel(int64_t n, T* p, const T* g, T* sq, T* ga, T* b,
                               math::RmspropStep<opmath_t<T>, kCentered, kMomentum> op) {
  using M = opmath_t<T>;
  EMBER_GRID_STRIDE_LOOP(i, n) {
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
}

// param p, grad g, sum s.
template <class T>
__global__ void adagrad_kernel(int64_t n, T* p, const T* g, T* s,
                               math::AdagradStep<opmath_t<T>> op) {
  using M = opmath_t<T>;
  EMBER_GRID_STRIDE_LOOP(i, n) {
    M pi = static_cast<M>(p[i]);
    M si = static_cast<M>(s[i]);
    op(pi, static_cast<M>(g[i]), si);
    s[i] = static_cast<T>(si);
    p[i] = static_cast<T>(pi);
  }
}

#undef EMBER_GRID_STRIDE_LOOP

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Launches kernel(n, args...) over the parameter's n elements on its device.
template <class... Params, class... Args>
void launch_update(const char* name, void (*kernel)(Params...), const Tensor& param,
                   Args&&... args) {
  const int64_t n = param.numel();
  if (n == 0) return;
  DeviceGuard guard(param.device());
  const unsigned blocks = std::min(blocks_for(n, kThreads), kMaxBlocks);
  launch_kernel(name, kernel, dim3(blocks), dim3(kThreads), 0, current_stream(param.device()), n,
                std::forward<Args>(args)...);
}

void sgd_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                     const SgdCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "SGD", [&] {
    using T = scalar_t;
    static_bool(momentum_buffer.defined(), [&](auto has_momentum) {
      constexpr bool kMomentum = decltype(has_momentum)::value;
      launch_update("sgd_kernel", &sgd_kernel<T, kMomentum>, param, param.data_ptr<T>(),
                    grad.data_ptr<T>(), data_or_null<T>(momentum_buffer),
                    math::SgdStep<opmath_t<T>, kMomentum>::from(c));
    });
  });
}

void adam_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq,
                      const AdamCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), c.decoupled ? "AdamW" : "Adam", [&] {
    using T = scalar_t;
    static_bool(max_exp_avg_sq.defined(), [&](auto use_max) {
      constexpr bool kAmsgrad = decltype(use_max)::value;
      launch_update("adam_kernel", &adam_kernel<T, kAmsgrad>, param, param.data_ptr<T>(),
                    grad.data_ptr<T>(), exp_avg.data_ptr<T>(), exp_avg_sq.data_ptr<T>(),
                    data_or_null<T>(max_exp_avg_sq),
                    math::AdamStep<opmath_t<T>, kAmsgrad>::from(c));
    });
  });
}

void rmsprop_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                         const Tensor& grad_avg, const Tensor& momentum_buffer,
                         const RmspropCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "RMSprop", [&] {
    using T = scalar_t;
    static_bool(grad_avg.defined(), [&](auto is_centered) {
      static_bool(momentum_buffer.defined(), [&](auto has_momentum) {
        constexpr bool kCentered = decltype(is_centered)::value;
        constexpr bool kMomentum = decltype(has_momentum)::value;
        launch_update("rmsprop_kernel", &rmsprop_kernel<T, kCentered, kMomentum>, param,
                      param.data_ptr<T>(), grad.data_ptr<T>(), square_avg.data_ptr<T>(),
                      data_or_null<T>(grad_avg), data_or_null<T>(momentum_buffer),
                      math::RmspropStep<opmath_t<T>, kCentered, kMomentum>::from(c));
      });
    });
  });
}

void adagrad_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& sum,
                         const AdagradCoefficients& c) {
  EMBER_DISPATCH_FLOATING(param.dtype(), "Adagrad", [&] {
    using T = scalar_t;
    launch_update("adagrad_kernel", &adagrad_kernel<T>, param, param.data_ptr<T>(),
                  grad.data_ptr<T>(), sum.data_ptr<T>(), math::AdagradStep<opmath_t<T>>::from(c));
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(sgd_step_stub, DeviceType::CUDA, sgd_step_kernel);
EMBER_REGISTER_KERNEL(adam_step_stub, DeviceType::CUDA, adam_step_kernel);
EMBER_REGISTER_KERNEL(rmsprop_step_stub, DeviceType::CUDA, rmsprop_step_kernel);
EMBER_REGISTER_KERNEL(adagrad_step_stub, DeviceType::CUDA, adagrad_step_kernel);

}  // namespace ember::kernels::cuda
