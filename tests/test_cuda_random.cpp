// The random ops on cuda (kernels/cuda/random.cu, Note [Philox on the device]): for the same
// seed and offset a cuda generator gives the cpu's numbers element by element, for every dtype,
// shape and layout; the offsets advance alike; states save and restore; manual_seed seeds the
// cuda default generators; dropout draws the cpu's masks. Every case is tagged [cuda] and says
// why it returns early when there is no device.

#include <catch2/catch.hpp>
#include <cmath>
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

// Shapes: a scalar, a partial Philox block, sizes that are not a multiple of 4 (and odd: half a
// Box-Muller pair), several blocks, an empty tensor.
const std::vector<Shape> kShapes = {{}, {1}, {3}, {7}, {4, 5}, {2, 3, 5}, {101}, {1000}, {0, 3}};

// ULPs of dtype dt between a and b (0 when equal).
double ulps(DType dt, double a, double b) {
  if (a == b) return 0;
  const double eps = dt == kFloat64   ? 0x1p-52
                     : dt == kFloat32 ? 0x1p-23
                     : dt == kFloat16 ? 0x1p-10
                                      : 0x1p-7;
  return std::fabs(a - b) / (eps * std::fmax(std::fabs(a), std::fabs(b)));
}

// The cuda result equals the cpu one: same shape, dtype, device and every element's bits. With
// `transcendental` (normal_: log, cos and sin), a real GPU's libm may differ in the last ulps
// (Note [Philox on the device]); the simulator runs the host's and must match exactly.
void check_same(const Tensor& cpu, const Tensor& dev, bool transcendental = false) {
  REQUIRE(dev.device() == kDev);
  REQUIRE(cpu.device() == kCPU);
  REQUIRE(dev.sizes() == cpu.sizes());
  REQUIRE(dev.dtype() == cpu.dtype());
  const std::vector<double> a = values(cpu), b = values(dev);
  if (!transcendental || cuda::is_simulated()) {
    CHECK(a == b);
    return;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": cpu " << a[i] << ", cuda " << b[i]);
    CHECK(ulps(cpu.dtype(), a[i], b[i]) <= 4);
  }
}

// Runs op with a cpu and a cuda generator of the same seed, compares the results and the
// generators' offsets afterwards.
void check_op(uint64_t seed, const std::function<Tensor(Device, Generator*)>& op,
              bool transcendental = false) {
  Generator gc(seed, kCPU), gd(seed, kDev);
  for (int call = 0; call < 3; ++call) {  // consecutive calls continue the same stream
    INFO("call " << call);
    const Tensor a = op(kCPU, &gc);
    const Tensor b = op(kDev, &gd);
    check_same(a, b, transcendental);
    CHECK(gd.offset() == gc.offset());
  }
}

const DType kFloats[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

TensorOptions on(Device d, DType dt) { return TensorOptions(dt).device(d); }

}  // namespace

TEST_CASE("cuda rand, randn, uniform_ and normal_ equal the cpu's for every float dtype",
          "[cuda][random]") {
  if (!have_cuda()) return;
  uint64_t seed = 11;
  for (DType dt : kFloats) {
    for (const Shape& shape : kShapes) {
      INFO("dtype " << dt << ", shape " << shape_str(shape));
      check_op(seed++, [&](Device d, Generator* g) { return rand(shape, on(d, dt), g); });
      check_op(
          seed++, [&](Device d, Generator* g) { return randn(shape, on(d, dt), g); }, true);
      check_op(seed++, [&](Device d, Generator* g) {
        Tensor t = empty(shape, on(d, dt));
        t.uniform_(-2.0, 3.5, g);
        return t;
      });
      check_op(
          seed++,
          [&](Device d, Generator* g) {
            Tensor t = empty(shape, on(d, dt));
            t.normal_(1.5, 0.25, g);
            return t;
          },
          true);
    }
  }
}

