// The generator and the random ops: Philox known answers, reproducibility (seeds, saved states,
// thread counts), statistics of the distributions, and errors. Exact values against the
// documented stream formula are checked by the op table (tests/op_table/random_ops.cpp).

#include <ember/ember.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <thread>
#include <vector>

#include "kernels/math/philox.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && values(a) == values(b);
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Restores the pool size when a test changes it.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[random]") {
  namespace math = kernels::math;
  auto check = [](math::Philox4 ctr, uint32_t k0, uint32_t k1, math::Philox4 want) {
    math::Philox4 got = math::philox4x32_10(ctr, k0, k1);
    for (int i = 0; i < 4; ++i) CHECK(got.w[i] == want.w[i]);
  };
  check({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  check({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
        {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  check({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
        {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
  // ember's block b under seed s is the counter (lo(b), hi(b), 0, 0) with key (lo(s), hi(s)).
  math::Philox4 a = math::philox_block(0x0000000100000002ull, 0x0000000300000004ull);
  math::Philox4 b = math::philox4x32_10({{4, 3, 0, 0}}, 2, 1);
  for (int i = 0; i < 4; ++i) CHECK(a.w[i] == b.w[i]);
}

TEST_CASE("same seed gives the same stream, another seed a different one", "[random]") {
  Generator g1(123), g2(123), g3(124);
  Tensor a = rand({1000}, kFloat32, &g1), b = rand({1000}, kFloat32, &g2);
  Tensor c = rand({1000}, kFloat32, &g3);
  CHECK(same_values(a, b));
  CHECK_FALSE(same_values(a, c));
  // The stream goes on: the next draw differs from the first.
  CHECK_FALSE(same_values(rand({1000}, kFloat32, &g1), a));
  CHECK(g1.seed() == 123);
  CHECK(g1.initial_seed() == 123);

  // manual_seed restarts a generator.
  g1.manual_seed(123);
  CHECK(g1.offset() == 0);
  CHECK(same_values(rand({1000}, kFloat32, &g1), a));
}

TEST_CASE("each op advances the offset by the blocks it consumed", "[random]") {
  Generator g(5);
  rand({10}, kFloat32, &g);  // 10 words -> 3 blocks
  CHECK(g.offset() == 3);
  rand({10}, kFloat64, &g);  // 20 words -> 5 blocks
  CHECK(g.offset() == 8);
  randn({3}, kFloat32, &g);  // 3 words -> 1 block
  CHECK(g.offset() == 9);
  randint(0, 10, {8}, {}, &g);  // 8 words -> 2 blocks
  CHECK(g.offset() == 11);
  randperm(4, {}, &g);  // 8 words -> 2 blocks
  CHECK(g.offset() == 13);
  rand({0}, kFloat32, &g);  // nothing
  CHECK(g.offset() == 13);
}

TEST_CASE("manual_seed seeds every default generator", "[random]") {
  manual_seed(2024);
  Tensor a = randn({64});
  manual_seed(2024);
  Tensor b = randn({64});
  CHECK(same_values(a, b));
  CHECK(default_generator(kCPU).seed() == 2024);
  // The CUDA generators exist in every build and follow the global seed.
  CHECK(default_generator(Device("cuda:3")).seed() == 2024);
  manual_seed(7);
  CHECK(default_generator(Device("cuda:3")).seed() == 7);
  CHECK(default_generator(Device("cuda:3")).offset() == 0);
  CHECK(default_generator(Device("cuda:5")).seed() == 7);  // created after the seeding
  CHECK(&default_generator(kCPU) == &default_generator(Device("cpu")));
  CHECK_THROWS_WITH(default_generator(Device(DeviceType::CUDA, kMaxCudaDevices)),
                    Contains("default_generator"));
}

TEST_CASE("get_rng_state / set_rng_state replay the stream", "[random]") {
  manual_seed(99);
  rand({5});
  Tensor state = get_rng_state();
  CHECK(state.dtype() == kUInt8);
  CHECK(state.numel() == Generator::kStateSize);
  Tensor a = randn({257});
  Tensor b = randn({257});
  set_rng_state(state);
  CHECK(same_values(randn({257}), a));
  CHECK(same_values(randn({257}), b));

  // A Generator's own state, into another generator.
  Generator g(31);
  randint(0, 100, {17}, {}, &g);
  Tensor s = g.get_state();
  Generator h;
  h.set_state(s);
  CHECK(h.seed() == 31);
  CHECK(h.offset() == g.offset());
  CHECK(same_values(rand({33}, kFloat64, &g), rand({33}, kFloat64, &h)));

  // The state tensor is a copy: changing it later does not touch the generator.
  s.fill_(0);
  CHECK(h.seed() == 31);

  CHECK_THROWS_WITH(g.set_state(zeros({16}, kFloat32)), Contains("set_state"));
  CHECK_THROWS_WITH(g.set_state(zeros({15}, kUInt8)), Contains("16 bytes"));
  CHECK_THROWS_WITH(set_rng_state(zeros({17}, kUInt8)), Contains("set_state"));
  CHECK_THROWS_WITH(g.set_state(Tensor()), Contains("undefined"));
}

TEST_CASE("random results do not depend on the thread count", "[random]") {
  ThreadCountGuard guard;
  const Shape big{300001};  // > 100k elements, and not a multiple of 4
  auto draw = [&] {
    Generator g(4242);
    std::vector<Tensor> out;
    out.push_back(rand(big, kFloat32, &g));
    out.push_back(randn(big, kFloat32, &g));
    out.push_back(randn(big, kFloat64, &g));
    out.push_back(randint(-7, 1000, big, {}, &g));
    out.push_back(empty(big, kFloat16).bernoulli_(0.25, &g));
    out.push_back(randperm(200000, {}, &g));
    Tensor nc = zeros({501, 400}, kFloat32).t();  // non-contiguous fill
    nc.uniform_(-1, 1, &g);
    out.push_back(nc);
    return out;
  };
  set_num_threads(1);
  std::vector<Tensor> one = draw();
  set_num_threads(2);
  std::vector<Tensor> two = draw();
  set_num_threads(3);
  std::vector<Tensor> three = draw();
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("output " << i);
    CHECK(same_values(one[i], two[i]));
    CHECK(same_values(one[i], three[i]));
  }
}

TEST_CASE("normal samples have the requested mean and std", "[random]") {
  Generator g(11);
  for (DType dt : {kFloat32, kFloat64}) {
    INFO("dtype " << dt);
    std::vector<double> z = values(randn({1000000}, dt, &g));
    // The sample mean has std 1e-3 and the sample std about 7e-4: 5 sigma margins.
    CHECK(std::abs(mean_of(z)) < 5e-3);
    CHECK(std::abs(std_of(z) - 1.0) < 4e-3);
    // Tails: P(|z| > 3) = 0.0027.
    double tail = 0;
    for (double x : z) tail += std::abs(x) > 3.0;
    CHECK(std::abs(tail / 1e6 - 0.0027) < 4e-4);
  }
  Tensor t = empty({400000}, kFloat64);
  t.normal_(-3.0, 0.25, &g);
  std::vector<double> v = values(t);
  CHECK(std::abs(mean_of(v) + 3.0) < 5e-3);
  CHECK(std::abs(std_of(v) - 0.25) < 3e-3);
  // float16 / bfloat16 are sampled in float and rounded.
  std::vector<double> h = values(randn({200000}, kBFloat16, &g));
  CHECK(std::abs(mean_of(h)) < 0.015);
  CHECK(std::abs(std_of(h) - 1.0) < 0.015);
  // std = 0 gives the mean exactly.
  CHECK(values(empty({5}, kFloat32).normal_(2.5, 0.0, &g)) == std::vector<double>(5, 2.5));
}

TEST_CASE("uniform samples stay within from..to (to excluded) and are spread evenly", "[random]") {
  Generator g(12);
  for (DType dt : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    INFO("dtype " << dt);
    std::vector<double> u = values(rand({200000}, dt, &g));
    CHECK(*std::min_element(u.begin(), u.end()) >= 0.0);
    CHECK(*std::max_element(u.begin(), u.end()) < 1.0);
    CHECK(std::abs(mean_of(u) - 0.5) < 5e-3);
    // Ten equal bins each get about a tenth.
    std::vector<double> bins(10, 0);
    for (double x : u) bins[static_cast<size_t>(x * 10)] += 1;
    for (double c : bins) CHECK(std::abs(c / 200000 - 0.1) < 0.01);

    Tensor t = empty({100000}, dt);
    t.uniform_(-2.0, 3.0, &g);
    std::vector<double> v = values(t);
    CHECK(*std::min_element(v.begin(), v.end()) >= -2.0);
    CHECK(*std::max_element(v.begin(), v.end()) < 3.0);
    CHECK(std::abs(mean_of(v) - 0.5) < 0.03);
  }
  // A narrow range in float16 that could round up to `to`: never returns `to`.
  std::vector<double> h = values(empty({100000}, kFloat16).uniform_(1000.0, 1001.0, &g));
  CHECK(*std::max_element(h.begin(), h.end()) < 1001.0);
  CHECK(*std::min_element(h.begin(), h.end()) >= 1000.0);
  // from == to is allowed and gives from.
  CHECK(values(empty({3}, kFloat64).uniform_(4.0, 4.0, &g)) == std::vector<double>(3, 4.0));
}

TEST_CASE("bernoulli frequencies match p", "[random]") {
  Generator g(13);
  std::vector<double> b = values(empty({1000000}, kFloat32).bernoulli_(0.3, &g));
  CHECK(std::abs(mean_of(b) - 0.3) < 3e-3);
  for (double x : b) {
    if (x != 0.0 && x != 1.0) FAIL("bernoulli_ produced " << x);
  }
  CHECK(values(empty({1000}, kInt64).bernoulli_(0.0, &g)) == std::vector<double>(1000, 0.0));
  CHECK(values(empty({1000}, kBool).bernoulli_(1.0, &g)) == std::vector<double>(1000, 1.0));
  std::vector<double> u8 = values(empty({100000}, kUInt8).bernoulli_(0.5, &g));
  CHECK(std::abs(mean_of(u8) - 0.5) < 0.01);

  // bernoulli(p): per-element probabilities.
  Tensor p = full({2, 200000}, 0.0, kFloat64);
  p[1].fill_(0.8);
  Tensor draws = bernoulli(p, &g);
  CHECK(draws.dtype() == kFloat64);
  CHECK(draws.sizes() == Shape{2, 200000});
  CHECK(mean_of(values(draws[0])) == 0.0);
  CHECK(std::abs(mean_of(values(draws[1])) - 0.8) < 5e-3);
}

TEST_CASE("randperm is a permutation", "[random]") {
  Generator g(14);
  for (int64_t n : {0, 1, 2, 10, 1000, 100003}) {
    INFO("n = " << n);
    Tensor p = randperm(n, {}, &g);
    CHECK(p.dtype() == kInt64);
    CHECK(p.sizes() == Shape{n});
    std::vector<double> v = values(p);
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] != static_cast<double>(i)) FAIL("value " << i << " missing");
    }
  }
  // Not the identity, and each position takes each value about equally often.
  Tensor p = randperm(1000, kInt32, &g);
  CHECK(p.dtype() == kInt32);
  std::vector<double> v = values(p);
  int fixed = 0;
  for (int i = 0; i < 1000; ++i) fixed += v[i] == i;
  CHECK(fixed < 10);  // expected 1
  std::vector<int> first(4, 0);
  for (int trial = 0; trial < 4000; ++trial)
    first[static_cast<size_t>(values(randperm(4, {}, &g))[0])] += 1;
  for (int c : first) CHECK(std::abs(c - 1000) < 150);
  CHECK(values(randperm(200, kFloat32, &g)).size() == 200);
}

TEST_CASE("randint stays within low..high (high excluded) and hits every value", "[random]") {
  Generator g(15);
  std::vector<double> v = values(randint(-3, 4, {100000}, {}, &g));
  std::set<double> seen(v.begin(), v.end());
  CHECK(seen == std::set<double>{-3, -2, -1, 0, 1, 2, 3});
  CHECK(std::abs(mean_of(v)) < 0.03);
  Tensor t = randint(10, {3, 4}, {}, &g);  // randint(high, sizes)
  CHECK(t.dtype() == kInt64);
  CHECK(t.sizes() == Shape{3, 4});
  std::vector<double> u8 = values(randint(250, 256, {10000}, kUInt8, &g));
  CHECK(*std::min_element(u8.begin(), u8.end()) == 250);
  CHECK(*std::max_element(u8.begin(), u8.end()) == 255);
  std::vector<double> b = values(randint(0, 2, {10000}, kBool, &g));
  CHECK(std::abs(mean_of(b) - 0.5) < 0.03);
  std::vector<double> f = values(randint(-5, 5, {10000}, kFloat32, &g));
  for (double x : f) {
    if (x != std::floor(x) || x < -5 || x >= 5) FAIL("randint float produced " << x);
  }
  // A range wider than 2^32 (64-bit draws) covers both halves.
  Tensor wide = randint(-(int64_t{1} << 62), int64_t{1} << 62, {10000}, {}, &g);
  const int64_t* w = wide.data_ptr<int64_t>();
  int negative = 0;
  for (int i = 0; i < 10000; ++i) negative += w[i] < 0;
  CHECK(std::abs(negative - 5000) < 300);
}

TEST_CASE("rand_like and randn_like follow the tensor's dtype and shape", "[random]") {
  Generator g(16);
  Tensor t = zeros({2, 3}, kFloat64);
  Tensor r = rand_like(t, {}, &g);
  CHECK(r.dtype() == kFloat64);
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(randn_like(t, kBFloat16, &g).dtype() == kBFloat16);
  CHECK(rand({2}).dtype() == default_dtype());
}

TEST_CASE("random in-place ops bump the version", "[random]") {
  Tensor t = zeros({4}, kFloat32);
  uint32_t v = t.version();
  t.uniform_();
  CHECK(t.version() > v);
  v = t.version();
  t.normal_();
  CHECK(t.version() > v);
  v = t.version();
  t.bernoulli_();
  CHECK(t.version() > v);
  // A view shares the counter and writes through to the base.
  Tensor base = zeros({4, 4}, kFloat64);
  v = base.version();
  base.t().uniform_(1, 2);
  CHECK(base.version() > v);
  std::vector<double> bv = values(base);
  CHECK(*std::min_element(bv.begin(), bv.end()) >= 1.0);
}

TEST_CASE("random ops reject bad arguments", "[random]") {
  Tensor f = zeros({3}, kFloat32);
  CHECK_THROWS_WITH(f.uniform_(2.0, 1.0), Contains("uniform_") && Contains("from=2"));
  CHECK_THROWS_WITH(f.uniform_(0.0, INFINITY), Contains("finite"));
  CHECK_THROWS_WITH(zeros({3}, kFloat16).uniform_(-1e5, 1e5), Contains("does not fit"));
  CHECK_THROWS_WITH(f.normal_(0.0, -1.0), Contains("normal_") && Contains("std >= 0"));
  CHECK_THROWS_WITH(f.bernoulli_(1.5), Contains("bernoulli_") && Contains("1.5"));
  CHECK_THROWS_WITH(f.bernoulli_(-0.1), Contains("bernoulli_"));
  CHECK_THROWS_WITH(bernoulli(tensor<float>({0.5f, 2.0f})),
                    Contains("bernoulli") && Contains("[0, 1]"));
  CHECK_THROWS_WITH(bernoulli(tensor<float>({NAN})), Contains("bernoulli"));
  CHECK_THROWS_WITH(bernoulli(zeros({2}, kInt64)), Contains("bernoulli") && Contains("int64"));
  CHECK_THROWS_WITH(randint(5, 5, {2}), Contains("randint") && Contains("low < high"));
  CHECK_THROWS_WITH(randint(0, 300, {2}, kUInt8), Contains("randint") && Contains("uint8"));
  CHECK_THROWS_WITH(randint(-1, 1, {2}, kUInt8), Contains("randint"));
  CHECK_THROWS_WITH(randint(0, 5000, {2}, kFloat16), Contains("float16"));
  CHECK_THROWS_WITH(rand({2}, kInt64), Contains("rand") && Contains("int64"));
  CHECK_THROWS_WITH(randn({2}, kInt32), Contains("randn") && Contains("int32"));
  CHECK_THROWS_WITH(zeros({2}, kInt64).uniform_(), Contains("uniform_") && Contains("int64"));
  CHECK_THROWS_WITH(zeros({2}, kInt32).normal_(), Contains("normal_") && Contains("int32"));
  CHECK_THROWS_WITH(randperm(-1), Contains("randperm") && Contains("non-negative"));
  CHECK_THROWS_WITH(randperm(3, kBool), Contains("randperm") && Contains("bool"));
  CHECK_THROWS_WITH(randperm(300, kUInt8), Contains("randperm") && Contains("too large"));
  CHECK_THROWS_WITH(rand({-1}), Contains("negative"));
  // A written-to tensor whose elements share memory.
  CHECK_THROWS_WITH(zeros({1}, kFloat32).expand({4}).uniform_(),
                    Contains("uniform_") && Contains("memory location"));
  // A generator of another device.
  Generator cuda_gen(1, Device("cuda:0"));
  CHECK_THROWS_WITH(f.uniform_(0, 1, &cuda_gen), Contains("uniform_") && Contains("cuda:0"));
}

TEST_CASE("concurrent reservations get disjoint counter ranges", "[random]") {
  Generator g(17);
  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<std::vector<uint64_t>> starts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) starts[t].push_back(g.reserve(3).offset);
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (auto& s : starts) all.insert(s.begin(), s.end());
  CHECK(all.size() == static_cast<size_t>(kThreads * kPerThread));
  CHECK(g.offset() == 3u * kThreads * kPerThread);
  for (uint64_t s : all) {
    if (s % 3 != 0) FAIL("reservation at " << s << " overlaps another");
  }
}
