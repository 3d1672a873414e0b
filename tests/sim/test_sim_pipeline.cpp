// cp.async in the simulator (kernels/cuda/sim/pipeline.h, Note [cp.async in the simulator]): a
// copy lands at the wait that covers its group, not before; wait_prior leaves the newest groups
// in flight; zero-fill; a thread that exits lands its copies; the issue's checks; and a missing
// barrier after the wait is a racecheck hazard.
#include <cmath>
#include <string>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;
using Catch::Contains;

namespace {

// One thread stages 3 groups of 4 floats and reports what the tile holds at each point:
// out[0..3] before any wait; after wait_prior(2), out[4..7] group 0 (landed) and out[20..23]
// group 1 (in flight); out[8..11] group 1 after wait_prior(1); out[12..15] group 2 after
// wait_prior(0); out[16..19] a zero-filled copy (only its first 8 bytes copied).
__global__ void staged(const float* in, float* out) {
  EMBER_SHARED_ARRAY(float, tile, 16);
  for (int g = 0; g < 3; ++g) {
    __pipeline_memcpy_async(&tile[4 * g], in + 4 * g, 16);
    __pipeline_commit();
  }
  for (int i = 0; i < 4; ++i) out[i] = tile[i];
  __pipeline_wait_prior(2);
  for (int i = 0; i < 4; ++i) {
    out[4 + i] = tile[i];
    out[20 + i] = tile[4 + i];
  }
  __pipeline_wait_prior(1);
  for (int i = 0; i < 4; ++i) out[8 + i] = tile[4 + i];
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) out[12 + i] = tile[8 + i];
  __pipeline_memcpy_async(&tile[12], in, 16, 8);  // copies in[0..1], zeroes tile[14..15]
  __pipeline_commit();
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) out[16 + i] = tile[12 + i];
}

// Thread t stages element t; with `sync` a barrier follows the wait, then every thread reads
// its neighbour's element.
__global__ void neighbour(const float* in, float* out, int sync) {
  EMBER_SHARED_ARRAY(float, tile, 64);
  const unsigned t = threadIdx.x;
  __pipeline_memcpy_async(&tile[t], in + t, 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  if (sync) __syncthreads();
  out[t] = tile[(t + 1) % 64];
}

// Every thread issues a copy into the same tile and exits without waiting.
__global__ void exits_in_flight(const float* in) {
  EMBER_SHARED_ARRAY(float, tile, 4);
  __pipeline_memcpy_async(&tile[0], in, 16);
  __pipeline_commit();
}

__global__ void bad_issue(const float* in, float* out, int which) {
  EMBER_SHARED_ARRAY(float, tile, 8);
  float local[4] = {};
  if (which == 0) __pipeline_memcpy_async(&tile[0], in, 12);        // not 4, 8 or 16 bytes
  if (which == 1) __pipeline_memcpy_async(&tile[1], in, 16);        // misaligned destination
  if (which == 2) __pipeline_memcpy_async(local, in, 16);           // not shared memory
  if (which == 3) __pipeline_memcpy_async(&tile[0], &tile[4], 16);  // a shared source
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[0] = tile[0] + local[0];
}

}  // namespace

TEST_CASE("cp.async: a copy lands at the wait that covers its group", "[cuda][sim][pipeline]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());  // shared memory filled with NaN
  std::vector<float> in(12), out(24, 0.0f);
  for (int i = 0; i < 12; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  launch({"staged", dim3(1), dim3(1)}, staged, in.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int i = 0; i < 4; ++i) {
    INFO("element " << i);
    CHECK(std::isnan(out[static_cast<size_t>(i)]));                            // nothing landed yet
    CHECK(out[static_cast<size_t>(4 + i)] == in[static_cast<size_t>(i)]);      // group 0 landed
    CHECK(std::isnan(out[static_cast<size_t>(20 + i)]));                       // group 1 in flight
    CHECK(out[static_cast<size_t>(8 + i)] == in[static_cast<size_t>(4 + i)]);  // group 1 landed
    CHECK(out[static_cast<size_t>(12 + i)] == in[static_cast<size_t>(8 + i)]);
  }
  CHECK(out[16] == 1.0f);
  CHECK(out[17] == 2.0f);
  CHECK(out[18] == 0.0f);
  CHECK(out[19] == 0.0f);
}

TEST_CASE("cp.async: a wait without a barrier is a racecheck hazard", "[cuda][sim][pipeline]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> in(64), out(64);
  for (int i = 0; i < 64; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i);
  launch({"neighbour", dim3(1), dim3(64)}, neighbour, in.data(), out.data(), 1);
  REQUIRE(sim_test::sync_error() == "");
  for (int i = 0; i < 64; ++i)
    CHECK(out[static_cast<size_t>(i)] == in[static_cast<size_t>((i + 1) % 64)]);
  launch({"neighbour", dim3(1), dim3(64)}, neighbour, in.data(), out.data(), 0);
  const std::string error = sim_test::sync_error();
  INFO(error);
  CHECK_THAT(error, Contains("racecheck") && Contains("hazard on shared 'tile'"));
}

TEST_CASE("cp.async: copies in flight land when the thread exits", "[cuda][sim][pipeline]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> in(4, 1.0f);
  launch({"exits_in_flight", dim3(2), dim3(32)}, exits_in_flight, in.data());
  // 32 threads of a block land 16 bytes each into the same tile as they exit: racecheck sees the
  // writes (write-after-write between threads), which shows the copies did land.
  CHECK_THAT(sim_test::sync_error(), Contains("write-after-write hazard on shared 'tile'"));
}

TEST_CASE("cp.async: bad issues are errors naming the call", "[cuda][sim][pipeline]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> in(8, 1.0f), out(1);
  const char* expected[] = {"copies 4, 8 or 16 bytes, not 12", "must be aligned to the 16 bytes",
                            "is not in the block's shared memory",
                            "the source is in shared memory"};
  for (int which = 0; which < 4; ++which) {
    INFO("case " << which);
    launch({"bad_issue", dim3(1), dim3(1)}, bad_issue, in.data(), out.data(), which);
    const std::string error = sim_test::sync_error();
    CHECK_THAT(error, Contains("__pipeline_memcpy_async (") && Contains("test_sim_pipeline.cpp:"));
    CHECK_THAT(error, Contains(expected[which]));
  }
}
