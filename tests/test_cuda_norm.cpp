// The CUDA softmax / log_softmax (kernels/cuda/softmax.cu) and layer_norm (kernels/cuda/norm.cu)
// kernels against the CPU, forward and backward. softmax: short rows (a warp per row), long rows
// (a block per row), strided lines (dim not last), non-contiguous inputs, every floating dtype
// and the special values (Note [Online softmax]). layer_norm: the fused op on short and long
// rows, with and without affine, mean >> std, the native kernels against the CPU's, and double
// backward. Tagged [cuda]; without a device each case says why and returns.

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "core/ops/norm.h"
#include "core/profiler.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using ember::testing::check_deferred_error;
using ember::testing::have_cuda;
using ember::testing::launch_blocking_env;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

// Values in [-4 * spread, 4 * spread) of a fixed seed, in dtype.
Tensor sample(const Shape& shape, DType dtype, double spread = 1.0, uint64_t seed = 1) {
  manual_seed(seed);
  return ((rand(shape, kFloat64) * 8 - 4) * spread).to(dtype);
}

double tolerance(DType dtype) {
  if (dtype == kFloat16) return 4e-3;
  if (dtype == kBFloat16) return 3e-2;
  if (dtype == kFloat32) return 2e-6;
  return 1e-13;
}

// got (device) == want (CPU) within tol relative to want's largest finite magnitude; NaN == NaN.
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
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = std::isnan(w[i])   ? std::isnan(g[i])
                    : std::isinf(w[i]) ? g[i] == w[i]
                                       : std::abs(g[i] - w[i]) <= tol * std::max(1.0, scale);
    if (!ok && bad++ < 5) {
      INFO("element " << i << ": cuda " << g[i] << ", cpu " << w[i]);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

const DType kFloatingTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

}  // namespace

TEST_CASE("cuda softmax and log_softmax match the CPU on short, long and strided lines", "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape shape;
    int64_t dim;
  };
  // (7, 5): warp rows shorter than a warp; (3, 1000): warp rows; (2, 3000): rows in registers;
  // (1, 70000), (2, 20000): rows too long for registers, split into chunks (16-byte vectors);
  // (2, 9001): the same without whole vectors; dim 0 / 1 of 3-D shapes: strided lines (Note
  // [Softmax over lines]), (3, 70, 45) with a partial strip of 32 lines, (1, 20000, 3) and
  // (30000, 5) dim 0 few long lines split into chunks; 0-dim and size-1 lines.
  const std::vector<Case> cases = {
      {{7, 5}, 1},        {{3, 1000}, -1}, {{2, 3000}, 1},  {{1, 70000}, 0},   {{2, 20000}, 1},
      {{2, 9001}, 1},     {{4, 6, 9}, 1},  {{33, 3, 5}, 0}, {{2, 2049, 3}, 1}, {{3, 70, 45}, 1},
      {{1, 20000, 3}, 1}, {{30000, 5}, 0}, {{5}, 0},        {{}, 0},           {{6, 1}, 1},
      {{1, 6}, 0},        {{0, 4}, 1},     {{3, 0, 4}, 1}};
  for (DType dt : kFloatingTypes) {
    for (const Case& c : cases) {
      for (bool log : {false, true}) {
        INFO(dtype_name(dt) << " " << shape_str(c.shape) << " dim " << c.dim
                            << (log ? " log" : ""));
        const Tensor x = sample(c.shape, dt, 2.0);
        const Tensor want = log ? x.log_softmax(c.dim) : x.softmax(c.dim);
        const Tensor got = log ? x.to(kDev).log_softmax(c.dim) : x.to(kDev).softmax(c.dim);
        check_close(got, want, tolerance(dt), "forward");
      }
    }
  }
}

TEST_CASE("cuda softmax of contiguous rows that start off a 16-byte boundary", "[cuda]") {
  if (!have_cuda()) return;
  // A contiguous view one element into its storage: the rows are not 16-byte aligned, so long
  // rows take the lines layout's scalar loads instead of vectors or registers.
  for (DType dt : kFloatingTypes) {
    for (int64_t n : {int64_t{3000}, int64_t{20000}}) {
      INFO(dtype_name(dt) << " n " << n);
      const Tensor base = sample({3 * n + 1}, dt, 2.0);
      const Tensor x = base.narrow(0, 1, 3 * n).view({3, n});
      const Tensor xd = base.to(kDev).narrow(0, 1, 3 * n).view({3, n});
      REQUIRE(xd.is_contiguous());
      check_close(xd.softmax(1), x.softmax(1), tolerance(dt), "softmax");
      check_close(xd.log_softmax(1), x.log_softmax(1), tolerance(dt), "log_softmax");
    }
  }
}

