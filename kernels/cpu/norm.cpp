// CPU kernels of the fused normalisations (core/ops/norm.h), statistics in double: layer_norm's
// run nn's LayerNorm on the CPU (Note [layer_norm on the CPU]); batch_norm's and group_norm's
// are plain loops over the channels and groups that nn leaves on the composite path (Note [Fused
// layer_norm]), the reference the CUDA kernels are tested against.

#include "core/ops/norm.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/cpu/convert16.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/rows.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

using math::convert;

template <class T>
const T* cptr(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// Note [layer_norm on the CPU]
// A row's statistics are taken in double, in two passes like the CUDA kernels' (no E[x^2] -
// E[x]^2 cancellation): the sum folded into lanes (Note [Rows in lanes] in kernels/cpu/rows.h),
// the mean, then the sum of squared deviations from it; rstd = 1 / sqrt(var + eps) with the
// biased variance; then y = ((x - mean) rstd) w + b in opmath_t. The backward takes per row the
// sums of w g and w g xhat in double and writes dx = rstd (w g - mean(w g) - xhat mean(w g xhat));
// dw and db are summed per fixed chunk of rows (the chunks depend on M alone), then the chunks
// in order, so no result depends on the thread count. Rows run in blocks (float16 / bfloat16
// converted to float, weight converted once per call), each pass a plain loop the compiler
// vectorises, compiled for AVX-512 or AVX2 where the CPU has them (with_cpu_isa,
// kernels/cpu/isa.h).

// Adds (x[i] - mu)^2 to the lanes, in double.
template <class E>
EMBER_CPU_INLINE void sq_dev_fold(const E* x, int64_t n, double mu, double* lanes) {
  int64_t i = 0;
  for (; i + kRowLanes <= n; i += kRowLanes) {
    for (int l = 0; l < kRowLanes; ++l) {
      const double d = static_cast<double>(x[i + l]) - mu;
      lanes[l] += d * d;
    }
  }
  for (int l = 0; i + l < n; ++l) {
    const double d = static_cast<double>(x[i + l]) - mu;
    lanes[l] += d * d;
  }
}

// Adds a[i] * b[i] to the lanes.
EMBER_CPU_INLINE void dot_fold(const double* a, const double* b, int64_t n, double* lanes) {
  int64_t i = 0;
  for (; i + kRowLanes <= n; i += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lanes[l] += a[i + l] * b[i + l];
  for (int l = 0; i + l < n; ++l) lanes[l] += a[i + l] * b[i + l];
}

// out = ((x - m) r) w + b over a block; w and b may be null.
template <class A>
EMBER_CPU_INLINE void normalize_block(const A* x, int64_t n, A m, A r, const A* w, const A* b,
                                      A* out) {
  if (w != nullptr && b != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) * r * w[j] + b[j];
  } else if (w != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) * r * w[j];
  } else if (b != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) * r + b[j];
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) * r;
  }
}

