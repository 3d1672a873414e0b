// The filling factories behind dispatch stubs (arange_stub, linspace_stub, eye_stub, and full
// through fill_stub) against the host loops they replaced, for every numeric dtype.

#include <ember/ember.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::values;

namespace {

const std::vector<DType> kNumeric = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                     kUInt8,   kInt32,   kInt64};

// The previous loops, rounding to T exactly as they did, read back as doubles.
template <class T>
std::vector<double> ref_arange_float(double s, double st, int64_t n) {
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(static_cast<double>(static_cast<T>(s + static_cast<double>(i) * st)));
  return out;
}

template <class T>
std::vector<double> ref_arange_int(int64_t s, int64_t st, int64_t n) {
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>(static_cast<T>(s + i * st)));
  return out;
}

template <class T>
std::vector<double> ref_linspace(double start, double end, int64_t steps) {
  std::vector<double> out;
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    // One step is `start` (PyTorch, NumPy); otherwise filled from both ends.
    const double v = steps == 1 || i < half ? start + step * static_cast<double>(i)
                                            : end - step * static_cast<double>(steps - 1 - i);
    out.push_back(static_cast<double>(static_cast<T>(v)));
  }
  return out;
}

}  // namespace

TEST_CASE("factory kernels: arange matches the previous loop", "[factory]") {
  for (DType dt : kNumeric) {
    INFO(dtype_name(dt));
    EMBER_DISPATCH_NUMERIC(dt, "test", [&] {
      using T = scalar_t;
      // Floating bounds (computed in double), integer bounds (in int64), a negative step.
      Tensor a = arange(0.5, 7.25, 0.75, dt);
      CHECK(a.dtype() == dt);
      CHECK(values(a) == ref_arange_float<T>(0.5, 0.75, 9));
      Tensor b = arange(2, 11, 3, dt);
      CHECK(values(b) == ref_arange_int<T>(2, 3, 3));
      if (dt != kUInt8) {
        Tensor c = arange(-3, -10, -2, dt);
        CHECK(values(c) == ref_arange_int<T>(-3, -2, 4));
      }
      CHECK(arange(4, 4, 1, dt).numel() == 0);
    });
  }
  // Many steps of a fraction: rounding in double, then once to float32.
  CHECK(values(arange(0.0, 100.0, 0.1, kFloat32)) == ref_arange_float<float>(0.0, 0.1, 1000));
  CHECK(arange(5).dtype() == kInt64);
  CHECK_THROWS_WITH(arange(0, 3, 1, kBool), Contains("arange: unsupported dtype bool"));
}

TEST_CASE("factory kernels: linspace matches the previous two-ended formula", "[factory]") {
  for (DType dt : kNumeric) {
    INFO(dtype_name(dt));
    EMBER_DISPATCH_NUMERIC(dt, "test", [&] {
      using T = scalar_t;
      for (int64_t steps : {0, 1, 2, 3, 10, 11, 1001}) {
        INFO("steps " << steps);
        CHECK(values(linspace(-2.5, 7.0, steps, dt)) == ref_linspace<T>(-2.5, 7.0, steps));
        CHECK(values(linspace(3.0, 3.0, steps, dt)) == ref_linspace<T>(3.0, 3.0, steps));
      }
    });
  }
  // The last value is exactly `end`.
  CHECK(linspace(0.0, 0.3, 7, kFloat64)[6].item<double>() == 0.3);
  CHECK_THROWS_WITH(linspace(0, 1, 3, kBool), Contains("linspace: unsupported dtype bool"));
}

TEST_CASE("factory kernels: eye and full", "[factory]") {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kUInt8, kInt32, kInt64, kBool}) {
    INFO(dtype_name(dt));
    for (auto [n, m] :
         std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {2, 5}, {4, 1}, {0, 3}, {3, 0}}) {
      Tensor e = eye(n, m, dt);
      REQUIRE(e.sizes() == Shape{n, m});
      CHECK(e.dtype() == dt);
      std::vector<double> want(static_cast<size_t>(n * m), 0.0);
      for (int64_t i = 0; i < std::min(n, m); ++i) want[static_cast<size_t>(i * m + i)] = 1.0;
      CHECK(values(e) == want);
    }
    Tensor f = full({2, 3}, 1, dt);
    CHECK(values(f) == std::vector<double>(6, 1.0));
  }
  CHECK(values(full({3}, 0.1, kFloat16)) ==
        std::vector<double>(3, static_cast<double>(Scalar(0.1).to<Half>())));
  CHECK(full({2}, 7).dtype() == kInt64);
  CHECK(values(zeros({2, 2}, kBFloat16)) == std::vector<double>(4, 0.0));
  CHECK(values(ones({0})).empty());
}