TEST_CASE("cuda softmax over lines split into chunks gives the same bits every run", "[cuda]") {
  if (!have_cuda()) return;
  const Tensor x = sample({20000, 6}, kFloat32, 3.0).to(kDev);
  const std::vector<double> first = values(x.softmax(0));
  for (int run = 0; run < 3; ++run) CHECK(values(x.softmax(0)) == first);
}

TEST_CASE("cuda softmax reads non-contiguous inputs and keeps large logits finite", "[cuda]") {
  if (!have_cuda()) return;
  const Tensor base = sample({6, 40, 50}, kFloat32, 1000.0);  // logits up to 4000
  const Tensor views[] = {base.transpose(0, 2), base.narrow(2, 3, 30), base.select(1, 7)};
  for (const Tensor& v : views) {
    for (int64_t dim = 0; dim < v.dim(); ++dim) {
      INFO("shape " << shape_str(v.sizes()) << " dim " << dim);
      check_close(v.to(kDev).softmax(dim), v.softmax(dim), 2e-6, "softmax");
      check_close(v.to(kDev).log_softmax(dim), v.log_softmax(dim), 2e-6, "log_softmax");
    }
  }
}

TEST_CASE("cuda softmax gives the CPU's NaN for lines with NaN, +inf or only -inf", "[cuda]") {
  if (!have_cuda()) return;
  const double nan = ember::testing::kNaN, inf = ember::testing::kInf;
  // A warp row, a row in registers and a row split into chunks (dim 1); lines (dim 0).
  for (int64_t n : {int64_t{5}, int64_t{1500}, int64_t{20000}}) {
    Tensor x = sample({5, n}, kFloat32);
    Tensor host = x.contiguous();
    host.select(0, 0).narrow(0, 2, 1).fill_(nan);
    host.select(0, 1).narrow(0, 1, 1).fill_(inf);
    host.select(0, 2).fill_(-inf);
    host.select(0, 3).narrow(0, 0, 1).fill_(-inf);  // one -inf among finite values: exp -> 0
    host.select(0, 4).narrow(0, 3, 1).fill_(inf);
    host.select(0, 4).narrow(0, 4, 1).fill_(inf);
    for (int64_t dim : {int64_t{1}, int64_t{0}}) {
      INFO("n " << n << " dim " << dim);
      check_close(host.to(kDev).softmax(dim), host.softmax(dim), 2e-6, "softmax");
      check_close(host.to(kDev).log_softmax(dim), host.log_softmax(dim), 2e-6, "log_softmax");
    }
  }
}

TEST_CASE("cuda softmax of masked rows: threads that see only -inf add nothing", "[cuda]") {
  if (!have_cuda()) return;
  const double inf = ember::testing::kInf;
  // A causal mask's first rows: one or two finite logits, the rest -inf, so most threads of a
  // warp (n 64) or block (n 1500) fold only -inf values, and their partial states merge.
  // n 20000: rows split into chunks, most chunks all -inf.
  for (int64_t n : {int64_t{64}, int64_t{1500}, int64_t{20000}}) {
    Tensor host = full({3, n}, -inf);
    host.select(0, 0).narrow(0, 0, 1).fill_(1.5);
    host.select(0, 1).narrow(0, 0, 2).fill_(-0.5);
    host.select(0, 2).narrow(0, n - 1, 1).fill_(2.0);
    INFO("n " << n);
    check_close(host.to(kDev).softmax(1), host.softmax(1), 2e-6, "softmax");
    check_close(host.to(kDev).log_softmax(1), host.log_softmax(1), 2e-6, "log_softmax");
    const Tensor target = full({3}, 0, TensorOptions(kInt64));
    check_close(nn::functional::cross_entropy(host.narrow(0, 0, 2).to(kDev),
                                              target.narrow(0, 0, 2).to(kDev)),
                nn::functional::cross_entropy(host.narrow(0, 0, 2), target.narrow(0, 0, 2)), 2e-6,
                "cross_entropy");
  }
}