// The backward's per-block values in double: xh = (x - mu) rs, wg = g w (g without a weight).
template <class A>
EMBER_CPU_INLINE void backward_block(const A* x, const A* g, const A* w, int64_t n, double mu,
                                     double rs, double* xh, double* wg) {
  for (int64_t j = 0; j < n; ++j) xh[j] = (static_cast<double>(x[j]) - mu) * rs;
  if (w != nullptr) {
    for (int64_t j = 0; j < n; ++j) wg[j] = static_cast<double>(g[j]) * static_cast<double>(w[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) wg[j] = static_cast<double>(g[j]);
  }
}

// An optional (N) tensor of T as opmath_t values: the tensor itself, or for the 16-bit types a
// converted copy in buf; null when t is undefined.
template <class T, class A = opmath_t<T>>
const A* opmath_values(const Tensor& t, int64_t N, std::vector<A>& buf) {
  if (!t.defined()) return nullptr;
  if constexpr (std::is_same_v<T, A>) {
    return static_cast<const A*>(t.data_ptr());
  } else {
    buf.resize(static_cast<size_t>(N));
    convert_run(static_cast<const T*>(t.data_ptr()), buf.data(), N);
    return buf.data();
  }
}

void layer_norm_kernel(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "layer_norm", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;  // also the blocks' element type (block_t<T>)
    const T* xp = cptr<T>(x);
    std::vector<A> wbuf, bbuf;
    const A* w = opmath_values<T>(weight, N, wbuf);
    const A* b = opmath_values<T>(bias, N, bbuf);
    T* yp = mptr<T>(y);
    A* mp = mptr<A>(mean);
    A* rp = mptr<A>(rstd);
    parallel_for(0, M, std::max<int64_t>(1, kGrainSize / N), [&](int64_t begin, int64_t end) {
      with_cpu_isa([&]() EMBER_INLINE_LAMBDA {
        for (int64_t i = begin; i < end; ++i) {
          const T* xr = xp + i * N;
          double s[kRowLanes] = {}, q[kRowLanes] = {};
          for_blocks(xr, N, [&](const A* c, int64_t, int64_t len) EMBER_INLINE_LAMBDA {
            sum_fold(c, len, s);
          });
          const double mu = sum_lanes(s) / static_cast<double>(N);
          for_blocks(xr, N, [&](const A* c, int64_t, int64_t len) EMBER_INLINE_LAMBDA {
            sq_dev_fold(c, len, mu, q);
          });
          const A m = static_cast<A>(mu);
          const A r = static_cast<A>(1.0 / std::sqrt(sum_lanes(q) / static_cast<double>(N) + eps));
          mp[i] = m;
          rp[i] = r;
          for_blocks(xr, N, [&](const A* c, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
            write_block(yp + i * N + o, len, [&](A* out) EMBER_INLINE_LAMBDA {
              normalize_block(c, len, m, r, w ? w + o : nullptr, b ? b + o : nullptr, out);
            });
          });
        }
      });
    });
  });
}

void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                                int64_t M, int64_t N) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "layer_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T *xp = cptr<T>(x), *gp = cptr<T>(grad_out);
    std::vector<A> wbuf;
    const A* w = opmath_values<T>(weight, N, wbuf);
    const A *mp = cptr<A>(mean), *rp = cptr<A>(rstd);
    T* dx = mptr<T>(grad_input);
    const bool need_w = grad_weight.defined(), need_b = grad_bias.defined();
    // Rows in chunks fixed by M (Note [layer_norm on the CPU]), each with its own dw and db.
    const int64_t rows_per_chunk = (M + 63) / 64;
    const int64_t chunks = (M + rows_per_chunk - 1) / rows_per_chunk;
    std::vector<double> dw_part(need_w ? static_cast<size_t>(chunks * N) : 0, 0.0),
        db_part(need_b ? static_cast<size_t>(chunks * N) : 0, 0.0);
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      with_cpu_isa([&]() EMBER_INLINE_LAMBDA {
        double xh[kRowBlock], wg[kRowBlock];
        for (int64_t c = c0; c < c1; ++c) {
          double* dw = need_w ? dw_part.data() + c * N : nullptr;
          double* db = need_b ? db_part.data() + c * N : nullptr;
          for (int64_t i = c * rows_per_chunk; i < std::min(M, (c + 1) * rows_per_chunk); ++i) {
            const T *xr = xp + i * N, *gr = gp + i * N;
            const double mu = mp[i], rs = rp[i];
            double s1[kRowLanes] = {}, s2[kRowLanes] = {};  // sum(w g), sum(w g xhat)
            for_blocks2(xr, gr, N,
                        [&](const A* bx, const A* bg, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
                          backward_block(bx, bg, w ? w + o : nullptr, len, mu, rs, xh, wg);
                          sum_fold(wg, len, s1);
                          dot_fold(wg, xh, len, s2);
                          if (dw != nullptr)
                            for (int64_t j = 0; j < len; ++j)
                              dw[o + j] += static_cast<double>(bg[j]) * xh[j];
                          if (db != nullptr)
                            for (int64_t j = 0; j < len; ++j)
                              db[o + j] += static_cast<double>(bg[j]);
                        });
            if (dx == nullptr) continue;
            const double a1 = sum_lanes(s1) / static_cast<double>(N),
                         a2 = sum_lanes(s2) / static_cast<double>(N);
            for_blocks2(xr, gr, N,
                        [&](const A* bx, const A* bg, int64_t o, int64_t len) EMBER_INLINE_LAMBDA {
                          backward_block(bx, bg, w ? w + o : nullptr, len, mu, rs, xh, wg);
                          write_block(dx + i * N + o, len, [&](A* out) EMBER_INLINE_LAMBDA {
                            for (int64_t j = 0; j < len; ++j)
                              out[j] = static_cast<A>(rs * (wg[j] - a1 - xh[j] * a2));
                          });
                        });
          }
        }
      });
    });
    // The chunks' sums, added in chunk order.
    for (auto [part, out] :
         {std::pair{&dw_part, mptr<T>(grad_weight)}, std::pair{&db_part, mptr<T>(grad_bias)}}) {
      if (out == nullptr) continue;
      std::vector<double> total(static_cast<size_t>(N), 0.0);
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t j = 0; j < N; ++j) total[j] += (*part)[static_cast<size_t>(c * N + j)];
      for (int64_t j = 0; j < N; ++j) out[j] = convert<T>(total[static_cast<size_t>(j)]);
    }
  });
}

