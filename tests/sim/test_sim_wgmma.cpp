// wgmma in the simulator (kernels/cuda/sim/wgmma.h, Note [wgmma in the simulator]): a product
// through swizzled K-major tiles against a host reference (the descriptors, the swizzle and the
// fragment layout written here from the PTX ISA's description, independently of
// kernels/cuda/wgmma.cuh), accumulators untouched until the wait, and the errors: a thread that
// exits with a wgmma in flight, stores and cp.async into operands in flight, bad descriptors.
#include <cstdint>
#include <string>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;
using Catch::Contains;
namespace wg = ember::sim::detail;

namespace {

constexpr int kK = 32;  // two k16 steps
constexpr size_t kShared = 64 * 128 + 256 * 128 + 1024;

// A byte offset in a K-major tile of 128-byte rows under the 128-byte swizzle: address bits 4-6
// XORed with bits 7-9 (offsets from a 1024-byte aligned start).
uint32_t swizzle(uint32_t byte) { return byte ^ (((byte >> 7) & 7) << 4); }

uint64_t descriptor(uint32_t addr, uint32_t stride, uint64_t mode = 1) {
  return ((addr >> 4) & 0x3FFF) | (uint64_t{1} << 16) | (uint64_t{(stride >> 4) & 0x3FFF} << 32) |
         (mode << 62);
}

float a_value(int r, int k) { return static_cast<float>((r * 3 + k * 5) % 7 - 3); }
float b_value(int c, int k) { return static_cast<float>((c * 2 + k * 3) % 5 - 2) * 0.5f; }

// 128 threads stage A (64 x 32) and B (256 x 32, K-major), multiply k 0-15 then 16-31 into
// acc (set to 7 first: the first wgmma does not accumulate), and write acc before the wait to
// early and after it to out. `mode` breaks the protocol: 1 a store into B in flight, 2 a
// cp.async into A in flight, 3 exit without waiting, 4 a descriptor without swizzle, 5 a start
// in an atom's second row, 6 the shared address of a static array.
__global__ void product(const float* src, float* out, float* early, int mode) {
  EMBER_DYNAMIC_SHARED(__nv_bfloat16, smem);
  EMBER_SHARED_ARRAY(float, stat, 4);
  const unsigned t = threadIdx.x;
  const uint32_t window = wg::shared_address(&smem[0], __FILE__, __LINE__);
  const uint32_t pad = (1024 - window % 1024) % 1024;
  const uint32_t a0 = window + pad, b0 = a0 + 64 * 128;
  for (unsigned e = t; e < 64 * kK; e += 128) {
    const int r = static_cast<int>(e) / kK, k = static_cast<int>(e) % kK;
    smem[(pad + swizzle(static_cast<uint32_t>(r * 128 + k * 2))) / 2] =
        __float2bfloat16(a_value(r, k));
  }
  for (unsigned e = t; e < 256 * kK; e += 128) {
    const int c = static_cast<int>(e) / kK, k = static_cast<int>(e) % kK;
    smem[(pad + 64 * 128 + swizzle(static_cast<uint32_t>(c * 128 + k * 2))) / 2] =
        __float2bfloat16(b_value(c, k));
  }
  __syncthreads();
  if (mode == 6) wg::shared_address(&stat[0], __FILE__, __LINE__);
  float acc[128];
  for (float& x : acc) x = 7.0f;
  wg::wgmma_fence();
  const uint64_t mode_bits = mode == 4 ? 0 : 1;
  const uint32_t shift = mode == 5 ? 128 : 0;
  wg::wgmma_issue(descriptor(a0 + shift, 1024, mode_bits), descriptor(b0, 1024), acc, 256, false,
                  true, __FILE__, __LINE__);
  wg::wgmma_issue(descriptor(a0 + 32, 1024), descriptor(b0 + 32, 1024), acc, 256, true, true,
                  __FILE__, __LINE__);
  wg::wgmma_commit();
  for (int i = 0; i < 128; ++i) early[t * 128 + static_cast<unsigned>(i)] = acc[i];
  if (mode == 1 && t == 5) smem[(pad + 64 * 128 + 640) / 2] = __float2bfloat16(1.0f);
  if (mode == 2 && t == 9) __pipeline_memcpy_async(&smem[(pad + 2048) / 2], src, 16);
  __pipeline_commit();
  if (mode == 3) return;
  wg::wgmma_wait(0);
  __pipeline_wait_prior(0);
  for (int i = 0; i < 128; ++i) out[t * 128 + static_cast<unsigned>(i)] = acc[i];
}

void run(int mode, std::vector<float>& out, std::vector<float>& early) {
  std::vector<float> src(4, 1.0f);
  out.assign(128 * 128, -1.0f);
  early.assign(128 * 128, -1.0f);
  launch({"product", dim3(1), dim3(128), kShared}, product, src.data(), out.data(), early.data(),
         mode);
}

}  // namespace

TEST_CASE("wgmma: m64n256k16 through swizzled K-major tiles matches the host",
          "[cuda][sim][wgmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out, early;
  run(0, out, early);
  REQUIRE(sim_test::sync_error() == "");
  size_t bad = 0;
  for (int t = 0; t < 128; ++t) {
    const int warp = t / 32, lane = t % 32;
    for (int i = 0; i < 128; ++i) {
      // The m64nNk16 accumulator fragment (PTX ISA, "Matrix fragments for wgmma.mma_async").
      const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
      const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
      float want = 0;
      for (int k = 0; k < kK; ++k) want += a_value(row, k) * b_value(col, k);
      const size_t at = static_cast<size_t>(t * 128 + i);
      if (out[at] != want && bad++ < 3) UNSCOPED_INFO("thread " << t << " element " << i);
      CHECK(early[at] == 7.0f);  // untouched until the wait
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("wgmma: a thread that exits with a wgmma in flight is an error", "[cuda][sim][wgmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out, early;
  run(3, out, early);
  CHECK_THAT(sim_test::sync_error(), Contains("the thread exits with this wgmma in flight") &&
                                         Contains("test_sim_wgmma.cpp"));
}

TEST_CASE("wgmma: writing operands in flight is an error", "[cuda][sim][wgmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out, early;
  run(1, out, early);  // an ordinary store (seen with racecheck on)
  CHECK_THAT(sim_test::sync_error(),
             Contains("racecheck: a write to") && Contains("a wgmma in flight reads"));
  run(2, out, early);  // a cp.async, which may land at once
  CHECK_THAT(sim_test::sync_error(),
             Contains("__pipeline_memcpy_async") && Contains("a wgmma in flight reads"));
}

TEST_CASE("wgmma: bad descriptors and shared addresses are errors", "[cuda][sim][wgmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out, early;
  run(4, out, early);
  CHECK_THAT(sim_test::sync_error(), Contains("A's descriptor has swizzle mode 0"));
  run(5, out, early);
  CHECK_THAT(sim_test::sync_error(), Contains("is not in the first 128-byte row"));
  run(6, out, early);
  CHECK_THAT(sim_test::sync_error(), Contains("dynamic shared memory only"));
}
