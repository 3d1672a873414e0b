// The cooperative_groups subset (kernels/cuda/sim/cooperative_groups.h) through real launches:
// block and tile queries, tile shuffles and votes, reduce and scans against host references,
// and the synccheck errors of tiles used wrongly.
#include <algorithm>
#include <vector>

#include "sim_test_util.h"  // sim.h first: it defines the qualifiers the CUDA headers test

namespace cg = cooperative_groups;
using namespace ember::sim;

namespace {

struct Ids {
  unsigned block_rank, block_size, tile_rank, tile_size, meta_rank, meta_size;
  unsigned sub_rank, sub_meta_rank, sub_meta_size;
  unsigned gx, gy, tx, ty, dx, dy;
};

__global__ void group_ids(Ids* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);
  auto sub = cg::tiled_partition<2>(tile);
  Ids& o = out[(blockIdx.y * gridDim.x + blockIdx.x) * block.size() + block.thread_rank()];
  o = Ids{
      block.thread_rank(),    block.size(),           tile.thread_rank(),    tile.size(),
      tile.meta_group_rank(), tile.meta_group_size(), sub.thread_rank(),     sub.meta_group_rank(),
      sub.meta_group_size(),  block.group_index().x,  block.group_index().y, block.thread_index().x,
      block.thread_index().y, block.group_dim().x,    block.dim_threads().y};
}

template <unsigned N>
struct Reduced {
  int sum, lo, hi, band, bor, bxor;
  float fsum;
  int incl, excl, imax;
};

template <unsigned N>
__global__ void tile_reduce(const int* in, Reduced<N>* out) {
  auto tile = cg::tiled_partition<N>(cg::this_thread_block());
  const int v = in[threadIdx.x];
  Reduced<N>& o = out[threadIdx.x];
  o.sum = cg::reduce(tile, v, cg::plus<int>());
  o.lo = cg::reduce(tile, v, cg::less<int>());
  o.hi = cg::reduce(tile, v, cg::greater<int>());
  o.band = cg::reduce(tile, v | 0x100, cg::bit_and<int>());
  o.bor = cg::reduce(tile, v, cg::bit_or<int>());
  o.bxor = cg::reduce(tile, v, cg::bit_xor<int>());
  o.fsum = cg::reduce(tile, static_cast<float>(v) * 0.5f, cg::plus<float>());
  o.incl = cg::inclusive_scan(tile, v);
  o.excl = cg::exclusive_scan(tile, v);
  o.imax = cg::inclusive_scan(tile, v, cg::greater<int>());
}

struct TileShuffles {
  int shfl, down, up, xr;
  unsigned ballot;
  int any, all;
};

__global__ void tile_shuffles(const int* pred, TileShuffles* out) {
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<16>(block);
  const int v = 100 + static_cast<int>(block.thread_rank());
  TileShuffles& o = out[block.thread_rank()];
  o.shfl = tile.shfl(v, 3);
  o.down = tile.shfl_down(v, 2);
  o.up = tile.shfl_up(v, 5);
  o.xr = tile.shfl_xor(v, 9);
  const int p = pred[block.thread_rank()];
  o.ballot = tile.ballot(p);
  o.any = tile.any(p);
  o.all = tile.all(p);
  tile.sync();
}

// Right only with the barrier: each thread reads what its neighbour wrote.
__global__ void rotate_through_shared(const int* in, int* out) {
  EMBER_SHARED_ARRAY(int, buffer, 128);
  cg::thread_block block = cg::this_thread_block();
  const unsigned t = block.thread_rank();
  buffer[t] = in[t];
  block.sync();
  out[t] = buffer[(t + 1) % block.size()];
}

__global__ void partial_tile(int* out) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  out[threadIdx.x] = cg::reduce(tile, 1, cg::plus<int>());
}

__global__ void divergent_tile(int* out) {
  auto tile = cg::tiled_partition<8>(cg::this_thread_block());
  if (tile.thread_rank() < 4) out[threadIdx.x] = cg::reduce(tile, 1, cg::plus<int>());
}

template <unsigned N>
void check_tile_reduce() {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  const int threads = 96;
  std::vector<int> in(threads);
  for (int i = 0; i < threads; ++i) in[i] = (i * 37 + 11) % 61 - 20;
  std::vector<Reduced<N>> out(threads);
  launch({"tile_reduce", dim3(1), dim3(threads)}, tile_reduce<N>, in.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < threads; ++t) {
    const int base = t / N * N, rank = t % N;
    int sum = 0, lo = in[base], hi = in[base], band = ~0, bor = 0, bxor = 0;
    float fsum = 0;
    for (unsigned l = 0; l < N; ++l) {
      const int v = in[base + l];
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      band &= v | 0x100;
      bor |= v;
      bxor ^= v;
      fsum += static_cast<float>(v) * 0.5f;  // exact: halves of small integers
    }
    int incl = 0, imax = in[base];
    for (int l = 0; l <= rank; ++l) {
      incl += in[base + l];
      imax = std::max(imax, in[base + l]);
    }
    const Reduced<N>& o = out[t];
    CHECK(o.sum == sum);
    CHECK(o.lo == lo);
    CHECK(o.hi == hi);
    CHECK(o.band == band);
    CHECK(o.bor == bor);
    CHECK(o.bxor == bxor);
    CHECK(o.fsum == fsum);
    CHECK(o.incl == incl);
    CHECK(o.excl == incl - in[t]);
    CHECK(o.imax == imax);
  }
}

}  // namespace