TEST_CASE("cuda softmax and log_softmax backward match the CPU", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Shape& shape :
         {Shape{4, 7}, Shape{2, 1300}, Shape{3, 5, 4}, Shape{2, 9001}, Shape{9000, 3}}) {
      for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
        for (bool log : {false, true}) {
          INFO(dtype_name(dt) << " " << shape_str(shape) << " dim " << dim << (log ? " log" : ""));
          const Tensor x = sample(shape, dt).requires_grad_(true);
          const Tensor w = sample(shape, dt, 1.0, 7);
          const Tensor xd = x.detach().to(kDev).requires_grad_(true);
          ((log ? x.log_softmax(dim) : x.softmax(dim)) * w).sum().backward();
          ((log ? xd.log_softmax(dim) : xd.softmax(dim)) * w.to(kDev)).sum().backward();
          check_close(xd.grad(), x.grad(), tolerance(dt) * 10, "grad");
        }
      }
    }
  }
}

// ---- layer_norm (kernels/cuda/norm.cu, Note [Fused layer_norm] in core/ops/norm.h) -----------

namespace {

namespace F = ember::nn::functional;

struct LayerNormCase {
  Shape shape;
  Shape normalized;
  bool weight, bias;
};

// Short rows (a warp each), long rows (a block each), several normalised dims, no affine.
const std::vector<LayerNormCase> kLayerNormCases = {
    {{6, 5}, {5}, true, true},       {{3, 4, 33}, {33}, true, true},
    {{2, 3000}, {3000}, true, true}, {{3, 2, 700}, {2, 700}, true, false},
    {{4, 7}, {7}, false, false},     {{5, 9}, {9}, false, true},
    {{1, 1}, {1}, true, true},       {{0, 8}, {8}, true, true},
    {{2, 1025}, {1025}, true, true}};

}  // namespace

TEST_CASE("cuda layer_norm is one fused op and matches the CPU forward and backward", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : kFloatingTypes) {
    for (const LayerNormCase& c : kLayerNormCases) {
      for (double offset : {0.0, 100.0}) {  // mean 100 >> std
        INFO(dtype_name(dt) << " " << shape_str(c.shape) << " over " << shape_str(c.normalized)
                            << " offset " << offset);
        const Tensor x = (sample(c.shape, dt, 0.5) + offset).to(dt).requires_grad_(true);
        const Tensor w =
            c.weight ? sample(c.normalized, dt, 0.5, 3).requires_grad_(true) : Tensor();
        const Tensor b = c.bias ? sample(c.normalized, dt, 0.5, 4).requires_grad_(true) : Tensor();
        const Tensor xd = x.detach().to(kDev).requires_grad_(true);
        const Tensor wd = c.weight ? w.detach().to(kDev).requires_grad_(true) : Tensor();
        const Tensor bd = c.bias ? b.detach().to(kDev).requires_grad_(true) : Tensor();
        const Tensor y = F::layer_norm(x, c.normalized, w, b, 1e-5);
        const Tensor yd = F::layer_norm(xd, c.normalized, wd, bd, 1e-5);
        CHECK(yd.grad_fn()->name() == "NativeLayerNormBackward");
        const double tol = dt == kFloat32 ? 2e-5 : dt == kFloat64 ? 1e-11 : tolerance(dt) * 2;
        check_close(yd, y, tol, "forward");
        const Tensor g = sample(c.shape, dt, 1.0, 9);
        (y * g).sum().backward();
        (yd * g.to(kDev)).sum().backward();
        check_close(xd.grad(), x.grad(), tol * 10, "grad input");
        if (c.weight) check_close(wd.grad(), w.grad(), tol * 10, "grad weight");
        if (c.bias) check_close(bd.grad(), b.grad(), tol * 10, "grad bias");
      }
    }
  }
}

