// Shared memory: dynamic sizes, the opt-in above 48 KiB, static limits, 2-D arrays, and
// loop mode meeting a collective.
#include <vector>

#include "sim_test_util.h"

using namespace ember::sim;
using Catch::Contains;

namespace {

// Each block sums its slice through dynamic shared memory of blockDim.x floats.
__global__ void dynamic_sum(const float* in, float* out) {
  EMBER_DYNAMIC_SHARED(float, buffer);
  unsigned t = threadIdx.x;
  buffer[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  if (t == 0) {
    float s = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) s += buffer[i];
    out[blockIdx.x] = s;
  }
}

__global__ void big_dynamic(float* out) {
  EMBER_DYNAMIC_SHARED(float, buffer);
  size_t n = buffer.size();
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = static_cast<float>(n);
}

// A 2-D tile transpose (the classic padded 32 x 33 tile).
__global__ void transpose(const float* in, float* out, int n) {
  EMBER_SHARED_ARRAY(float, tile, 32, 33);
  unsigned x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void too_much_static(float* out) {
  EMBER_SHARED_ARRAY(float, a, 8192);  // 32 KiB
  EMBER_SHARED_ARRAY(float, b, 8192);  // another 32 KiB: past the 48 KiB of static memory
  a[threadIdx.x] = 1.0f;
  b[threadIdx.x] = 2.0f;
  out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

// Calls a barrier only when `sync` is set: its first launch (sync = 0) decides loop mode.
__global__ void sometimes_syncs(int sync, int* out) {
  if (sync) __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void sometimes_syncs_forced(int sync, int* out) {
  if (sync) __syncthreads();
  out[threadIdx.x] = 2;
}

__global__ void shared_var_ops(int* out) {
  EMBER_SHARED_VAR(int, counter);
  if (threadIdx.x == 0) {
    counter = 5;
    counter += 3;
    counter *= 2;
    ++counter;
    counter--;
    out[0] = counter;
  }
}

// Declares 48 shared variables after `first`, each a site the process has not seen before on
// its first launch, while `first` (a reference to its slot) stays in use: the simulator adds
// slots as sites appear, and must not move the ones a running kernel holds.
#define EMBER_TEST_DECLARE(n)  \
  EMBER_SHARED_VAR(int, v##n); \
  v##n = n;                    \
  sum += v##n;
#define EMBER_TEST_DECLARE8(a) \
  EMBER_TEST_DECLARE(a##0)     \
  EMBER_TEST_DECLARE(a##1)     \
  EMBER_TEST_DECLARE(a##2)     \
  EMBER_TEST_DECLARE(a##3)     \
  EMBER_TEST_DECLARE(a##4)     \
  EMBER_TEST_DECLARE(a##5)     \
  EMBER_TEST_DECLARE(a##6)     \
  EMBER_TEST_DECLARE(a##7)
__global__ void many_shared_sites(int* out) {
  EMBER_SHARED_VAR(int, first);
  first = 1000;
  int sum = 0;
  EMBER_TEST_DECLARE8(1)
  EMBER_TEST_DECLARE8(2)
  EMBER_TEST_DECLARE8(3)
  EMBER_TEST_DECLARE8(4)
  EMBER_TEST_DECLARE8(5)
  EMBER_TEST_DECLARE8(6)
  first += 1;
  out[0] = first;
  out[1] = sum;
}
#undef EMBER_TEST_DECLARE8
#undef EMBER_TEST_DECLARE

}  // namespace

TEST_CASE("dynamic shared memory of several sizes", "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  for (unsigned threads : {1u, 7u, 32u, 100u, 1024u}) {
    const unsigned blocks = 5;
    std::vector<float> in(blocks * threads), out(blocks);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 11);
    launch({"dynamic_sum", dim3(blocks), dim3(threads), threads * sizeof(float)}, dynamic_sum,
           in.data(), out.data());
    REQUIRE(sim_test::sync_error() == "");
    for (unsigned b = 0; b < blocks; ++b) {
      float expected = 0;
      for (unsigned t = 0; t < threads; ++t) expected += in[b * threads + t];
      CHECK(out[b] == expected);
    }
  }
}

TEST_CASE("more than 48 KiB of dynamic shared memory needs set_max_dynamic_shared",
          "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out(1);
  size_t bytes = 100 << 10;
  REQUIRE_THROWS_WITH(launch({"big_dynamic", dim3(1), dim3(256), bytes}, big_dynamic, out.data()),
                      Contains("without set_max_dynamic_shared"));
  REQUIRE_THROWS_WITH(
      set_max_dynamic_shared(reinterpret_cast<const void*>(&big_dynamic), 228 << 10),
      Contains("opt in"));
  set_max_dynamic_shared(reinterpret_cast<const void*>(&big_dynamic), bytes);
  launch({"big_dynamic", dim3(2), dim3(256), bytes}, big_dynamic, out.data());
  REQUIRE(sim_test::sync_error() == "");
  const size_t elements = bytes / sizeof(float);  // the kernel's buffer.size(), a whole count
  CHECK(out[0] == static_cast<float>(elements));
  REQUIRE_THROWS_WITH(
      launch({"big_dynamic", dim3(1), dim3(256), bytes + 4}, big_dynamic, out.data()),
      Contains("(set_max_dynamic_shared)"));
}

TEST_CASE("a 2-D shared tile transposes a matrix", "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  const int n = 96;
  std::vector<float> in(n * n), out(n * n);
  for (int i = 0; i < n * n; ++i) in[i] = static_cast<float>(i);
  launch({"transpose", dim3(n / 32, n / 32), dim3(32, 32)}, transpose, in.data(), out.data(), n);
  REQUIRE(sim_test::sync_error() == "");
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) REQUIRE(out[y * n + x] == in[x * n + y]);
}

TEST_CASE("static shared memory past 48 KiB is an error naming the array", "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<float> out(32);
  launch({"too_much_static", dim3(1), dim3(32)}, too_much_static, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("65536 bytes of static shared memory"));
  CHECK_THAT(error, Contains("shared 'b'"));
}

TEST_CASE("a collective met in loop mode is an error saying so, use_fibers forces fibers",
          "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(64);
  launch({"sometimes_syncs", dim3(1), dim3(64)}, sometimes_syncs, 0, out.data());
  REQUIRE(sim_test::sync_error() == "");
  launch({"sometimes_syncs", dim3(1), dim3(64)}, sometimes_syncs, 1, out.data());
  std::string error = sim_test::sync_error();
  CHECK_THAT(error, Contains("kernel 'sometimes_syncs'"));
  CHECK_THAT(error, Contains("loop mode"));
  CHECK_THAT(error, Contains("EMBER_SIM_FIBERS=1"));

  use_fibers(reinterpret_cast<const void*>(&sometimes_syncs_forced));
  launch({"sometimes_syncs_forced", dim3(1), dim3(64)}, sometimes_syncs_forced, 0, out.data());
  launch({"sometimes_syncs_forced", dim3(1), dim3(64)}, sometimes_syncs_forced, 1, out.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(out[63] == 2);
}

TEST_CASE("a shared variable's compound operators", "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(1);
  launch({"shared_var_ops", dim3(1), dim3(4)}, shared_var_ops, out.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(out[0] == 16);  // (5 + 3) * 2, + 1, - 1
}

TEST_CASE("shared arrays declared later in a kernel leave the earlier ones in place",
          "[cuda][sim][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(2, 0);
  launch({"many_shared_sites", dim3(1), dim3(1)}, many_shared_sites, out.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(out[0] == 1001);
  int want = 0;
  for (int a = 1; a <= 6; ++a)
    for (int b = 0; b < 8; ++b) want += a * 10 + b;
  CHECK(out[1] == want);
}
