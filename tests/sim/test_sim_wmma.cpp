// The WMMA fragment API (kernels/cuda/sim/wmma.h) through real launches: GEMM tiles of half and
// bfloat16 in every layout against a float64 reference, element-wise work on fragments, and the
// errors of bad ldm, misaligned pointers, partial warps and lanes that disagree.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim_test_util.h"  // sim.h first: it defines the qualifiers the CUDA headers test

using namespace nvcuda;
using namespace ember::sim;

namespace {

// Device memory (256-byte aligned, like cudaMalloc) filled from / read back to host vectors.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n), p_(static_cast<T*>(device_malloc(0, n * sizeof(T)))) {
    REQUIRE(p_ != nullptr);
  }
  ~DeviceBuffer() { device_free(0, p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& v) { std::copy(v.begin(), v.end(), p_); }
  std::vector<T> download() const { return std::vector<T>(p_, p_ + n_); }

 private:
  size_t n_;
  T* p_;
};

float to_f(__half v) { return __half2float(v); }
float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
T from_f(float v);
template <>
__half from_f<__half>(float v) {
  return __float2half(v);
}
template <>
__nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

// C = alpha * A * B with one warp per 16 x 16 tile of C; A is M x K, B is K x N.
// A: (M, K) row-major (lda = K) or column-major (lda = M); B likewise; C: (M, N) in `c_layout`.
template <class T, class LA, class LB>
__global__ void gemm_tiles(const T* a, const T* b, float* c, int m, int n, int k, float alpha,
                           wmma::layout_t c_layout) {
  const int row = static_cast<int>(blockIdx.y) * 16, col = static_cast<int>(blockIdx.x) * 16;
  constexpr bool a_row = std::is_same_v<LA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LB, wmma::row_major>;
  const int lda = a_row ? k : m, ldb = b_row ? n : k;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LA> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a_row ? a + row * lda + kk : a + kk * lda + row, lda);
    wmma::load_matrix_sync(fb, b_row ? b + kk * ldb + col : b + col * ldb + kk, ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= alpha;
  float* tile = c_layout == wmma::mem_row_major ? c + row * n + col : c + col * m + row;
  wmma::store_matrix_sync(tile, acc, c_layout == wmma::mem_row_major ? n : m, c_layout);
}

template <class T, class LA, class LB>
void check_gemm(wmma::layout_t c_layout) {
  const int m = 32, n = 48, k = 64;
  constexpr bool a_row = std::is_same_v<LA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LB, wmma::row_major>;
  std::vector<T> a(m * k), b(k * n);
  std::vector<double> ad(m * k), bd(k * n);  // the values as stored, row-major
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      const T v = from_f<T>(std::sin(0.37f * static_cast<float>(i * k + p)));
      ad[i * k + p] = to_f(v);
      a[a_row ? i * k + p : p * m + i] = v;
    }
  }
  for (int p = 0; p < k; ++p) {
    for (int j = 0; j < n; ++j) {
      const T v = from_f<T>(std::cos(0.23f * static_cast<float>(p * n + j)));
      bd[p * n + j] = to_f(v);
      b[b_row ? p * n + j : j * k + p] = v;
    }
  }
  DeviceBuffer<T> da(a.size()), db(b.size());
  DeviceBuffer<float> dc(m * n);
  da.upload(a);
  db.upload(b);
  launch({"gemm_tiles", dim3(n / 16, m / 16), dim3(32)}, gemm_tiles<T, LA, LB>, da.get(), db.get(),
         dc.get(), m, n, k, 0.5f, c_layout);
  REQUIRE(sim_test::sync_error() == "");
  const std::vector<float> c = dc.download();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double ref = 0, scale = 0;
      for (int p = 0; p < k; ++p) {
        ref += ad[i * k + p] * bd[p * n + j];
        scale += std::fabs(ad[i * k + p] * bd[p * n + j]);
      }
      ref *= 0.5;
      const float got = c_layout == wmma::mem_row_major ? c[i * n + j] : c[j * m + i];
      // Exact products, a float sum of k terms.
      CHECK(std::fabs(got - ref) <= 1e-6 * k * scale + 1e-30);
    }
  }
}

template <class LA, class LB>
void check_gemm_both_types() {
  for (wmma::layout_t c_layout : {wmma::mem_row_major, wmma::mem_col_major}) {
    INFO("C layout " << (c_layout == wmma::mem_row_major ? "row" : "col"));
    check_gemm<__half, LA, LB>(c_layout);
    check_gemm<__nv_bfloat16, LA, LB>(c_layout);
  }
}

// A half accumulator, and the m32n8k16 shape, with an accumulator loaded from memory.
__global__ void half_accumulator(const __half* a, const __half* b, const __half* c_in,
                                 __half* c_out) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, __half> acc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::load_matrix_sync(acc, c_in, 8, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c_out, acc, 8, wmma::mem_row_major);
}

__global__ void load_with_ldm(const __half* a, unsigned ldm) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, a, ldm);
}