TEST_CASE("cuda layer_norm's native kernels match the CPU kernels", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : kFloatingTypes) {
    for (int64_t N : {int64_t{3}, int64_t{64}, int64_t{1500}}) {
      INFO(dtype_name(dt) << " N " << N);
      const Tensor x = (sample({7, N}, dt) + 100.0).to(dt), w = sample({N}, dt, 1.0, 2),
                   b = sample({N}, dt, 1.0, 3), g = sample({7, N}, dt, 1.0, 4);
      const native::LayerNormOutput c = native::layer_norm(x, N, w, b, 1e-5);
      const native::LayerNormOutput d =
          native::layer_norm(x.to(kDev), N, w.to(kDev), b.to(kDev), 1e-5);
      const double tol = dt == kFloat32 ? 2e-5 : dt == kFloat64 ? 1e-11 : tolerance(dt) * 2;
      check_close(d.y, c.y, tol, "y");
      check_close(d.mean, c.mean, 1e-6, "mean");
      check_close(d.rstd, c.rstd, tol, "rstd");
      const native::LayerNormGrads gc =
          native::layer_norm_backward(g, x, c.mean, c.rstd, w, N, true, true, true);
      const native::LayerNormGrads gd = native::layer_norm_backward(
          g.to(kDev), x.to(kDev), d.mean, d.rstd, w.to(kDev), N, true, true, true);
      check_close(gd.grad_input, gc.grad_input, tol * 10, "dx");
      check_close(gd.grad_weight, gc.grad_weight, tol * 10, "dw");
      check_close(gd.grad_bias, gc.grad_bias, tol * 10, "db");
    }
  }
}

TEST_CASE("cuda layer_norm double backward (create_graph) matches the CPU", "[cuda]") {
  if (!have_cuda()) return;
  const Tensor x = sample({3, 6}, kFloat64).requires_grad_(true);
  const Tensor w = sample({6}, kFloat64, 1.0, 2).requires_grad_(true);
  const Tensor b = sample({6}, kFloat64, 1.0, 3).requires_grad_(true);
  const Tensor xd = x.detach().to(kDev).requires_grad_(true);
  const Tensor wd = w.detach().to(kDev).requires_grad_(true);
  const Tensor bd = b.detach().to(kDev).requires_grad_(true);
  auto second = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    const Tensor y = F::layer_norm(x, {6}, w, b, 1e-5);
    const Tensors g = autograd::grad({(y * y * y).sum()}, {x, w}, {}, /*retain_graph=*/true,
                                     /*create_graph=*/true);
    return autograd::grad({(g[0] * g[0]).sum() + (g[1] * g[1]).sum()}, {x, w, b});
  };
  const Tensors want = second(x, w, b), got = second(xd, wd, bd);
  for (size_t i = 0; i < 3; ++i) check_close(got[i], want[i], 1e-10, "second derivative");
}

// ---- rows held in registers (kernels/cuda/row_cache.cuh, Note [Rows held in registers]) -------

TEST_CASE(
    "cuda rows held in registers: every block shape, for softmax, layer_norm and "
    "cross_entropy",
    "[cuda]") {
  if (!have_cuda()) return;
  // Lengths giving each of row_shape's blocks for 16-bit types (8-element vectors) and float32
  // (4): 1032 (129 vectors of 16-bit: 128 threads x 2), 2048, 4096, 8192, 16384 (16-bit: 512 x
  // 4; too long for float32), 32768 (too long for every dtype), and 4100, 8196 (not whole 16-bit
  // vectors: the strided paths).
  for (DType dt : kFloatingTypes) {
    for (int64_t n : {int64_t{1032}, int64_t{2048}, int64_t{4096}, int64_t{8192}, int64_t{16384},
                      int64_t{32768}, int64_t{4100}, int64_t{8196}}) {
      INFO(dtype_name(dt) << " n " << n);
      const Tensor x = sample({3, n}, dt, 2.0);
      const Tensor xd = x.to(kDev);
      const double tol = dt == kFloat32 ? 2e-5 : dt == kFloat64 ? 1e-11 : tolerance(dt) * 2;
      check_close(xd.softmax(1), x.softmax(1), tolerance(dt), "softmax");
      check_close(xd.log_softmax(1), x.log_softmax(1), tolerance(dt) * 4, "log_softmax");
      const Tensor w = sample({n}, dt, 0.5, 3), b = sample({n}, dt, 0.5, 4);
      check_close(F::layer_norm(xd, {n}, w.to(kDev), b.to(kDev), 1e-5),
                  F::layer_norm(x, {n}, w, b, 1e-5), tol, "layer_norm");
      check_close(F::layer_norm(xd, {n}, w.to(kDev), Tensor(), 1e-5),
                  F::layer_norm(x, {n}, w, Tensor(), 1e-5), tol, "layer_norm without bias");
      check_close(F::layer_norm(xd, {n}, Tensor(), Tensor(), 1e-5),
                  F::layer_norm(x, {n}, Tensor(), Tensor(), 1e-5), tol, "layer_norm no affine");
      manual_seed(8);
      const Tensor target = randint(0, n, {3}, kInt64);
      check_close(F::cross_entropy(xd, target.to(kDev), Tensor(), -100, "none"),
                  F::cross_entropy(x, target, Tensor(), -100, "none"),
                  dt == kFloat64 ? 1e-12 : tolerance(dt) * 4, "cross_entropy");
    }
  }
}

