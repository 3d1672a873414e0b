#include "op_table.h"

#include <cmath>

namespace ember::testing {

double& RefTensor::at(const Shape& idx) {
  Shape st = strides();
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * st[i];
  return data[static_cast<size_t>(off)];
}
double RefTensor::at(const Shape& idx) const { return const_cast<RefTensor*>(this)->at(idx); }

RefTensor to_ref(const Tensor& t) {
  Tensor c = t.to(kCPU).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return RefTensor(t.sizes(), std::vector<double>(p, p + c.numel()));
}

Shape unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] == 0 ? 0 : i % shape[d];
    i = shape[d] == 0 ? 0 : i / shape[d];
  }
  return idx;
}

double broadcast_at(const RefTensor& t, const Shape& idx) {
  Shape st = t.strides();
  int64_t off = 0;
  int64_t lead = static_cast<int64_t>(idx.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.shape[d] != 1) off += idx[d + lead] * st[d];
  }
  return t.data[static_cast<size_t>(off)];
}

RefTensor ref_unary(const RefTensor& a, const std::function<double(double)>& f) {
  RefTensor out(a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) out.data[i] = f(a.data[i]);
  return out;
}

RefTensor ref_binary(const RefTensor& a, const RefTensor& b,
                     const std::function<double(double, double)>& f) {
  RefTensor out(broadcast_shapes(a.shape, b.shape, "ref_binary"));
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape idx = unravel(i, out.shape);
    out.data[i] = f(broadcast_at(a, idx), broadcast_at(b, idx));
  }
  return out;
}

RefTensor ref_ternary(const RefTensor& a, const RefTensor& b, const RefTensor& c,
                      const std::function<double(double, double, double)>& f) {
  Shape s =
      broadcast_shapes(broadcast_shapes(a.shape, b.shape, "ref_ternary"), c.shape, "ref_ternary");
  RefTensor out(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape idx = unravel(i, out.shape);
    out.data[i] = f(broadcast_at(a, idx), broadcast_at(b, idx), broadcast_at(c, idx));
  }
  return out;
}

double tolerance_for(DType dt, double scale) {
  switch (dt) {
    case kFloat16:
      return scale * 9.77e-4;
    case kBFloat16:
      return scale * 7.82e-3;
    case kFloat32:
      return scale * 1.2e-7 * 8;
    case kFloat64:
      return scale * 2.3e-16 * 64;
    default:
      return 0.0;  // integers and bool compare exactly
  }
}

std::vector<OpInfo>& op_table() {
  static std::vector<OpInfo> t;
  return t;
}

OpTableRegistrar::OpTableRegistrar(std::vector<OpInfo> entries) {
  for (auto& e : entries) op_table().push_back(std::move(e));
}

Tensor random_tensor(const Shape& shape, DType dt, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(shape_numel(shape)) * 31 +
                      static_cast<uint64_t>(dt));
  int64_t n = shape_numel(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if (dt == kBool) {
      x = static_cast<double>(rng() & 1);
    } else if (is_integral(dt)) {
      int64_t l = static_cast<int64_t>(std::ceil(dt == kUInt8 ? std::max(lo, 0.0) : lo));
      int64_t h = static_cast<int64_t>(std::floor(hi));
      if (dt == kUInt8 && h < l) h = l + 5;
      x = static_cast<double>(l + static_cast<int64_t>(rng() % static_cast<uint64_t>(h - l + 1)));
    } else {
      x = lo + (hi - lo) * std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
  }
  return tensor(v, shape).to(dt);
}

Tensor noncontiguous(const Tensor& t) {
  if (t.dim() < 2) {
    // Take every other element of a tensor twice as long.
    Shape big = t.sizes();
    if (big.empty()) return t;
    big[0] *= 2;
    Tensor b = zeros(big, t.options());
    Tensor view = b.slice(0, 0, std::nullopt, 2);
    view.copy_(t);
    return view;
  }
  // Store transposed, view back: same values, column-major strides.
  Tensor tr = t.transpose(0, t.dim() - 1).contiguous();
  return tr.transpose(0, t.dim() - 1);
}

std::vector<Sample> unary_samples(DType dt, double lo, double hi) {
  std::vector<Sample> s;
  uint64_t seed = 11;
  for (const Shape& shape : std::vector<Shape>{{}, {0}, {1}, {7}, {3, 4}, {2, 3, 5}, {2, 0, 3}}) {
    s.push_back({{random_tensor(shape, dt, lo, hi, seed++)}, "shape " + shape_str(shape)});
  }
  s.push_back({{noncontiguous(random_tensor({4, 5}, dt, lo, hi, seed++))}, "transposed [4, 5]"});
  s.push_back({{noncontiguous(random_tensor({6}, dt, lo, hi, seed++))}, "strided [6]"});
  s.push_back({{random_tensor({3, 1}, dt, lo, hi, seed++).expand({3, 4})}, "expanded [3, 4]"});
  return s;
}

std::vector<Sample> binary_samples(DType dt, double lo, double hi, double lo_b, double hi_b) {
  std::vector<Sample> s;
  uint64_t seed = 101;
  auto pair = [&](const Shape& a, const Shape& b, const std::string& note) {
    s.push_back(
        {{random_tensor(a, dt, lo, hi, seed++), random_tensor(b, dt, lo_b, hi_b, seed++)}, note});
  };
  pair({}, {}, "0-dim");
  pair({5}, {5}, "same shape");
  pair({0}, {0}, "empty");
  pair({1}, {1}, "size 1");
  pair({3, 4}, {3, 4}, "2-D");
  pair({3, 1}, {1, 4}, "broadcast [3,1] x [1,4]");
  pair({4}, {2, 3, 4}, "broadcast [4] x [2,3,4]");
  pair({}, {3}, "0-dim x [3]");
  pair({2, 0, 3}, {3}, "empty broadcast");
  s.push_back({{noncontiguous(random_tensor({4, 5}, dt, lo, hi, seed++)),
                random_tensor({4, 5}, dt, lo_b, hi_b, seed++)},
               "non-contiguous lhs"});
  s.push_back({{random_tensor({4, 5}, dt, lo, hi, seed++),
                noncontiguous(random_tensor({4, 5}, dt, lo_b, hi_b, seed++))},
               "non-contiguous rhs"});
  return s;
}

std::vector<DType> all_dtypes() {
  return {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
}
std::vector<DType> numeric_dtypes() {
  return {kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
}
std::vector<DType> floating_dtypes() { return {kFloat16, kBFloat16, kFloat32, kFloat64}; }
std::vector<DType> integral_dtypes(bool include_bool) {
  if (include_bool) return {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64};
  return {kUInt8, kInt8, kInt16, kInt32, kInt64};
}

}  // namespace ember::testing
