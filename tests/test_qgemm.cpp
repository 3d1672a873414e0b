// The exact int8 GEMM (kernels/cpu/qgemm.h): every kernel this CPU runs against an int64
// reference loop, bit for bit, on random sizes with tails in m, n and k, the extreme values that
// trip a saturating instruction, every zero point class, lda > k and ldc > n, empty and unit
// sizes; kernel selection, the k bound, packs that outlive a kernel switch, and thread-count
// independence.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/qgemm.h"

using namespace ember;
namespace cpu = ember::kernels::cpu;

namespace {

const char* const kKernelNames[] = {"avx512vnni", "avxvnni", "avx2", "scalar"};

// The kernels this CPU runs, each selected in turn; restores the automatic choice afterwards
// (also when a check throws).
struct KernelSweep {
  ~KernelSweep() { cpu::set_qgemm_kernel("default"); }
  template <class F>
  void run(F&& f) {
    for (const char* name : kKernelNames) {
      if (!cpu::set_qgemm_kernel(name)) continue;
      INFO("kernel " << name);
      f(std::string(name));
    }
  }
};

struct Case {
  int64_t m, n, k, lda, ldc;
  int32_t zp;
  std::vector<uint8_t> a;  // (m, lda)
  std::vector<int8_t> w;   // (n, k)
};

// C(i, j) = sum_p (A(i, p) - zp) * W(j, p) in int64.
std::vector<int64_t> reference(const Case& c) {
  std::vector<int64_t> out(static_cast<size_t>(c.m * c.n), 0);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < c.k; ++p)
        s += (int64_t{c.a[static_cast<size_t>(i * c.lda + p)]} - c.zp) *
             int64_t{c.w[static_cast<size_t>(j * c.k + p)]};
      out[static_cast<size_t>(i * c.n + j)] = s;
    }
  return out;
}

Case random_case(std::mt19937_64& rng, int64_t m, int64_t n, int64_t k, int64_t lda_extra,
                 int64_t ldc_extra, int32_t zp) {
  Case c{m, n, k, k + lda_extra, n + ldc_extra, zp, {}, {}};
  std::uniform_int_distribution<int> ua(0, 255), uw(-128, 127);
  c.a.resize(static_cast<size_t>(m * c.lda));
  for (auto& x : c.a) x = static_cast<uint8_t>(ua(rng));
  c.w.resize(static_cast<size_t>(n * k));
  for (auto& x : c.w) x = static_cast<int8_t>(uw(rng));
  return c;
}

// Runs qgemm on c with a fresh pack and checks every element of C, and that the padding
// columns of C past n were not written.
void check_case(const Case& c) {
  INFO("m " << c.m << " n " << c.n << " k " << c.k << " lda " << c.lda << " ldc " << c.ldc << " zp "
            << c.zp);
  const cpu::PackedQWeight b = cpu::pack_qweight(c.w.data(), c.n, c.k);
  REQUIRE(b.n() == c.n);
  REQUIRE(b.k() == c.k);
  constexpr int32_t kCanary = 0x5a5a5a5a;
  std::vector<int32_t> out(static_cast<size_t>(std::max<int64_t>(1, c.m * c.ldc)), kCanary);
  cpu::qgemm_u8s8(c.m, c.a.data(), c.lda, c.zp, b, out.data(), c.ldc);
  const std::vector<int64_t> want = reference(c);
  int64_t wrong = 0, canaries = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.ldc; ++j) {
      const int32_t got = out[static_cast<size_t>(i * c.ldc + j)];
      if (j >= c.n) {
        canaries += got != kCanary;
      } else if (int64_t{got} != want[static_cast<size_t>(i * c.n + j)]) {
        if (wrong++ == 0)
          UNSCOPED_INFO("first wrong C(" << i << ", " << j << ") = " << got << ", want "
                                         << want[static_cast<size_t>(i * c.n + j)]);
      }
    }
  CHECK(wrong == 0);
  CHECK(canaries == 0);
}

}  // namespace

TEST_CASE("qgemm: every kernel matches the int64 reference on random sizes with tails", "[qgemm]") {
  KernelSweep sweep;
  sweep.run([](const std::string&) {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int64_t> um(1, 40), un(1, 80), uk(1, 300);
    const int32_t zps[] = {0, 128, 255, 37};
    for (int t = 0; t < 40; ++t) {
      const int64_t m = um(rng), n = un(rng), k = uk(rng);
      check_case(random_case(rng, m, n, k, t % 3 == 0 ? 5 : 0, t % 4 == 0 ? 3 : 0, zps[t % 4]));
    }
    // Shapes of the quantized models: whole tiles, one past, one short; a k that takes two k
    // blocks (> 1024) and a odd one that ends in a tail group.
    const int64_t shapes[][3] = {{256, 10, 128}, {64, 64, 288}, {97, 33, 9},    {13, 17, 27},
                                 {12, 64, 784},  {25, 65, 257}, {7, 100, 1100}, {30, 48, 2053}};
    for (const auto& s : shapes) check_case(random_case(rng, s[0], s[1], s[2], 3, 0, 128));
  });
}

