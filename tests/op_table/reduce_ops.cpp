// Op-table entries for the reduction family (core/ops/reduce.h) and softmax / log_softmax /
// one_hot (core/ops/softmax.h).
//
// Each entry's run() applies the op for a list of (dims, keepdim) cases derived from the
// sample's shape -- all dims, each single dim (positive and negative), pairs of dims -- and
// the reference computes the same list with naive float64 loops (ref_reduce below), so one
// sample checks every way of reducing it. Ops without an identity skip the cases that reduce
// an empty dim (those throw; tests/test_reduce.cpp checks the errors).

#include <cmath>
#include <limits>

#include "op_table.h"

namespace ember::testing {
namespace {

struct Case {
  Shape dims;
  bool keepdim;
};

// The dims a case reduces, wrapped and as a mask (an empty list reduces everything).
std::vector<bool> reduced(const Shape& shape, const Shape& dims) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    if (nd > 0) mask[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  }
  return mask;
}

bool reduces_empty_dim(const Shape& shape, const Shape& dims) {
  std::vector<bool> mask = reduced(shape, dims);
  for (size_t d = 0; d < shape.size(); ++d)
    if (mask[d] && shape[d] == 0) return true;
  return false;
}

// (dims, keepdim) cases for a shape; `nonempty` drops cases that reduce an empty dim.
std::vector<Case> cases_for(const Shape& shape, bool nonempty) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t n = std::max<int64_t>(nd, 1);
  std::vector<Case> all = {{{}, false}, {{}, true}};
  for (int64_t d = 0; d < n; ++d) {
    all.push_back({{d}, false});
    all.push_back({{d - n}, true});
  }
  if (nd >= 2) {
    all.push_back({{0, nd - 1}, false});
    all.push_back({{nd - 1, 0}, true});
  }
  if (nd >= 3) all.push_back({{-1, -2}, false});
  std::vector<Case> out;
  for (auto& c : all)
    if (!nonempty || !reduces_empty_dim(shape, c.dims)) out.push_back(c);
  return out;
}

// Single-dim cases (max(dim), argmax(dim), cumsum...): every dim, positive and negative.
std::vector<Case> dim_cases(const Shape& shape, bool nonempty) {
  std::vector<Case> out;
  for (auto& c : cases_for(shape, nonempty))
    if (c.dims.size() == 1) out.push_back(c);
  return out;
}

// Naive reduction: out[o] = f(values of x that map to o, in row-major order of x).
RefTensor ref_reduce(const RefTensor& x, const Shape& dims, bool keepdim,
                     const std::function<double(const std::vector<double>&)>& f) {
  std::vector<bool> mask = reduced(x.shape, dims);
  Shape out_shape, kept_shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!mask[d]) {
      out_shape.push_back(x.shape[d]);
      kept_shape.push_back(x.shape[d]);
    } else if (keepdim) {
      out_shape.push_back(1);
    }
  }
  RefTensor out(out_shape);
  std::vector<std::vector<double>> buckets(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape idx = unravel(i, x.shape);
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      if (!mask[d]) o = o * x.shape[d] + idx[d];
    buckets[static_cast<size_t>(o)].push_back(x.data[static_cast<size_t>(i)]);
  }
  for (int64_t o = 0; o < out.numel(); ++o) out.data[static_cast<size_t>(o)] = f(buckets[o]);
  return out;
}

double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double ref_mean(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : ref_sum(v) / static_cast<double>(v.size());
}
double ref_var(const std::vector<double>& v, int64_t correction) {
  double m = ref_mean(v), q = 0;
  for (double x : v) q += (x - m) * (x - m);
  return q / std::max<double>(0.0, static_cast<double>(v.size()) - static_cast<double>(correction));
}
// Index of the first maximum (is_max) or minimum; the first NaN wins.
int64_t ref_arg(const std::vector<double>& v, bool is_max) {
  int64_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
    if (is_max ? v[i] > v[best] : v[i] < v[best]) best = static_cast<int64_t>(i);
  }
  return best;
}
double ref_extremum(const std::vector<double>& v, bool is_max) { return v[ref_arg(v, is_max)]; }
double ref_logsumexp(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (double x : v) m = std::max(m, x);
  if (v.empty() || std::isinf(m)) return m;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}
