// The CUDA GEMM (kernels/cuda/gemm.cu): every rung of the ladder (Note [The GEMM ladder] in
// kernels/cuda/gemm.cuh) against the CPU matmul at odd sizes, transposed, batched and broadcast
// operands, alpha / beta (beta == 0 never reads out), every dtype, WMMA for float16 / bfloat16,
// and the backend choice EMBER_GEMM=ember|cublas|auto (core/cuda_gemm.h). Every case is tagged
// [cuda] and returns early without a device; the simulator runs them with racecheck on.

#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "core/cuda.h"
#include "core/cuda_gemm.h"
#include "core/ops/linalg.h"
#include "cuda_test_util.h"
#include "test_util.h"

#if defined(EMBER_CUDA_SIM)
#include "kernels/cuda/sim/sim.h"
#endif

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::have_cuda;
using ember::testing::values;

namespace {

// Forces a rung of the ladder (and the ember backend) for a scope.
class VariantGuard {
 public:
  explicit VariantGuard(int v) : backend_(cuda::gemm_backend()) {
    cuda::set_gemm_backend(cuda::GemmBackend::ember);
    cuda::set_gemm_variant(v);
  }
  ~VariantGuard() {
    cuda::set_gemm_variant(0);
    cuda::set_gemm_backend(backend_);
  }

 private:
  cuda::GemmBackend backend_;
};

// Values in [-1, 1) that depend on the position, in `dtype`.
Tensor wave(const Shape& shape, DType dtype, double phase = 0.0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return sin(arange(0, static_cast<double>(n)) * 0.731 + phase).reshape(shape).to(dtype);
}

// Small integers for the integer dtypes (products and sums stay exact).
Tensor small_ints(const Shape& shape, DType dtype, int64_t mod = 7) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (remainder(arange(0, static_cast<double>(n)) * 5 + 3, static_cast<double>(mod)) - 3)
      .reshape(shape)
      .to(dtype);
}

// got (on cuda) against want (cpu): |g - w| <= atol + rtol |w| element-wise.
void check_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  REQUIRE(got.device().is_cuda());
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> g = values(got.cpu()), w = values(want);
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))) {
      if (bad++ < 3) UNSCOPED_INFO("element " << i << ": cuda " << g[i] << ", cpu " << w[i]);
    }
  }
  CHECK(bad == 0);
}

void check_float32(const Tensor& got, const Tensor& want, int64_t k) {
  check_close(got, want, 1e-5, 1e-6 * static_cast<double>(k + 1));
}

// The SIMT variants every dtype has.
constexpr int kSimtVariants[] = {1, 2, 3, 4, 5};
// float32's: those and 7, the warp tiles.
constexpr int kFloat32Variants[] = {1, 2, 3, 4, 5, 7};

}  // namespace

TEST_CASE("cuda gemm: every variant matches the CPU at odd sizes (float32)", "[cuda][gemm]") {
  if (!have_cuda()) return;
  const int64_t shapes[][3] = {{1, 1, 1},    {7, 33, 9},   {33, 7, 65}, {65, 129, 17},
                               {127, 1, 33}, {129, 65, 8}, {1, 129, 7}, {5, 3, 0}};
  for (int v : kFloat32Variants) {
    VariantGuard guard(v);
    for (const auto& s : shapes) {
      INFO("variant " << v << ", m " << s[0] << " n " << s[1] << " k " << s[2]);
      const Tensor a = wave({s[0], s[2]}, kFloat32), b = wave({s[2], s[1]}, kFloat32, 1.0);
      check_float32(matmul(a.cuda(), b.cuda()), matmul(a, b), s[2]);
    }
  }
}

TEST_CASE("cuda gemm: a 129 x 129 x 129 product with the default variant", "[cuda][gemm]") {
  if (!have_cuda()) return;
  const Tensor a = wave({129, 129}, kFloat32), b = wave({129, 129}, kFloat32, 2.0);
  check_float32(mm(a.cuda(), b.cuda()), mm(a, b), 129);
}