TEST_CASE("qgemm: extreme values do not saturate", "[qgemm]") {
  // All 255 against all -128 (and all 127): a pair sum of u8 x s8 products is -65280 (or
  // 64770), beyond int16 -- what vpmaddubsw would clamp. k = kQgemmMaxK is the largest exact
  // sum: 65793 * 255 * -128 = -2147483520, just inside int32.
  KernelSweep sweep;
  sweep.run([](const std::string&) {
    const int64_t ks[] = {1, 2, 3, 4, 5, 64, 131, 1023, 1024, 1025, 4096};
    for (int64_t k : ks) {
      for (int8_t wv : {int8_t{-128}, int8_t{127}}) {
        for (int32_t zp : {0, 128, 255}) {
          for (uint8_t av : {uint8_t{255}, uint8_t{0}}) {
            Case c{3, 19, k, k, 19, zp, {}, {}};
            c.a.assign(static_cast<size_t>(c.m * c.lda), av);
            c.w.assign(static_cast<size_t>(c.n * c.k), wv);
            check_case(c);
          }
        }
      }
    }
  });
  SECTION("the largest k") {
    sweep.run([](const std::string&) {
      const int64_t k = cpu::kQgemmMaxK;
      for (int8_t wv : {int8_t{-128}, int8_t{127}}) {
        Case c{2, 3, k, k, 3, 0, {}, {}};
        c.a.assign(static_cast<size_t>(c.m * c.lda), 255);
        c.w.assign(static_cast<size_t>(c.n * c.k), wv);
        check_case(c);
        c.a.assign(static_cast<size_t>(c.m * c.lda), 0);
        c.zp = 255;  // (0 - 255) * w
        check_case(c);
      }
    });
  }
}

TEST_CASE("qgemm: empty and unit sizes", "[qgemm]") {
  KernelSweep sweep;
  sweep.run([](const std::string&) {
    std::mt19937_64 rng(7);
    for (int64_t m : {0, 1, 2})
      for (int64_t n : {0, 1, 2, 17})
        for (int64_t k : {0, 1, 2, 5}) check_case(random_case(rng, m, n, k, 1, 2, 128));
    // m == 0 or n == 0 writes nothing and needs no buffers.
    const cpu::PackedQWeight empty = cpu::pack_qweight(nullptr, 0, 16);
    CHECK(empty.n() == 0);
    int32_t untouched = 7;
    cpu::qgemm_u8s8(5, nullptr, 16, 0, empty, &untouched, 0);
    CHECK(untouched == 7);
    const std::vector<int8_t> w(16, 1);
    const cpu::PackedQWeight one = cpu::pack_qweight(w.data(), 1, 16);
    cpu::qgemm_u8s8(0, nullptr, 16, 0, one, nullptr, 1);
    // k == 0: C = 0.
    const cpu::PackedQWeight no_k = cpu::pack_qweight(nullptr, 3, 0);
    std::vector<int32_t> c(6, 99);
    const uint8_t a[2] = {1, 2};
    cpu::qgemm_u8s8(2, a, 1, 200, no_k, c.data(), 3);
    CHECK(c == std::vector<int32_t>(6, 0));
  });
}

