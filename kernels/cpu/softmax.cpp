// CPU kernels for softmax / log_softmax (core/ops/softmax.h) and one_hot.

#include "core/ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/reduce_utils.h"
#include "kernels/cpu/rows.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

using math::convert;

// One line of n elements: x[i * sx] -> y[i * sy]. Three passes (Note [Rows in lanes] in
// kernels/cpu/rows.h): the max, the sum of exp(x - max) in double, then the outputs.
template <class T>
EMBER_CPU_INLINE void softmax_line_strided(const T* x, int64_t sx, T* y, int64_t sy, int64_t n,
                                           bool log) {
  using A = opmath_t<T>;
  const A m = row_max(x, sx, n);
  const double sum = row_sum_exp(x, sx, m, n);
  if (log) {
    const A shift = m + static_cast<A>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i * sy] = convert<T>(convert<A>(x[i * sx]) - shift);
  } else {
    const A inv = static_cast<A>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i * sy] = convert<T>(exp_of(convert<A>(x[i * sx]) - m) * inv);
  }
}

// The same passes over a contiguous line, the same values: a softmax keeps its exps for the last
// pass to scale (one exp per element), a float one in y, a 16-bit one of up to kKeptRow elements
// in a float buffer; longer 16-bit rows compute them again.
constexpr int64_t kKeptRow = 4096;

template <class T>
EMBER_CPU_INLINE void softmax_line_contiguous(const T* x, T* y, int64_t n, bool log) {
  using A = opmath_t<T>;
  const A m = contiguous_row_max(x, n);
  if constexpr (std::is_same_v<T, float>) {
    if (!log) {
      const double sum = contiguous_row_sum_exp(x, m, n, y);  // y = exp(x - m)
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
      return;
    }
  } else if constexpr (std::is_same_v<A, float>) {
    if (!log && n <= kKeptRow) {
      float e[kKeptRow];
      const float inv = static_cast<float>(1.0 / contiguous_row_sum_exp(x, m, n, e));
      for (int64_t o = 0; o < n; o += kRowBlock) {
        const int64_t len = std::min(kRowBlock, n - o);
        write_block(y + o, len, [&](float* out) EMBER_INLINE_LAMBDA {
          for (int64_t i = 0; i < len; ++i) out[i] = e[o + i] * inv;
        });
      }
      return;
    }
  }
  const double sum = contiguous_row_sum_exp(x, m, n);
  if (!log) {
    contiguous_exp_scale(x, m, static_cast<A>(1.0 / sum), y, n);
  } else {
    const A shift = m + static_cast<A>(std::log(sum));
    for_blocks(x, n, [&](const auto* c, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
      write_block(y + o, len, [&](auto* out) EMBER_INLINE_LAMBDA {
        for (int64_t i = 0; i < len; ++i) out[i] = c[i] - shift;
      });
    });
  }
}

template <class T>
EMBER_CPU_INLINE void softmax_line_body(const T* x, int64_t sx, T* y, int64_t sy, int64_t n,
                                        bool log) {
  if (sx == 1 && sy == 1) {
    softmax_line_contiguous(x, y, n, log);
  } else {
    softmax_line_strided(x, sx, y, sy, n, log);
  }
}

// A group of w <= kGroup neighbouring lines (Note [Line groups] in reduce_utils.h): line j is
// x[j * xl + i * sx], i < n. The same three passes, each step touching all w lines.
constexpr int64_t kGroup = 64;

template <class T>
EMBER_CPU_INLINE void softmax_group_strided(const T* x, int64_t sx, int64_t xl, T* y, int64_t sy,
                                            int64_t yl, int64_t n, int64_t w, bool log) {
  using A = opmath_t<T>;
  A m[kGroup];
  double sum[kGroup];
  for (int64_t j = 0; j < w; ++j) {
    m[j] = -std::numeric_limits<A>::infinity();
    sum[j] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      A v = convert<A>(x[i * sx + j * xl]);
      m[j] = v > m[j] ? v : m[j];
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < w; ++j)
      sum[j] += static_cast<double>(exp_of(convert<A>(x[i * sx + j * xl]) - m[j]));
  A shift[kGroup], inv[kGroup];
  for (int64_t j = 0; j < w; ++j) {
    shift[j] = m[j] + static_cast<A>(std::log(sum[j]));
    inv[j] = static_cast<A>(1.0 / sum[j]);
  }
  if (log) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < w; ++j)
        y[i * sy + j * yl] = convert<T>(convert<A>(x[i * sx + j * xl]) - shift[j]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < w; ++j)
        y[i * sy + j * yl] = convert<T>(exp_of(convert<A>(x[i * sx + j * xl]) - m[j]) * inv[j]);
  }
}

// As for lines: neighbouring lines next to each other in memory get a copy of their own.
template <class T>
EMBER_CPU_INLINE void softmax_group_body(const T* x, int64_t sx, int64_t xl, T* y, int64_t sy,
                                         int64_t yl, int64_t n, int64_t w, bool log) {
  if (xl == 1 && yl == 1) {
    softmax_group_strided(x, sx, 1, y, sy, 1, n, w, log);
  } else {
    softmax_group_strided(x, sx, xl, y, sy, yl, n, w, log);
  }
}

void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  EMBER_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax", [&] {
    const scalar_t* x = static_cast<const scalar_t*>(in.data_ptr());
    scalar_t* y = static_cast<scalar_t*>(out.data_ptr());
    const int64_t nd = in.dim();
    const int64_t n = nd == 0 ? 1 : in.size(dim);
    const int64_t sx = nd == 0 ? 0 : in.stride(dim), sy = nd == 0 ? 0 : out.stride(dim);
    const bool grouped = nd >= 2 && dim != nd - 1;
    const int64_t xl = grouped ? in.stride(nd - 1) : 0, yl = grouped ? out.stride(nd - 1) : 0;
    for_each_line_group(in, out, dim, kGroup, [&](int64_t xo, int64_t yo, int64_t w) {
      with_cpu_isa([&]() EMBER_INLINE_LAMBDA {
        if (grouped) {
          softmax_group_body(x + xo, sx, xl, y + yo, sy, yl, n, w, log);
        } else {
          softmax_line_body(x + xo, sx, y + yo, sy, n, log);
        }
      });
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