TEST_CASE("cuda gemm: transposed, batched and broadcast operands", "[cuda][gemm]") {
  if (!have_cuda()) return;
  for (int v : kFloat32Variants) {
    VariantGuard guard(v);
    INFO("variant " << v);
    const Tensor a = wave({33, 17}, kFloat32), b = wave({65, 17}, kFloat32, 0.5);
    // a @ b^T, a^T^T: every combination of transposed operands.
    check_float32(matmul(a.cuda(), b.cuda().t()), matmul(a, b.t()), 17);
    check_float32(matmul(a.t().cuda().t(), b.t().cuda()), matmul(a, b.t()), 17);
    check_float32(matmul(b.cuda(), a.cuda().t()), matmul(b, a.t()), 17);
    // Batches: bmm, a permuted (non-contiguous) batch, and broadcast (stride-0) batch dims.
    const Tensor x = wave({3, 9, 13}, kFloat32), y = wave({3, 13, 6}, kFloat32, 1.5);
    check_float32(bmm(x.cuda(), y.cuda()), bmm(x, y), 13);
    const Tensor xp = wave({9, 3, 13}, kFloat32).permute({1, 0, 2});
    check_float32(bmm(xp.cuda(), y.cuda()), bmm(xp, y), 13);
    const Tensor p = wave({2, 1, 5, 7}, kFloat32), q = wave({4, 7, 3}, kFloat32, 0.3);
    check_float32(matmul(p.cuda(), q.cuda()), matmul(p, q), 7);
    const Tensor row = wave({7}, kFloat32), mat = wave({2, 3, 7, 4}, kFloat32, 0.9);
    check_float32(matmul(row.cuda(), mat.cuda()), matmul(row, mat), 7);
    // Many batch dims (more than the kernel keeps on the device: the host loops over the rest).
    const Tensor many = wave({2, 1, 3, 2, 2, 3, 4}, kFloat32);
    const Tensor other = wave({2, 2, 1, 2, 2, 4, 2}, kFloat32, 0.2).transpose(1, 3);
    check_float32(matmul(many.cuda(), other.cuda()), matmul(many, other), 4);
    // dot, outer, linear with bias, addmm.
    const Tensor u = wave({33}, kFloat32), w = wave({33}, kFloat32, 0.1);
    check_float32(dot(u.cuda(), w.cuda()), dot(u, w), 33);
    check_float32(outer(u.cuda(), w.cuda()), outer(u, w), 1);
    const Tensor in = wave({4, 6, 9}, kFloat32), weight = wave({5, 9}, kFloat32, 0.4),
                 bias = wave({5}, kFloat32, 0.7);
    check_float32(linear(in.cuda(), weight.cuda(), bias.cuda()), linear(in, weight, bias), 9);
  }
}

TEST_CASE("cuda gemm: alpha and beta, beta == 0 never reads out", "[cuda][gemm]") {
  if (!have_cuda()) return;
  for (int v : kFloat32Variants) {
    VariantGuard guard(v);
    INFO("variant " << v);
    const Tensor a = wave({1, 9, 33}, kFloat32), b = wave({1, 33, 7}, kFloat32, 0.6);
    const Tensor c0 = wave({1, 9, 7}, kFloat32, 1.2);
    Tensor want = c0.clone();
    batched_gemm_stub(DeviceType::CPU, want, a, b, 2.5, -0.5);
    Tensor got = c0.cuda();
    batched_gemm_stub(DeviceType::CUDA, got, a.cuda(), b.cuda(), 2.5, -0.5);
    check_float32(got, want, 33);
    // beta == 0 over NaN: the NaN must not leak into the result.
    Tensor nan_out = full({1, 9, 7}, std::nan(""), TensorOptions(kFloat32)).cuda();
    batched_gemm_stub(DeviceType::CUDA, nan_out, a.cuda(), b.cuda(), 2.5, 0);
    Tensor want0 = empty({1, 9, 7}, TensorOptions(kFloat32));
    batched_gemm_stub(DeviceType::CPU, want0, a, b, 2.5, 0);
    check_float32(nan_out, want0, 33);
    // A strided out (a transposed view) and addmm's broadcast input.
    Tensor outT = c0.cuda().transpose(1, 2).contiguous().transpose(1, 2);
    batched_gemm_stub(DeviceType::CUDA, outT, a.cuda(), b.cuda(), 1.0, 1.0);
    Tensor wantT = c0.clone();
    batched_gemm_stub(DeviceType::CPU, wantT, a, b, 1.0, 1.0);
    check_float32(outT, wantT, 33);
    const Tensor input = wave({7}, kFloat32, 0.8);
    check_float32(addmm(input.cuda(), a[0].cuda(), b[0].cuda(), 0.5, 2.0),
                  addmm(input, a[0], b[0], 0.5, 2.0), 33);
  }
}

