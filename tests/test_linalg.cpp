// Matrix products (core/ops/linalg.h) and the raw GEMM (kernels/cpu/gemm.h): shape and dtype
// errors, batched broadcasting against a naive reference, every float32 micro-kernel the CPU
// can run on awkward sizes and strides, alpha / beta semantics, thread-count independence.
// Values for every dtype and layout are also checked in the op table
// (tests/op_table/linalg_ops.cpp).

#include <ember/ember.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

Tensor random_matrix(const Shape& shape, DType dt, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = u(rng);
  return tensor(v, shape).to(dt);
}

// Naive float64 batched product with broadcasting of the batch dims (both operands >= 2-D).
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, Shape& out_shape) {
  Shape ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "naive");
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Tensor ae = a.expand([&] {
                 Shape s = batch;
                 s.push_back(m);
                 s.push_back(k);
                 return s;
               }())
                  .to(kFloat64)
                  .contiguous();
  Tensor be = b.expand([&] {
                 Shape s = batch;
                 s.push_back(k);
                 s.push_back(n);
                 return s;
               }())
                  .to(kFloat64)
                  .contiguous();
  const double* pa = ae.data_ptr<double>();
  const double* pb = be.data_ptr<double>();
  const int64_t batches = shape_numel(batch);
  std::vector<double> out(static_cast<size_t>(batches * m * n), 0.0);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += pa[(t * m + i) * k + p] * pb[(t * k + p) * n + j];
        out[static_cast<size_t>((t * m + i) * n + j)] = s;
      }
  out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

struct ThreadsGuard {
  int saved = num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

struct KernelGuard {
  std::string saved = kernels::cpu::gemm_kernel_name();
  ~KernelGuard() { kernels::cpu::set_gemm_kernel(saved.c_str()); }
};

}  // namespace

TEST_CASE("linalg: shape errors name the op and the shapes", "[linalg]") {
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                    "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  CHECK_THROWS_WITH(matmul(zeros({3}), zeros({4})),
                    "matmul: shapes [3] and [4] cannot be multiplied (3 != 4)");
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({2})), Contains("(3 != 2)"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})),
                    Contains("matmul") && Contains("[2]") && Contains("[3]"));
  CHECK_THROWS_WITH(matmul(zeros({}), zeros({3})),
                    Contains("matmul") && Contains("at least 1 dimension"));
  CHECK_THROWS_WITH(mm(zeros({2, 3, 4}), zeros({4, 5})), Contains("mm") && Contains("2-D"));
  CHECK_THROWS_WITH(mm(zeros({2, 3}), zeros({2, 3})),
                    "mm: shapes [2, 3] and [2, 3] cannot be multiplied (3 != 2)");
  CHECK_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})), Contains("bmm") && Contains("2 != 3"));
  CHECK_THROWS_WITH(bmm(zeros({2, 3}), zeros({3, 4})), Contains("bmm") && Contains("3-D"));
  CHECK_THROWS_WITH(dot(zeros({3}), zeros({4})), Contains("dot") && Contains("3 != 4"));
  CHECK_THROWS_WITH(dot(zeros({3, 1}), zeros({3})), Contains("dot") && Contains("1-D"));
  CHECK_THROWS_WITH(outer(zeros({3, 1}), zeros({3})), Contains("outer"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 5})), Contains("linear") && Contains("3 != 5"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})),
                    Contains("linear") && Contains("bias"));
  CHECK_THROWS_WITH(addmm(zeros({3}), zeros({2, 3}), zeros({3, 4})),
                    Contains("addmm") && Contains("[3]") && Contains("[2, 4]"));
}

TEST_CASE("linalg: dtype errors", "[linalg]") {
  CHECK_THROWS_WITH(
      matmul(zeros({2, 2}, kFloat32), zeros({2, 2}, kFloat64)),
      Contains("matmul") && Contains("same dtype") && Contains("float32") && Contains("float64"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2}, kBool), zeros({2, 2}, kBool)),
                    Contains("matmul") && Contains("bool"));
  CHECK_THROWS_WITH(addmm(zeros({2, 2}, kInt32), zeros({2, 2}, kInt32), zeros({2, 2}, kInt32), 0.5),
                    Contains("addmm") && Contains("integral"));
  CHECK_THROWS_WITH(linear(zeros({2, 2}), zeros({2, 2}), zeros({2}, kFloat64)), Contains("linear"));
}