TEST_CASE("qgemm: kernel selection and the layout a pack remembers", "[qgemm]") {
  KernelSweep sweep;
  CHECK_FALSE(cpu::set_qgemm_kernel("nonsense"));
  CHECK_FALSE(cpu::set_qgemm_kernel(nullptr));
  CHECK(cpu::set_qgemm_kernel("scalar"));
  CHECK(std::string(cpu::qgemm_kernel_name()) == "scalar");
  // A failed selection changes nothing.
  CHECK_FALSE(cpu::set_qgemm_kernel("nonsense"));
  CHECK(std::string(cpu::qgemm_kernel_name()) == "scalar");
  CHECK(cpu::set_qgemm_kernel("default"));
  const std::string best = cpu::qgemm_kernel_name();
  UNSCOPED_INFO("default qgemm kernel: " << best);
  CHECK((best == "avx512vnni" || best == "avxvnni" || best == "avx2" || best == "scalar"));

  // A pack made for one kernel stays correct after the selection moves to another.
  std::mt19937_64 rng(3);
  const Case c = random_case(rng, 29, 37, 77, 2, 0, 128);
  std::vector<cpu::PackedQWeight> packs;
  std::vector<std::string> names;
  sweep.run([&](const std::string& name) {
    packs.push_back(cpu::pack_qweight(c.w.data(), c.n, c.k));
    names.push_back(name);
    CHECK(packs.back().kernel_name() == name);
    CHECK(packs.back().bytes() >= static_cast<size_t>(c.n * c.k));
  });
  REQUIRE(cpu::set_qgemm_kernel("scalar"));
  const std::vector<int64_t> want = reference(c);
  for (size_t p = 0; p < packs.size(); ++p) {
    INFO("pack for " << names[p]);
    const cpu::PackedQWeight copy = packs[p];  // copies keep their bytes (and alignment)
    for (int64_t j = 0; j < c.n; ++j) {
      int32_t s = 0;
      for (int64_t q = 0; q < c.k; ++q) s += c.w[static_cast<size_t>(j * c.k + q)];
      CHECK(copy.row_sums()[j] == s);
    }
    std::vector<int32_t> out(static_cast<size_t>(c.m * c.n));
    cpu::qgemm_u8s8(c.m, c.a.data(), c.lda, c.zp, copy, out.data(), c.n);
    CHECK(std::vector<int64_t>(out.begin(), out.end()) == want);
  }
}

TEST_CASE("qgemm: sizes and arguments out of range raise ember::Error", "[qgemm]") {
  using Catch::Contains;
  // The k bound is checked before any allocation or read: null weights, absurd k.
  CHECK_NOTHROW(cpu::check_qgemm_k(cpu::kQgemmMaxK));
  CHECK_THROWS_AS(cpu::check_qgemm_k(cpu::kQgemmMaxK + 1), ember::Error);
  CHECK_THROWS_WITH(cpu::check_qgemm_k(cpu::kQgemmMaxK + 1),
                    Contains("qgemm") && Contains("65794"));
  CHECK_THROWS_WITH(cpu::check_qgemm_k(-1), Contains("qgemm"));
  CHECK_THROWS_WITH(cpu::pack_qweight(nullptr, 1, int64_t{1} << 40),
                    Contains("qgemm") && Contains("1099511627776"));
  CHECK_THROWS_AS(cpu::pack_qweight(nullptr, -1, 4), ember::Error);
  CHECK_THROWS_AS(cpu::pack_qweight(nullptr, 2, 4), ember::Error);

  const std::vector<int8_t> w(8 * 5, 1);
  const cpu::PackedQWeight b = cpu::pack_qweight(w.data(), 8, 5);
  std::vector<uint8_t> a(4 * 5, 1);
  std::vector<int32_t> c(4 * 8);
  CHECK_THROWS_WITH(cpu::qgemm_u8s8(4, a.data(), 4, 0, b, c.data(), 8), Contains("lda"));
  CHECK_THROWS_WITH(cpu::qgemm_u8s8(4, a.data(), 5, 0, b, c.data(), 7), Contains("ldc"));
  CHECK_THROWS_WITH(cpu::qgemm_u8s8(4, a.data(), 5, 256, b, c.data(), 8), Contains("zero point"));
  CHECK_THROWS_WITH(cpu::qgemm_u8s8(4, a.data(), 5, -1, b, c.data(), 8), Contains("zero point"));
  CHECK_THROWS_AS(cpu::qgemm_u8s8(-1, a.data(), 5, 0, b, c.data(), 8), ember::Error);
}

TEST_CASE("qgemm: two threads give the same results as one", "[qgemm]") {
  const int before = num_threads();
  KernelSweep sweep;
  sweep.run([](const std::string&) {
    std::mt19937_64 rng(11);
    // Splits by rows (m large), by columns (m small, n large), and one just above the size
    // that stays on one thread.
    const int64_t shapes[][3] = {{300, 70, 200}, {5, 700, 300}, {2, 1000, 129}, {64, 64, 256}};
    for (const auto& s : shapes) {
      const Case c = random_case(rng, s[0], s[1], s[2], 1, 0, 128);
      const cpu::PackedQWeight b = cpu::pack_qweight(c.w.data(), c.n, c.k);
      std::vector<int32_t> one(static_cast<size_t>(c.m * c.ldc)), two(one.size());
      set_num_threads(1);
      cpu::qgemm_u8s8(c.m, c.a.data(), c.lda, c.zp, b, one.data(), c.ldc);
      set_num_threads(2);
      cpu::qgemm_u8s8(c.m, c.a.data(), c.lda, c.zp, b, two.data(), c.ldc);
      CHECK(one == two);
      const std::vector<int64_t> want = reference(c);
      CHECK(std::vector<int64_t>(two.begin(), two.end()) == want);
    }
  });
  set_num_threads(before);
}