TEST_CASE("cuda gemm: float64 and the integer dtypes on every SIMT variant", "[cuda][gemm]") {
  if (!have_cuda()) return;
  for (int v : kSimtVariants) {
    VariantGuard guard(v);
    INFO("variant " << v);
    const Tensor a = wave({17, 33}, kFloat64), b = wave({33, 9}, kFloat64, 0.3);
    check_close(matmul(a.cuda(), b.t().contiguous().t().cuda()), matmul(a, b), 1e-12, 1e-12);
    for (DType dt : {kInt64, kInt32, kInt16, kInt8, kUInt8}) {
      INFO("dtype " << dt);
      const Tensor x = small_ints({2, 9, 21}, dt), y = small_ints({2, 21, 5}, dt, 5);
      check_close(matmul(x.cuda(), y.cuda()), matmul(x, y), 0, 0);  // exact, wraps like the CPU
      check_close(addmm(small_ints({5}, dt).cuda(), x[1].cuda(), y[0].cuda(), 2, 3),
                  addmm(small_ints({5}, dt), x[1], y[0], 2, 3), 0, 0);
    }
  }
}

TEST_CASE("cuda gemm: float16 and bfloat16 through WMMA and the SIMT ladder", "[cuda][gemm]") {
  if (!have_cuda()) return;
  const int64_t shapes[][3] = {{16, 16, 16}, {33, 65, 17}, {1, 7, 1}, {70, 9, 40}, {130, 140, 72}};
  for (DType dt : {kFloat16, kBFloat16}) {
    // Inputs and the CPU's float32 product are exact; only the sum order and the final
    // rounding differ, so a few ulps of the 16-bit type bound the difference.
    const double eps = dt == kFloat16 ? 1.0 / 1024 : 1.0 / 128;
    for (int v : {6, 8, 1, 5}) {
      VariantGuard guard(v);
      for (const auto& s : shapes) {
        INFO("dtype " << dt << ", variant " << v << ", m " << s[0] << " n " << s[1] << " k "
                      << s[2]);
        const Tensor a = wave({s[0], s[2]}, dt), b = wave({s[1], s[2]}, dt, 0.4).t();
        check_close(matmul(a.cuda(), b.cuda()), matmul(a, b), 2 * eps,
                    eps * std::sqrt(static_cast<double>(s[2])));
      }
      const Tensor x = wave({2, 20, 24}, dt), y = wave({1, 24, 18}, dt, 0.9).expand({2, 24, 18});
      Tensor out = full({2, 20, 18}, std::nan(""), TensorOptions(dt)).cuda();
      batched_gemm_stub(DeviceType::CUDA, out, x.cuda(), y.cuda(), 0.5, 0);
      Tensor want = empty({2, 20, 18}, TensorOptions(dt));
      batched_gemm_stub(DeviceType::CPU, want, x, y, 0.5, 0);
      check_close(out, want, 2 * eps, eps * 5);
    }
  }
  {
    VariantGuard guard(6);
    const Tensor a = wave({4, 4}, kFloat32);
    CHECK_THROWS_WITH(matmul(a.cuda(), a.cuda()), Contains("GEMM variant 6 does not exist for "
                                                           "float32"));
  }
  {
    VariantGuard guard(7);
    const Tensor a = wave({4, 4}, kFloat64);
    CHECK_THROWS_WITH(matmul(a.cuda(), a.cuda()), Contains("GEMM variant 7 does not exist for "
                                                           "float64"));
  }
  {
    VariantGuard guard(8);
    const Tensor a = wave({4, 4}, kFloat32);
    CHECK_THROWS_WITH(matmul(a.cuda(), a.cuda()), Contains("GEMM variant 8 does not exist for "
                                                           "float32"));
  }
  CHECK_THROWS_WITH(cuda::set_gemm_variant(10), Contains("set_gemm_variant"));
}