TEST_CASE("linalg: matmul shape forms", "[linalg]") {
  Tensor a = tensor<float>({1, 2, 3, 4, 5, 6}).view({2, 3});
  Tensor v = tensor<float>({1, 0, -1});
  CHECK(matmul(v, v).sizes() == Shape{});
  CHECK(matmul(v, v).item<float>() == 2.0f);
  CHECK(values(matmul(a, v)) == std::vector<double>{-2, -2});
  CHECK(values(matmul(tensor<float>({1, 1}), a)) == std::vector<double>{5, 7, 9});
  CHECK(matmul(zeros({5, 2, 3}), v).sizes() == Shape{5, 2});
  CHECK(matmul(tensor<float>({1, 1}), zeros({5, 2, 3})).sizes() == Shape{5, 3});
  CHECK(matmul(zeros({2, 1, 4, 3}), zeros({5, 3, 6})).sizes() == Shape{2, 5, 4, 6});
  CHECK(matmul(zeros({4, 0}), zeros({0, 3})).sizes() == Shape{4, 3});
  CHECK(values(matmul(zeros({2, 0}), zeros({0, 2}))) == std::vector<double>{0, 0, 0, 0});
  CHECK(values(a.matmul(a.t())) == std::vector<double>{14, 32, 32, 77});
  CHECK(values(outer(tensor<float>({1, 2}), tensor<float>({3, 4, 5}))) ==
        std::vector<double>{3, 4, 5, 6, 8, 10});
}

TEST_CASE("linalg: batched broadcasting matmul matches a naive reference", "[linalg]") {
  struct Case {
    Shape a, b;
  };
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Case& c : std::vector<Case>{{{3, 1, 17, 23}, {4, 23, 19}},
                                           {{1, 40, 70}, {6, 70, 33}},
                                           {{2, 3, 5, 64}, {64, 48}},
                                           {{65, 80}, {2, 2, 80, 90}},
                                           {{7, 1, 1, 9}, {1, 5, 9, 1}}}) {
      INFO("dtype " << dt << ", " << shape_str(c.a) << " x " << shape_str(c.b));
      Tensor a = random_matrix(c.a, dt, 1), b = random_matrix(c.b, dt, 2);
      Shape want_shape;
      std::vector<double> want = naive_matmul(a, b, want_shape);
      Tensor got = matmul(a, b);
      CHECK(got.sizes() == want_shape);
      CHECK(max_abs_diff(values(got), want) < (dt == kFloat32 ? 1e-4 : 1e-12));
      // Transposed operands give the same result without being copied first.
      Tensor at = a.transpose(-1, -2).contiguous().transpose(-1, -2);
      Tensor bt = b.transpose(-1, -2).contiguous().transpose(-1, -2);
      CHECK(max_abs_diff(values(matmul(at, bt)), want) < (dt == kFloat32 ? 1e-4 : 1e-12));
    }
  }
}

