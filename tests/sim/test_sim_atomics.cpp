// Atomics and fences of the simulator (kernels/cuda/sim/atomics.h): each operation's result,
// and atomicity under contention from many OS threads (a kernel's blocks run on several
// workers at once, so global-memory atomics really race).

#include <catch2/catch.hpp>
#include <climits>
#include <thread>
#include <vector>

#include "kernels/cuda/sim/atomics.h"
#include "kernels/cuda/sim/intrinsics.h"

namespace {

// Runs body(t) on `threads` OS threads at once.
template <class F>
void contend(int threads, F body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&body, t] { body(t); });
  for (auto& th : pool) th.join();
}

constexpr int kThreads = 8;
constexpr int kIters = 20000;

}  // namespace

TEST_CASE("sim atomics: integer operations return the old value", "[cuda][sim][atomics]") {
  int i = 5;
  CHECK(atomicAdd(&i, 3) == 5);
  CHECK(atomicSub(&i, 10) == 8);
  CHECK(i == -2);
  CHECK(atomicExch(&i, 7) == -2);
  CHECK(atomicCAS(&i, 6, 1) == 7);  // no swap
  CHECK(i == 7);
  CHECK(atomicCAS(&i, 7, 1) == 7);  // swap
  CHECK(i == 1);
  CHECK(atomicMax(&i, -4) == 1);
  CHECK(i == 1);
  CHECK(atomicMin(&i, -4) == 1);
  CHECK(i == -4);
  CHECK(atomicAnd(&i, 0xFF) == -4);
  CHECK(i == 0xFC);
  CHECK(atomicOr(&i, 0x3) == 0xFC);
  CHECK(atomicXor(&i, 0x1) == 0xFF);
  CHECK(i == 0xFE);

  unsigned u = 0;
  CHECK(atomicSub(&u, 1u) == 0u);
  CHECK(u == UINT_MAX);
  CHECK(atomicMin(&u, 3u) == UINT_MAX);
  CHECK(atomicMax(&u, 2u) == 3u);
  CHECK(u == 3u);
  unsigned long long ull = 1;
  CHECK(atomicAdd(&ull, 1ull << 40) == 1ull);
  CHECK(atomicCAS(&ull, (1ull << 40) + 1, 9ull) == (1ull << 40) + 1);
  CHECK(ull == 9ull);
  CHECK(atomicMax(&ull, ~0ull) == 9ull);
  CHECK(atomicExch(&ull, 4ull) == ~0ull);
  long long ll = -3;
  CHECK(atomicMin(&ll, -5ll) == -3);
  CHECK(atomicMax(&ll, 10ll) == -5);
  CHECK(ll == 10);
  unsigned short us = 3;
  CHECK(atomicCAS(&us, static_cast<unsigned short>(3), static_cast<unsigned short>(9)) == 3);
  CHECK(us == 9);
  float fl = 1.5f;
  CHECK(atomicExch(&fl, 2.5f) == 1.5f);
  CHECK(fl == 2.5f);
  // Scoped forms are the same operations.
  CHECK(atomicAdd_block(&i, 2) == 0xFE);
  CHECK(atomicAdd_system(&fl, 1.0f) == 2.5f);
  CHECK(fl == 3.5f);
}

TEST_CASE("sim atomics: atomicInc and atomicDec wrap at the limit", "[cuda][sim][atomics]") {
  unsigned u = 0;
  std::vector<unsigned> seen;
  for (int k = 0; k < 5; ++k) seen.push_back(atomicInc(&u, 2u));
  CHECK(seen == std::vector<unsigned>{0, 1, 2, 0, 1});
  u = 1;
  seen.clear();
  for (int k = 0; k < 4; ++k) seen.push_back(atomicDec(&u, 2u));
  CHECK(seen == std::vector<unsigned>{1, 0, 2, 1});
  u = 7;  // above the limit: reset to it
  CHECK(atomicDec(&u, 2u) == 7u);
  CHECK(u == 2u);
}

TEST_CASE("sim atomics: integer adds under contention", "[cuda][sim][atomics]") {
  int counter = 0;
  unsigned long long wide = 0;
  unsigned ring = 0;
  int high = INT_MIN;
  contend(kThreads, [&](int t) {
    for (int k = 0; k < kIters; ++k) {
      atomicAdd(&counter, 1);
      atomicAdd(&wide, 1ull << 33);
      atomicInc(&ring, 999u);
      atomicMax(&high, t * kIters + k);
    }
  });
  CHECK(counter == kThreads * kIters);
  CHECK(wide == (static_cast<unsigned long long>(kThreads) * kIters) << 33);
  CHECK(ring == static_cast<unsigned>(kThreads * kIters) % 1000u);
  CHECK(high == kThreads * kIters - 1);
}

TEST_CASE("sim atomics: float, double, half and bfloat16 adds under contention",
          "[cuda][sim][atomics]") {
  // Every addend and partial sum is an exact small integer, so any order gives the same total
  // and a lost update shows as a smaller one.
  float f = 0;
  double d = 0;
  __half h = __float2half(0.0f);
  __nv_bfloat16 b = __float2bfloat16(0.0f);
  __half2 h2 = __floats2half2_rn(0, 0);
  const int iters = 250;  // 8 * 250 = 2000 <= 2048, exact in half; bf16 adds steps of 1/4 below
  contend(kThreads, [&](int) {
    for (int k = 0; k < kIters; ++k) {
      atomicAdd(&f, 1.0f);
      atomicAdd(&d, 0.5);
    }
    for (int k = 0; k < iters; ++k) {
      atomicAdd(&h, __float2half(1.0f));
      atomicAdd(&h2, __floats2half2_rn(1.0f, -1.0f));
    }
    for (int k = 0; k < 4; ++k) atomicAdd(&b, __float2bfloat16(0.25f));  // 32 * 0.25 = 8
  });
  CHECK(f == static_cast<float>(kThreads * kIters));
  CHECK(d == kThreads * kIters * 0.5);
  CHECK(__half2float(h) == kThreads * iters);
  CHECK(__low2float(h2) == kThreads * iters);
  CHECK(__high2float(h2) == -kThreads * iters);
  CHECK(__bfloat162float(b) == 8.0f);
}

TEST_CASE("sim atomics: a CAS loop builds a lock-free max of doubles", "[cuda][sim][atomics]") {
  // The classic CUDA idiom: atomicCAS on the bits of a double.
  double best = -1;
  auto* bits = reinterpret_cast<unsigned long long*>(&best);
  contend(kThreads, [&](int t) {
    for (int k = 0; k < kIters; ++k) {
      const double v = t * 0.001 + k;
      unsigned long long old = __atomic_load_n(bits, __ATOMIC_RELAXED), assumed;
      do {
        assumed = old;
        if (__longlong_as_double(static_cast<long long>(assumed)) >= v) break;
        old = atomicCAS(bits, assumed, static_cast<unsigned long long>(__double_as_longlong(v)));
      } while (old != assumed);
    }
  });
  CHECK(best == (kThreads - 1) * 0.001 + (kIters - 1));
}

TEST_CASE("sim atomics: fences compile and order nothing away", "[cuda][sim][atomics]") {
  int data = 0, flag = 0;
  std::thread producer([&] {
    data = 42;
    __threadfence();
    __atomic_store_n(&flag, 1, __ATOMIC_RELAXED);
  });
  while (__atomic_load_n(&flag, __ATOMIC_RELAXED) == 0) {
  }
  __threadfence_block();
  __threadfence_system();
  CHECK(data == 42);
  producer.join();
}