TEST_CASE("cuda gemm: the warpgroup (wgmma) kernel matches the CPU and variant 8", "[cuda][gemm]") {
  // Variant 9 (Note [A warpgroup GEMM]): 128 x 256 tiles, operands K-major and swizzled in a
  // ring of four 64-deep stages refilled two steps later. In the simulator this checks the
  // kernel against the model of wgmma (Note [wgmma in the simulator]); on an H100 / H200 with
  // an sm_90a build, against the hardware: results within the 16-bit tolerance of the CPU, and
  // of variant 8.
  if (!have_cuda()) return;
  CHECK_FALSE(cuda::gemm_wgmma_available(1000));  // no such device
#if defined(EMBER_CUDA_SIM)
  CHECK(cuda::gemm_wgmma_available(0));  // the simulator models wgmma on its sm_90 devices
#endif
  if (!cuda::gemm_wgmma_available(0)) {
    VariantGuard guard(9);
    const Tensor a = wave({4, 4}, kBFloat16);
    CHECK_THROWS_WITH(matmul(a.cuda(), a.cuda()), Contains("variant 9 (wgmma)"));
    return;
  }
  for (DType dt : {kBFloat16, kFloat16}) {
    const double eps = dt == kFloat16 ? 1.0 / 1024 : 1.0 / 128;
    // 131 x 260: edge tiles in m and n; k 264: five k tiles (the ring of four wraps), the last
    // partial.
    const int64_t m = 131, n = 260, k = 264;
    const double atol = eps * std::sqrt(static_cast<double>(k));
    const Tensor a = wave({m, k}, dt), b = wave({k, n}, dt, 0.4);
    const Tensor at = wave({k, m}, dt, 0.7).t(), bt = wave({n, k}, dt, 1.1).t();
    for (const auto& [x, y, what] : {std::tuple{a, bt, "K-major A and B (no copy)"},
                                     std::tuple{a, b, "row-major B (copied K-major)"},
                                     std::tuple{at, b, "col-major A, row-major B"}}) {
      INFO("dtype " << dt << ", " << what);
      Tensor got;
      {
        VariantGuard guard(9);
        got = matmul(x.cuda(), y.cuda());
      }
      check_close(got, matmul(x, y), 2 * eps, atol);
      VariantGuard guard(8);
      check_close(got, matmul(x.cuda(), y.cuda()).cpu(), 2 * eps, atol);
    }
    VariantGuard guard(9);
    // k = 21 inside rows of 24 whose last three elements are NaN (never read), and a view one
    // element in (no chunk 16-byte aligned): the element-by-element staging.
    Tensor pad_a = full({m, 24}, std::nan(""), TensorOptions(dt));
    pad_a.slice(1, 0, 21).copy_(wave({m, 21}, dt));
    Tensor pad_b = full({n, 24}, std::nan(""), TensorOptions(dt));
    pad_b.slice(1, 0, 21).copy_(wave({n, 21}, dt, 0.9));
    const Tensor a21 = pad_a.slice(1, 0, 21), b21 = pad_b.slice(1, 0, 21).t();
    INFO("dtype " << dt << ", k = 21 in NaN-padded rows");
    check_close(matmul(pad_a.cuda().slice(1, 0, 21), pad_b.cuda().slice(1, 0, 21).t()),
                matmul(a21, b21), 2 * eps, eps * std::sqrt(21.0));
    const Tensor big = wave({m, k + 1}, dt, 0.3).cuda();
    INFO("dtype " << dt << ", misaligned A");
    check_close(matmul(big.slice(1, 1, k + 1), bt.cuda()), matmul(big.slice(1, 1, k + 1).cpu(), bt),
                2 * eps, atol);
    // A batch with alpha and beta (out read and scaled).
    const Tensor x = wave({2, 20, 72}, dt), y = wave({2, 72, 18}, dt, 0.9);
    Tensor out = wave({2, 20, 18}, dt, 0.2).cuda();
    Tensor want = wave({2, 20, 18}, dt, 0.2);
    batched_gemm_stub(DeviceType::CUDA, out, x.cuda(), y.cuda(), 0.5, 2.0);
    batched_gemm_stub(DeviceType::CPU, want, x, y, 0.5, 2.0);
    INFO("dtype " << dt << ", batched, alpha 0.5, beta 2");
    check_close(out, want, 2 * eps, eps * 8);
  }
  {
    VariantGuard guard(9);
    const Tensor a = wave({4, 4}, kFloat32);
    CHECK_THROWS_WITH(matmul(a.cuda(), a.cuda()), Contains("variant 9 (wgmma)"));
  }
}

