// The CUDA reductions and scans (kernels/cuda/reduce.cu, kernels/cuda/scan.cu) against the CPU:
// every op over the layouts that pick the engine's row, column and two-pass paths (Note [CUDA
// reduction layout], [Two-pass reductions] in kernels/cuda/reduce.cuh), every dtype, the edge
// cases (ties, NaN, empty reductions) and run-to-run determinism. Tagged [cuda]; without a
// device each case says why and returns.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::have_cuda;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

// Uniform values in [-2, 2) of a fixed seed, in dtype (integers: -2..1).
Tensor sample(const Shape& shape, DType dtype, uint64_t seed = 1) {
  manual_seed(seed);
  Tensor x = rand(shape, kFloat64) * 4 - 2;
  if (!is_floating(dtype)) x = ember::floor(x);
  return x.to(dtype);
}

// Relative tolerance for comparing a device result with the CPU's in dtype.
double tolerance(DType dtype) {
  if (dtype == kFloat16) return 4e-3;
  if (dtype == kBFloat16) return 3e-2;
  if (dtype == kFloat32) return 2e-5;
  return 1e-12;
}

// got (from the device) equals want (the CPU) within tol, NaN matching NaN.
void check_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.device() == kDev);
  CHECK(got.dtype() == want.dtype());
  CHECK(got.sizes() == want.sizes());
  const std::vector<double> g = values(got), w = values(want);
  REQUIRE(g.size() == w.size());
  double scale = 0;
  for (double v : w)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": cuda " << g[i] << ", cpu " << w[i]);
    if (std::isnan(w[i])) {
      CHECK(std::isnan(g[i]));
    } else if (std::isinf(w[i])) {
      CHECK(g[i] == w[i]);
    } else {
      CHECK(std::abs(g[i] - w[i]) <= tol * std::max(1.0, scale));
    }
  }
}

struct Layout {
  std::string name;
  std::function<Tensor(const Tensor&)> view;
};

// Views of a (6, 5, 130) base that the engine lays out differently.
std::vector<Layout> layouts() {
  return {{"contiguous", [](const Tensor& t) { return t; }},
          {"transposed", [](const Tensor& t) { return t.transpose(0, 2); }},
          {"sliced", [](const Tensor& t) { return t.narrow(2, 3, 100).narrow(0, 1, 4); }},
          {"expanded", [](const Tensor& t) {
             return t.narrow(1, 0, 1).expand({6, 7, 130});
           }}};
}

// Every dims argument worth trying on a 3-d tensor.
const std::vector<Shape> kDims = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {0, 1}, {1, 2}};

std::string dims_string(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + ")";
}

using Reduction = std::function<Tensor(const Tensor&, const Shape&)>;

void check_reduction(const std::string& name, const Reduction& f,
                     const std::vector<DType>& dtypes) {
  for (DType dt : dtypes) {
    const Tensor base = sample({6, 5, 130}, dt);
    const Tensor dbase = base.to(kDev);
    for (const Layout& layout : layouts()) {
      const Tensor x = layout.view(base), dx = layout.view(dbase);
      for (const Shape& dims : kDims) {
        const std::string what =
            name + " " + dtype_name(dt) + " " + layout.name + " dims " + dims_string(dims);
        check_close(f(dx, dims), f(x, dims), tolerance(dt), what);
      }
    }
  }
}

}  // namespace

TEST_CASE("cuda sum, mean and prod match the cpu on every layout and dtype", "[cuda]") {
  if (!have_cuda()) return;
  const std::vector<DType> all = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                  kInt32,   kInt64,   kUInt8,   kBool};
  const std::vector<DType> floats = {kFloat32, kFloat64, kFloat16, kBFloat16};
  check_reduction(
      "sum", [](const Tensor& t, const Shape& d) { return ember::sum(t, d); }, all);
  check_reduction(
      "mean", [](const Tensor& t, const Shape& d) { return ember::mean(t, d, true); }, floats);
  // A product of 3900 values in [-2, 2) under/overflows: take it over short dims only.
  check_reduction(
      "prod",
      [](const Tensor& t, const Shape& d) { return ember::prod(t.narrow(2, 0, 3) * 0.5 + 1, d); },
      {kFloat32, kFloat64, kInt64});
}

