// Op-table entries for the linear algebra family (core/ops/linalg.h): matmul in each of its
// shape forms (1-D, 2-D, batched with broadcasting), mm, bmm, addmm, linear, dot, outer. The
// samples include transposed operands, sizes 0 and 1, and products large enough to run the
// packed GEMM with partial tiles and to be split over threads. The reference is a naive float64
// triple loop with PyTorch's matmul shape rules.

#include "op_table.h"

namespace ember::testing {
namespace {

// Element [batch..., r, c] of a matrix batch t (t's batch dims broadcast against batch_idx,
// right-aligned; size-1 dims repeat).
double at_batch(const RefTensor& t, const Shape& batch_idx, int64_t r, int64_t c) {
  Shape idx;
  const int64_t tb = t.dim() - 2, lead = static_cast<int64_t>(batch_idx.size()) - tb;
  for (int64_t d = 0; d < tb; ++d) idx.push_back(t.shape[d] == 1 ? 0 : batch_idx[d + lead]);
  idx.push_back(r);
  idx.push_back(c);
  return t.at(idx);
}

// PyTorch's matmul rules on float64 reference tensors.
RefTensor ref_matmul(const RefTensor& a0, const RefTensor& b0) {
  if (a0.dim() == 1 && b0.dim() == 1) {
    double s = 0;
    for (int64_t i = 0; i < a0.numel(); ++i) s += a0.data[i] * b0.data[i];
    return RefTensor(Shape{}, {s});
  }
  RefTensor a = a0, b = b0;
  if (a.dim() == 1) a.shape = {1, a.shape[0]};
  if (b.dim() == 1) b.shape = {b.shape[0], 1};
  const int64_t m = a.shape[a.dim() - 2], k = a.shape[a.dim() - 1], n = b.shape[b.dim() - 1];
  Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                 Shape(b.shape.begin(), b.shape.end() - 2), "ref_matmul");
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  RefTensor out(out_shape);
  const int64_t batches = shape_numel(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    Shape bidx = unravel(bi, batch);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += at_batch(a, bidx, i, p) * at_batch(b, bidx, p, j);
        out.data[static_cast<size_t>((bi * m + i) * n + j)] = s;
      }
  }
  Shape result = batch;
  if (a0.dim() > 1) result.push_back(m);
  if (b0.dim() > 1) result.push_back(n);
  out.shape = result;
  return out;
}

// Small values keep integer products exact; uint8 results must stay below 256.
double hi_for(DType dt) { return dt == kUInt8 ? 1.0 : 2.0; }

std::vector<Sample> pairs(DType dt, const std::vector<std::pair<Shape, Shape>>& shapes) {
  std::vector<Sample> s;
  uint64_t seed = 501;
  for (auto& [sa, sb] : shapes) {
    s.push_back({{random_tensor(sa, dt, -2, hi_for(dt), seed),
                  random_tensor(sb, dt, -2, hi_for(dt), seed + 1)},
                 shape_str(sa) + " x " + shape_str(sb)});
    seed += 2;
  }
  return s;
}

// A (rows x cols) matrix stored transposed: same values, column-major strides.
Tensor transposed(const Shape& shape, DType dt, uint64_t seed) {
  return noncontiguous(random_tensor(shape, dt, -2, hi_for(dt), seed));
}

std::vector<Sample> mm_samples(DType dt) {
  std::vector<Sample> s = pairs(dt, {{{3, 4}, {4, 5}},
                                     {{1, 1}, {1, 1}},
                                     {{1, 6}, {6, 3}},
                                     {{5, 6}, {6, 1}},
                                     {{3, 0}, {0, 4}},
                                     {{0, 4}, {4, 5}},
                                     {{37, 45}, {45, 70}},
                                     {{70, 90}, {90, 80}}});
  s.push_back(
      {{transposed({5, 7}, dt, 1), random_tensor({7, 4}, dt, -2, hi_for(dt), 2)}, "A transposed"});
  s.push_back(
      {{random_tensor({5, 7}, dt, -2, hi_for(dt), 3), transposed({7, 40}, dt, 4)}, "B transposed"});
  s.push_back({{transposed({30, 20}, dt, 5), transposed({20, 50}, dt, 6)}, "both transposed"});
  s.push_back({{random_tensor({6, 16}, dt, -2, hi_for(dt), 7).slice(1, 0, std::nullopt, 2),
                random_tensor({8, 5}, dt, -2, hi_for(dt), 8)},
               "A with no unit stride"});
  return s;
}