TEST_CASE("cuda gemm: the pipelined WMMA kernel stages every operand layout", "[cuda][gemm]") {
  // Variant 8 stages a unit-column-stride operand row-major and a unit-row-stride one
  // col-major, in 16-byte chunks where a chunk is whole and aligned, element by element
  // elsewhere (Note [A pipelined WMMA GEMM]): each combination, the strided and misaligned
  // fallbacks, and a k that ends inside a chunk, against the CPU.
  if (!have_cuda()) return;
  VariantGuard guard(8);
  const int64_t m = 131, n = 136, k = 200;  // seven k tiles: the ring of four stages wraps
  for (DType dt : {kFloat16, kBFloat16}) {
    const double eps = dt == kFloat16 ? 1.0 / 1024 : 1.0 / 128;
    const double atol = eps * std::sqrt(static_cast<double>(k));
    const Tensor a = wave({m, k}, dt), b = wave({k, n}, dt, 0.4);
    const Tensor at = wave({k, m}, dt, 0.7).t(), bt = wave({n, k}, dt, 1.1).t();  // unit row stride
    for (const auto& [x, y, what] : {std::tuple{a, b, "row-major A, row-major B"},
                                     std::tuple{at, b, "col-major A, row-major B"},
                                     std::tuple{a, bt, "row-major A, col-major B"},
                                     std::tuple{at, bt, "col-major A, col-major B"}}) {
      INFO("dtype " << dt << ", " << what);
      check_close(matmul(x.cuda(), y.cuda()), matmul(x, y), 2 * eps, atol);
    }
    // Strided (no unit stride): every element on its own.
    const Tensor as = wave({m, 2 * k}, dt).slice(1, 0, 2 * k, 2);
    const Tensor bs = wave({2 * k, n}, dt, 0.2).slice(0, 0, 2 * k, 2);
    INFO("dtype " << dt << ", strided");
    check_close(matmul(as.cuda(), bs.cuda()), matmul(as, bs), 2 * eps, atol);
    // Misaligned: a view starting one element in, so no chunk is 16-byte aligned.
    const Tensor big = wave({m, k + 1}, dt, 0.3).cuda();
    const Tensor am = big.slice(1, 1, k + 1);
    INFO("dtype " << dt << ", misaligned A");
    check_close(matmul(am, b.cuda()), matmul(am.cpu(), b), 2 * eps, atol);
    // k = 21 inside rows of 24 whose last three elements are NaN: the last chunk of every row
    // crosses the matrix's edge, and what lies past the edge must never be read (a NaN read
    // there would reach the output through 0 * NaN).
    Tensor pad_a = full({m, 24}, std::nan(""), TensorOptions(dt));
    pad_a.slice(1, 0, 21).copy_(wave({m, 21}, dt));
    Tensor pad_b = full({n, 24}, std::nan(""), TensorOptions(dt));
    pad_b.slice(1, 0, 21).copy_(wave({n, 21}, dt, 0.9));
    const Tensor a21 = pad_a.slice(1, 0, 21), b21 = pad_b.slice(1, 0, 21).t();
    const Tensor a21c = pad_a.cuda().slice(1, 0, 21), b21c = pad_b.cuda().slice(1, 0, 21).t();
    REQUIRE(a21c.stride(0) == 24);
    INFO("dtype " << dt << ", k = 21 in NaN-padded rows");
    check_close(matmul(a21c, b21c), matmul(a21, b21), 2 * eps, eps * std::sqrt(21.0));
  }
}

