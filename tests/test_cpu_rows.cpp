// The CPU row kernels of softmax, log_softmax, cross-entropy and layer_norm (kernels/cpu/rows.h,
// Note [layer_norm on the CPU]): the vectorisable exp against exp in double, the row folds
// against float64 references, and the promises of Note [Rows in lanes]: the AVX2 copies, the
// baseline loops, strided and contiguous rows and any thread count all give the same bits.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/rows.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;
using kernels::cpu::exp_float;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Whether a and b hold the same bytes (same dtype and shape).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// layer_norm over x's last dim with weight and bias: y, then the gradients of x, weight and
// bias for a fixed output gradient; and without weight and bias: y and x's gradient.
std::vector<Tensor> layer_norm_results(const Tensor& x) {
  const int64_t C = x.size(1);
  const Tensor g = (arange(x.numel(), TensorOptions(kFloat32)).remainder(7) - 3).view(x.sizes());
  const Tensor xg = x.detach().requires_grad_();
  const Tensor w = (arange(C, TensorOptions(kFloat32)) / C + 0.5).to(x.dtype()).requires_grad_();
  const Tensor b = (arange(C, TensorOptions(kFloat32)) / C - 0.5).to(x.dtype()).requires_grad_();
  const Tensor y = F::layer_norm(xg, {C}, w, b, 1e-5);
  y.backward(g.to(x.dtype()));
  const Tensor xp = x.detach().requires_grad_();
  const Tensor yp = F::layer_norm(xp, {C});
  yp.backward(g.to(x.dtype()));
  return {y.detach(), xg.grad(), w.grad(), b.grad(), yp.detach(), xp.grad()};
}

// softmax, log_softmax (over the last dim, over dim 0, of a strided view) and cross-entropy's
// loss and input gradient (plain, and with weights, ignore_index and label smoothing) of x.
std::vector<Tensor> row_results(const Tensor& x) {
  const int64_t C = x.size(1);
  const Tensor target = arange(x.size(0), TensorOptions(kInt64)).remainder(C);
  const Tensor t_ignored = target.clone();
  t_ignored[1].fill_(-100);
  const Tensor w = (arange(C, TensorOptions(kFloat32)) / C + 0.5).to(x.dtype());
  std::vector<Tensor> out = {x.softmax(-1),    x.log_softmax(-1), x.softmax(0),
                             x.log_softmax(0), x.t().softmax(0),  x.t().log_softmax(0)};
  for (bool smooth : {false, true}) {
    Tensor xg = x.detach().requires_grad_();
    Tensor loss = smooth ? F::cross_entropy(xg, t_ignored, w, -100, "mean", 0.1)
                         : F::cross_entropy(xg, target);
    loss.backward();
    out.push_back(loss.detach());
    out.push_back(xg.grad());
  }
  const std::vector<Tensor> ln = layer_norm_results(x);
  out.insert(out.end(), ln.begin(), ln.end());
  return out;
}

}  // namespace

TEST_CASE("cpu exp_float: within 1.5 ulp of exp in double over the float range", "[cpu][softmax]") {
  // Half a million floats spread over every exponent of [-110, 90].
  double worst = 0;
  float worst_x = 0;
  int64_t checked = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4093) {
    const float x = from_bits(static_cast<uint32_t>(u));
    if (!(x >= -110.0f && x <= 90.0f)) continue;
    const double ref = std::exp(static_cast<double>(x));
    const float rf = static_cast<float>(ref);
    const float got = exp_float(x);
    if (std::isinf(rf)) {
      INFO("x = " << x);
      REQUIRE(std::isinf(got));
      continue;
    }
    // An ulp of the correctly rounded result (the smallest subnormal where that is 0).
    const double ulp = rf == 0.0f ? static_cast<double>(std::numeric_limits<float>::denorm_min())
                                  : static_cast<double>(std::nextafter(rf, INFINITY) - rf);
    const double err = std::fabs(static_cast<double>(got) - ref) / ulp;
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
    ++checked;
  }
  INFO("worst at x = " << worst_x);
  CHECK(checked > 500000);
  CHECK(worst <= 1.5);
}