TEST_CASE("linalg: every float32 GEMM kernel on awkward sizes and strides", "[linalg]") {
  KernelGuard kernel_guard;
  ThreadsGuard threads_guard;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const char* name : {"avx512", "avx2", "eigen"}) {
    if (!kernels::cpu::set_gemm_kernel(name)) continue;  // the CPU cannot run it
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      // Sizes around the tile and block edges (MR 12/6, NR 32/16, KC 256, MC 144).
      for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{13, 33, 7},
                                                                {144, 96, 256},
                                                                {145, 97, 257},
                                                                {25, 300, 130},
                                                                {300, 5, 600},
                                                                {2, 2, 2}}) {
        for (int layout = 0; layout < 4; ++layout) {
          const bool ta = layout & 1, tb = layout & 2;
          INFO("kernel " << name << ", threads " << threads << ", m " << m << " n " << n << " k "
                         << k << ", A transposed " << ta << ", B transposed " << tb);
          std::vector<float> a(m * k), b(k * n), c(m * n * 2);
          for (auto& x : a) x = u(rng);
          for (auto& x : b) x = u(rng);
          for (auto& x : c) x = u(rng);
          std::vector<float> c0 = c;
          // C is every other column of a (m x 2n) buffer: a non-unit column stride.
          const int64_t a_rs = ta ? 1 : k, a_cs = ta ? m : 1, b_rs = tb ? 1 : n, b_cs = tb ? k : 1;
          const float alpha = 0.75f, beta = -0.5f;
          kernels::cpu::gemm(m, n, k, alpha, a.data(), a_rs, a_cs, b.data(), b_rs, b_cs, beta,
                             c.data(), 2 * n, 2);
          double worst = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double s = 0;
              for (int64_t p = 0; p < k; ++p)
                s += double(a[i * a_rs + p * a_cs]) * double(b[p * b_rs + j * b_cs]);
              double want = alpha * s + beta * double(c0[i * 2 * n + 2 * j]);
              worst = std::max(worst, std::abs(want - double(c[i * 2 * n + 2 * j])));
              // The columns in between are untouched.
              if (c[i * 2 * n + 2 * j + 1] != c0[i * 2 * n + 2 * j + 1]) worst = 1e9;
            }
          CHECK(worst < 1e-4);
        }
      }
      // Contiguous row-major C through the full-tile fast path, beta == 0 ignoring NaN in C.
      const int64_t m = 50, n = 70, k = 40;
      std::vector<float> a(m * k), b(k * n), c(m * n, std::numeric_limits<float>::quiet_NaN());
      for (auto& x : a) x = u(rng);
      for (auto& x : b) x = u(rng);
      kernels::cpu::gemm(m, n, k, 1.0f, a.data(), k, 1, b.data(), n, 1, 0.0f, c.data(), n, 1);
      double worst = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p) s += double(a[i * k + p]) * double(b[p * n + j]);
          worst = std::max(worst, std::abs(s - double(c[i * n + j])));
        }
      CHECK(worst < 1e-4);  // NaN would fail this
    }
  }
}

TEST_CASE("linalg: GEMM operands given by line pointers", "[linalg]") {
  // kernels::cpu::gemm with GemmOperand: A and B as pointers to their rows or columns (each
  // line in its own buffer, at an offset), as convolution's implicit im2col uses them.
  KernelGuard kernel_guard;
  ThreadsGuard threads_guard;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const char* name : {"avx512", "avx2", "eigen"}) {
    if (!kernels::cpu::set_gemm_kernel(name)) continue;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
               {13, 33, 7}, {64, 224, 288}, {9, 32, 300}, {145, 97, 257}, {1, 5, 3}}) {
        for (int layout = 0; layout < 4; ++layout) {
          const bool a_rows = layout & 1, b_rows = layout & 2;
          INFO("kernel " << name << ", threads " << threads << ", m " << m << " n " << n << " k "
                         << k << ", A by rows " << a_rows << ", B by rows " << b_rows);
          const int64_t offset = 3;
          // A(i, p) and B(p, j) as values; lines hold them after `offset` floats of padding.
          std::vector<std::vector<float>> a_lines(a_rows ? m : k), b_lines(b_rows ? k : n);
          for (auto& l : a_lines) {
            l.resize(static_cast<size_t>(offset + (a_rows ? k : m)));
            for (auto& v : l) v = u(rng);
          }
          for (auto& l : b_lines) {
            l.resize(static_cast<size_t>(offset + (b_rows ? n : k)));
            for (auto& v : l) v = u(rng);
          }
          auto A = [&](int64_t i, int64_t p) {
            return a_rows ? a_lines[i][offset + p] : a_lines[p][offset + i];
          };
          auto B = [&](int64_t p, int64_t j) {
            return b_rows ? b_lines[p][offset + j] : b_lines[j][offset + p];
          };
          std::vector<const float*> ap, bp;
          for (auto& l : a_lines) ap.push_back(l.data());
          for (auto& l : b_lines) bp.push_back(l.data());
          kernels::cpu::GemmOperand ao, bo;
          ao.by_lines = {ap.data(), a_rows, offset};
          bo.by_lines = {bp.data(), b_rows, offset};
          std::vector<float> c(m * n);
          for (auto& x : c) x = u(rng);
          const std::vector<float> c0 = c;
          const float alpha = 1.25f, beta = 0.5f;
          kernels::cpu::gemm(m, n, k, alpha, ao, bo, beta, c.data(), n, 1);
          double worst = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0;
              for (int64_t p = 0; p < k; ++p) sum += double(A(i, p)) * double(B(p, j));
              worst = std::max(worst, std::abs(alpha * sum + beta * c0[i * n + j] - c[i * n + j]));
            }
          CHECK(worst < 1e-4);
        }
      }
    }
  }
}