TEST_CASE("cuda gemm: every tuning of rungs 7 and 8 matches the CPU", "[cuda][gemm]") {
  // set_gemm_tuning (core/cuda_gemm.h): rung 8's ring of 2, 3 or 4 stages (each wrapping over
  // seven k tiles), and kernels compiled for one or two blocks per SM; bad tunings are errors.
  if (!have_cuda()) return;
  struct TuningGuard {
    ~TuningGuard() { cuda::set_gemm_tuning({}); }
  } restore;
  const Tensor a32 = wave({70, 200}, kFloat32), b32 = wave({200, 140}, kFloat32, 0.5);
  const Tensor a16 = wave({131, 200}, kBFloat16), b16 = wave({200, 136}, kBFloat16, 0.5);
  const double eps = 1.0 / 128;
  for (int min_blocks : {1, 2}) {
    for (int stages : {2, 3, 4}) {
      INFO("min_blocks " << min_blocks << ", stages " << stages);
      cuda::set_gemm_tuning({min_blocks, stages});
      CHECK(cuda::gemm_tuning().stages == stages);
      {
        VariantGuard guard(7);
        check_float32(matmul(a32.cuda(), b32.cuda()), matmul(a32, b32), 200);
      }
      VariantGuard guard(8);
      check_close(matmul(a16.cuda(), b16.cuda()), matmul(a16, b16), 2 * eps,
                  eps * std::sqrt(200.0));
      // A col-major operand keeps the default tuning.
      check_close(matmul(a16.cuda(), b16.t().contiguous().t().cuda()), matmul(a16, b16), 2 * eps,
                  eps * std::sqrt(200.0));
    }
  }
  CHECK_THROWS_WITH(cuda::set_gemm_tuning({3, 4}), Contains("min_blocks must be 1 or 2, got 3"));
  CHECK_THROWS_WITH(cuda::set_gemm_tuning({1, 5}), Contains("stages must be 2, 3 or 4, got 5"));
}

TEST_CASE("cuda gemm: EMBER_GEMM selects the backend, auto benchmarks once per shape",
          "[cuda][gemm]") {
  if (!have_cuda()) return;
  const cuda::GemmBackend saved = cuda::gemm_backend();
  CHECK(std::string(cuda::gemm_backend_name(saved)) != "");
  CHECK_THROWS_WITH(cuda::set_gemm_backend("fast"), Contains("unknown GEMM backend 'fast'"));
  const Tensor a = wave({9, 12}, kFloat32), b = wave({12, 5}, kFloat32, 0.2);
  cuda::set_gemm_backend("cublas");
  CHECK(cuda::gemm_backend() == cuda::GemmBackend::cublas);
  if (cuda::is_simulated()) {
    CHECK_THROWS_WITH(matmul(a.cuda(), b.cuda()),
                      Contains("EMBER_GEMM=cublas needs a real CUDA build"));
  } else {
    check_float32(matmul(a.cuda(), b.cuda()), matmul(a, b), 12);
    check_float32(matmul(a.cuda().t().contiguous().t(), b.cuda()), matmul(a, b), 12);
    const Tensor x = wave({3, 9, 13}, kBFloat16), y = wave({3, 13, 6}, kBFloat16, 1.5);
    check_close(bmm(x.cuda(), y.cuda()), bmm(x, y), 1.0 / 64, 1.0 / 32);
  }
  cuda::set_gemm_backend("auto");
  cuda::clear_gemm_autotune_cache();
  check_float32(matmul(a.cuda(), b.cuda()), matmul(a, b), 12);
  std::vector<cuda::GemmChoice> choices = cuda::gemm_autotune_choices();
  REQUIRE(choices.size() == 1);
  CHECK(choices[0].key == "float32 9x5x12 batch 1 a:N b:N c:N");
  CHECK((choices[0].choice.rfind("ember:", 0) == 0 || choices[0].choice == "cublas"));
  check_float32(matmul(a.cuda(), b.cuda()), matmul(a, b), 12);  // cached: no new entry
  CHECK(cuda::gemm_autotune_choices().size() == 1);
  check_float32(matmul(a.cuda(), b.cuda().t().contiguous().t()), matmul(a, b), 12);
  choices = cuda::gemm_autotune_choices();
  REQUIRE(choices.size() == 2);
  CHECK(choices[1].key == "float32 9x5x12 batch 1 a:N b:T c:N");
  const Tensor h = wave({16, 16}, kFloat16);
  check_close(matmul(h.cuda(), h.cuda()), matmul(h, h), 1.0 / 512, 1.0 / 64);
  choices = cuda::gemm_autotune_choices();
  REQUIRE(choices.size() == 3);
  CHECK(choices[2].rejected.empty());  // every candidate agreed with the default rung
  cuda::clear_gemm_autotune_cache();
  CHECK(cuda::gemm_autotune_choices().empty());
  cuda::set_gemm_backend(saved);
}