__global__ void store_with_ldm(float* c, unsigned ldm) {
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::store_matrix_sync(c, acc, ldm, wmma::mem_col_major);
}

__global__ void lanes_disagree(const __half* a) {
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::load_matrix_sync(fb, a, threadIdx.x < 16 ? 16u : 32u);
}

// Loads A and B fragments from static shared tiles (declared between arrays of odd sizes, so an
// allocator's 16-byte alignment would leave some of them off a 32-byte boundary), multiplies
// them and stores the product from a shared tile. out: (16, 16) = a (16, 16) @ b (16, 16).
__global__ void shared_tiles(const __half* a, const __half* b, float* out, unsigned* misaligned) {
  EMBER_SHARED_ARRAY(char, pad0, 3);
  EMBER_SHARED_ARRAY(__half, ta, 16, 16);
  EMBER_SHARED_ARRAY(char, pad1, 5);
  EMBER_SHARED_ARRAY(__half, tb, 16, 16);
  EMBER_SHARED_ARRAY(__half, pad2, 24);
  EMBER_SHARED_ARRAY(float, tc, 16, 16);
  EMBER_SHARED_ARRAY(char, pad3, 17);
  EMBER_SHARED_ARRAY(float, td, 4, 4);
  const unsigned lane = threadIdx.x;
  if (lane == 0) {
    pad0[0] = 0;
    pad1[0] = 0;
    pad2[0] = __float2half(0.0f);
    pad3[0] = 0;
    const void* tiles[] = {&ta[0][0], &tb[0][0], &tc[0][0], &td[0][0], &pad2[0]};
    unsigned bad = 0;
    for (const void* t : tiles) bad += reinterpret_cast<std::uintptr_t>(t) % 32 != 0;
    *misaligned = bad;
  }
  for (unsigned i = lane; i < 256; i += 32) {
    ta[i / 16][i % 16] = a[i];
    tb[i / 16][i % 16] = b[i];
  }
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, &ta[0][0], 16);
  wmma::load_matrix_sync(fb, &tb[0][0], 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(&tc[0][0], acc, 16, wmma::mem_row_major);
  __syncthreads();
  for (unsigned i = lane; i < 256; i += 32) out[i] = tc[i / 16][i % 16];
}

std::string run_error(const char* name, void (*kernel)(const __half*, unsigned), const __half* p,
                      unsigned ldm, dim3 block = dim3(32)) {
  launch({name, dim3(1), block}, kernel, p, ldm);
  return sim_test::sync_error();
}

// Warp 0 fills a 16 x 16 float tile with store_matrix_sync, warp 1 loads it with
// load_matrix_sync and writes it out; with `sync` a barrier orders the two, without it they race.
__global__ void wmma_handoff(float* out, bool sync) {
  EMBER_SHARED_ARRAY(float, tile, 16, 16);
  const unsigned warp = threadIdx.x / 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  if (warp == 0) {
    wmma::fill_fragment(acc, 2.0f);
    wmma::store_matrix_sync(&tile[0][0], acc, 16, wmma::mem_row_major);
  }
  if (sync) __syncthreads();
  if (warp == 1) {
    wmma::load_matrix_sync(acc, &tile[0][0], 16, wmma::mem_row_major);
    wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
  }
}

}  // namespace

TEST_CASE("wmma: m16n16k16 GEMM, A and B row-major", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  check_gemm_both_types<wmma::row_major, wmma::row_major>();
}

TEST_CASE("wmma: m16n16k16 GEMM, A row-major and B column-major", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  check_gemm_both_types<wmma::row_major, wmma::col_major>();
}

TEST_CASE("wmma: m16n16k16 GEMM, A column-major and B row-major", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  check_gemm_both_types<wmma::col_major, wmma::row_major>();
}

TEST_CASE("wmma: m16n16k16 GEMM, A and B column-major", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  check_gemm_both_types<wmma::col_major, wmma::col_major>();
}

TEST_CASE("wmma: fragment element counts", "[cuda][sim][wmma]") {
  static_assert(wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>::num_elements ==
                256);
  static_assert(wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major>::num_elements ==
                32 * 16);
  static_assert(
      wmma::fragment<wmma::matrix_b, 8, 32, 16, __nv_bfloat16, wmma::col_major>::num_elements ==
      16 * 32);
  static_assert(wmma::fragment<wmma::accumulator, 8, 32, 16, float>::num_elements == 8 * 32);
  CHECK(true);
}

TEST_CASE("wmma: a half accumulator and the m32n8k16 shape", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  // Small integers keep every value and sum exact in half.
  std::vector<__half> a(32 * 16), b(16 * 8), c(32 * 8);
  for (int i = 0; i < 32 * 16; ++i) a[i] = __float2half(static_cast<float>(i % 3 - 1));
  for (int i = 0; i < 16 * 8; ++i) b[i] = __float2half(static_cast<float>(i % 5 - 2));
  for (int i = 0; i < 32 * 8; ++i) c[i] = __float2half(static_cast<float>(i % 7));
  DeviceBuffer<__half> da(a.size()), db(b.size()), dc(c.size()), dout(c.size());
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  launch({"half_accumulator", dim3(1), dim3(32)}, half_accumulator, da.get(), db.get(), dc.get(),
         dout.get());
  REQUIRE(sim_test::sync_error() == "");
  const std::vector<__half> out = dout.download();
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 8; ++j) {
      float ref = __half2float(c[i * 8 + j]);
      for (int p = 0; p < 16; ++p) ref += __half2float(a[i * 16 + p]) * __half2float(b[p * 8 + j]);
      CHECK(__half2float(out[i * 8 + j]) == ref);
    }
  }
}