TEST_CASE("cuda var, std, logsumexp and norms match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  const std::vector<DType> floats = {kFloat32, kFloat64, kFloat16, kBFloat16};
  check_reduction(
      "var", [](const Tensor& t, const Shape& d) { return ember::var(t, d); }, floats);
  check_reduction("std", [](const Tensor& t, const Shape& d) { return ember::std(t, d, 0); },
                  {kFloat32, kFloat64});
  check_reduction(
      "logsumexp",
      [](const Tensor& t, const Shape& d) {
        return ember::logsumexp(t, d.empty() ? Shape{0, 1, 2} : d);
      },
      floats);
  for (double p : {1.0, 2.0, 3.0, 0.0, double(INFINITY), -double(INFINITY)}) {
    check_reduction("norm p=" + std::to_string(p),
                    [p](const Tensor& t, const Shape& d) { return ember::norm(t, p, d); },
                    {kFloat32, kFloat64});
  }
}

TEST_CASE("cuda amax, amin, max, min, argmax, argmin, all and any match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  const std::vector<DType> dtypes = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64};
  check_reduction(
      "amax", [](const Tensor& t, const Shape& d) { return ember::amax(t, d); }, dtypes);
  check_reduction(
      "amin", [](const Tensor& t, const Shape& d) { return ember::amin(t, d); }, dtypes);
  check_reduction("all", [](const Tensor& t, const Shape& d) { return ember::all(t, d); },
                  {kFloat32, kInt64, kBool});
  check_reduction("any", [](const Tensor& t, const Shape& d) { return ember::any(t > 1.5, d); },
                  {kFloat32, kInt64});
  for (DType dt : dtypes) {
    const Tensor base = sample({6, 5, 130}, dt, 7);
    for (const Layout& layout : layouts()) {
      const Tensor x = layout.view(base), dx = layout.view(base.to(kDev));
      const std::string what = std::string(dtype_name(dt)) + " " + layout.name;
      for (int64_t dim = 0; dim < 3; ++dim) {
        auto [v, i] = ember::max(x, dim);
        auto [dv, di] = ember::max(dx, dim, false);
        check_close(dv, v, 0, "max values " + what);
        CHECK(values(di) == values(i));
        auto [v2, i2] = ember::min(x, dim, true);
        auto [dv2, di2] = ember::min(dx, dim, true);
        check_close(dv2, v2, 0, "min values " + what);
        CHECK(values(di2) == values(i2));
        CHECK(values(argmax(dx, dim)) == values(argmax(x, dim)));
        CHECK(values(argmin(dx, dim)) == values(argmin(x, dim)));
      }
      CHECK(values(argmax(dx)) == values(argmax(x)));
      CHECK(values(ember::max(dx)) == values(ember::max(x)));
    }
  }
}

TEST_CASE("cuda argmax takes the first of ties and the first NaN, NaN propagates", "[cuda]") {
  if (!have_cuda()) return;
  // Long enough that the tied maxima land in different threads' states and pieces.
  Tensor x = zeros({50000});
  x.narrow(0, 31000, 1).fill_(5);
  x.narrow(0, 7, 1).fill_(5);
  x.narrow(0, 40000, 1).fill_(5);
  Tensor dx = x.to(kDev);
  CHECK(argmax(dx).item<int64_t>() == 7);
  CHECK(argmin(dx).item<int64_t>() == 0);
  x.narrow(0, 33333, 1).fill_(NAN);
  x.narrow(0, 44444, 1).fill_(NAN);
  dx = x.to(kDev);
  CHECK(argmax(dx).item<int64_t>() == 33333);
  CHECK(argmin(dx).item<int64_t>() == 33333);
  CHECK(std::isnan(ember::amax(dx).item<double>()));
  CHECK(std::isnan(ember::sum(dx).item<double>()));
}

TEST_CASE("cuda reductions over empty ranges give the identity or refuse", "[cuda]") {
  if (!have_cuda()) return;
  Tensor e = zeros({3, 0}, TensorOptions(kFloat32).device(kDev));
  CHECK(values(ember::sum(e, {1})) == std::vector<double>{0, 0, 0});
  CHECK(values(ember::prod(e, {1})) == std::vector<double>{1, 1, 1});
  CHECK(std::isnan(values(ember::mean(e, {1}))[0]));
  CHECK(values(ember::all(e, {1})) == std::vector<double>{1, 1, 1});
  CHECK(values(ember::any(e, {1})) == std::vector<double>{0, 0, 0});
  CHECK(values(ember::logsumexp(e, {1}))[0] == -INFINITY);
  CHECK(ember::sum(e, {0}).numel() == 0);
  CHECK_THROWS_WITH(ember::amax(e, {1}), Contains("amax"));
  CHECK_THROWS_WITH(argmax(e, 1), Contains("argmax"));
}