TEST_CASE("cg: block and tile ranks, sizes and indices", "[cuda][sim][cg]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  const dim3 grid(2, 3), block(12, 4);  // 48 threads: warps of 32 and 16, tiles of 8
  std::vector<Ids> out(6 * 48);
  launch({"group_ids", grid, block}, group_ids, out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (unsigned b = 0; b < 6; ++b) {
    for (unsigned t = 0; t < 48; ++t) {
      const Ids& o = out[b * 48 + t];
      CHECK(o.block_rank == t);
      CHECK(o.block_size == 48u);
      CHECK(o.tile_rank == t % 8);
      CHECK(o.tile_size == 8u);
      CHECK(o.meta_rank == t / 8);
      CHECK(o.meta_size == 6u);
      CHECK(o.sub_rank == t % 2);
      CHECK(o.sub_meta_rank == (t % 8) / 2);
      CHECK(o.sub_meta_size == 4u);
      CHECK(o.gx == b % 2);
      CHECK(o.gy == b / 2);
      CHECK(o.tx == t % 12);
      CHECK(o.ty == t / 12);
      CHECK(o.dx == 12u);
      CHECK(o.dy == 4u);
    }
  }
}

TEST_CASE("cg: reduce and scans over tiles of every size", "[cuda][sim][cg]") {
  check_tile_reduce<1>();
  check_tile_reduce<2>();
  check_tile_reduce<4>();
  check_tile_reduce<8>();
  check_tile_reduce<16>();
  check_tile_reduce<32>();
}

TEST_CASE("cg: tile shuffles and votes against a reference", "[cuda][sim][cg]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> pred(64);
  for (int i = 0; i < 64; ++i) pred[i] = i % 5 == 0 || (i >= 16 && i < 32);
  std::vector<TileShuffles> out(64);
  launch({"tile_shuffles", dim3(1), dim3(64)}, tile_shuffles, pred.data(), out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int t = 0; t < 64; ++t) {
    const int base = t / 16 * 16, rank = t % 16;
    auto v = [&](int r) { return 100 + base + r; };
    const TileShuffles& o = out[t];
    CHECK(o.shfl == v(3));
    CHECK(o.down == (rank + 2 < 16 ? v(rank + 2) : v(rank)));
    CHECK(o.up == (rank >= 5 ? v(rank - 5) : v(rank)));
    CHECK(o.xr == v(rank ^ 9));
    unsigned ballot = 0;
    for (int r = 0; r < 16; ++r) ballot |= pred[base + r] ? 1u << r : 0u;
    CHECK(o.ballot == ballot);
    CHECK(o.any == (ballot != 0));
    CHECK(o.all == (ballot == 0xFFFFu));
  }
}

TEST_CASE("cg: thread_block::sync is a barrier", "[cuda][sim][cg]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> in(128), out(128, -1);
  for (int i = 0; i < 128; ++i) in[i] = i * i;
  launch({"rotate_through_shared", dim3(1), dim3(128)}, rotate_through_shared, in.data(),
         out.data());
  REQUIRE(sim_test::sync_error() == "");
  for (int i = 0; i < 128; ++i) CHECK(out[i] == in[(i + 1) % 128]);
}

TEST_CASE("cg: a partial tile and a divergent tile are synccheck errors", "[cuda][sim][cg]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<int> out(64);
  // 40 threads: the second warp has 8 lanes, so its tile of 32 names lanes that do not exist.
  launch({"partial_tile", dim3(1), dim3(40)}, partial_tile, out.data());
  const std::string partial = sim_test::sync_error();
  INFO(partial);
  CHECK(partial.find("partial_tile") != std::string::npos);
  CHECK(partial.find("test_sim_cg.cpp") != std::string::npos);
  // Half of each tile of 8 reduces, the other half exits.
  launch({"divergent_tile", dim3(1), dim3(32)}, divergent_tile, out.data());
  const std::string divergent = sim_test::sync_error();
  INFO(divergent);
  CHECK(divergent.find("divergent_tile") != std::string::npos);
  CHECK(divergent.find("synccheck") != std::string::npos);
}
