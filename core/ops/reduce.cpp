#include "core/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/view.h"

namespace ember {

namespace {

constexpr const char* kReduceOps[] = {"sum",  "mean", "prod", "var",    "std",    "amax",
                                      "amin", "max",  "min",  "argmax", "argmin", "logsumexp",
                                      "norm", "all",  "any",  "cumsum", "cumprod"};
static_assert(sizeof(kReduceOps) / sizeof(kReduceOps[0]) == 17);
const OpFamilyRegistrar registrar("reduce", kReduceOps);

// Which dims of `self` a dims list reduces; empty means all. Throws on a bad or repeated dim.
std::vector<bool> reduced_mask(const Tensor& self, const Shape& dims, const char* op) {
  const int64_t nd = self.dim();
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd, op);
    EMBER_CHECK(!seen[w], op, ": dim ", w, " appears multiple times in the list of dims ", dims);
    seen[w] = true;
    if (nd > 0) mask[w] = true;
  }
  return mask;
}

// Drops size-1 dims and merges neighbours whose strides allow it; keeps at least one dim.
void coalesce(Shape& sizes, Shape& strides) {
  Shape s, st;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!s.empty() && st.back() == strides[i] * sizes[i]) {
      s.back() *= sizes[i];
      st.back() = strides[i];
    } else {
      s.push_back(sizes[i]);
      st.push_back(strides[i]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    st.push_back(0);
  }
  sizes = std::move(s);
  strides = std::move(st);
}

// What a reduction returns, and whether it has an identity for empty reductions.
enum class Outputs { Values, Indices, ValuesAndIndices };
enum class Identity { Yes, No };

// Note [Reduce plan] in core/ops/reduce.h. Allocates plan.out (in out_dtype) and/or
// plan.indices. Ops returning indices keep the reduced dims in logical order; ops without an
// identity reject empty reduced dims.
ReducePlan make_plan(const char* op, const Tensor& input, const Shape& dims, bool keepdim,
                     DType out_dtype, Outputs outputs = Outputs::Values,
                     Identity identity = Identity::Yes) {
  const bool want_values = outputs != Outputs::Indices;
  const bool want_indices = outputs != Outputs::Values;
  const bool logical_order = want_indices;
  const bool no_identity = identity == Identity::No;
  std::vector<bool> mask = reduced_mask(input, dims, op);
  ReducePlan plan;
  plan.op = op;
  plan.input = input;
  Shape out_shape;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (mask[d]) {
      EMBER_CHECK(!no_identity || input.size(d) != 0, op, ": expected reduction dim ", d,
                  " to have non-zero size (input shape ", input.sizes(),
                  "); the operation has no identity");
      plan.inner_sizes.push_back(input.size(d));
      plan.inner_strides.push_back(input.stride(d));
      if (keepdim) out_shape.push_back(1);
    } else {
      plan.outer_sizes.push_back(input.size(d));
      plan.outer_strides.push_back(input.stride(d));
      out_shape.push_back(input.size(d));
    }
  }
  plan.num_outputs = shape_numel(plan.outer_sizes);
  plan.reduce_size = shape_numel(plan.inner_sizes);
  if (!logical_order) {
    // Walk memory in order: largest stride first (stable, so equal strides keep their order).
    std::vector<size_t> order(plan.inner_sizes.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::abs(plan.inner_strides[a]) > std::abs(plan.inner_strides[b]);
    });
    Shape s, st;
    for (size_t i : order) {
      s.push_back(plan.inner_sizes[i]);
      st.push_back(plan.inner_strides[i]);
    }
    plan.inner_sizes = std::move(s);
    plan.inner_strides = std::move(st);
  }
  coalesce(plan.outer_sizes, plan.outer_strides);
  coalesce(plan.inner_sizes, plan.inner_strides);
  TensorOptions opts = TensorOptions(out_dtype).device(input.device());
  if (want_values) plan.out = empty(out_shape, opts);
  if (want_indices) plan.indices = empty(out_shape, TensorOptions(kInt64).device(input.device()));
  return plan;
}

DType sum_dtype(DType t) { return is_floating(t) ? t : kInt64; }

void check_floating(const Tensor& self, const char* op) {
  EMBER_CHECK(is_floating(self.dtype()), op, ": expected a floating point input, got dtype ",
              dtype_name(self.dtype()), " (convert it with .to(kFloat32) first)");
}

Tensor values_or_indices(const Tensor& self, const Shape& dims, bool keepdim, bool is_max,
                         bool indices, const char* op) {
  ReducePlan plan = make_plan(op, self, dims, keepdim, self.dtype(),
                              indices ? Outputs::Indices : Outputs::Values, Identity::No);
  (indices ? arg_minmax_stub : minmax_stub)(self.device().type, plan, is_max);
  return indices ? plan.indices : plan.out;
}

std::tuple<Tensor, Tensor> minmax_dim(const Tensor& self, int64_t dim, bool keepdim, bool is_max,
                                      const char* op) {
  ReducePlan plan =
      make_plan(op, self, {dim}, keepdim, self.dtype(), Outputs::ValuesAndIndices, Identity::No);
  arg_minmax_stub(self.device().type, plan, is_max);
  return {plan.out, plan.indices};
}

