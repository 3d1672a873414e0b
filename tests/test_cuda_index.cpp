// The CUDA indexing, shape and sort kernels (kernels/cuda/index.cu, shape.cu, sort.cu) against
// the CPU: random inputs, non-contiguous views, duplicate indices, empty tensors, 16-bit floats
// and integers, bad index values (the device-side check's error text), and scatter_add's atomic
// and deterministic variants (Note [Deterministic algorithms] in core/determinism.h). Every case
// is tagged [cuda] and returns with the reason where there is no device.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "core/cuda.h"
#include "core/determinism.h"
#include "cuda_test_util.h"
#include "test_util.h"

#if defined(EMBER_WITH_CUDA)
#include "kernels/cuda/device_checks.h"
#endif

using namespace ember;
using Catch::Matchers::Equals;
using ember::testing::check_deferred_error;
using ember::testing::have_cuda;
using ember::testing::kNaN;
using ember::testing::launch_blocking_env;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

// Random values in `dtype`: small integers (so that every dtype holds them exactly and sorts
// meet ties) or, for floats, normal values.
Tensor random(const Shape& shape, DType dtype, Generator& gen, bool ties = false) {
  if (dtype == kBool) return randint(0, 2, shape, kInt64, &gen).to(kBool);
  if (!is_floating(dtype) || ties) return randint(-20, 20, shape, kInt64, &gen).to(dtype);
  return randn(shape, kFloat32, &gen).to(dtype);
}

Tensor randidx(int64_t high, const Shape& shape, Generator& gen) {
  return randint(0, high, shape, kInt64, &gen);
}

// The same sizes, dtype and bits (NaN equal to NaN); `dev` is copied back to the cpu.
bool same(const Tensor& dev, const Tensor& cpu) {
  return (dev.device() == kDev || dev.numel() == 0) && ember::testing::same_bits(dev, cpu);
}

const std::vector<DType> kDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                    kInt32,   kInt64,   kInt8,    kBool};

}  // namespace

TEST_CASE("cuda index_select, gather, take, index and embedding match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  Generator gen(7);
  for (DType dt : kDtypes) {
    INFO("dtype " << dtype_name(dt));
    // [6, 16]: rows of >= 32 bytes go through index_select_rows, a transposed view through gather.
    Tensor x = random({6, 16}, dt, gen);
    Tensor dx = x.to(kDev);
    Tensor idx = tensor(std::vector<int64_t>{5, 0, 0, 3, 5, 1, 2}, {7});  // duplicates
    Tensor didx = idx.to(kDev);
    CHECK(same(dx.index_select(0, didx), x.index_select(0, idx)));
    CHECK(same(dx.index_select(1, didx), x.index_select(1, idx)));
    CHECK(same(dx.t().index_select(1, didx), x.t().index_select(1, idx)));
    CHECK(same(dx.index_select(0, didx.to(kInt32)), x.index_select(0, idx.to(kInt32))));
    Tensor empty_idx = zeros({0}, kInt64);
    CHECK(same(dx.index_select(0, empty_idx.to(kDev)), x.index_select(0, empty_idx)));

    Tensor gi = randidx(6, {9, 5}, gen);
    CHECK(same(gather(dx, 0, gi.to(kDev)), gather(x, 0, gi)));
    CHECK(same(gather(dx.t(), 1, gi.to(kDev)), gather(x.t(), 1, gi)));

    Tensor ti = randint(-96, 96, {4, 3}, kInt64, &gen);  // negative values count from the end
    CHECK(same(take(dx, ti.to(kDev)), take(x, ti)));

    // Advanced indexing: one index tensor, two (byte offsets), non-adjacent ones.
    Tensor y = random({4, 5, 6}, dt, gen);
    Tensor dy = y.to(kDev);
    Tensor i0 = randint(-4, 4, {3}, kInt64, &gen), i2 = randidx(6, {3}, gen);
    CHECK(same(index(dy, {Tensor(), i0.to(kDev)}), index(y, {Tensor(), i0})));
    CHECK(same(index(dy, {i0.to(kDev), Tensor(), i2.to(kDev)}), index(y, {i0, Tensor(), i2})));
    CHECK(same(index(dy, {Tensor(), i0.to(kDev), i2.to(kDev)}), index(y, {Tensor(), i0, i2})));
  }
  Tensor w = randn({10, 12}, kFloat32, &gen);
  Tensor ids = randidx(10, {3, 4}, gen);
  CHECK(same(embedding(w.to(kDev), ids.to(kDev)), embedding(w, ids)));
}

