#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/copy.h"
#include "autograd/ops/random.h"
#include "core/generator.h"
#include "core/ops/factory.h"

namespace ember::autograd {

namespace {

// The float64 values of t, row-major.
std::vector<double> values_of(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Address of the element with row-major index i of a float64 tensor (any strides).
double* element(const Tensor& t, int64_t i) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (i % t.size(d)) * t.stride(d);
    i /= t.size(d);
  }
  return static_cast<double*>(t.data_ptr()) + offset;
}

bool differentiable(const Tensor& t) { return t.defined() && t.requires_grad(); }

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.sizes());
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const Tensors& inputs,
                          const GradcheckOptions& options) {
  std::vector<size_t> wrt;  // the inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable(inputs[i])) continue;
    EMBER_CHECK(inputs[i].dtype() == kFloat64, "gradcheck: input ", i, " is ", describe(inputs[i]),
                "; inputs that require grad must be float64");
    wrt.push_back(i);
  }
  EMBER_CHECK(!wrt.empty(), "gradcheck: no input requires grad");

  Tensors outputs = fn(inputs);
  std::vector<size_t> outs;  // floating outputs
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o].defined() && outputs[o].is_floating_point()) outs.push_back(o);
  }
  GradcheckResult result;
  if (outs.empty()) return result;

  // Numerical Jacobian: num[o][i] is (output o numel) x (input i numel), row-major.
  std::vector<std::vector<std::vector<double>>> num(outs.size(),
                                                    std::vector<std::vector<double>>(wrt.size()));
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& x = inputs[wrt[k]];
    const int64_t n = x.numel();
    for (size_t oi = 0; oi < outs.size(); ++oi) {
      num[oi][k].assign(static_cast<size_t>(outputs[outs[oi]].numel() * n), 0.0);
    }
    for (int64_t j = 0; j < n; ++j) {
      double* p = element(x, j);
      const double orig = *p;
      // Read each output's values at once: an output may be a view of the input.
      std::vector<std::vector<double>> plus(outs.size()), minus(outs.size());
      {
        NoGradGuard no_grad;
        *p = orig + options.eps;
        Tensors out_plus = fn(inputs);
        for (size_t oi = 0; oi < outs.size(); ++oi) plus[oi] = values_of(out_plus[outs[oi]]);
        *p = orig - options.eps;
        Tensors out_minus = fn(inputs);
        for (size_t oi = 0; oi < outs.size(); ++oi) minus[oi] = values_of(out_minus[outs[oi]]);
        *p = orig;
      }
      for (size_t oi = 0; oi < outs.size(); ++oi) {
        const std::vector<double>&a = plus[oi], &b = minus[oi];
        for (size_t r = 0; r < a.size(); ++r) {
          num[oi][k][r * n + j] = (a[r] - b[r]) / (2 * options.eps);
        }
      }
    }
  }

  // Analytical Jacobian, one row (output element) at a time.
  double worst_excess = 0.0;
  std::ostringstream report;
  for (size_t oi = 0; oi < outs.size(); ++oi) {
    const Tensor& y = outputs[outs[oi]];
    const int64_t m = y.numel();
    const bool has_graph = y.requires_grad();
    for (int64_t r = 0; r < m; ++r) {
      Tensors row;
      if (has_graph) {
        Tensor v = zeros(y.sizes(), y.dtype());
        {
          NoGradGuard no_grad;
          v.view({-1}).select(0, r).fill_(1.0);
        }
        Tensors wrt_inputs;
        for (size_t i : wrt) wrt_inputs.push_back(inputs[i]);
        row = grad({y}, wrt_inputs, {v}, /*retain_graph=*/true, false, /*allow_unused=*/true);
      }
      for (size_t k = 0; k < wrt.size(); ++k) {
        const int64_t n = inputs[wrt[k]].numel();
        std::vector<double> a = (has_graph && row[k].defined())
                                    ? values_of(row[k])
                                    : std::vector<double>(static_cast<size_t>(n), 0.0);
        if (has_graph && row[k].defined() && row[k].sizes() != inputs[wrt[k]].sizes()) {
          result.ok = false;
          report << "gradient for input " << wrt[k] << " has shape " << shape_str(row[k].sizes())
                 << ", expected " << shape_str(inputs[wrt[k]].sizes()) << "\n";
          return GradcheckResult{false, report.str(), 0.0};
        }
        for (int64_t j = 0; j < n; ++j) {
          const double an = a[j], nu = num[oi][k][r * n + j];
          const double err = std::abs(an - nu);
          const double tol = options.atol + options.rtol * std::abs(nu);
          result.max_abs_error = std::max(result.max_abs_error, std::isnan(err) ? INFINITY : err);
          const double excess = std::isnan(err) ? INFINITY : err - tol;
          if (excess > 0 && excess > worst_excess) {
            worst_excess = excess;
            report.str("");
            report << "Jacobian mismatch for output " << outs[oi] << " (" << describe(y)
                   << ") with respect to input " << wrt[k] << " (" << describe(inputs[wrt[k]])
                   << "): worst element d out[" << r << "] / d in[" << j << "]: analytical " << an
                   << ", numerical " << nu << " (error " << err << ", tolerance " << tol << ")"
                   << (has_graph ? "" : "; the output does not require grad") << "\n";
          }
        }
      }
    }
  }
  if (worst_excess > 0) {
    result.ok = false;
    result.report = report.str();
  }
  return result;
}

GradcheckResult gradgradcheck(const GradcheckFn& fn, const Tensors& inputs,
                              const GradcheckOptions& options) {
  // v: one random float64 tensor per floating output, itself differentiated.
  Tensors outputs = fn(inputs);
  Generator gen(options.seed);
  Tensors vs;
  std::vector<size_t> outs;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].defined() || !outputs[o].is_floating_point() || !outputs[o].requires_grad())
      continue;
    outs.push_back(o);
    Tensor v = empty(outputs[o].sizes(), kFloat64);
    v.normal_(0.0, 1.0, &gen);
    vs.push_back(v.requires_grad_());
  }
  if (outs.empty()) return GradcheckResult{};
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (differentiable(inputs[i])) wrt.push_back(i);
  const size_t n_in = inputs.size();
  auto first_derivative = [&](const Tensors& all) {
    EnableGradGuard grad_on;  // gradcheck evaluates the numerical side under no_grad
    Tensors in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_in));
    Tensors out = fn(in);
    Tensors ys, gs, xs;
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!out[outs[k]].requires_grad()) continue;
      ys.push_back(out[outs[k]]);
      gs.push_back(all[n_in + k]);
    }
    for (size_t i : wrt) xs.push_back(in[i]);
    if (ys.empty()) return Tensors{};
    Tensors g = grad(ys, xs, gs, /*retain_graph=*/true, /*create_graph=*/true,
                     /*allow_unused=*/true);
    Tensors defined;
    for (Tensor& t : g)
      if (t.defined()) defined.push_back(t);
    return defined;
  };
  Tensors all = inputs;
  for (Tensor& v : vs) all.push_back(v);
  return gradcheck(first_derivative, all, options);
}

}  // namespace ember::autograd
