// CPU kernels of the fused layer_norm (core/ops/norm.h): plain loops over the rows, statistics
// in double. nn keeps the CPU on the composite path (Note [Fused layer_norm]); these are the
// reference the CUDA kernels are tested against.

#include "core/ops/norm.h"

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"
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

void layer_norm_kernel(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, int64_t M, int64_t N, double eps) {
  EMBER_DISPATCH_FLOATING(x.dtype(), "layer_norm", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    const T* xp = cptr<T>(x);
    const T *w = cptr<T>(weight), *b = cptr<T>(bias);
    T* yp = mptr<T>(y);
    A* mp = mptr<A>(mean);
    A* rp = mptr<A>(rstd);
    parallel_for(0, M, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* xr = xp + i * N;
        double s = 0;
        for (int64_t j = 0; j < N; ++j) s += convert<double>(xr[j]);
        const double mu = s / static_cast<double>(N);
        double q = 0;
        for (int64_t j = 0; j < N; ++j) {
          const double d = convert<double>(xr[j]) - mu;
          q += d * d;
        }
        const A m = static_cast<A>(mu);
        const A r = static_cast<A>(1.0 / std::sqrt(q / static_cast<double>(N) + eps));
        mp[i] = m;
        rp[i] = r;
        for (int64_t j = 0; j < N; ++j) {
          A v = (convert<A>(xr[j]) - m) * r;
          if (w) v = v * convert<A>(w[j]);
          if (b) v = v + convert<A>(b[j]);
          yp[i * N + j] = convert<T>(v);
        }
      }
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
    const T *xp = cptr<T>(x), *gp = cptr<T>(grad_out), *w = cptr<T>(weight);
    const A *mp = cptr<A>(mean), *rp = cptr<A>(rstd);
    T* dx = mptr<T>(grad_input);
    std::vector<double> dw(grad_weight.defined() ? N : 0, 0.0),
        db(grad_bias.defined() ? N : 0, 0.0);
    for (int64_t i = 0; i < M; ++i) {
      const T *xr = xp + i * N, *gr = gp + i * N;
      double s1 = 0, s2 = 0;  // sum(w g), sum(w g xhat)
      for (int64_t j = 0; j < N; ++j) {
        const double xhat = (convert<double>(xr[j]) - mp[i]) * rp[i];
        const double g = convert<double>(gr[j]);
        const double wg = w ? g * convert<double>(w[j]) : g;
        s1 += wg;
        s2 += wg * xhat;
        if (!dw.empty()) dw[j] += g * xhat;
        if (!db.empty()) db[j] += g;
      }
      if (!dx) continue;
      const double n = static_cast<double>(N);
      for (int64_t j = 0; j < N; ++j) {
        const double xhat = (convert<double>(xr[j]) - mp[i]) * rp[i];
        const double g = convert<double>(gr[j]);
        const double wg = w ? g * convert<double>(w[j]) : g;
        dx[i * N + j] = convert<T>(rp[i] * (wg - s1 / n - xhat * s2 / n));
      }
    }
    for (size_t j = 0; j < dw.size(); ++j) mptr<T>(grad_weight)[j] = convert<T>(dw[j]);
    for (size_t j = 0; j < db.size(); ++j) mptr<T>(grad_bias)[j] = convert<T>(db[j]);
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