TEST_CASE("cuda index kernels check every index value on the device", "[cuda][launch_blocking]") {
  if (!have_cuda()) return;
  // Each op returns; the next synchronisation raises the CPU's message (Note [Deferred device
  // checks]). StartsWith: the deferred message goes on to say where it surfaced.
  using Catch::StartsWith;
  Tensor x = arange(0, 20, 1, kFloat32).reshape({5, 4}).to(kDev);
  Tensor bad = tensor(std::vector<int64_t>{1, 7, 2}, {3}).to(kDev);
  check_deferred_error(
      [&] { return x.index_select(0, bad); },
      StartsWith("index_select: index 7 is out of bounds for dimension 0 with size 5"));
  check_deferred_error(
      [&] { return x.t().index_select(1, bad); },  // the gather path
      StartsWith("index_select: index 7 is out of bounds for dimension 1 with size 5"));
  Tensor neg = tensor(std::vector<int64_t>{-1}, {1, 1}).to(kDev);
  check_deferred_error([&] { return gather(x, 0, neg); },
                       StartsWith("gather: index -1 is out of bounds for dimension 0 with size 5"));
  check_deferred_error(
      [&] { return scatter_add(x, 0, neg, x); },
      StartsWith("scatter_add: index -1 is out of bounds for dimension 0 with size 5"));
  Tensor nine = tensor(std::vector<int64_t>{9}, {1}).to(kDev);
  check_deferred_error(
      [&] {
        return index_add(x, 1, nine, ones({5, 1}, TensorOptions().device(kDev)));
      },
      StartsWith("index_add: index 9 is out of bounds for dimension 1 with size 4"));
  check_deferred_error(
      [&] {
        return index(x, {Tensor(), tensor(std::vector<int64_t>{-5}, {1}).to(kDev)});
      },
      StartsWith("index: index -5 is out of bounds for dimension 1 with size 4"));
  check_deferred_error(
      [&] {
        return index(x, {tensor(std::vector<int64_t>{0}, {1}).to(kDev), nine});
      },  // two
      StartsWith("index: index 9 is out of bounds for dimension 1 with size 4"));
  check_deferred_error([&] { return take(x, tensor(std::vector<int64_t>{20}, {1}).to(kDev)); },
                       StartsWith("take: index 20 is out of bounds for dimension 0 with size 20"));
  check_deferred_error(
      [&] { return embedding(x, nine); },
      StartsWith("embedding: index 9 is out of bounds for dimension 0 with size 5"));
  check_deferred_error(
      [&] { return index_put_(x.clone(), {nine}, zeros({}, TensorOptions().device(kDev)), true); },
      StartsWith("index_put_: index 9 is out of bounds for dimension 0 with size 5"));
  // An empty result still checks its index values (check_index_values on the device).
  check_deferred_error(
      [&] {
        return zeros({5, 0}, TensorOptions().device(kDev)).index_select(0, bad);
      },
      StartsWith("index_select: index 7 is out of bounds for dimension 0 with size 5"));
}