double ref_norm(const std::vector<double>& v, double p) {
  double acc = 0;
  for (double x : v)
    acc = std::isinf(p) ? std::max(acc, std::abs(x)) : acc + std::pow(std::abs(x), p);
  return std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
}

// Standard reduction samples: 0-dim, sizes 0 and 1, 1-D to 3-D, a row long enough for several
// pairwise leaves, a range long enough to be split into chunks, and non-contiguous layouts
// (transposed, permuted, sliced, expanded).
std::vector<Sample> reduce_samples(DType dt, double lo, double hi, bool long_inputs = true) {
  std::vector<Sample> s;
  uint64_t seed = 301;
  auto add = [&](Tensor t, const std::string& note) { s.push_back({{std::move(t)}, note}); };
  for (const Shape& shape : std::vector<Shape>{{}, {1}, {7}, {3, 4}, {2, 3, 5}, {0}, {2, 0, 3}}) {
    add(random_tensor(shape, dt, lo, hi, seed++), "shape " + shape_str(shape));
  }
  add(noncontiguous(random_tensor({4, 5}, dt, lo, hi, seed++)), "transposed [4, 5]");
  add(noncontiguous(random_tensor({6}, dt, lo, hi, seed++)), "strided [6]");
  add(random_tensor({3, 1}, dt, lo, hi, seed++).expand({3, 4}), "expanded [3, 4]");
  add(random_tensor({5, 3, 2}, dt, lo, hi, seed++).permute({2, 1, 0}), "permuted [2, 3, 5]");
  if (long_inputs) {
    add(random_tensor({4, 300}, dt, lo, hi, seed++), "[4, 300]");
    add(random_tensor({70000}, dt, lo, hi, seed++), "[70000] (split into chunks)");
  }
  return s;
}

// Values with exact zeros in every dtype, for all / any.
std::vector<Sample> logical_samples(DType dt) {
  std::vector<Sample> s = reduce_samples(kInt64, 0, 3, false);
  for (auto& x : s) x.args[0] = x.args[0].to(dt);
  return s;
}

DType int_to_int64(DType dt) { return is_floating(dt) ? dt : kInt64; }

// Zeros in rows and columns: none, one, or several per line (prod / cumprod's special cases).
Sample zeros_sample(DType dt) {
  Tensor x = tensor<double>({0.5, -1.25, 1.5, 0.75, 1.25, 0, -0.5, 1, 0, 0.5, 0, -1.5}, {3, 4});
  if (!is_floating(dt)) x = abs(x * 2);  // 0, 1, 2, 3 (truncated) in every integer dtype
  return {{x.to(dt)}, "[3, 4] with zeros"};
}

// ---- which float64 samples the autograd suite checks ----------------------------------------
// gradcheck builds dense Jacobians by central differences: two forward passes per input element
// and one backward per output element. The long samples exist to test the kernels' chunking;
// their Jacobians cannot be built in reasonable time or memory (70000 x 70000 for a scan), and
// the formulas do not depend on the length, so gradcheck leaves them out.
bool gradcheck_sized(const Sample& s) { return s.args[0].numel() <= 2000; }
// For max / amax / the inf-norm. An expanded sample repeats its values, so its maxima are tied:
// a kink, where they have no derivative (the even split among ties is a subgradient, not what
// central differences measure).
bool no_ties(const Sample& s) {
  const Tensor& x = s.args[0];
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.stride(d) == 0 && x.size(d) > 1) return false;
  return gradcheck_sized(s);
}
// For the ops without an identity (max, amax...): a sample where every case would reduce an
// empty dim ([0]) has no outputs at all, which the suite reads as "not differentiable" and
// stops at, so it is left out too.
bool no_ties_some_output(const Sample& s) {
  return no_ties(s) && !cases_for(s.args[0].sizes(), true).empty();
}
// var with correction 1 of a single element is 0 / 0: a NaN output has no derivative to check.
bool several_elements(const Sample& s) { return s.args[0].numel() != 1 && gradcheck_sized(s); }