TEST_CASE("cuda two-pass reductions are accurate and give the same bits on every run", "[cuda]") {
  if (!have_cuda()) return;
  SECTION("a float32 sum of 10^6 values of 0.1") {
    Tensor x = full({1000000}, 0.1, TensorOptions(kFloat32).device(kDev));
    const double got = ember::sum(x).item<double>();
    CHECK(std::abs(got - 1e5) / 1e5 < 1e-6);
  }
  SECTION("full and column sums of a long range repeat exactly and match the cpu") {
    const Tensor x = sample({300000}, kFloat32, 3), c = sample({20000, 3}, kFloat32, 4);
    const Tensor dx = x.to(kDev), dc = c.to(kDev);
    const Tensor first = ember::sum(dx).cpu(), col = ember::sum(dc, {0}).cpu();
    for (int run = 0; run < 3; ++run) {
      const Tensor again = ember::sum(dx).cpu(), col_again = ember::sum(dc, {0}).cpu();
      CHECK(std::memcmp(again.data_ptr(), first.data_ptr(), sizeof(float)) == 0);
      CHECK(std::memcmp(col_again.data_ptr(), col.data_ptr(), 3 * sizeof(float)) == 0);
    }
    check_close(ember::sum(dx), ember::sum(x), 1e-5, "full sum");
    check_close(ember::sum(dc, {0}), ember::sum(c, {0}), 1e-5, "column sum");
    check_close(ember::var(dx), ember::var(x), 1e-6, "full var");
    CHECK(values(argmax(dx)) == values(argmax(x)));
  }
}

TEST_CASE("cuda cumsum and cumprod match the cpu on both scan layouts", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kBool}) {
    // Lines of 3 (sequential), 700 (tiles of 256, a partial last tile) and 40 (one short tile).
    for (const Shape& shape : {Shape{5, 700}, Shape{700, 3}, Shape{4, 40, 6}}) {
      const Tensor x = sample(shape, dt, 11);
      const Tensor dx = x.to(kDev);
      for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
        const std::string what = std::string(dtype_name(dt)) + " dim " + std::to_string(dim);
        check_close(ember::cumsum(dx, dim), ember::cumsum(x, dim), tolerance(dt) * 4,
                    "cumsum " + what);
        check_close(ember::cumsum(dx.transpose(0, 1), 0), ember::cumsum(x.transpose(0, 1), 0),
                    tolerance(dt) * 4, "cumsum transposed " + what);
      }
      const Tensor small = (x.narrow(0, 0, 2) * 0.25 + 1).to(is_floating(dt) ? dt : kFloat64);
      check_close(ember::cumprod(small.to(kDev), -1), ember::cumprod(small, -1),
                  tolerance(small.dtype()) * 8, "cumprod " + std::string(dtype_name(dt)));
    }
  }
  SECTION("int64 cumsum and cumprod wrap exactly like the cpu") {
    Tensor big = full({600}, 3037000499LL, TensorOptions(kInt64));
    CHECK(values(ember::cumprod(big.to(kDev), 0)) == values(ember::cumprod(big, 0)));
    Tensor huge = full({600}, INT64_MAX / 7, TensorOptions(kInt64));
    CHECK(values(ember::cumsum(huge.to(kDev), 0)) == values(ember::cumsum(huge, 0)));
  }
}

TEST_CASE("cuda reductions run backward on the device", "[cuda]") {
  if (!have_cuda()) return;
  Tensor x = sample({4, 33}, kFloat32).requires_grad_();
  Tensor dx = x.detach().to(kDev).requires_grad_();
  (ember::sum(x * x, {1}).sum() + ember::amax(x, {0}).sum() + ember::norm(x)).backward();
  (ember::sum(dx * dx, {1}).sum() + ember::amax(dx, {0}).sum() + ember::norm(dx)).backward();
  REQUIRE(dx.grad().defined());
  CHECK(dx.grad().device() == kDev);
  check_close(dx.grad(), x.grad(), 1e-5, "gradient");
}