TEST_CASE("cuda gemm: auto rejects a candidate whose result differs from the default rung's",
          "[cuda][gemm]") {
  if (!have_cuda()) return;
  const cuda::GemmBackend saved = cuda::gemm_backend();
  cuda::set_gemm_backend("auto");
  struct Restore {
    ~Restore() { cuda::detail::set_gemm_fault(0); }
  } restore;
  // Rung 3 computes with alpha doubled (the test hook): the check must catch it, for a float32
  // and a bfloat16 product (where the check's bound is widest), and never choose it.
  cuda::detail::set_gemm_fault(3);
  for (DType dt : {kFloat32, kBFloat16}) {
    INFO("dtype " << dtype_name(dt));
    cuda::clear_gemm_autotune_cache();
    const Tensor a = wave({33, 40}, dt), b = wave({40, 17}, dt, 0.7);
    const Tensor c = matmul(a.cuda(), b.cuda());
    check_close(c, matmul(a.to(kFloat64), b.to(kFloat64)).to(dt), dt == kFloat32 ? 1e-5 : 1.0 / 64,
                dt == kFloat32 ? 1e-5 : 1.0 / 32);
    const std::vector<cuda::GemmChoice> choices = cuda::gemm_autotune_choices();
    REQUIRE(choices.size() == 1);
    CHECK(choices[0].rejected == std::vector<std::string>{"ember:3"});
    CHECK(choices[0].choice != "ember:3");
  }
  // Without the fault nothing is rejected.
  cuda::detail::set_gemm_fault(0);
  cuda::clear_gemm_autotune_cache();
  (void)matmul(wave({33, 40}, kFloat32).cuda(), wave({40, 17}, kFloat32, 0.7).cuda());
  REQUIRE(cuda::gemm_autotune_choices().size() == 1);
  CHECK(cuda::gemm_autotune_choices()[0].rejected.empty());
  cuda::clear_gemm_autotune_cache();
  cuda::set_gemm_backend(saved);
}

#if defined(EMBER_CUDA_SIM)
TEST_CASE("cuda gemm: every variant is racecheck- and initcheck-clean", "[cuda][gemm]") {
  if (!have_cuda()) return;
  ember::sim::Options o = ember::sim::options();
  const ember::sim::Options saved = o;
  o.racecheck = true;
  o.fill = ember::sim::Fill::nan;
  ember::sim::set_options(o);
  for (int v : {1, 2, 3, 4, 5, 6, 7, 8, 9}) {
    VariantGuard guard(v);
    INFO("variant " << v);
    const bool wmma = v == 6 || v == 8 || v == 9;
    const DType dt = wmma ? kBFloat16 : kFloat32;
    // 6 k tiles of 32 (of 64 for variant 9, whose ring of four stages then wraps).
    const int64_t k = v == 9 ? 328 : 168;
    const Tensor a = wave({2, 70, k}, dt), b = wave({2, k, 33}, dt, 0.5);
    check_close(bmm(a.cuda(), b.cuda()), bmm(a, b), wmma ? 1.0 / 64 : 1e-5, wmma ? 1.0 / 16 : 1e-5);
    cuda::synchronize();
  }
  ember::sim::set_options(saved);
}
#endif