TEST_CASE("a deferred index error surfaces before the host sees a value computed after it",
          "[cuda]") {
  if (!have_cuda() || launch_blocking_env()) return;
  using Catch::Contains;
  using Catch::StartsWith;
  Tensor x = arange(0, 20, 1, kFloat32).reshape({5, 4}).to(kDev);
  Tensor bad = tensor(std::vector<int64_t>{1, 7, 2}, {3}).to(kDev);
  // Every way the host reads device values: item(), a copy to the cpu, nonzero's size, and the
  // explicit waits. The op's result flows on into later ops, which run.
  const auto expect = StartsWith("index_select: index 7 is out of bounds for dimension 0");
  Tensor y;
  REQUIRE_NOTHROW(y = (x.index_select(0, bad) * 2).sum());
  CHECK_THROWS_WITH(y.item<float>(), expect && Contains("raised at copy_"));
  REQUIRE_NOTHROW(y = x.index_select(0, bad) + 1);
  CHECK_THROWS_WITH(y.to(kCPU), expect && Contains("raised at copy_"));
  REQUIRE_NOTHROW(y = x.index_select(0, bad) > 3.0);
  CHECK_THROWS_WITH(y.nonzero(), expect && Contains("raised at nonzero"));
  REQUIRE_NOTHROW(x.index_select(0, bad));
  CHECK_THROWS_WITH(current_stream(kDev).synchronize(),
                    expect && Contains("raised at Stream::synchronize"));
  REQUIRE_NOTHROW(x.index_select(0, bad));
  Event done(DeviceType::CUDA);
  done.record(current_stream(kDev));
  CHECK_THROWS_WITH(done.synchronize(), expect && Contains("raised at Event::synchronize"));
  // Two failures before a synchronisation: the older is raised, the later one counted.
  REQUIRE_NOTHROW(x.index_select(0, bad));
  REQUIRE_NOTHROW(gather(x, 0, tensor(std::vector<int64_t>{-1}, {1, 1}).to(kDev)));
  CHECK_THROWS_WITH(cuda::synchronize(), expect && Contains("1 later failed check(s) dropped"));
  // The device is fine afterwards, and good ops raise nothing.
  CHECK_NOTHROW(cuda::synchronize());
  CHECK(x.index_select(0, tensor(std::vector<int64_t>{4, 0}, {2}).to(kDev)).sum().item<float>() ==
        (16 + 17 + 18 + 19 + 0 + 1 + 2 + 3));
}

#if defined(EMBER_WITH_CUDA)
TEST_CASE("deferred device checks are recycled without a synchronisation", "[cuda]") {
  if (!have_cuda() || launch_blocking_env()) return;
  Tensor x = arange(0, 20, 1, kFloat32).reshape({5, 4}).to(kDev);
  Tensor good = tensor(std::vector<int64_t>{4, 0, 2}, {3}).to(kDev);
  cuda::synchronize();
  CHECK(kernels::cuda::device_check_counts().pending == 0);
  Tensor acc = zeros({3, 4}, TensorOptions().device(kDev));
  for (int k = 0; k < 300; ++k) acc.add_(x.index_select(0, good));
  // Wait for the device without a check point: an event's query collects nothing.
  Event done(DeviceType::CUDA);
  done.record(current_stream(kDev));
  while (!done.query()) std::this_thread::yield();
  CHECK(kernels::cuda::device_check_counts().pending >= 1);  // nothing retired them yet
  // The next deferred check retires every completed one before it.
  acc.add_(x.index_select(0, good));
  CHECK(kernels::cuda::device_check_counts().pending <= 1);
  CHECK(kernels::cuda::device_check_counts().failed == 0);
  CHECK(acc.sum().item<float>() == 301 * (16 + 17 + 18 + 19 + 0 + 1 + 2 + 3 + 8 + 9 + 10 + 11));
  CHECK(kernels::cuda::device_check_counts().pending == 0);
}
#endif

