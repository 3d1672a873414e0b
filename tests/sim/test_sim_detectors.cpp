// The detectors, each against a deliberately broken kernel: synccheck (divergent barriers, a
// thread exiting while others wait, bad shuffle masks, deadlocks), racecheck, out-of-bounds
// shared accesses, initcheck and schedule fuzzing.
#include <cmath>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;
using Catch::Contains;

namespace {

constexpr int kLineA = __LINE__ + 4;
constexpr int kLineB = __LINE__ + 5;
__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void exit_before_barrier(int* out) {
  if (threadIdx.x == 3) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void shuffle_omits_caller(int* out) {
  // Lane 31 is not in the mask it passes.
  out[threadIdx.x] = __shfl_sync(0x7fffffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void shuffle_names_missing_lanes(int* out) {
  // A block of 16 threads: lanes 16-31 of the warp do not exist.
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void shuffle_masks_disagree(int* out) {
  // The low half-warp names the whole warp, the high half only itself.
  unsigned mask = threadIdx.x < 16 ? 0xffffffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_sync(mask, static_cast<int>(threadIdx.x), 16);
}

__global__ void barrier_vs_shuffle_deadlock(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    v = __shfl_sync(0xffffffffu, v, 0);
    __syncthreads();
  }
  out[threadIdx.x] = v;
}

// Missing barrier between the write and the read of a neighbour's slot.
constexpr int kWriteLine = __LINE__ + 4;
__global__ void shared_race(const float* in, float* out) {
  EMBER_SHARED_ARRAY(float, tile, 64);
  unsigned t = threadIdx.x;
  tile[t] = in[t];
  out[t] = tile[(t + 1) % 64];
}

// Every thread writes the same shared variable (a write-after-write race).
__global__ void shared_waw(int* out) {
  EMBER_SHARED_VAR(int, winner);
  winner = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = winner;
}

// The same pattern made right by a barrier, and a warp-synchronous step ordered by __syncwarp.
__global__ void shared_ordered(const float* in, float* out) {
  EMBER_SHARED_ARRAY(float, tile, 64);
  unsigned t = threadIdx.x;
  tile[t] = in[t];
  __syncthreads();
  float v = tile[(t + 1) % 64];
  __syncthreads();
  tile[t] = v;
  __syncthreads();
  if (t < 32) {
    float w = tile[t] + tile[(t + 16) % 32];
    __syncwarp();
    tile[t] = w;
  }
  __syncthreads();
  out[t] = tile[t];
}

__global__ void shared_out_of_bounds(float* out) {
  EMBER_SHARED_ARRAY(float, tile, 8, 8);
  tile[threadIdx.x / 8][threadIdx.x % 8] = 1.0f;  // 72 threads: row 8 does not exist
  out[threadIdx.x] = 0;
}

__global__ void dynamic_out_of_bounds(float* out) {
  EMBER_DYNAMIC_SHARED(float, buffer);
  buffer[threadIdx.x] = 2.0f;  // the launch gives 32 floats to 33 threads
  out[threadIdx.x] = buffer[threadIdx.x];
}

__global__ void reads_unwritten(const float* device, float* out) {
  EMBER_SHARED_ARRAY(float, tile, 32);
  if (threadIdx.x < 16) tile[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x] + device[threadIdx.x];
}

// Order-dependent without being caught by racecheck: each thread adds its id into a global
// slot through a read-modify-write (a lost-update race a schedule change shows).
__global__ void last_writer(int* out) {
  EMBER_SHARED_VAR(int, who);
  if (threadIdx.x == 0) who = -1;
  __syncthreads();
  int* raw = &who;  // raw pointer: racecheck does not see it
  *raw = static_cast<int>(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = who;
}

}  // namespace

TEST_CASE("synccheck: threads waiting at different __syncthreads", "[cuda][sim][synccheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(32);
  launch({"divergent_barrier", dim3(1), dim3(32)}, divergent_barrier, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'divergent_barrier'"));
  CHECK_THAT(error, Contains("divergent barriers"));
  CHECK_THAT(error, Contains("test_sim_detectors.cpp:" + std::to_string(kLineA)));
  CHECK_THAT(error, Contains("test_sim_detectors.cpp:" + std::to_string(kLineB)));
}

TEST_CASE("synccheck: a thread exits while others wait at a barrier", "[cuda][sim][synccheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(32);
  launch({"exit_before_barrier", dim3(1), dim3(32)}, exit_before_barrier, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'exit_before_barrier'"));
  CHECK_THAT(error, Contains("exited"));
  CHECK_THAT(error, Contains("__syncthreads (/"));
}

TEST_CASE("synccheck: shuffle masks that omit the caller, name missing lanes or disagree",
          "[cuda][sim][synccheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(32);
  launch({"shuffle_omits_caller", dim3(1), dim3(32)}, shuffle_omits_caller, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("mask 0x7fffffff omits the calling lane 31"));
  CHECK_THAT(error, Contains("__shfl_sync (/"));

  launch({"shuffle_names_missing_lanes", dim3(1), dim3(16)}, shuffle_names_missing_lanes,
         out.data());
  CHECK_THAT(sim_test::sync_error(), Contains("beyond blockDim"));

  launch({"shuffle_masks_disagree", dim3(1), dim3(32)}, shuffle_masks_disagree, out.data());
  error = sim_test::sync_error();
  CHECK_THAT(error, Contains("exited while lanes 0x0000ffff of warp 0 wait for it"));
  CHECK_THAT(error, Contains("with mask 0xffffffff"));
  CHECK_THAT(error, Contains("disagree"));
}

TEST_CASE("synccheck: a deadlock is an error naming the kernel and the lines, not a hang",
          "[cuda][sim][synccheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(32);
  launch({"barrier_vs_shuffle_deadlock", dim3(1), dim3(32)}, barrier_vs_shuffle_deadlock,
         out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'barrier_vs_shuffle_deadlock'"));
  CHECK_THAT(error, Contains("deadlock"));
  CHECK_THAT(error, Contains("__syncthreads (/"));
  CHECK_THAT(error, Contains("__shfl_sync (/"));
}

TEST_CASE("racecheck: a missing barrier is a read-after-write hazard with both lines",
          "[cuda][sim][racecheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> in(64, 1.0f), out(64);
  launch({"shared_race", dim3(1), dim3(64)}, shared_race, in.data(), out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'shared_race'"));
  CHECK_THAT(error, Contains("racecheck"));
  CHECK_THAT(error, Contains("shared 'tile'"));
  // Loop mode runs thread 0 first: it reads tile[1] ... but thread 1 writes later, so the
  // hazard is found when thread 1 writes (write-after-read) or reads (read-after-write).
  CHECK_THAT(error, Contains("hazard"));
  // Both access sites, symbolised from the debug info (RelWithDebInfo, Debug and CI builds).
  CHECK_THAT(error, Contains("test_sim_detectors.cpp:" + std::to_string(kWriteLine)));
  CHECK_THAT(error, Contains("test_sim_detectors.cpp:" + std::to_string(kWriteLine + 1)));
}

TEST_CASE("racecheck: threads writing one shared variable race", "[cuda][sim][racecheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(8);
  launch({"shared_waw", dim3(1), dim3(8)}, shared_waw, out.data());
  CHECK_THAT(sim_test::sync_error(), Contains("write-after-write hazard on shared 'winner'"));
}

TEST_CASE("racecheck: barriers and __syncwarp order accesses", "[cuda][sim][racecheck]") {
  for (Schedule s : {Schedule::forward, Schedule::reverse, Schedule::shuffle}) {
    Options o = sim_test::base_options();
    o.schedule = s;
    sim_test::ScopedOptions scoped(o);
    std::vector<float> in(64), out(64);
    for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i);
    launch({"shared_ordered", dim3(2), dim3(64)}, shared_ordered, in.data(), out.data());
    REQUIRE(sim_test::sync_error() == "");
    for (int t = 0; t < 32; ++t) {
      float a = in[(t + 1) % 64], b = in[((t + 16) % 32 + 1) % 64];
      CHECK(out[t] == a + b);
    }
  }
}

TEST_CASE("EMBER_SIM_RACECHECK=0 turns racecheck off", "[cuda][sim][racecheck]") {
  Options o = sim_test::base_options();
  o.racecheck = false;
  sim_test::ScopedOptions scoped(o);
  std::vector<int> out(8);
  launch({"shared_waw", dim3(1), dim3(8)}, shared_waw, out.data());
  REQUIRE(sim_test::sync_error() == "");
}

TEST_CASE("an out-of-bounds shared write is caught", "[cuda][sim][memcheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out(72);
  launch({"shared_out_of_bounds", dim3(1), dim3(72)}, shared_out_of_bounds, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'shared_out_of_bounds'"));
  CHECK_THAT(error, Contains("thread (64,0,0)"));
  CHECK_THAT(error, Contains("index 8 of shared 'tile'"));
  CHECK_THAT(error, Contains("extent is 8"));

  launch({"dynamic_out_of_bounds", dim3(1), dim3(33), 32 * sizeof(float)}, dynamic_out_of_bounds,
         out.data());
  error = sim_test::sync_error();
  CHECK_THAT(error, Contains("index 32 of shared 'buffer'"));
  CHECK_THAT(error, Contains("extent is 32"));
}

TEST_CASE("initcheck: memory a kernel never wrote reads as NaN", "[cuda][sim][initcheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  auto* device = static_cast<float*>(device_malloc(0, 32 * sizeof(float)));
  REQUIRE(device != nullptr);
  // Only the first 8 elements of the device buffer are written.
  for (int i = 0; i < 8; ++i) device[i] = 0.0f;
  std::vector<float> out(32);
  launch({"reads_unwritten", dim3(1), dim3(32)}, reads_unwritten, device, out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < 32; ++t) {
    INFO("thread " << t);
    CHECK(std::isnan(out[t]) == (t >= 8));
  }
  device_free(0, device);

  Options zero = sim_test::base_options();
  zero.fill = Fill::zero;
  sim_test::ScopedOptions zeroed(zero);
  device = static_cast<float*>(device_malloc(0, 32 * sizeof(float)));
  launch({"reads_unwritten", dim3(1), dim3(32)}, reads_unwritten, device, out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < 32; ++t) CHECK(out[t] == (t < 16 ? 1.0f : 0.0f));
  device_free(0, device);
}

TEST_CASE("schedule fuzzing shows an order-dependent result", "[cuda][sim][schedule]") {
  std::vector<int> results;
  for (Schedule s : {Schedule::forward, Schedule::reverse}) {
    Options o = sim_test::base_options();
    o.schedule = s;
    sim_test::ScopedOptions scoped(o);
    std::vector<int> out(1, -2);
    launch({"last_writer", dim3(1), dim3(64)}, last_writer, out.data());
    REQUIRE(sim_test::sync_error() == "");
    results.push_back(out[0]);
  }
  CHECK(results[0] == 63);
  CHECK(results[1] == 0);
  // shuffle is reproducible for a seed.
  std::vector<int> shuffled;
  for (int run = 0; run < 2; ++run) {
    Options o = sim_test::base_options();
    o.schedule = Schedule::shuffle;
    o.seed = 42;
    sim_test::ScopedOptions scoped(o);
    std::vector<int> out(1, -2);
    launch({"last_writer", dim3(1), dim3(64)}, last_writer, out.data());
    REQUIRE(sim_test::sync_error() == "");
    shuffled.push_back(out[0]);
  }
  CHECK(shuffled[0] == shuffled[1]);
}