// x: (N, C, L); a channel at a time, statistics in double.
void batch_norm_kernel(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, int64_t N, int64_t C, int64_t L, bool training,
                       double f, double eps) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "batch_norm", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T *xp = cptr<T>(x), *w = cptr<T>(weight), *b = cptr<T>(bias);
    T *yp = mptr<T>(y), *rm = mptr<T>(running_mean), *rv = mptr<T>(running_var);
    A *mp = mptr<A>(mean), *rp = mptr<A>(rstd);
    const double count = static_cast<double>(N * L);
    for (int64_t c = 0; c < C; ++c) {
      double mu, var;
      if (training) {
        double s = 0, q = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t l = 0; l < L; ++l) s += convert<double>(xp[(n * C + c) * L + l]);
        mu = s / count;
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t l = 0; l < L; ++l) {
            const double d = convert<double>(xp[(n * C + c) * L + l]) - mu;
            q += d * d;
          }
        }
        var = q / count;
        if (rm) {
          rm[c] = convert<T>((1 - f) * convert<double>(rm[c]) + f * mu);
          rv[c] = convert<T>((1 - f) * convert<double>(rv[c]) + f * q / (count - 1));
        }
      } else {
        mu = convert<double>(rm[c]);
        var = convert<double>(rv[c]);
      }
      const A m = static_cast<A>(mu), r = static_cast<A>(1.0 / std::sqrt(var + eps));
      mp[c] = m;
      rp[c] = r;
      const A scale = w ? r * convert<A>(w[c]) : r, shift = b ? convert<A>(b[c]) : A(0);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t k = (n * C + c) * L + l;
          yp[k] = convert<T>((convert<A>(xp[k]) - m) * scale + shift);
        }
    }
  });
}

void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                                int64_t N, int64_t C, int64_t L, bool training) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "batch_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T *xp = cptr<T>(x), *gp = cptr<T>(grad_out), *w = cptr<T>(weight);
    const A *mp = cptr<A>(mean), *rp = cptr<A>(rstd);
    T *dx = mptr<T>(grad_input), *dw = mptr<T>(grad_weight), *db = mptr<T>(grad_bias);
    const double count = static_cast<double>(N * L);
    for (int64_t c = 0; c < C; ++c) {
      const double m = mp[c], r = rp[c], wc = w ? convert<double>(w[c]) : 1.0;
      double sg = 0, sgx = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t k = (n * C + c) * L + l;
          const double g = convert<double>(gp[k]);
          sg += g;
          sgx += g * (convert<double>(xp[k]) - m) * r;
        }
      if (dw) dw[c] = convert<T>(sgx);
      if (db) db[c] = convert<T>(sg);
      if (!dx) continue;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t k = (n * C + c) * L + l;
          const double g = convert<double>(gp[k]);
          const double xhat = (convert<double>(xp[k]) - m) * r;
          dx[k] =
              convert<T>(training ? wc * r * (g - sg / count - xhat * sgx / count) : g * wc * r);
        }
    }
  });
}

