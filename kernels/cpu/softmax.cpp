// CPU kernels for softmax / log_softmax (core/ops/softmax.h) and one_hot.

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/ops/softmax.h"
#include "core/parallel.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

using math::convert;

// One line of n elements: x[i * sx] -> y[i * sy]. Three passes: the max, the sum of
// exp(x - max) (in double, so long lines stay accurate), then the outputs.
template <class T>
void softmax_line(const T* x, int64_t sx, T* y, int64_t sy, int64_t n, bool log) {
  using A = opmath_t<T>;
  A m = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    A v = convert<A>(x[i * sx]);
    m = v > m ? v : m;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    A e = std::exp(convert<A>(x[i * sx]) - m);
    if constexpr (std::is_same_v<T, A>) {
      if (!log) y[i * sy] = e;  // kept for the last pass: no second exp
    }
    sum += static_cast<double>(e);
  }
  if (log) {
    const A shift = m + static_cast<A>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i * sy] = convert<T>(convert<A>(x[i * sx]) - shift);
  } else if constexpr (std::is_same_v<T, A>) {
    const A inv = static_cast<A>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i * sy] *= inv;
  } else {
    const A inv = static_cast<A>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i * sy] = convert<T>(std::exp(convert<A>(x[i * sx]) - m) * inv);
  }
}

// Lines are every index of the other dims, in row-major order, run in parallel.
void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  EMBER_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax", [&] {
    const scalar_t* x = static_cast<const scalar_t*>(in.data_ptr());
    scalar_t* y = static_cast<scalar_t*>(out.data_ptr());
    const int64_t nd = in.dim();
    const int64_t n = nd == 0 ? 1 : in.size(dim);
    const int64_t sx = nd == 0 ? 0 : in.stride(dim), sy = nd == 0 ? 0 : out.stride(dim);
    Shape sizes, x_strides, y_strides;
    for (int64_t d = 0; d < nd; ++d) {
      if (d == dim) continue;
      sizes.push_back(in.size(d));
      x_strides.push_back(in.stride(d));
      y_strides.push_back(out.stride(d));
    }
    const int64_t lines = shape_numel(sizes);
    const int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * n));
    parallel_for(0, lines, grain, [&](int64_t begin, int64_t end) {
      for (int64_t l = begin; l < end; ++l) {
        int64_t xo = 0, yo = 0, rem = l;
        for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
          int64_t i = rem % sizes[d];
          rem /= sizes[d];
          xo += i * x_strides[d];
          yo += i * y_strides[d];
        }
        softmax_line(x + xo, sx, y + yo, sy, n, log);
      }
    });
  });
}

void one_hot_kernel(const Tensor& out, const Tensor& indices, int64_t num_classes) {
  const int64_t* idx = static_cast<const int64_t*>(indices.data_ptr());
  int64_t* o = static_cast<int64_t*>(out.data_ptr());
  const int64_t n = indices.numel();
  parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i * num_classes + idx[i]] = 1;
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(softmax_stub, DeviceType::CPU, softmax_kernel);
EMBER_REGISTER_KERNEL(one_hot_stub, DeviceType::CPU, one_hot_kernel);

}  // namespace ember::kernels::cpu