std::vector<Sample> matmul_samples(DType dt) {
  std::vector<Sample> s = pairs(dt, {{{5}, {5}},
                                     {{0}, {0}},
                                     {{4}, {4, 3}},
                                     {{3, 4}, {4}},
                                     {{2, 3, 4}, {2, 4, 5}},
                                     {{2, 1, 3, 4}, {3, 4, 2}},
                                     {{2, 3, 4}, {4, 5}},
                                     {{3, 4}, {2, 4, 5}},
                                     {{4}, {2, 4, 3}},
                                     {{2, 3, 4}, {4}},
                                     {{1, 3, 4}, {5, 4, 2}},
                                     {{2, 0, 4}, {2, 4, 3}},
                                     {{3, 40, 33}, {3, 33, 50}}});
  for (auto& x : mm_samples(dt)) s.push_back(x);
  s.push_back(
      {{random_tensor({4, 1}, dt, -2, hi_for(dt), 9).expand({4, 3}).unsqueeze(0).expand({2, 4, 3}),
        transposed({3, 5}, dt, 10)},
       "expanded batch, expanded columns, transposed B"});
  return s;
}

std::vector<Sample> bmm_samples(DType dt) {
  std::vector<Sample> s = pairs(dt, {{{2, 3, 4}, {2, 4, 5}},
                                     {{1, 1, 1}, {1, 1, 1}},
                                     {{0, 3, 4}, {0, 4, 5}},
                                     {{3, 20, 0}, {3, 0, 7}},
                                     {{4, 33, 17}, {4, 17, 40}}});
  s.push_back({{random_tensor({2, 4, 3}, dt, -2, hi_for(dt), 11).transpose(1, 2),
                random_tensor({4, 2, 5}, dt, -2, hi_for(dt), 12).transpose(0, 1)},
               "transposed matrices, permuted batch"});
  return s;
}

std::vector<Sample> vector_samples(DType dt) {
  std::vector<Sample> s = pairs(dt, {{{5}, {5}}, {{0}, {0}}, {{1}, {1}}, {{300}, {300}}});
  s.push_back({{noncontiguous(random_tensor({6}, dt, -2, hi_for(dt), 13)),
                noncontiguous(random_tensor({6}, dt, -2, hi_for(dt), 14))},
               "strided"});
  return s;
}

std::vector<Sample> outer_samples(DType dt) {
  std::vector<Sample> s = pairs(dt, {{{3}, {4}}, {{0}, {3}}, {{1}, {1}}, {{40}, {50}}});
  s.push_back({{noncontiguous(random_tensor({6}, dt, -2, hi_for(dt), 15)),
                random_tensor({5}, dt, -2, hi_for(dt), 16)},
               "strided"});
  return s;
}

// (input, m1, m2): input broadcasts to the product's shape.
std::vector<Sample> addmm_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 601;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2, hi_for(dt), seed++); };
  s.push_back({{r({3, 5}), r({3, 4}), r({4, 5})}, "full input"});
  s.push_back({{r({5}), r({3, 4}), r({4, 5})}, "row input"});
  s.push_back({{r({3, 1}), r({3, 4}), r({4, 5})}, "column input"});
  s.push_back({{r({}), r({3, 4}), r({4, 5})}, "0-dim input"});
  s.push_back({{r({2, 3}), r({2, 0}), r({0, 3})}, "k = 0"});
  s.push_back({{r({40, 50}), noncontiguous(r({40, 30})), r({30, 50})}, "transposed m1"});
  return s;
}

// (input, weight, bias); an undefined bias means none.
std::vector<Sample> linear_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 701;
  auto r = [&](const Shape& shape) { return random_tensor(shape, dt, -2, hi_for(dt), seed++); };
  s.push_back({{r({3, 5}), r({4, 5}), r({4})}, "2-D input"});
  s.push_back({{r({5}), r({4, 5}), r({4})}, "1-D input"});
  s.push_back({{r({2, 3, 5}), r({4, 5}), Tensor()}, "3-D input, no bias"});
  s.push_back({{noncontiguous(r({6, 5})), noncontiguous(r({4, 5})), r({4})},
               "transposed input and weight"});
  s.push_back({{r({0, 5}), r({4, 5}), r({4})}, "no rows"});
  s.push_back({{r({33, 70}), r({45, 70}), r({45})}, "packed GEMM"});
  return s;
}