// ---- cross_entropy (kernels/cuda/cross_entropy.cu, Note [Fused cross-entropy]) -----------------

TEST_CASE("cuda fused cross_entropy matches the CPU for every option, forward and backward",
          "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape input;
    int64_t classes;
  };
  // (N, C) with C below a warp, a few warps and a full block; rows held in registers (1000:
  // whole vectors of every dtype; 1500: of float32 and float64 only); (C); (N, C, d1, d2).
  const std::vector<Case> cases = {{{6, 5}, 5},       {{4, 300}, 300}, {{3, 1500}, 1500},
                                   {{2, 1000}, 1000}, {{7}, 7},        {{2, 4, 3, 2}, 4},
                                   {{0, 3}, 3}};
  for (DType dt : kFloatingTypes) {
    for (const Case& c : cases) {
      Shape tshape = c.input;
      tshape.erase(tshape.begin() + (c.input.size() == 1 ? 0 : 1));
      manual_seed(5);
      const Tensor target = randint(0, c.classes, tshape, kInt64);
      Tensor target_ignored = target.clone();
      if (target.numel() > 1) target_ignored.reshape({-1}).narrow(0, 1, 1).fill_(-100);
      const Tensor weight = (rand({c.classes}, kFloat64) + 0.5).to(dt);
      for (const char* reduction : {"none", "mean", "sum"}) {
        for (double smoothing : {0.0, 0.2}) {
          for (int variant = 0; variant < 3; ++variant) {  // plain, class weights, ignored
            INFO(dtype_name(dt) << " " << shape_str(c.input) << " " << reduction << " smoothing "
                                << smoothing << " variant " << variant);
            const Tensor w = variant == 1 ? weight : Tensor();
            const Tensor t = variant == 2 ? target_ignored : target;
            const Tensor x = sample(c.input, dt, 2.0).requires_grad_(true);
            const Tensor xd = x.detach().to(kDev).requires_grad_(true);
            const Tensor want = F::cross_entropy(x, t, w, -100, reduction, smoothing);
            const Tensor got = F::cross_entropy(xd, t.to(kDev), w.defined() ? w.to(kDev) : w, -100,
                                                reduction, smoothing);
            if (c.input[0] > 0) CHECK(got.grad_fn()->name() == "CrossEntropyLossBackward");
            const double tol = dt == kFloat32 ? 1e-5 : dt == kFloat64 ? 1e-12 : tolerance(dt) * 4;
            check_close(got, want, tol, "loss");
            const Tensor g = sample(want.sizes(), dt, 1.0, 11);
            (want * g).sum().backward();
            (got * g.to(kDev)).sum().backward();
            check_close(xd.grad(), x.grad(), tol, "grad");
          }
        }
      }
    }
  }
}

TEST_CASE("cuda cross_entropy's mean sums the losses and weights in one reduction", "[cuda]") {
  // CrossEntropyRows::loss_and_weight: the row kernel, one reduction over the stacked (2, M)
  // loss and weight rows, and the division -- not a reduction each.
  if (!have_cuda()) return;
  const Tensor x = sample({64, 10}, kFloat32).to(kDev);
  const Tensor t = randint(0, 10, {64}, TensorOptions(kInt64).device(kDev));
  F::cross_entropy(x, t).item<float>();  // warm: the caching allocator holds the blocks
  profiler::Profiler prof;
  prof.start();
  (void)F::cross_entropy(x, t);
  cuda::synchronize();
  std::vector<std::string> names;
  for (const profiler::FunctionEvent& e : prof.stop().events(profiler::Category::device))
    names.push_back(e.name);
  INFO(::ember::detail::str(names.size(), " kernels, first ", names.empty() ? "" : names[0],
                            ", last ", names.empty() ? "" : names.back()));
  REQUIRE(names.size() == 3);
  CHECK(names[0] == "cross_entropy_kernel");
  CHECK(names[1] == "sum");  // the reduction kernel is named by its op
  CHECK(names[2].find("elementwise_kernel") != std::string::npos);
}

