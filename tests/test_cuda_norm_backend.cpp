// The norm backend switch (core/norm_backend.h, Note [Norm backends on CUDA] in
// kernels/cuda/norm_cudnn.h): the API and EMBER_NORM; on the simulator cudnn is a clear error and
// auto runs ember; on a real GPU cuDNN's softmax / log_softmax and batch_norm forward against
// ember's kernels. Every case is tagged [cuda] and returns with the reason where there is no
// device.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "core/norm_backend.h"
#include "core/ops/norm.h"
#include "core/ops/softmax.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::have_cuda;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

Tensor rnd(const Shape& shape, DType dt, uint64_t seed) {
  Generator g(seed);
  return randn(shape, kFloat32, &g).to(dt);
}

// The same sizes, dtype and bits.
bool same(const Tensor& a, const Tensor& b) { return ember::testing::same_bits(a, b); }

// max |a - b| / (1 + max |b|), both on the device, same sizes and dtype.
double rel_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.device() == kDev);
  REQUIRE(b.device() == kDev);
  REQUIRE(a.sizes() == b.sizes());
  REQUIRE(a.dtype() == b.dtype());
  const std::vector<double> x = values(a.cpu()), y = values(b.cpu());
  double m = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    m = std::max(m, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return m / (1 + scale);
}

// Puts back EMBER_NORM as a case found it, and lets it decide again (nothing else in the suite
// calls set_norm_backend).
struct RestoreBackend {
  std::string env = std::getenv("EMBER_NORM") ? std::getenv("EMBER_NORM") : "";
  bool had_env = std::getenv("EMBER_NORM") != nullptr;
  ~RestoreBackend() {
    if (had_env)
      setenv("EMBER_NORM", env.c_str(), 1);
    else
      unsetenv("EMBER_NORM");
    reset_norm_backend();
  }
};

}  // namespace

TEST_CASE("norm backend: the API, EMBER_NORM and its errors", "[cuda]") {
  RestoreBackend restore;
  CHECK(parse_norm_backend("ember") == NormBackend::ember);
  CHECK(parse_norm_backend("cudnn") == NormBackend::cudnn);
  CHECK(parse_norm_backend("auto") == NormBackend::automatic);
  CHECK_THROWS_WITH(parse_norm_backend("fast"), Contains("EMBER_NORM") && Contains("fast"));
  CHECK(std::string(norm_backend_name(NormBackend::automatic)) == "auto");

  reset_norm_backend();
  unsetenv("EMBER_NORM");
  CHECK(norm_backend() == NormBackend::ember);  // never cuDNN by default
  setenv("EMBER_NORM", "auto", 1);
  CHECK(norm_backend() == NormBackend::automatic);
  setenv("EMBER_NORM", "cuDNN", 1);
  CHECK_THROWS_WITH(norm_backend(), Contains("EMBER_NORM") && Contains("cuDNN"));
  // The API wins over the variable.
  set_norm_backend(NormBackend::cudnn);
  CHECK(norm_backend() == NormBackend::cudnn);
  set_norm_backend(NormBackend::ember);
  CHECK(norm_backend() == NormBackend::ember);
}