TEST_CASE("cuda scatter, scatter_reduce, index_add and index_put_ match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  Generator gen(11);
  for (DType dt : kDtypes) {
    INFO("dtype " << dtype_name(dt));
    for (bool deterministic : {false, true}) {
      INFO("deterministic " << deterministic);
      DeterministicGuard mode(deterministic);
      Tensor self = random({5, 6}, dt, gen);
      Tensor src = random({8, 7}, dt, gen);
      Tensor idx = randidx(5, {8, 6}, gen);  // many duplicates along dim 0
      Tensor ds = self.to(kDev), dsrc = src.to(kDev), di = idx.to(kDev);
      // Assignment: the last index wins, as on the cpu, always.
      CHECK(same(scatter(ds, 0, di, dsrc), scatter(self, 0, idx, src)));
      CHECK(same(scatter(ds.t(), 1, di.t(), dsrc.t()), scatter(self.t(), 1, idx.t(), src.t())));
      CHECK(same(scatter(ds, 0, di, Scalar(1)), scatter(self, 0, idx, Scalar(1))));
      // Integer and bool accumulation is exact, so every variant gives the cpu's bits; floats
      // are compared exactly in deterministic mode, within rounding otherwise.
      const bool exact = deterministic || !is_floating(dt);
      auto check = [&](const Tensor& d, const Tensor& c) {
        if (exact) {
          CHECK(same(d, c));
        } else {
          CHECK(d.sizes() == c.sizes());
          const auto dv = values(d.cpu()), cv = values(c);
          const double tol = dt == kFloat32 || dt == kFloat64 ? 1e-5 : 0.1;
          for (size_t i = 0; i < cv.size(); ++i) CHECK(std::abs(dv[i] - cv[i]) <= tol);
        }
      };
      if (dt != kBool) {
        check(scatter_add(ds, 0, di, dsrc), scatter_add(self, 0, idx, src));
        check(scatter_add(ds.t(), 1, di.t(), dsrc.t()), scatter_add(self.t(), 1, idx.t(), src.t()));
      }
      for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
        if (dt == kBool && std::string(reduce) == "mean") continue;
        if (std::string(reduce) == "prod" && is_floating(dt)) continue;  // overflow-prone; below
        for (bool include_self : {true, false}) {
          INFO("reduce " << reduce << ", include_self " << include_self);
          check(scatter_reduce(ds, 0, di, dsrc, reduce, include_self),
                scatter_reduce(self, 0, idx, src, reduce, include_self));
        }
      }
      if (dt != kBool) {
        Tensor ai = tensor(std::vector<int64_t>{4, 0, 4, 2, 4, 1, 0}, {7});
        Tensor source = random({5, 7}, dt, gen);
        const Scalar alpha = is_floating(dt) ? Scalar(0.5) : Scalar(3);
        check(index_add(ds, 1, ai.to(kDev), source.to(kDev), alpha),
              index_add(self, 1, ai, source, alpha));
        // index_put_ accumulate: positions collide anywhere in self.
        Tensor pi = randidx(5, {40}, gen), pj = randidx(6, {40}, gen);
        Tensor pv = random({40}, dt, gen);
        check(index_put(ds, {pi.to(kDev), pj.to(kDev)}, pv.to(kDev), true),
              index_put(self, {pi, pj}, pv, true));
      }
      // index_put_ without accumulate and distinct positions.
      Tensor rows = tensor(std::vector<int64_t>{3, 0, 4}, {3});
      Tensor v = random({3, 6}, dt, gen);
      CHECK(same(index_put(ds, {rows.to(kDev)}, v.to(kDev)), index_put(self, {rows}, v)));
    }
  }
  // prod of floats with values near 1, and NaN in amax.
  Tensor f = rand({4, 5}, kFloat32, &gen) + 0.5;
  Tensor fi = randidx(4, {6, 5}, gen);
  Tensor fs = rand({6, 5}, kFloat32, &gen) + 0.5;
  DeterministicGuard mode(true);
  CHECK(same(scatter_reduce(f.to(kDev), 0, fi.to(kDev), fs.to(kDev), "prod"),
             scatter_reduce(f, 0, fi, fs, "prod")));
  fs.index_put_({tensor(std::vector<int64_t>{2}, {1})}, full({}, kNaN));
  CHECK(same(scatter_reduce(f.to(kDev), 0, fi.to(kDev), fs.to(kDev), "amax"),
             scatter_reduce(f, 0, fi, fs, "amax")));
  // Empty index: nothing changes.
  Tensor e = zeros({0, 5}, kInt64);
  CHECK(same(scatter_add(f.to(kDev), 0, e.to(kDev), fs.to(kDev)), f));
}