TEST_CASE("cuda cross_entropy checks its targets on the device and raises the CPU's error",
          "[cuda][launch_blocking]") {
  if (!have_cuda()) return;
  // Targets are not copied to the host; the kernel records a bad one and the op defers the
  // check (Note [Deferred device checks]): the next synchronisation raises it, on short and
  // register-held rows.
  for (int64_t C : {int64_t{5}, int64_t{2048}}) {
    INFO("C " << C);
    const Tensor x = sample({3, C}, kFloat32).to(kDev);
    for (int64_t bad : {C, int64_t{-1}, C + 100}) {
      const Tensor t = tensor<int64_t>({0, bad, 1}).to(kDev);
      check_deferred_error([&] { return F::cross_entropy(x, t); },
                           Catch::StartsWith("cross_entropy: target " + std::to_string(bad) +
                                             " is out of bounds for C=" + std::to_string(C)));
    }
    // ignore_index may lie outside [0, C); after an error the next call runs clean.
    const Tensor t = tensor<int64_t>({0, C + 7, 1}).to(kDev);
    CHECK_NOTHROW(F::cross_entropy(x, t, {}, /*ignore_index=*/C + 7).item<float>());
    check_close(F::cross_entropy(x, tensor<int64_t>({0, 2, 1}).to(kDev)),
                F::cross_entropy(x.to(kCPU), tensor<int64_t>({0, 2, 1})), 1e-5, "after an error");
  }
}

TEST_CASE("fused cross_entropy equals the composite on the CPU, and double backward works",
          "[cuda]") {
  if (!have_cuda()) return;
  // Class weights that require grad take the composite: the reference for the fused op.
  const Tensor x = sample({5, 6}, kFloat64, 2.0).requires_grad_(true);
  manual_seed(3);
  const Tensor t = randint(0, 6, {5}, kInt64);
  const Tensor w = (rand({6}, kFloat64) + 0.5);
  const Tensor w_grad = w.clone().requires_grad_(true);
  const Tensor fused = F::cross_entropy(x, t, w, -100, "mean", 0.1);
  const Tensor composite = F::cross_entropy(x, t, w_grad, -100, "mean", 0.1);
  CHECK(fused.grad_fn()->name() == "CrossEntropyLossBackward");
  CHECK(fused.item<double>() == Approx(composite.item<double>()).epsilon(1e-12));
  // Second derivatives through the differentiable formula, on both devices.
  auto second = [&](const Tensor& xi, const Tensor& ti, const Tensor& wi) {
    const Tensor loss = F::cross_entropy(xi, ti, wi, -100, "mean", 0.1);
    const Tensors g = autograd::grad({loss}, {xi}, {}, true, /*create_graph=*/true);
    return autograd::grad({(g[0] * g[0]).sum()}, {xi})[0];
  };
  const Tensor want = second(x, t, w_grad);
  const std::vector<double> formula = values(second(x, t, w)), composite_2 = values(want);
  REQUIRE(formula.size() == composite_2.size());
  for (size_t i = 0; i < formula.size(); ++i)  // formula vs composite, CPU
    CHECK(formula[i] == Approx(composite_2[i]).margin(1e-14));
  const Tensor xd = x.detach().to(kDev).requires_grad_(true);
  check_close(second(xd, t.to(kDev), w.to(kDev)), want, 1e-10, "second derivative");
}

// ---- batch_norm (kernels/cuda/norm.cu) ----------------------------------------------------------