Tensor arg_minmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim, bool is_max,
                  const char* op) {
  if (dim) {
    return values_or_indices(self, {*dim}, keepdim, is_max, true, op);
  }
  // The index into the flattened tensor; keepdim keeps every dim with size 1.
  Tensor flat_index = values_or_indices(self, {}, false, is_max, true, op);
  if (!keepdim) return flat_index;
  return native::reshape(flat_index, Shape(static_cast<size_t>(self.dim()), 1));
}

Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype, const char* op,
            DispatchStub<scan_fn>& stub) {
  int64_t d = wrap_dim(dim, self.dim(), op);
  Tensor in = dtype ? native::to(self, *dtype) : self;
  Tensor out = empty(in.sizes(), TensorOptions(sum_dtype(in.dtype())).device(in.device()));
  if (out.numel() > 0) stub(in.device().type, out, in, self.dim() == 0 ? 0 : d);
  return out;
}

}  // namespace

// ---- sums and means ------------------------------------------------------------------------

Tensor native::sum(const Tensor& self, const Shape& dims, bool keepdim,
                   std::optional<DType> dtype) {
  Tensor in = dtype ? native::to(self, *dtype) : self;
  ReducePlan plan = make_plan("sum", in, dims, keepdim, sum_dtype(in.dtype()));
  sum_stub(in.device().type, plan);
  return plan.out;
}

Tensor native::mean(const Tensor& self, const Shape& dims, bool keepdim) {
  check_floating(self, "mean");
  ReducePlan plan = make_plan("mean", self, dims, keepdim, self.dtype());
  mean_stub(self.device().type, plan);
  return plan.out;
}

Tensor native::prod(const Tensor& self, const Shape& dims, bool keepdim) {
  ReducePlan plan = make_plan("prod", self, dims, keepdim, sum_dtype(self.dtype()));
  prod_stub(self.device().type, plan);
  return plan.out;
}

Tensor native::var(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  check_floating(self, "var");
  ReducePlan plan = make_plan("var", self, dims, keepdim, self.dtype());
  var_stub(self.device().type, plan, correction, false);
  return plan.out;
}

Tensor native::std(const Tensor& self, const Shape& dims, int64_t correction, bool keepdim) {
  check_floating(self, "std");
  ReducePlan plan = make_plan("std", self, dims, keepdim, self.dtype());
  var_stub(self.device().type, plan, correction, true);
  return plan.out;
}

// ---- extrema -------------------------------------------------------------------------------

Tensor native::amax(const Tensor& self, const Shape& dims, bool keepdim) {
  return values_or_indices(self, dims, keepdim, true, false, "amax");
}
Tensor native::amin(const Tensor& self, const Shape& dims, bool keepdim) {
  return values_or_indices(self, dims, keepdim, false, false, "amin");
}
Tensor native::max(const Tensor& self) {
  return values_or_indices(self, {}, false, true, false, "max");
}
Tensor native::min(const Tensor& self) {
  return values_or_indices(self, {}, false, false, false, "min");
}
std::tuple<Tensor, Tensor> native::max(const Tensor& self, int64_t dim, bool keepdim) {
  return minmax_dim(self, dim, keepdim, true, "max");
}
std::tuple<Tensor, Tensor> native::min(const Tensor& self, int64_t dim, bool keepdim) {
  return minmax_dim(self, dim, keepdim, false, "min");
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_minmax(self, dim, keepdim, true, "argmax");
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_minmax(self, dim, keepdim, false, "argmin");
}

// ---- logsumexp, norms, logical -------------------------------------------------------------

Tensor native::logsumexp(const Tensor& self, const Shape& dims, bool keepdim) {
  Tensor in = is_floating(self.dtype()) ? self : native::to(self, default_dtype());
  ReducePlan plan = make_plan("logsumexp", in, dims, keepdim, in.dtype());
  logsumexp_stub(in.device().type, plan);
  return plan.out;
}

Tensor native::norm(const Tensor& self, double p, const Shape& dims, bool keepdim) {
  check_floating(self, "norm");
  EMBER_CHECK(p >= 0 || p == -INFINITY, "norm: p must be 0, a p > 0, INFINITY or -INFINITY, got ",
              p);
  // The infinity norms are a max and a min: no identity for an empty reduction.
  ReducePlan plan = make_plan("norm", self, dims, keepdim, self.dtype(), Outputs::Values,
                              std::isinf(p) ? Identity::No : Identity::Yes);
  norm_stub(self.device().type, plan, p);
  return plan.out;
}

Tensor all(const Tensor& self, const Shape& dims, bool keepdim) {
  ReducePlan plan = make_plan("all", self, dims, keepdim, kBool);
  all_any_stub(self.device().type, plan, true);
  return plan.out;
}

Tensor any(const Tensor& self, const Shape& dims, bool keepdim) {
  ReducePlan plan = make_plan("any", self, dims, keepdim, kBool);
  all_any_stub(self.device().type, plan, false);
  return plan.out;
}

// ---- scans ---------------------------------------------------------------------------------

Tensor native::cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan(self, dim, dtype, "cumsum", cumsum_stub);
}
Tensor native::cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan(self, dim, dtype, "cumprod", cumprod_stub);
}

// ---- Tensor methods ------------------------------------------------------------------------

Tensor Tensor::argmax(std::optional<int64_t> d, bool keepdim) const {
  return ember::argmax(*this, d, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> d, bool keepdim) const {
  return ember::argmin(*this, d, keepdim);
}
Tensor Tensor::all(const Shape& dims, bool keepdim) const {
  return ember::all(*this, dims, keepdim);
}
Tensor Tensor::any(const Shape& dims, bool keepdim) const {
  return ember::any(*this, dims, keepdim);
}

}  // namespace ember