RefTensor ref_scaled_sum(const RefTensor& input, const RefTensor& prod, double beta, double alpha) {
  return ref_binary(input, prod, [=](double i, double p) { return beta * i + alpha * p; });
}

RefTensor ref_transpose(const RefTensor& w) {
  RefTensor t({w.shape[1], w.shape[0]});
  for (int64_t i = 0; i < w.shape[0]; ++i)
    for (int64_t j = 0; j < w.shape[1]; ++j)
      t.data[j * w.shape[0] + i] = w.data[i * w.shape[1] + j];
  return t;
}

std::vector<DType> linalg_dtypes() { return numeric_dtypes(); }
constexpr double kTolScale = 16.0;  // float32 sums of up to 90 products

const OpTableRegistrar reg({
    OpInfo{"matmul", linalg_dtypes(), matmul_samples,
           [](const Sample& s) { return std::vector<Tensor>{s.args[0].matmul(s.args[1])}; },
           [](const Refs& r) { return Refs{ref_matmul(r[0], r[1])}; }, kTolScale,
           [](DType dt) { return dt; }},
    OpInfo{"mm", linalg_dtypes(), mm_samples,
           [](const Sample& s) { return std::vector<Tensor>{s.args[0].mm(s.args[1])}; },
           [](const Refs& r) { return Refs{ref_matmul(r[0], r[1])}; }, kTolScale,
           [](DType dt) { return dt; }},
    OpInfo{"bmm", linalg_dtypes(), bmm_samples,
           [](const Sample& s) { return std::vector<Tensor>{s.args[0].bmm(s.args[1])}; },
           [](const Refs& r) { return Refs{ref_matmul(r[0], r[1])}; }, kTolScale,
           [](DType dt) { return dt; }},
    OpInfo{"dot", linalg_dtypes(), vector_samples,
           [](const Sample& s) { return std::vector<Tensor>{s.args[0].dot(s.args[1])}; },
           [](const Refs& r) { return Refs{ref_matmul(r[0], r[1])}; }, kTolScale,
           [](DType dt) { return dt; }},
    OpInfo{"outer", linalg_dtypes(), outer_samples,
           [](const Sample& s) { return std::vector<Tensor>{s.args[0].outer(s.args[1])}; },
           [](const Refs& r) {
             RefTensor a = r[0], b = r[1];
             a.shape = {a.numel(), 1};
             b.shape = {1, b.numel()};
             return Refs{ref_matmul(a, b)};
           },
           kTolScale, [](DType dt) { return dt; }},
    // beta = 2, alpha = 3 (integral, so valid for every dtype; fractional scalars are in
    // tests/test_linalg.cpp), and the defaults beta = alpha = 1.
    OpInfo{"addmm", linalg_dtypes(), addmm_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{addmm(s.args[0], s.args[1], s.args[2], 2, 3),
                                        addmm(s.args[0], s.args[1], s.args[2])};
           },
           [](const Refs& r) {
             RefTensor prod = ref_matmul(r[1], r[2]);
             return Refs{ref_scaled_sum(r[0], prod, 2, 3), ref_scaled_sum(r[0], prod, 1, 1)};
           },
           kTolScale, [](DType dt) { return dt; }},
    OpInfo{"linear", linalg_dtypes(), linear_samples,
           [](const Sample& s) {
             return std::vector<Tensor>{linear(s.args[0], s.args[1], s.args[2])};
           },
           [](const Refs& r) {
             RefTensor y = ref_matmul(r[0], ref_transpose(r[1]));
             const bool has_bias = !r[2].data.empty();
             if (has_bias) y = ref_binary(y, r[2], [](double a, double b) { return a + b; });
             return Refs{y};
           },
           kTolScale, [](DType dt) { return dt; }},
});

}  // namespace
}  // namespace ember::testing