TEST_CASE("norm backend on the simulator: cudnn is an error, auto runs ember", "[cuda]") {
  if (!have_cuda()) return;
  if (!cuda::is_simulated()) return;  // the real GPU's case is below
  RestoreBackend restore;
  const Tensor x = rnd({5, 37}, kFloat32, 1).to(kDev);
  const Tensor bx = rnd({4, 3, 6}, kFloat32, 2).to(kDev);
  const Tensor w = rnd({3}, kFloat32, 3).to(kDev), b = rnd({3}, kFloat32, 4).to(kDev);
  set_norm_backend(NormBackend::ember);
  const Tensor want = native::softmax(x, 1), want_log = native::log_softmax(x, 1);
  Tensor rm = zeros({3}, kFloat32).to(kDev), rv = ones({3}, kFloat32).to(kDev);
  const auto want_bn = native::batch_norm(bx, w, b, rm, rv, true, 0.1, 1e-5);

  set_norm_backend(NormBackend::automatic);
  CHECK(same(native::softmax(x, 1), want));
  CHECK(same(native::log_softmax(x, 1), want_log));
  Tensor rm2 = zeros({3}, kFloat32).to(kDev), rv2 = ones({3}, kFloat32).to(kDev);
  const auto got_bn = native::batch_norm(bx, w, b, rm2, rv2, true, 0.1, 1e-5);
  CHECK(same(got_bn.y, want_bn.y));
  CHECK(same(rm2, rm));
  CHECK(same(rv2, rv));

  set_norm_backend(NormBackend::cudnn);
  CHECK_THROWS_WITH(native::softmax(x, 1), Contains("softmax") && Contains("cudnn") &&
                                               Contains("EMBER_NORM") &&
                                               Contains("EMBER_CUDA=real"));
  CHECK_THROWS_WITH(native::log_softmax(x.to(kFloat64), 0),
                    Contains("log_softmax") && Contains("EMBER_CUDA=real"));
  CHECK_THROWS_WITH(native::batch_norm(bx, w, b, rm, rv, false, 0.1, 1e-5),
                    Contains("batch_norm") && Contains("cudnn") && Contains("EMBER_CUDA=real"));
  // The cpu ignores the switch.
  CHECK_NOTHROW(native::softmax(x.cpu(), 1));
}

TEST_CASE("norm backend on a GPU: cuDNN softmax and batch_norm match ember", "[cuda]") {
  if (!have_cuda()) return;
  if (cuda::is_simulated()) return;  // no cuDNN in a simulator build (the case above)
  RestoreBackend restore;
  // softmax / log_softmax over the last dim: warp rows, block rows, every dtype cuDNN takes.
  for (const DType dt : {kFloat32, kFloat16, kBFloat16}) {
    for (const Shape& shape : {Shape{7, 33}, Shape{3, 2, 2500}}) {
      const Tensor x = rnd(shape, dt, 10).to(kDev);
      const int64_t dim = static_cast<int64_t>(shape.size()) - 1;
      const double tol = dt == kFloat32 ? 1e-5 : 2e-2;
      set_norm_backend(NormBackend::ember);
      const Tensor want = native::softmax(x, dim), want_log = native::log_softmax(x, dim);
      set_norm_backend(NormBackend::cudnn);
      CHECK(rel_diff(native::softmax(x, dim), want) < tol);
      CHECK(rel_diff(native::log_softmax(x, dim), want_log) < tol);
      set_norm_backend(NormBackend::automatic);
      CHECK(rel_diff(native::softmax(x, dim), want) < tol);
    }
  }
  // What cuDNN does not take runs ember's kernel: dim not last, float64.
  {
    const Tensor x = rnd({4, 9, 5}, kFloat32, 11).to(kDev);
    set_norm_backend(NormBackend::ember);
    const Tensor want = native::softmax(x, 1);
    const Tensor want64 = native::softmax(x.to(kFloat64), 2);
    set_norm_backend(NormBackend::cudnn);
    CHECK(same(native::softmax(x, 1), want));
    CHECK(same(native::softmax(x.to(kFloat64), 2), want64));
  }
  // batch_norm float32, training (running statistics, with and without affine) and eval.
  for (const bool affine : {true, false}) {
    const Tensor x = rnd({6, 5, 7, 3}, kFloat32, 20).to(kDev);
    const Tensor w = affine ? rnd({5}, kFloat32, 21).to(kDev) : Tensor();
    const Tensor b = affine ? rnd({5}, kFloat32, 22).to(kDev) : Tensor();
    auto run = [&](NormBackend backend, bool training) {
      set_norm_backend(backend);
      Tensor rm = rnd({5}, kFloat32, 23).to(kDev), rv = rnd({5}, kFloat32, 24).abs().to(kDev);
      auto out = native::batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5);
      return std::vector<Tensor>{out.y, out.mean, out.rstd, rm, rv};
    };
    for (const bool training : {true, false}) {
      const auto want = run(NormBackend::ember, training);
      for (const NormBackend backend : {NormBackend::cudnn, NormBackend::automatic}) {
        const auto got = run(backend, training);
        for (size_t k = 0; k < want.size(); ++k) {
          INFO("affine " << affine << " training " << training << " backend "
                         << norm_backend_name(backend) << " output " << k);
          CHECK(rel_diff(got[k], want[k]) < 1e-4);
        }
      }
    }
  }
}
