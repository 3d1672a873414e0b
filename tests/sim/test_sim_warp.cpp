// Warp shuffles and votes against a reference computed on the host, with widths, partial masks
// and every element type.
#include <vector>

#include "sim_test_util.h"  // sim.h first: it defines the qualifiers the CUDA headers test

using namespace ember::sim;

namespace {

struct ShuffleOut {
  int idx, up, down, xr, idx8, up8, down8, xr8;
};

__global__ void shuffles(ShuffleOut* out) {
  int t = static_cast<int>(threadIdx.x);
  int v = 1000 + t;
  ShuffleOut& o = out[blockIdx.x * blockDim.x + threadIdx.x];
  o.idx = __shfl_sync(0xffffffffu, v, (t * 7) % 32);
  o.up = __shfl_up_sync(0xffffffffu, v, 3);
  o.down = __shfl_down_sync(0xffffffffu, v, 5);
  o.xr = __shfl_xor_sync(0xffffffffu, v, 6);
  o.idx8 = __shfl_sync(0xffffffffu, v, 3, 8);
  o.up8 = __shfl_up_sync(0xffffffffu, v, 2, 8);
  o.down8 = __shfl_down_sync(0xffffffffu, v, 2, 8);
  o.xr8 = __shfl_xor_sync(0xffffffffu, v, 9, 8);
}

template <class T>
__global__ void warp_sum(const T* in, T* out) {
  T v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) {
    v = static_cast<T>(v + __shfl_down_sync(0xffffffffu, v, offset));
  }
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}

__global__ void votes(const int* pred, unsigned* out) {
  int p = pred[threadIdx.x];
  unsigned lane = threadIdx.x % 32;
  unsigned* o = out + threadIdx.x * 6;
  o[0] = __ballot_sync(0xffffffffu, p);
  o[1] = static_cast<unsigned>(__any_sync(0xffffffffu, p));
  o[2] = static_cast<unsigned>(__all_sync(0xffffffffu, p));
  // Two half-warps vote separately with disjoint masks.
  unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  o[3] = __ballot_sync(half, p);
  o[4] = static_cast<unsigned>(__all_sync(half, p));
  __syncwarp();
  o[5] = __activemask();
}

}  // namespace

TEST_CASE("shuffles with and without width against a reference", "[cuda][sim][warp]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<ShuffleOut> out(64);
  launch({"shuffles", dim3(1), dim3(64)}, shuffles, out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, warp = t - lane;
    auto v = [&](int l) { return 1000 + warp + l; };
    const ShuffleOut& o = out[t];
    CHECK(o.idx == v((lane * 7) % 32));
    CHECK(o.up == (lane >= 3 ? v(lane - 3) : v(lane)));
    CHECK(o.down == (lane + 5 < 32 ? v(lane + 5) : v(lane)));
    CHECK(o.xr == v(lane ^ 6));
    int seg = lane & ~7;
    CHECK(o.idx8 == v(seg + 3));
    CHECK(o.up8 == (lane - 2 >= seg ? v(lane - 2) : v(lane)));
    CHECK(o.down8 == (lane + 2 < seg + 8 ? v(lane + 2) : v(lane)));
    int x = lane ^ 9;
    CHECK(o.xr8 == (x >= seg && x < seg + 8 ? v(x) : v(lane)));
  }
}

TEMPLATE_TEST_CASE("a warp sum by __shfl_down_sync for every element type", "[cuda][sim][warp]",
                   int, unsigned, long long, unsigned long long, float, double) {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<TestType> in(96), out(3);
  for (int i = 0; i < 96; ++i) in[i] = static_cast<TestType>(i % 5);
  launch({"warp_sum", dim3(1), dim3(96)}, warp_sum<TestType>, in.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int w = 0; w < 3; ++w) {
    TestType expected = 0;
    for (int l = 0; l < 32; ++l) expected += in[w * 32 + l];
    CHECK(out[w] == expected);
  }
}

TEST_CASE("a warp sum of __half and __nv_bfloat16", "[cuda][sim][warp]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<__half> hin(32), hout(1);
  std::vector<__nv_bfloat16> bin(32), bout(1);
  for (int i = 0; i < 32; ++i) {
    hin[i] = __float2half(static_cast<float>(i % 4));
    bin[i] = __float2bfloat16(static_cast<float>(i % 4));
  }
  launch({"warp_sum<half>", dim3(1), dim3(32)}, warp_sum<__half>, hin.data(), hout.data());
  launch({"warp_sum<bf16>", dim3(1), dim3(32)}, warp_sum<__nv_bfloat16>, bin.data(), bout.data());
  REQUIRE(sim_test::sync_error() == "");
  CHECK(__half2float(hout[0]) == 48.0f);
  CHECK(__bfloat162float(bout[0]) == 48.0f);
}

TEST_CASE("ballot, any, all and activemask against a reference", "[cuda][sim][warp]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> pred(64);
  for (int i = 0; i < 64; ++i) pred[i] = (i % 3 == 0) || i >= 48;
  std::vector<unsigned> out(64 * 6);
  launch({"votes", dim3(1), dim3(64)}, votes, pred.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, warp = t - lane;
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l) ballot |= pred[warp + l] ? 1u << l : 0u;
    unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    const unsigned* o = &out[t * 6];
    CHECK(o[0] == ballot);
    CHECK(o[1] == (ballot != 0));
    CHECK(o[2] == (ballot == 0xffffffffu));
    CHECK(o[3] == (ballot & half));
    CHECK(o[4] == ((ballot & half) == half));
    CHECK((o[5] & (1u << lane)) != 0);  // the lanes that have not exited, the caller among them
  }
}