OpInfo with_grad_samples(OpInfo info, std::function<bool(const Sample&)> ok) {
  info.grad_sample_ok = std::move(ok);
  return info;
}

// An entry for a reduction op(x, dims, keepdim) with reference f over each output's values.
OpInfo reduce_entry(
    const std::string& name, std::vector<DType> dtypes,
    std::function<std::vector<Sample>(DType)> samples, bool nonempty,
    std::function<Tensor(const Tensor&, const Shape&, bool)> op,
    std::function<double(const std::vector<double>&)> f,
    std::function<DType(DType)> expected_dtype = [](DType dt) { return dt; }) {
  OpInfo info;
  info.expected_dtype = std::move(expected_dtype);
  info.name = name;
  info.dtypes = std::move(dtypes);
  info.samples = std::move(samples);
  info.run = [op, nonempty](const Sample& s) {
    std::vector<Tensor> out;
    for (auto& c : cases_for(s.args[0].sizes(), nonempty))
      out.push_back(op(s.args[0], c.dims, c.keepdim));
    return out;
  };
  info.reference = [f, nonempty](const Refs& r) {
    Refs out;
    for (auto& c : cases_for(r[0].shape, nonempty))
      out.push_back(ref_reduce(r[0], c.dims, c.keepdim, f));
    return out;
  };
  return info;
}

// max / min: the full reduction, then (values, indices) along every dim.
OpInfo minmax_entry(const std::string& name, bool is_max) {
  OpInfo info;
  info.name = name;
  info.dtypes = all_dtypes();
  info.samples = [](DType dt) { return reduce_samples(dt, -2, 2); };
  info.grad_sample_ok = no_ties_some_output;
  info.run = [is_max](const Sample& s) {
    const Tensor& x = s.args[0];
    std::vector<Tensor> out;
    if (x.numel() > 0) out.push_back(is_max ? x.max() : x.min());
    for (auto& c : dim_cases(x.sizes(), true)) {
      auto [values, indices] = is_max ? x.max(c.dims[0], c.keepdim) : x.min(c.dims[0], c.keepdim);
      EMBER_CHECK(values.dtype() == x.dtype() && indices.dtype() == kInt64, "max/min dtypes");
      out.push_back(values);
      out.push_back(indices);
    }
    return out;
  };
  info.reference = [is_max](const Refs& r) {
    Refs out;
    auto value = [is_max](const std::vector<double>& v) { return ref_extremum(v, is_max); };
    auto index = [is_max](const std::vector<double>& v) { return double(ref_arg(v, is_max)); };
    if (r[0].numel() > 0) out.push_back(ref_reduce(r[0], {}, false, value));
    for (auto& c : dim_cases(r[0].shape, true)) {
      out.push_back(ref_reduce(r[0], c.dims, c.keepdim, value));
      out.push_back(ref_reduce(r[0], c.dims, c.keepdim, index));
    }
    return out;
  };
  return info;
}