// x: (N, C, L) in G groups; row (n, g) holds channels g * C / G ... of n.
void group_norm_kernel(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t N, int64_t C, int64_t L,
                       int64_t G, double eps) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "group_norm", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T *xp = cptr<T>(x), *w = cptr<T>(weight), *b = cptr<T>(bias);
    T* yp = mptr<T>(y);
    A *mp = mptr<A>(mean), *rp = mptr<A>(rstd);
    const int64_t Cg = C / G, n_row = Cg * L;
    for (int64_t row = 0; row < N * G; ++row) {
      const T* xr = xp + row * n_row;  // contiguous: (n, g) is one block of Cg * L
      double s = 0, q = 0;
      for (int64_t j = 0; j < n_row; ++j) s += convert<double>(xr[j]);
      const double mu = s / static_cast<double>(n_row);
      for (int64_t j = 0; j < n_row; ++j) {
        const double d = convert<double>(xr[j]) - mu;
        q += d * d;
      }
      const A m = static_cast<A>(mu);
      const A r = static_cast<A>(1.0 / std::sqrt(q / static_cast<double>(n_row) + eps));
      mp[row] = m;
      rp[row] = r;
      for (int64_t j = 0; j < n_row; ++j) {
        const int64_t c = (row % G) * Cg + j / L;
        A v = (convert<A>(xr[j]) - m) * r;
        if (w) v = v * convert<A>(w[c]);
        if (b) v = v + convert<A>(b[c]);
        yp[row * n_row + j] = convert<T>(v);
      }
    }
  });
}

void group_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                                int64_t N, int64_t C, int64_t L, int64_t G) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "group_norm_backward", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T *xp = cptr<T>(x), *gp = cptr<T>(grad_out), *w = cptr<T>(weight);
    const A *mp = cptr<A>(mean), *rp = cptr<A>(rstd);
    T* dx = mptr<T>(grad_input);
    const int64_t Cg = C / G, n_row = Cg * L;
    std::vector<double> dw(C, 0.0), db(C, 0.0);
    for (int64_t row = 0; row < N * G; ++row) {
      const int64_t base = row * n_row;
      double s1 = 0, s2 = 0;
      for (int64_t j = 0; j < n_row; ++j) {
        const int64_t c = (row % G) * Cg + j / L;
        const double xhat = (convert<double>(xp[base + j]) - mp[row]) * rp[row];
        const double g = convert<double>(gp[base + j]);
        const double wg = w ? g * convert<double>(w[c]) : g;
        s1 += wg;
        s2 += wg * xhat;
        dw[c] += g * xhat;
        db[c] += g;
      }
      if (!dx) continue;
      const double n = static_cast<double>(n_row);
      for (int64_t j = 0; j < n_row; ++j) {
        const int64_t c = (row % G) * Cg + j / L;
        const double xhat = (convert<double>(xp[base + j]) - mp[row]) * rp[row];
        const double g = convert<double>(gp[base + j]);
        const double wg = w ? g * convert<double>(w[c]) : g;
        dx[base + j] = convert<T>(rp[row] * (wg - s1 / n - xhat * s2 / n));
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      if (grad_weight.defined()) mptr<T>(grad_weight)[c] = convert<T>(dw[c]);
      if (grad_bias.defined()) mptr<T>(grad_bias)[c] = convert<T>(db[c]);
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(group_norm_stub, DeviceType::CPU, group_norm_kernel);
EMBER_REGISTER_KERNEL(group_norm_backward_stub, DeviceType::CPU, group_norm_backward_kernel);
EMBER_REGISTER_KERNEL(batch_norm_stub, DeviceType::CPU, batch_norm_kernel);
EMBER_REGISTER_KERNEL(batch_norm_backward_stub, DeviceType::CPU, batch_norm_backward_kernel);
EMBER_REGISTER_KERNEL(layer_norm_stub, DeviceType::CPU, layer_norm_kernel);
EMBER_REGISTER_KERNEL(layer_norm_backward_stub, DeviceType::CPU, layer_norm_backward_kernel);

}  // namespace ember::kernels::cpu