TEST_CASE("wmma: a bad ldm or a misaligned pointer raises", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  DeviceBuffer<__half> a(64 * 64);
  DeviceBuffer<float> c(64 * 64);
  CHECK(run_error("load_with_ldm", load_with_ldm, a.get(), 24) == "");
  const std::string ldm = run_error("load_with_ldm", load_with_ldm, a.get(), 20);
  INFO(ldm);
  CHECK(ldm.find("load_with_ldm") != std::string::npos);
  CHECK(ldm.find("ldm 20 is not a multiple of 8 elements (16 bytes) for __half") !=
        std::string::npos);
  CHECK(ldm.find("test_sim_wmma.cpp") != std::string::npos);
  const std::string misaligned = run_error("load_with_ldm", load_with_ldm, a.get() + 8, 16);
  INFO(misaligned);
  CHECK(misaligned.find("not 32-byte (256-bit) aligned") != std::string::npos);
  launch({"store_with_ldm", dim3(1), dim3(32)}, store_with_ldm, c.get(), 6u);
  const std::string store = sim_test::sync_error();
  INFO(store);
  CHECK(store.find("wmma::store_matrix_sync") != std::string::npos);
  CHECK(store.find("ldm 6 is not a multiple of 4 elements (16 bytes) for float") !=
        std::string::npos);
  launch({"store_with_ldm", dim3(1), dim3(32)}, store_with_ldm, c.get(), 20u);
  REQUIRE(sim_test::sync_error() == "");
  const std::vector<float> stored = c.download();
  for (int col = 0; col < 16; ++col) {
    for (int row = 0; row < 16; ++row) CHECK(stored[col * 20 + row] == 1.0f);
    for (int row = 16; row < 20; ++row) CHECK(std::isnan(stored[col * 20 + row]));  // untouched
  }
}

TEST_CASE("wmma: a partial warp and lanes that disagree are errors", "[cuda][sim][wmma]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  DeviceBuffer<__half> a(64 * 64);
  const std::string partial = run_error("load_with_ldm", load_with_ldm, a.get(), 16, dim3(16));
  INFO(partial);
  CHECK(partial.find("synccheck") != std::string::npos);
  CHECK(partial.find("wmma::load_matrix_sync") != std::string::npos);
  launch({"lanes_disagree", dim3(1), dim3(32)}, lanes_disagree, a.get());
  const std::string disagree = sim_test::sync_error();
  INFO(disagree);
  CHECK(disagree.find("disagree on the pointer, ldm or layout") != std::string::npos);
}

TEST_CASE("wmma: fragments load from and store to static shared tiles (32-byte aligned slots)",
          "[cuda][sim][wmma][shared]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());
  std::vector<__half> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = __float2half(static_cast<float>(i % 5 - 2));
    b[i] = __float2half(static_cast<float>(i % 3 - 1));
  }
  DeviceBuffer<__half> da(256), db(256);
  DeviceBuffer<float> dout(256);
  DeviceBuffer<unsigned> misaligned(1);
  da.upload(a);
  db.upload(b);
  for (int run = 0; run < 3; ++run) {  // later blocks reuse the worker's slots
    launch({"shared_tiles", dim3(2), dim3(32)}, shared_tiles, da.get(), db.get(), dout.get(),
           misaligned.get());
    REQUIRE(sim_test::sync_error() == "");
    CHECK(misaligned.download()[0] == 0);
    const std::vector<float> out = dout.download();
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        float ref = 0;
        for (int p = 0; p < 16; ++p)
          ref += __half2float(a[i * 16 + p]) * __half2float(b[p * 16 + j]);
        CHECK(out[i * 16 + j] == ref);
      }
    }
  }
}

TEST_CASE("wmma: racecheck sees the loads and stores of fragments in shared memory",
          "[cuda][sim][wmma][racecheck]") {
  sim_test::ScopedOptions scoped(sim_test::base_options());  // racecheck on
  DeviceBuffer<float> out(256);
  launch({"wmma_handoff", dim3(1), dim3(64)}, wmma_handoff, out.get(), true);
  REQUIRE(sim_test::sync_error() == "");
  for (float v : out.download()) CHECK(v == 2.0f);
  launch({"wmma_handoff", dim3(1), dim3(64)}, wmma_handoff, out.get(), false);
  const std::string error = sim_test::sync_error();
  INFO(error);
  CHECK(error.find("racecheck") != std::string::npos);
  CHECK(error.find("hazard on shared 'tile'") != std::string::npos);
}