TEST_CASE("linalg: results do not depend on the number of threads", "[linalg]") {
  ThreadsGuard guard;
  Tensor a = random_matrix({200, 150}, kFloat32, 3), b = random_matrix({150, 170}, kFloat32, 4);
  Tensor x = random_matrix({8, 30, 20}, kFloat64, 5), y = random_matrix({8, 20, 10}, kFloat64, 6);
  set_num_threads(1);
  std::vector<double> one = values(a.mm(b)), batched = values(x.bmm(y));
  set_num_threads(2);
  CHECK(values(a.mm(b)) == one);  // the split is along whole micro-kernel tiles
  CHECK(values(x.bmm(y)) == batched);
}

TEST_CASE("linalg: addmm and linear", "[linalg]") {
  Tensor m1 = random_matrix({6, 5}, kFloat64, 8), m2 = random_matrix({5, 4}, kFloat64, 9);
  Tensor input = random_matrix({4}, kFloat64, 10);
  std::vector<double> prod = values(m1.mm(m2)), in = values(input);
  std::vector<double> got = values(addmm(input, m1, m2, 0.5, -2.0));
  for (size_t i = 0; i < prod.size(); ++i) CHECK(got[i] == Approx(0.5 * in[i % 4] - 2.0 * prod[i]));
  // beta == 0 ignores the input entirely, NaN included (as PyTorch).
  Tensor nan_input = full({6, 4}, std::numeric_limits<double>::quiet_NaN(), kFloat64);
  std::vector<double> no_input = values(addmm(nan_input, m1, m2, 0, 1));
  for (size_t i = 0; i < prod.size(); ++i) CHECK(no_input[i] == Approx(prod[i]));
  // Integer addmm with integral scalars.
  Tensor i1 = tensor<int64_t>({1, 2, 3, 4}).view({2, 2});
  CHECK(values(addmm(ones({2, 2}, kInt64), i1, i1, 2, 3)) == std::vector<double>{23, 32, 47, 68});

  // linear(x, w, b) == x @ w^T + b for a 3-D input.
  Tensor x = random_matrix({2, 3, 5}, kFloat32, 11), w = random_matrix({4, 5}, kFloat32, 12);
  Tensor bias = random_matrix({4}, kFloat32, 13);
  Tensor y = linear(x, w, bias);
  CHECK(y.sizes() == Shape{2, 3, 4});
  std::vector<double> want = values(matmul(x, w.t()));
  std::vector<double> bv = values(bias), yv = values(y);
  for (size_t i = 0; i < yv.size(); ++i) CHECK(yv[i] == Approx(want[i] + bv[i % 4]).margin(1e-6));
  CHECK(values(linear(x, w)) == want);
}

TEST_CASE("linalg: 16-bit and integer products", "[linalg]") {
  Tensor a = random_matrix({20, 30}, kFloat32, 14), b = random_matrix({30, 25}, kFloat32, 15);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor a16 = a.to(dt), b16 = b.to(dt);
    Tensor got = matmul(a16, b16);
    CHECK(got.dtype() == dt);
    // Computed in float from the rounded inputs, then rounded once.
    std::vector<double> want = values(matmul(a16.to(kFloat32), b16.to(kFloat32)).to(dt));
    CHECK(values(got) == want);
  }
  // uint8 wraps like PyTorch: 16 * 16 = 256 -> 0.
  Tensor u = full({1, 1}, 16, kUInt8);
  CHECK(matmul(u, u).item<int64_t>() == 0);
  Tensor i32 = tensor({1, 2, 3});
  CHECK(dot(i32, i32).item<int32_t>() == 14);
  CHECK(dot(i32, i32).dtype() == kInt32);
}

TEST_CASE("linalg: long dot products stay accurate", "[linalg]") {
  const int64_t n = 1000000;
  Tensor x = full({n}, 0.1f, kFloat32);
  double want = static_cast<double>(n) * static_cast<double>(0.1f) * static_cast<double>(0.1f);
  CHECK(std::abs(dot(x, x).item<double>() - want) / want < 1e-6);
  CHECK(std::abs(matmul(x.view({1, n}), x.view({n, 1})).item<double>() - want) / want < 1e-6);
}