TEST_CASE("cuda scatter_add: atomic and deterministic variants", "[cuda]") {
  if (!have_cuda()) return;
  CHECK_FALSE(are_deterministic_algorithms_enabled());  // PyTorch's default
  Generator gen(3);
  // 64 x 3000 values into 40 x 3000: every target element gets about 160 additions of
  // values whose sum depends on the order.
  Tensor self = zeros({40, 300}, kFloat32);
  Tensor idx = randidx(40, {2000, 300}, gen);
  Tensor src = randn({2000, 300}, kFloat32, &gen) * 1000;
  const Tensor want = scatter_add(self, 0, idx, src);
  Tensor ds = self.to(kDev), di = idx.to(kDev), dsrc = src.to(kDev);
  {
    DeterministicGuard mode(true);
    CHECK(are_deterministic_algorithms_enabled());
    const Tensor a = scatter_add(ds, 0, di, dsrc), b = scatter_add(ds, 0, di, dsrc);
    CHECK(same(a, want));  // the cpu's order, bit for bit
    CHECK(same(b, a.cpu()));
    for (DType dt : {kFloat16, kBFloat16}) {
      CHECK(same(scatter_add(ds.to(dt), 0, di, dsrc.to(dt) / 1000),
                 scatter_add(self.to(dt), 0, idx, src.to(dt) / 1000)));
    }
  }
  CHECK_FALSE(are_deterministic_algorithms_enabled());
  const Tensor atomic = scatter_add(ds, 0, di, dsrc).cpu();
  const auto got = values(atomic), ref = values(want);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
  CHECK(worst <= 1e-5 * 1000 * 200);  // rounding of ~200 additions of values ~1000
  for (DType dt : {kFloat16, kBFloat16}) {
    const auto h = values(scatter_add(ds.to(dt), 0, di, dsrc.to(dt) / 1000).cpu());
    const auto hr = values(scatter_add(self.to(dt), 0, idx, src.to(dt) / 1000));
    double w = 0;
    for (size_t i = 0; i < hr.size(); ++i) w = std::max(w, std::abs(h[i] - hr[i]));
    CHECK(w <= 1.0);  // 16-bit rounding of each partial sum, in another order
  }
  // Integer sums are exact either way.
  Tensor isrc = randint(-1000, 1000, {2000, 300}, kInt64, &gen);
  CHECK(same(scatter_add(ds.to(kInt64), 0, di, isrc.to(kDev)),
             scatter_add(self.to(kInt64), 0, idx, isrc)));
  // embedding's backward (index_add) in both modes.
  for (bool deterministic : {false, true}) {
    DeterministicGuard mode(deterministic);
    Tensor w = randn({30, 8}, kFloat32, &gen);
    Tensor ids = randidx(30, {500}, gen);
    auto grad_of = [&](Device d) {
      Tensor leaf = w.to(d).requires_grad_();
      Tensor out = embedding(leaf, ids.to(d));
      out.backward(ones_like(out));
      return leaf.grad();
    };
    const Tensor g = grad_of(kDev), gc = grad_of(kCPU);
    if (deterministic) {
      CHECK(same(g, gc));
    } else {
      const auto a = values(g.cpu()), b = values(gc);
      for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-4);
    }
  }
}

TEST_CASE("cuda nonzero and masked_select keep the cpu's row-major order", "[cuda]") {
  if (!have_cuda()) return;
  Generator gen(5);
  // Sizes below one tile, across several tiles (2048 elements each) and with a partial tile.
  for (const Shape& shape : std::vector<Shape>{{7}, {3, 5}, {5000}, {3, 40, 70}, {2, 1, 4097}}) {
    INFO("shape " << shape_str(shape));
    for (DType dt : {kFloat32, kInt32, kBool, kFloat16}) {
      Tensor x = random(shape, dt, gen);
      if (dt != kBool) x = x * (rand(shape, kFloat32, &gen) > 0.7).to(dt);  // mostly zeros
      Tensor dx = x.to(kDev);
      CHECK(same(nonzero(dx), nonzero(x)));
      Tensor mask = rand(shape, kFloat32, &gen) > 0.5;
      CHECK(same(masked_select(dx, mask.to(kDev)), masked_select(x, mask)));
      CHECK(same(index(dx, {mask.to(kDev)}), index(x, {mask})));
    }
  }
  Tensor m = rand({6, 9}, kFloat32, &gen) > 0.5;
  CHECK(same(nonzero(m.to(kDev).t()), nonzero(m.t())));  // a non-contiguous view
  CHECK(same(nonzero(zeros({4, 4}, TensorOptions().device(kDev))), nonzero(zeros({4, 4}))));
  CHECK(same(nonzero(zeros({0, 3}, TensorOptions().device(kDev))), nonzero(zeros({0, 3}))));
  CHECK(same(nonzero(full({}, 2.0, TensorOptions().device(kDev))), nonzero(full({}, 2.0))));
}