TEST_CASE("cpu exp_float: special values", "[cpu][softmax]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(exp_float(-inf) == 0.0f);
  CHECK(exp_float(inf) == inf);
  CHECK(std::isnan(exp_float(std::numeric_limits<float>::quiet_NaN())));
  CHECK(exp_float(0.0f) == 1.0f);
  CHECK(exp_float(-0.0f) == 1.0f);
  CHECK(exp_float(89.0f) == inf);  // past FLT_MAX
  CHECK(exp_float(1e30f) == inf);
  CHECK(std::isfinite(exp_float(88.72f)));
  CHECK(exp_float(88.72f) > 3.3e38f);
  CHECK(exp_float(-104.0f) == 0.0f);  // rounds to 0
  CHECK(exp_float(-1e30f) == 0.0f);
  // A subnormal result, not flushed: exp(-100) = 3.72e-44.
  CHECK(exp_float(-100.0f) > 3.6e-44f);
  CHECK(exp_float(-100.0f) < 3.9e-44f);
  CHECK(exp_float(1.0f) == Approx(2.718281828).epsilon(2e-7));
}

TEST_CASE("cpu softmax, log_softmax and cross-entropy: close to a float64 reference",
          "[cpu][softmax]") {
  manual_seed(3);
  // Rows longer than a block (256) with a tail, logits spread over +-40.
  const Tensor x = randn({33, 1037}) * 10;
  // The reference takes x - max as float32 computes it (rounded: up to 4e-6 of the result at
  // |x - max| = 60, in any float32 softmax), then everything else in float64.
  auto reference = [](const Tensor& xf, int64_t dim) {
    const Tensor d = (xf - xf.amax({dim}, true)).to(kFloat64);
    const Tensor e = exp(d);
    return e / e.sum({dim}, true);
  };
  // |got - ref| / |ref|, largest over the elements, for got and ref of any dtypes.
  auto rel = [](const Tensor& got, const Tensor& ref) {
    const Tensor r = ref.to(kFloat64);
    return (abs(got.to(kFloat64) - r) / (abs(r) + 1e-300)).max().item<double>();
  };
  CHECK(rel(x.softmax(-1), reference(x, 1)) < 1e-6);
  CHECK(rel(x.softmax(0), reference(x, 0)) < 1e-6);
  CHECK(max_difference(x.log_softmax(-1), log(reference(x, 1))) < 1e-5);
  const Tensor target = randint(0, 1037, {33}, TensorOptions(kInt64));
  CHECK(rel(F::cross_entropy(x, target), F::cross_entropy(x.to(kFloat64), target)) < 1e-6);
  for (DType dt : {kBFloat16, kFloat16}) {
    INFO(dtype_name(dt));
    const Tensor xh = (x / 4).to(dt);
    const Tensor ref = reference(xh.to(kFloat32), 1);
    // One rounding to the 16-bit type: half an ulp of it, relative, or of its smallest
    // subnormal where the result underflows.
    const double ulp = dt == kBFloat16 ? 0x1p-7 : 0x1p-10;  // an ulp relative to the value, at most
    const double tiny = dt == kBFloat16 ? 1e-40 : 6e-8;
    const Tensor err = abs(xh.softmax(-1).to(kFloat64) - ref) - (abs(ref) * ulp * 0.5 + tiny);
    CHECK(err.max().item<double>() <= 0.0);
  }
}

TEST_CASE("cpu softmax: NaN, -inf and empty rows", "[cpu][softmax]") {
  const double nan = kNaN, inf = kInf;
  // Rows of 40: long enough for the blocked folds, each with what it tests at a different lane.
  const Tensor x = randn({4, 40});
  x[0][17].fill_(nan);
  x[1][3].fill_(-inf);
  x[1][33].fill_(-inf);
  x[2].fill_(-inf);
  const std::vector<double> y = values(x.softmax(-1));
  for (int64_t j = 0; j < 40; ++j) {
    INFO("column " << j);
    CHECK(std::isnan(y[static_cast<size_t>(j)]));       // a NaN poisons its row
    CHECK(std::isnan(y[static_cast<size_t>(80 + j)]));  // all -inf: 0 / 0, as in PyTorch
  }
  CHECK(y[40 + 3] == 0.0);  // masked entries get exactly 0
  CHECK(y[40 + 33] == 0.0);
  double row1 = 0, row3 = 0;
  for (int64_t j = 0; j < 40; ++j) {
    row1 += y[static_cast<size_t>(40 + j)];
    row3 += y[static_cast<size_t>(120 + j)];
  }
  CHECK(row1 == Approx(1.0).epsilon(1e-6));
  CHECK(row3 == Approx(1.0).epsilon(1e-6));
  CHECK(randn({3, 0}).softmax(-1).numel() == 0);
  CHECK(randn({0, 5}).log_softmax(-1).numel() == 0);
}