// argmax / argmin: without a dim (flat index, keepdim false and true), then along every dim.
OpInfo arg_entry(const std::string& name, bool is_max) {
  OpInfo info;
  info.name = name;
  info.dtypes = all_dtypes();
  info.samples = [](DType dt) { return reduce_samples(dt, -2, 2); };
  info.expected_dtype = [](DType) { return kInt64; };
  info.run = [is_max](const Sample& s) {
    const Tensor& x = s.args[0];
    std::vector<Tensor> out;
    auto arg = [&](std::optional<int64_t> d, bool keep) {
      return is_max ? x.argmax(d, keep) : x.argmin(d, keep);
    };
    if (x.numel() > 0) {
      out.push_back(arg(std::nullopt, false));
      out.push_back(arg(std::nullopt, true));
    }
    for (auto& c : dim_cases(x.sizes(), true)) out.push_back(arg(c.dims[0], c.keepdim));
    return out;
  };
  info.reference = [is_max](const Refs& r) {
    Refs out;
    auto index = [is_max](const std::vector<double>& v) { return double(ref_arg(v, is_max)); };
    if (r[0].numel() > 0) {
      out.push_back(ref_reduce(r[0], {}, false, index));
      out.push_back(ref_reduce(r[0], {}, true, index));
    }
    for (auto& c : dim_cases(r[0].shape, true))
      out.push_back(ref_reduce(r[0], c.dims, c.keepdim, index));
    return out;
  };
  return info;
}

// cumsum / cumprod along every dim.
OpInfo scan_entry(const std::string& name, bool is_prod) {
  OpInfo info;
  info.name = name;
  info.dtypes = all_dtypes();
  info.samples = [is_prod](DType dt) {
    if (!is_prod) {
      std::vector<Sample> s = reduce_samples(dt, -2, 2);
      // A device scans a line in tiles (Note [Two scan layouts] in kernels/cuda/scan.cu): two
      // float64 cumsums of 70000 values agree to ~2000 eps of (1 + |partial sum|).
      if (dt == kFloat64)
        for (Sample& x : s) x.device_tol_scale = 16;
      return s;
    }
    std::vector<Sample> s = reduce_samples(dt, -1.5, 2, false);
    s.insert(s.begin(), zeros_sample(dt));  // first: gradgradcheck covers it too
    return s;
  };
  info.grad_sample_ok = gradcheck_sized;
  info.expected_dtype = int_to_int64;
  info.run = [is_prod](const Sample& s) {
    std::vector<Tensor> out;
    for (auto& c : dim_cases(s.args[0].sizes(), false))
      out.push_back(is_prod ? s.args[0].cumprod(c.dims[0]) : s.args[0].cumsum(c.dims[0]));
    return out;
  };
  info.reference = [is_prod](const Refs& r) {
    Refs out;
    const RefTensor& x = r[0];
    for (auto& c : dim_cases(x.shape, false)) {
      RefTensor y(x.shape);
      if (x.dim() == 0) {
        y.data = x.data;
        out.push_back(y);
        continue;
      }
      int64_t d = c.dims[0] < 0 ? c.dims[0] + x.dim() : c.dims[0];
      int64_t step = x.strides()[d];
      for (int64_t i = 0; i < x.numel(); ++i) {
        Shape idx = unravel(i, x.shape);
        double prev = idx[d] == 0 ? (is_prod ? 1.0 : 0.0) : y.data[i - step];
        y.data[i] = is_prod ? prev * x.data[i] : prev + x.data[i];
      }
      out.push_back(y);
    }
    return out;
  };
  return info;
}

// softmax / log_softmax along every dim.
OpInfo softmax_entry(const std::string& name, bool log) {
  OpInfo info;
  info.name = name;
  info.dtypes = floating_dtypes();
  info.samples = [](DType dt) {
    std::vector<Sample> s = reduce_samples(dt, -4, 4, false);
    // More than one group of 64 neighbouring lines when reducing a leading dim.
    s.push_back({{random_tensor({3, 150}, dt, -4, 4, 41)}, "[3, 150]"});
    return s;
  };
  info.run = [log](const Sample& s) {
    std::vector<Tensor> out;
    for (auto& c : dim_cases(s.args[0].sizes(), false))
      out.push_back(log ? s.args[0].log_softmax(c.dims[0]) : s.args[0].softmax(c.dims[0]));
    return out;
  };
  info.reference = [log](const Refs& r) {
    Refs out;
    const RefTensor& x = r[0];
    for (auto& c : dim_cases(x.shape, false)) {
      RefTensor y(x.shape);
      int64_t d = x.dim() == 0 ? -1 : (c.dims[0] < 0 ? c.dims[0] + x.dim() : c.dims[0]);
      for (int64_t i = 0; i < x.numel(); ++i) {
        // The line through element i: every element that differs from it only along d.
        Shape idx = unravel(i, x.shape);
        double m = -std::numeric_limits<double>::infinity(), s = 0;
        int64_t len = d < 0 ? 1 : x.shape[d];
        std::vector<double> line;
        for (int64_t k = 0; k < len; ++k) {
          if (d >= 0) idx[d] = k;
          line.push_back(d < 0 ? x.data[i] : x.at(idx));
        }
        for (double v : line) m = std::max(m, v);
        for (double v : line) s += std::exp(v - m);
        y.data[i] = log ? x.data[i] - m - std::log(s) : std::exp(x.data[i] - m) / s;
      }
      out.push_back(y);
    }
    return out;
  };
  return info;
}

