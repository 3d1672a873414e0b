// __syncthreads: a kernel that is only right with its barrier, the reducing variants, and the
// thread order of the schedules.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;

namespace {

// Reverses each block's 256 elements through shared memory: thread t reads what thread
// 255 - t wrote, so it is only right when the barrier separates the writes from the reads.
template <bool with_barrier>
__global__ void reverse_block(const float* in, float* out) {
  EMBER_SHARED_ARRAY(float, tile, 256);
  unsigned t = threadIdx.x;
  unsigned base = blockIdx.x * 256;
  tile[t] = in[base + t];
  if (with_barrier) __syncthreads();
  out[base + t] = tile[255 - t];
}

__global__ void barrier_reductions(const int* flags, int* out) {
  int p = flags[threadIdx.x];
  int count = __syncthreads_count(p);
  int all = __syncthreads_and(p);
  int any = __syncthreads_or(p);
  if (threadIdx.x == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
  }
}

// Many barriers in a loop: a block-wide tree sum.
__global__ void block_sum(const float* in, float* out) {
  EMBER_SHARED_ARRAY(float, partial, 512);
  unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

}  // namespace

TEST_CASE("a kernel that is only right with its barrier", "[cuda][sim][barrier]") {
  Options o = sim_test::base_options();
  o.racecheck = false;  // let the broken kernel run to its wrong answer
  sim_test::ScopedOptions scoped(o);
  const int blocks = 8;
  std::vector<float> in(blocks * 256), right(in.size()), wrong(in.size());
  std::iota(in.begin(), in.end(), 0.0f);
  launch({"reverse_block<true>", dim3(blocks), dim3(256)}, reverse_block<true>, in.data(),
         right.data());
  launch({"reverse_block<false>", dim3(blocks), dim3(256)}, reverse_block<false>, in.data(),
         wrong.data());
  REQUIRE(sim_test::sync_error() == "");
  bool all_right = true, any_wrong = false;
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < 256; ++t) {
      float expected = in[b * 256 + 255 - t];
      all_right = all_right && right[b * 256 + t] == expected;
      any_wrong = any_wrong || !(wrong[b * 256 + t] == expected);
    }
  }
  CHECK(all_right);
  CHECK(any_wrong);  // without the barrier a thread reads a slot not written yet (NaN fill)
}

TEST_CASE("__syncthreads_count, _and and _or", "[cuda][sim][barrier]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> flags(100, 0), out(3, -1);
  for (int i = 0; i < 100; i += 3) flags[i] = 7;
  launch({"barrier_reductions", dim3(1), dim3(100)}, barrier_reductions, flags.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(out[0] == 34);
  CHECK(out[1] == 0);
  CHECK(out[2] == 1);
  std::fill(flags.begin(), flags.end(), 1);
  launch({"barrier_reductions", dim3(1), dim3(100)}, barrier_reductions, flags.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(out[0] == 100);
  CHECK(out[1] == 1);
  CHECK(out[2] == 1);
}

TEST_CASE("a tree sum with a barrier per level, under every schedule", "[cuda][sim][barrier]") {
  for (Schedule s : {Schedule::forward, Schedule::reverse, Schedule::shuffle}) {
    Options o = sim_test::base_options();
    o.schedule = s;
    o.workers = 3;
    sim_test::ScopedOptions scoped(o);
    const int blocks = 7, threads = 512;
    std::vector<float> in(blocks * threads), out(blocks, 0.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 17);
    launch({"block_sum", dim3(blocks), dim3(threads)}, block_sum, in.data(), out.data());
    REQUIRE(sim_test::sync_error() == "");
    for (int b = 0; b < blocks; ++b) {
      float expected = 0;
      for (int t = 0; t < threads; ++t) expected += in[b * threads + t];
      CHECK(out[b] == expected);
    }
  }
}
