// Launches: loop mode and fiber mode, built-ins, grids larger than the worker count, bad
// configurations, errors reported at synchronisation.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;

namespace {

__global__ void add_one(const float* in, float* out, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] + 1.0f;
}

__global__ void write_coords(unsigned* out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned i = block * threads + t;
  out[i * 4 + 0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
  out[i * 4 + 1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
  out[i * 4 + 2] = static_cast<unsigned>(warpSize);
  out[i * 4 + 3] = threads;
}

__global__ void throws_on_thread_5() {
  if (threadIdx.x == 5) throw std::runtime_error("boom");
}

__global__ void empty_kernel() {}

}  // namespace

TEST_CASE("a loop-mode kernel computes element-wise over a grid larger than the workers",
          "[cuda][sim][launch]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  const int n = 100000;
  std::vector<float> in(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  launch({"add_one", dim3((n + 255) / 256), dim3(256)}, add_one, in.data(), out.data(), n);
  REQUIRE(sim_test::sync_error() == "");
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == in[i] + 1.0f);
}

TEST_CASE("threadIdx, blockIdx, blockDim, gridDim and warpSize in 3-D", "[cuda][sim][launch]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  dim3 grid(3, 2, 2), block(4, 3, 2);
  size_t threads = 3 * 2 * 2 * 4 * 3 * 2;
  std::vector<unsigned> out(threads * 4, 0);
  launch({"write_coords", grid, block}, write_coords, out.data());
  REQUIRE(sim_test::sync_error() == "");
  size_t i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++i) {
              REQUIRE(out[i * 4 + 0] == tx + 10 * ty + 100 * tz);
              REQUIRE(out[i * 4 + 1] == bx + 10 * by + 100 * bz);
              REQUIRE(out[i * 4 + 2] == 32);
              REQUIRE(out[i * 4 + 3] == 24);
            }
}

TEST_CASE("bad launch configurations throw at once naming the kernel", "[cuda][sim][launch]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  auto fails = [](dim3 grid, dim3 block, size_t shared, const char* needle) {
    try {
      launch({"empty_kernel", grid, block, shared}, empty_kernel);
    } catch (const Error& e) {
      std::string what = e.what();
      CHECK(what.find("empty_kernel") != std::string::npos);
      CHECK(what.find(needle) != std::string::npos);
      return;
    }
    FAIL("no error for " << needle);
  };
  fails(dim3(1), dim3(1025), 0, "block.x");
  fails(dim3(1), dim3(32, 32, 2), 0, "at most 1024 threads");
  fails(dim3(1), dim3(1, 1, 65), 0, "block.z");
  fails(dim3(0), dim3(32), 0, "grid.x");
  fails(dim3(1, 65536), dim3(32), 0, "grid.y");
  fails(dim3(1, 1, 65536), dim3(32), 0, "grid.z");
  fails(dim3(1), dim3(32), (48 << 10) + 1, "dynamic shared memory");
  REQUIRE(sim_test::sync_error() == "");
}

TEST_CASE("an exception thrown by a kernel is reported at synchronisation naming the kernel",
          "[cuda][sim][launch]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  for (bool fibers : {false, true}) {
    Options o = sim_test::base_options();
    o.force_fibers = fibers;
    sim_test::ScopedOptions inner(o);
    launch({"throws_on_thread_5", dim3(2), dim3(64)}, throws_on_thread_5);
    std::string error = sim_test::sync_error();
    CHECK(error.find("kernel 'throws_on_thread_5'") != std::string::npos);
    CHECK(error.find("thread (5,0,0)") != std::string::npos);
    CHECK(error.find("boom") != std::string::npos);
    // The error is reported once; the stream is usable afterwards.
    REQUIRE(sim_test::sync_error() == "");
  }
}

TEST_CASE("EMBER_SIM_SYNC runs a launch before returning and throws at once",
          "[cuda][sim][launch]") {
  Options o = sim_test::base_options();
  o.sync = true;
  sim_test::ScopedOptions scoped(o);
  REQUIRE_THROWS_WITH(launch({"throws_on_thread_5", dim3(1), dim3(8)}, throws_on_thread_5),
                      Catch::Contains("boom"));
}

TEST_CASE("the same kernel gives the same result with 1 and many workers", "[cuda][sim][launch]") {
  const int n = 5000;
  std::vector<float> in(n), a(n), b(n);
  for (int i = 0; i < n; ++i) in[i] = std::sqrt(static_cast<float>(i));
  for (int workers : {1, 4}) {
    Options o = sim_test::base_options();
    o.workers = workers;
    sim_test::ScopedOptions scoped(o);
    launch({"add_one", dim3((n + 63) / 64), dim3(64)}, add_one, in.data(),
           (workers == 1 ? a : b).data(), n);
    REQUIRE(sim_test::sync_error() == "");
  }
  REQUIRE(a == b);
}