const OpTableRegistrar reg({
    with_grad_samples(reduce_entry(
                          "sum", all_dtypes(), [](DType dt) { return reduce_samples(dt, -2, 2); },
                          false,
                          [](const Tensor& x, const Shape& d, bool k) { return x.sum(d, k); },
                          ref_sum, int_to_int64),
                      gradcheck_sized),
    with_grad_samples(
        reduce_entry(
            "mean", floating_dtypes(), [](DType dt) { return reduce_samples(dt, -2, 2); }, false,
            [](const Tensor& x, const Shape& d, bool k) { return x.mean(d, k); }, ref_mean),
        gradcheck_sized),
    with_grad_samples(reduce_entry(
                          "prod", all_dtypes(),
                          [](DType dt) {
                            std::vector<Sample> s = reduce_samples(dt, -1.5, 1.5, false);
                            s.insert(s.begin(),
                                     zeros_sample(dt));  // first: gradgradcheck covers it too
                            return s;
                          },
                          false,
                          [](const Tensor& x, const Shape& d, bool k) { return x.prod(d, k); },
                          [](const std::vector<double>& v) {
                            double p = 1;
                            for (double x : v) p *= x;
                            return p;
                          },
                          int_to_int64),
                      gradcheck_sized),
    with_grad_samples(reduce_entry(
                          "var", floating_dtypes(),
                          [](DType dt) { return reduce_samples(dt, -2, 2); }, false,
                          [](const Tensor& x, const Shape& d, bool k) { return x.var(d, 1, k); },
                          [](const std::vector<double>& v) { return ref_var(v, 1); }),
                      several_elements),
    with_grad_samples(reduce_entry(
                          "std", floating_dtypes(),
                          [](DType dt) { return reduce_samples(dt, -2, 2); }, false,
                          [](const Tensor& x, const Shape& d, bool k) { return x.std(d, 0, k); },
                          [](const std::vector<double>& v) { return std::sqrt(ref_var(v, 0)); }),
                      gradcheck_sized),
    with_grad_samples(reduce_entry(
                          "amax", all_dtypes(), [](DType dt) { return reduce_samples(dt, -2, 2); },
                          true,
                          [](const Tensor& x, const Shape& d, bool k) { return x.amax(d, k); },
                          [](const std::vector<double>& v) { return ref_extremum(v, true); }),
                      no_ties_some_output),
    with_grad_samples(reduce_entry(
                          "amin", all_dtypes(), [](DType dt) { return reduce_samples(dt, -2, 2); },
                          true,
                          [](const Tensor& x, const Shape& d, bool k) { return x.amin(d, k); },
                          [](const std::vector<double>& v) { return ref_extremum(v, false); }),
                      no_ties_some_output),
    minmax_entry("max", true),
    minmax_entry("min", false),
    arg_entry("argmax", true),
    arg_entry("argmin", false),
    with_grad_samples(reduce_entry(
                          "logsumexp", floating_dtypes(),
                          [](DType dt) { return reduce_samples(dt, -4, 4); }, false,
                          [](const Tensor& x, const Shape& d, bool k) { return x.logsumexp(d, k); },
                          ref_logsumexp),
                      gradcheck_sized),
    reduce_entry(
        "all", all_dtypes(), logical_samples, false,
        [](const Tensor& x, const Shape& d, bool k) { return x.all(d, k); },
        [](const std::vector<double>& v) {
          for (double x : v)
            if (x == 0) return 0.0;
          return 1.0;
        },
        [](DType) { return kBool; }),
    reduce_entry(
        "any", all_dtypes(), logical_samples, false,
        [](const Tensor& x, const Shape& d, bool k) { return x.any(d, k); },
        [](const std::vector<double>& v) {
          for (double x : v)
            if (x != 0) return 1.0;
          return 0.0;
        },
        [](DType) { return kBool; }),
    scan_entry("cumsum", false),
    scan_entry("cumprod", true),
    softmax_entry("softmax", false),
    softmax_entry("log_softmax", true),
});