TEST_CASE("cuda cat, stack, pad, tril and triu match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  Generator gen(9);
  for (DType dt : kDtypes) {
    INFO("dtype " << dtype_name(dt));
    // Rows of 3, 5 and 1 elements: odd byte counts for the narrow dtypes.
    Tensor a = random({4, 3}, dt, gen), b = random({4, 5}, dt, gen), c = random({4, 1}, dt, gen);
    Tensor da = a.to(kDev), db = b.to(kDev), dc = c.to(kDev);
    CHECK(same(cat({da, db, dc}, 1), cat({a, b, c}, 1)));
    CHECK(same(cat({da.t(), db.t()}, 0), cat({a.t(), b.t()}, 0)));  // dim 0: one block each
    CHECK(same(cat({da, db.narrow(1, 1, 3)}, 0), cat({a, b.narrow(1, 1, 3)}, 0)));  // strided
    CHECK(same(stack({da, db.narrow(1, 0, 3)}, 1), stack({a, b.narrow(1, 0, 3)}, 1)));
    Tensor m = random({2, 5, 7}, dt, gen);
    Tensor dm = m.to(kDev);
    for (int64_t diag : {-6, -1, 0, 2, 9}) {
      CHECK(same(tril(dm, diag), tril(m, diag)));
      CHECK(same(triu(dm, diag), triu(m, diag)));
    }
    CHECK(same(tril(dm.transpose(1, 2)), tril(m.transpose(1, 2))));
    CHECK(same(pad(dm, {1, 2, 0, 1}), pad(m, {1, 2, 0, 1})));
    CHECK(same(pad(dm, {2, 1}, "reflect"), pad(m, {2, 1}, "reflect")));
    CHECK(same(pad(dm, {1, 3}, "circular"), pad(m, {1, 3}, "circular")));
  }
  Tensor e = zeros({0, 3});
  CHECK(same(cat({e.to(kDev), ones({2, 3}).to(kDev)}, 0), cat({e, ones({2, 3})}, 0)));
}

TEST_CASE("cuda sort, argsort and topk match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  Generator gen(13);
  // Line lengths through every shared-memory size (64, 256, 1024, 2048) and the global path.
  for (int64_t n : {1, 5, 64, 65, 300, 2048, 3000}) {
    for (DType dt : {kFloat32, kFloat16, kBFloat16, kInt64, kInt8, kBool, kFloat64}) {
      INFO("n " << n << ", dtype " << dtype_name(dt));
      Tensor x = random({3, n}, dt, gen, /*ties=*/n > 5);
      if (is_floating(dt) && n >= 5) {  // NaN sorts last ascending, first descending
        x.index_put_({tensor(std::vector<int64_t>{1}, {1}), tensor(std::vector<int64_t>{3}, {1})},
                     full({}, kNaN, x.dtype()));
      }
      Tensor dx = x.to(kDev);
      for (bool descending : {false, true}) {
        auto [dv, di] = sort(dx, 1, descending);
        auto [cv, ci] = sort(x, 1, descending);
        CHECK(same(dv, cv));
        CHECK(same(di, ci));  // stable: equal keys keep their order
      }
      CHECK(same(argsort(dx.t(), 0), argsort(x.t(), 0)));  // a transposed view, along dim 0
      const int64_t k = std::min<int64_t>(n, 4);
      for (bool largest : {true, false}) {
        auto [tv, ti] = topk(dx, k, 1, largest);
        auto [rv, ri] = topk(x, k, 1, largest);
        CHECK(same(tv, rv));
        CHECK(same(ti, ri));
      }
    }
  }
  Tensor empty = zeros({0, 4});
  auto [ev, ei] = sort(empty.to(kDev), 1);
  CHECK(ev.sizes() == Shape{0, 4});
  CHECK(same(std::get<0>(sort(full({}, 3.0).to(kDev))), full({}, 3.0)));
}