TEST_CASE("cpu row kernels: the AVX-512 and AVX2 copies give the baseline loops' bits",
          "[cpu][softmax]") {
  // kernels/cpu/isa.h: set_cpu_isa caps the copies at what the CPU has, so on a CPU without
  // AVX-512 (or AVX2) the wider runs are the narrower copy compared with itself.
  using kernels::cpu::CpuIsa;
  manual_seed(11);
  for (DType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const Tensor x = (randn({19, 523}) * 6).to(dt);  // 523: two blocks and a tail of 11
    const CpuIsa prev = kernels::cpu::set_cpu_isa(CpuIsa::kBaseline);
    const std::vector<Tensor> baseline = row_results(x);
    for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      kernels::cpu::set_cpu_isa(isa);
      INFO((isa == CpuIsa::kAvx2 ? "avx2" : "avx512")
           << " copy, running as isa " << static_cast<int>(kernels::cpu::cpu_isa()));
      const std::vector<Tensor> fast = row_results(x);
      REQUIRE(fast.size() == baseline.size());
      for (size_t i = 0; i < fast.size(); ++i) {
        INFO("result " << i);
        CHECK(same_bits(fast[i], baseline[i]));
      }
    }
    kernels::cpu::set_cpu_isa(prev);
  }
}

TEST_CASE("cpu isa: EMBER_CPU_ISA's cap and set_cpu_isa stay within what the CPU has",
          "[cpu][softmax]") {
  using kernels::cpu::CpuIsa;
  const CpuIsa prev = kernels::cpu::set_cpu_isa(CpuIsa::kAvx512);
  const CpuIsa widest = kernels::cpu::cpu_isa();
  kernels::cpu::set_cpu_isa(CpuIsa::kBaseline);
  CHECK(kernels::cpu::cpu_isa() == CpuIsa::kBaseline);
  CHECK(!kernels::cpu::use_avx2());
  kernels::cpu::set_cpu_isa(CpuIsa::kAvx2);
  CHECK(kernels::cpu::cpu_isa() == (widest == CpuIsa::kBaseline ? widest : CpuIsa::kAvx2));
  CHECK(kernels::cpu::use_avx2() == (widest != CpuIsa::kBaseline));
  CHECK(kernels::cpu::set_use_avx2(true) == (widest != CpuIsa::kBaseline));
  CHECK(kernels::cpu::cpu_isa() == widest);
  kernels::cpu::set_cpu_isa(prev);
}

TEST_CASE("cpu softmax: a strided row gives the contiguous row's bits", "[cpu][softmax]") {
  manual_seed(12);
  for (DType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const Tensor x = (randn({24, 301}) * 4).to(dt);
    const Tensor strided = x.t().contiguous().t();  // the same values, strides (1, 24)
    REQUIRE(!strided.is_contiguous());
    CHECK(same_bits(x.softmax(-1), strided.softmax(-1)));
    CHECK(same_bits(x.log_softmax(-1), strided.log_softmax(-1)));
  }
}

TEST_CASE("cpu layer_norm: forward and backward close to a float64 reference",
          "[cpu][softmax][norm]") {
  manual_seed(5);
  // Rows of 1037 (blocks of 256 and a tail) around 100: the statistics must not cancel.
  const Tensor x = randn({21, 1037}) * 3 + 100;
  const std::vector<Tensor> got = layer_norm_results(x);
  // The reference: the same formulas with float64 ops.
  const Tensor x64 = x.to(kFloat64).requires_grad_();
  const int64_t C = 1037;
  const Tensor g = (arange(x.numel(), TensorOptions(kFloat64)).remainder(7) - 3).view(x.sizes());
  const Tensor w = (arange(C, TensorOptions(kFloat32)) / C + 0.5).to(kFloat64).requires_grad_();
  const Tensor b = (arange(C, TensorOptions(kFloat32)) / C - 0.5).to(kFloat64).requires_grad_();
  const Tensor centred = x64 - x64.mean({1}, true);
  const Tensor y = centred / (centred * centred).mean({1}, true).add(1e-5).sqrt() * w + b;
  y.backward(g);
  CHECK(max_difference(got[0], y) < 2e-5);
  CHECK(max_difference(got[1], x64.grad()) < 1e-4);
  CHECK(max_difference(got[2], w.grad()) / abs(w.grad()).max().item<double>() < 1e-5);
  CHECK(max_difference(got[3], b.grad()) == 0.0);  // sums of small integers: exact
}

TEST_CASE("cpu layer_norm: the same bits on one thread and on two", "[cpu][softmax][norm]") {
  manual_seed(6);
  const Tensor x = randn({300, 77}) * 2;  // 300 rows: several rows per chunk of the backward
  const int prev = num_threads();
  set_num_threads(1);
  const std::vector<Tensor> one = layer_norm_results(x);
  set_num_threads(2);
  const std::vector<Tensor> two = layer_norm_results(x);
  set_num_threads(prev);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("result " << i);
    CHECK(same_bits(one[i], two[i]));
  }
}