// norm: p = 1, 2, 3 over every case, and INFINITY where nothing empty is reduced.
const OpTableRegistrar reg_norm({with_grad_samples(
    OpInfo{// Values in [-1, 1] so that the 1-norm of 70000 of them stays within float16's range.
           "norm", floating_dtypes(), [](DType dt) { return reduce_samples(dt, -1, 1); },
           [](const Sample& s) {
             std::vector<Tensor> out;
             const Tensor& x = s.args[0];
             for (double p : {1.0, 2.0, 3.0})
               for (auto& c : cases_for(x.sizes(), false))
                 out.push_back(x.norm(p, c.dims, c.keepdim));
             for (auto& c : cases_for(x.sizes(), true))
               out.push_back(x.norm(INFINITY, c.dims, c.keepdim));
             return out;
           },
           [](const Refs& r) {
             Refs out;
             for (double p : {1.0, 2.0, 3.0})
               for (auto& c : cases_for(r[0].shape, false))
                 out.push_back(
                     ref_reduce(r[0], c.dims, c.keepdim,
                                [p](const std::vector<double>& v) { return ref_norm(v, p); }));
             for (auto& c : cases_for(r[0].shape, true))
               out.push_back(ref_reduce(r[0], c.dims, c.keepdim, [](const std::vector<double>& v) {
                 return ref_norm(v, INFINITY);
               }));
             return out;
           }},
    no_ties)});  // p = inf is a max of |x|: no ties (no_ties)

// one_hot: int64 only; explicit and inferred num_classes.
const OpTableRegistrar reg_one_hot({OpInfo{
    "one_hot",
    {kInt64},
    [](DType) {
      return std::vector<Sample>{
          {{random_tensor({5}, kInt64, 0, 3, 1)}, "[5]"},
          {{random_tensor({2, 3}, kInt64, 0, 4, 2)}, "[2, 3]"},
          {{noncontiguous(random_tensor({3, 4}, kInt64, 0, 4, 3))}, "transposed [3, 4]"},
          {{random_tensor({}, kInt64, 0, 2, 4)}, "0-dim"}};
    },
    [](const Sample& s) {
      return std::vector<Tensor>{one_hot(s.args[0], 6), one_hot(s.args[0])};
    },
    [](const Refs& r) {
      Refs out;
      double hi = 0;
      for (double v : r[0].data) hi = std::max(hi, v);
      for (int64_t classes : {int64_t{6}, static_cast<int64_t>(hi) + 1}) {
        Shape shape = r[0].shape;
        shape.push_back(classes);
        RefTensor y(shape, 0.0);
        for (int64_t i = 0; i < r[0].numel(); ++i)
          y.data[static_cast<size_t>(i * classes + static_cast<int64_t>(r[0].data[i]))] = 1;
        out.push_back(y);
      }
      return out;
    },
    4.0,
    [](DType) { return kInt64; }}});

}  // namespace
}  // namespace ember::testing