TEST_CASE("cuda batch_norm is one fused op: training with running statistics and eval", "[cuda]") {
  if (!have_cuda()) return;
  const std::vector<Shape> shapes = {{8, 3}, {4, 5, 7}, {2, 3, 5, 6}, {3, 2, 700}};
  for (DType dt : kFloatingTypes) {
    for (const Shape& shape : shapes) {
      for (bool training : {true, false}) {
        for (bool affine : {true, false}) {
          for (double offset : {0.0, 100.0}) {
            INFO(dtype_name(dt) << " " << shape_str(shape) << (training ? " train" : " eval")
                                << (affine ? " affine" : "") << " offset " << offset);
            const int64_t C = shape[1];
            const Tensor x = (sample(shape, dt, 0.5) + offset).to(dt).requires_grad_(true);
            const Tensor w = affine ? sample({C}, dt, 0.5, 3).requires_grad_(true) : Tensor();
            const Tensor b = affine ? sample({C}, dt, 0.5, 4).requires_grad_(true) : Tensor();
            const Tensor rm = (sample({C}, dt, 0.2, 5) + offset).to(dt);
            const Tensor rv = (sample({C}, dt, 0.2, 6).abs() + 0.5).to(dt);
            const Tensor rm_d = rm.to(kDev), rv_d = rv.to(kDev);
            const Tensor xd = x.detach().to(kDev).requires_grad_(true);
            const Tensor wd = affine ? w.detach().to(kDev).requires_grad_(true) : Tensor();
            const Tensor bd = affine ? b.detach().to(kDev).requires_grad_(true) : Tensor();
            const Tensor y = F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
            const Tensor yd = F::batch_norm(xd, rm_d, rv_d, wd, bd, training, 0.1, 1e-5);
            CHECK(yd.grad_fn()->name() == "NativeBatchNormBackward");
            const double tol = dt == kFloat32 ? 2e-5 : dt == kFloat64 ? 1e-11 : tolerance(dt) * 2;
            check_close(yd, y, tol, "forward");
            check_close(rm_d, rm, tol, "running_mean");
            check_close(rv_d, rv, tol, "running_var");
            const Tensor g = sample(shape, dt, 1.0, 9);
            (y * g).sum().backward();
            (yd * g.to(kDev)).sum().backward();
            check_close(xd.grad(), x.grad(), tol * 10, "grad input");
            if (affine) {
              check_close(wd.grad(), w.grad(), tol * 10, "grad weight");
              check_close(bd.grad(), b.grad(), tol * 10, "grad bias");
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cuda BatchNorm2d modules track statistics like the CPU, momentum None included",
          "[cuda]") {
  if (!have_cuda()) return;
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    nn::BatchNorm2d cpu(4, 1e-5, momentum), dev(4, 1e-5, momentum);
    dev.to(kDev);
    for (int step = 0; step < 3; ++step) {
      const Tensor x = sample({3, 4, 5, 5}, kFloat32, 1.0, 20 + step);
      check_close(dev.forward(x.to(kDev)), cpu.forward(x), 2e-5, "train forward");
    }
    check_close(dev.running_mean, cpu.running_mean, 1e-5, "running_mean");
    check_close(dev.running_var, cpu.running_var, 1e-5, "running_var");
    CHECK(dev.num_batches_tracked.item<int64_t>() == 3);
    cpu.eval();
    dev.eval();
    const Tensor x = sample({2, 4, 3, 3}, kFloat32, 1.0, 40);
    check_close(dev.forward(x.to(kDev)), cpu.forward(x), 2e-5, "eval forward");
  }
}

TEST_CASE("cuda batch_norm double backward (create_graph) matches the CPU", "[cuda]") {
  if (!have_cuda()) return;
  for (bool training : {true, false}) {
    INFO((training ? "train" : "eval"));
    const Tensor x = sample({4, 3, 5}, kFloat64).requires_grad_(true);
    const Tensor w = sample({3}, kFloat64, 1.0, 2).requires_grad_(true);
    const Tensor b = sample({3}, kFloat64, 1.0, 3).requires_grad_(true);
    const Tensor rm = sample({3}, kFloat64, 0.2, 4), rv = sample({3}, kFloat64, 0.2, 5).abs() + 1;
    auto second = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi, const Tensor& rmi,
                      const Tensor& rvi) {
      const Tensor y = F::batch_norm(xi, rmi.clone(), rvi.clone(), wi, bi, training, 0.1, 1e-5);
      const Tensors g = autograd::grad({(y * y * y).sum()}, {xi, wi}, {}, true, true);
      return autograd::grad({(g[0] * g[0]).sum() + (g[1] * g[1]).sum()}, {xi, wi, bi}, {}, {},
                            false, /*allow_unused=*/true);
    };
    const Tensors want = second(x, w, b, rm, rv);
    const Tensor xd = x.detach().to(kDev).requires_grad_(true);
    const Tensor wd = w.detach().to(kDev).requires_grad_(true);
    const Tensor bd = b.detach().to(kDev).requires_grad_(true);
    const Tensors got = second(xd, wd, bd, rm.to(kDev), rv.to(kDev));
    for (size_t i = 0; i < 3; ++i) {
      if (!want[i].defined()) continue;
      check_close(got[i], want[i], 1e-10, "second derivative");
    }
  }
}

// ---- group_norm (kernels/cuda/norm.cu: layer_norm's row kernels, per-channel affine) ----------

TEST_CASE("cuda group_norm is one fused op and matches the CPU forward and backward", "[cuda]") {
  if (!have_cuda()) return;
  struct Case {
    Shape shape;
    int64_t groups;
    bool affine;
  };
  // Rows of a warp and of a block (2 x 700 = 1400 elements), one group, a group per channel.
  const std::vector<Case> cases = {{{2, 6, 5}, 3, true},      {{3, 4}, 2, true},
                                   {{2, 4, 2, 350}, 2, true}, {{2, 6, 3, 3}, 1, false},
                                   {{3, 5, 7}, 5, true},      {{1, 4, 9}, 4, false}};
  for (DType dt : kFloatingTypes) {
    for (const Case& c : cases) {
      for (double offset : {0.0, 100.0}) {
        INFO(dtype_name(dt) << " " << shape_str(c.shape) << " groups " << c.groups << " offset "
                            << offset);
        const int64_t C = c.shape[1];
        const Tensor x = (sample(c.shape, dt, 0.5) + offset).to(dt).requires_grad_(true);
        const Tensor w = c.affine ? sample({C}, dt, 0.5, 3).requires_grad_(true) : Tensor();
        const Tensor b = c.affine ? sample({C}, dt, 0.5, 4).requires_grad_(true) : Tensor();
        const Tensor xd = x.detach().to(kDev).requires_grad_(true);
        const Tensor wd = c.affine ? w.detach().to(kDev).requires_grad_(true) : Tensor();
        const Tensor bd = c.affine ? b.detach().to(kDev).requires_grad_(true) : Tensor();
        const Tensor y = F::group_norm(x, c.groups, w, b, 1e-5);
        const Tensor yd = F::group_norm(xd, c.groups, wd, bd, 1e-5);
        CHECK(yd.grad_fn()->name() == "NativeGroupNormBackward");
        const double tol = dt == kFloat32 ? 2e-5 : dt == kFloat64 ? 1e-11 : tolerance(dt) * 2;
        check_close(yd, y, tol, "forward");
        const Tensor g = sample(c.shape, dt, 1.0, 9);
        (y * g).sum().backward();
        (yd * g.to(kDev)).sum().backward();
        check_close(xd.grad(), x.grad(), tol * 10, "grad input");
        if (c.affine) {
          check_close(wd.grad(), w.grad(), tol * 10, "grad weight");
          check_close(bd.grad(), b.grad(), tol * 10, "grad bias");
        }
      }
    }
  }
}

TEST_CASE("cuda group_norm double backward (create_graph) matches the CPU", "[cuda]") {
  if (!have_cuda()) return;
  const Tensor x = sample({2, 4, 3}, kFloat64).requires_grad_(true);
  const Tensor w = sample({4}, kFloat64, 1.0, 2).requires_grad_(true);
  const Tensor b = sample({4}, kFloat64, 1.0, 3).requires_grad_(true);
  auto second = [](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
    const Tensor y = F::group_norm(xi, 2, wi, bi, 1e-5);
    const Tensors g = autograd::grad({(y * y * y).sum()}, {xi, wi}, {}, true, true);
    return autograd::grad({(g[0] * g[0]).sum() + (g[1] * g[1]).sum()}, {xi, wi, bi});
  };
  const Tensors want = second(x, w, b);
  const Tensors got =
      second(x.detach().to(kDev).requires_grad_(true), w.detach().to(kDev).requires_grad_(true),
             b.detach().to(kDev).requires_grad_(true));
  for (size_t i = 0; i < 3; ++i) check_close(got[i], want[i], 1e-10, "second derivative");
}