TEST_CASE("cuda random fills of non-contiguous tensors equal the cpu's", "[cuda][random]") {
  if (!have_cuda()) return;
  for (DType dt : kFloats) {
    INFO("dtype " << dt);
    // A transposed (5, 7), a strided (9) and a sliced (3, 4) view of a larger tensor.
    const std::vector<std::function<Tensor(Device)>> views = {
        [&](Device d) {
          return zeros({7, 5}, on(d, dt)).t();
        },
        [&](Device d) { return zeros({18}, on(d, dt)).slice(0, 0, 18, 2); },
        [&](Device d) {
          return zeros({3, 6}, on(d, dt)).slice(1, 1, 5);
        },
    };
    uint64_t seed = 500;
    for (size_t v = 0; v < views.size(); ++v) {
      INFO("view " << v);
      check_op(seed++, [&](Device d, Generator* g) {
        Tensor t = views[v](d);
        REQUIRE(!t.is_contiguous());
        t.uniform_(-1.0, 1.0, g);
        return t;
      });
      check_op(
          seed++,
          [&](Device d, Generator* g) {
            Tensor t = views[v](d);
            t.normal_(0.0, 2.0, g);
            return t;
          },
          true);
      check_op(seed++, [&](Device d, Generator* g) {
        Tensor t = views[v](d);
        t.bernoulli_(0.4, g);
        return t;
      });
    }
  }
}

TEST_CASE("cuda bernoulli, randint and randperm equal the cpu's", "[cuda][random]") {
  if (!have_cuda()) return;
  uint64_t seed = 900;
  for (const Shape& shape : kShapes) {
    INFO("shape " << shape_str(shape));
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kUInt8, kBool}) {
      INFO("bernoulli_ dtype " << dt);
      check_op(seed++, [&](Device d, Generator* g) {
        Tensor t = empty(shape, on(d, dt));
        t.bernoulli_(0.3, g);
        return t;
      });
    }
    for (DType dt : kFloats) {
      INFO("bernoulli(probs) dtype " << dt);
      const Tensor probs = rand(shape, dt);  // drawn once, on the cpu
      check_op(seed++, [&](Device d, Generator* g) { return bernoulli(probs.to(d), g); });
    }
    for (DType dt : {kInt64, kInt32, kInt16, kInt8, kUInt8, kFloat32, kFloat64}) {
      INFO("randint dtype " << dt);
      const int64_t low = dt == kUInt8 ? 0 : -7;
      check_op(seed++,
               [&](Device d, Generator* g) { return randint(low, 100, shape, on(d, dt), g); });
    }
    INFO("randint over a range wider than 2^32 (two words a draw)");
    check_op(seed++, [&](Device d, Generator* g) {
      return randint(-(int64_t{1} << 40), int64_t{1} << 41, shape, on(d, kInt64), g);
    });
  }
  for (int64_t n : {0, 1, 2, 7, 100, 1001}) {
    INFO("randperm n = " << n);
    for (DType dt : {kInt64, kInt32, kFloat32}) {
      check_op(seed++, [&](Device d, Generator* g) { return randperm(n, on(d, dt), g); });
    }
  }
}

TEST_CASE("cuda bernoulli refuses a probability outside 0..1 as the cpu does", "[cuda][random]") {
  if (!have_cuda()) return;
  const Tensor probs = tensor<float>({0.5f, 0.25f, 1.5f, 0.0f}).to(kDev);
  Generator g(3, kDev);
  CHECK_THROWS_WITH(bernoulli(probs, &g),
                    Contains("bernoulli: expects every probability in [0, 1]") &&
                        Contains("got 1.5 at element 2"));
  const Tensor nan = tensor<double>({0.5, std::nan("")}).to(kDev);
  CHECK_THROWS_WITH(bernoulli(nan, &g), Contains("at element 1"));
  // A cpu generator cannot draw for a cuda tensor.
  Generator cpu_gen(3);
  CHECK_THROWS_WITH(rand({2}, on(kDev, kFloat32), &cpu_gen),
                    Contains("the generator is on cpu but the tensor is on cuda:0"));
}

TEST_CASE("manual_seed seeds the cuda default generators and draws match the cpu's",
          "[cuda][random]") {
  if (!have_cuda()) return;
  manual_seed(2024);
  const Tensor a = rand({37}, kFloat32);
  const Tensor b = randn({2, 9}, kFloat64);
  const Tensor c = rand({37}, on(kDev, kFloat32));
  const Tensor d = randn({2, 9}, on(kDev, kFloat64));
  check_same(a, c);
  check_same(b, d, true);
  CHECK(default_generator(kDev).offset() == default_generator(kCPU).offset());
  CHECK(default_generator(kDev).seed() == 2024);
  CHECK(&default_generator(kDev) == &default_generator(kDev));
  if (cuda::device_count() > 1) {
    // Each device has its own default generator, seeded alike.
    const Device dev1 = Device::cuda(1);
    CHECK(&default_generator(dev1) != &default_generator(kDev));
    CHECK(default_generator(dev1).seed() == 2024);
    const Tensor e = rand({37}, on(dev1, kFloat32));
    CHECK(values(e) == values(a));
    CHECK(e.device() == dev1);
  }
  manual_seed(2024);  // starts every stream again
  check_same(a, rand({37}, on(kDev, kFloat32)));
}

TEST_CASE("a cuda generator's state saves and restores its stream", "[cuda][random]") {
  if (!have_cuda()) return;
  Generator g(77, kDev);
  rand({10}, on(kDev, kFloat32), &g);
  const Tensor state = g.get_state();
  CHECK(state.device() == kCPU);
  const Tensor first = randn({33}, on(kDev, kFloat32), &g);
  const Tensor mask = empty({17}, on(kDev, kFloat16)).bernoulli_(0.5, &g);
  g.set_state(state);
  CHECK(values(randn({33}, on(kDev, kFloat32), &g)) == values(first));
  CHECK(values(empty({17}, on(kDev, kFloat16)).bernoulli_(0.5, &g)) == values(mask));
  // The state of a cuda generator replays on a cpu one (and the other way round).
  Generator cpu_gen;
  cpu_gen.set_state(state);
  check_same(randn({33}, kFloat32, &cpu_gen), first, true);
  // The default cuda generator too.
  Generator& dflt = default_generator(kDev);
  const Tensor saved = dflt.get_state();
  const Tensor x = rand({5, 5}, on(kDev, kBFloat16));
  dflt.set_state(saved);
  CHECK(values(rand({5, 5}, on(kDev, kBFloat16))) == values(x));
}

TEST_CASE("dropout and dropout2d on cuda draw the cpu's masks", "[cuda][random]") {
  if (!have_cuda()) return;
  namespace F = nn::functional;
  for (DType dt : kFloats) {
    INFO("dtype " << dt);
    const Tensor x = (arange(0, 120.0) * 0.1 - 3.0).reshape({2, 3, 4, 5}).to(dt);
    for (double p : {0.0, 0.3, 0.5, 1.0}) {
      INFO("p = " << p);
      Generator gc(5, kCPU), gd(5, kDev);
      check_same(F::dropout(x, p, true, &gc), F::dropout(x.to(kDev), p, true, &gd));
      check_same(F::dropout2d(x, p, true, &gc), F::dropout2d(x.to(kDev), p, true, &gd));
      Tensor in_place = x.to(kDev);
      F::dropout(in_place, p, true, &gd, /*inplace=*/true);
      check_same(F::dropout(x, p, true, &gc), in_place);
    }
  }
  // The module on cuda draws from the cuda default generator.
  nn::Dropout drop(0.5);
  const Tensor x = ones({64});
  manual_seed(9);
  const Tensor on_cpu = drop.forward(x);
  manual_seed(9);
  check_same(on_cpu, drop.forward(x.to(kDev)));
}
