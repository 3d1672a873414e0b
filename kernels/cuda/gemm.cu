// The CUDA kernel of batched_gemm_stub (core/ops/linalg.h), behind every matmul-family op:
// out[i] = alpha * a[i] @ b[i] + beta * out[i]. It picks the backend (Note [GEMM backends] in
// core/cuda_gemm.h: ember's ladder of kernels/cuda/gemm.cuh, cuBLAS, or the autotuned choice),
// coalesces the batch dims, and launches.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cuda_gemm.h"
#include "core/ops/binary.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/linalg.h"
#include "core/ops/reduce.h"
#include "core/ops/view.h"
#include "kernels/cuda/cublas_gemm.h"
#include "kernels/cuda/gemm.cuh"

namespace ember::kernels::cuda {

namespace {

using gemm::gemm_acc_t;
using gemm::GemmArgs;
using gemm::kMaxBatchDims;

constexpr int kWmmaVariant = 6, kWarpTileVariant = 7, kWmmaPipelinedVariant = 8, kWgmmaVariant = 9;
constexpr unsigned kMaxGridY = 65535, kMaxGridZ = 65535;

bool is_16bit(DType dt) { return dt == kFloat16 || dt == kBFloat16; }
template <class T>
constexpr bool is_16bit_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The default rung for a product into out (Note [The GEMM ladder]): 7 (warp tiles) for float32,
// 5 for the other SIMT dtypes; for the 16-bit floats 8 (pipelined WMMA), or 6 where 8's
// 128 x 128 tiles would number fewer than kFewTiles (too few blocks to fill a large GPU; 6's
// 64 x 64 tiles make four times as many).
constexpr int64_t kFewTiles = 128;
int default_variant(const Tensor& out) {
  const DType dt = out.dtype();
  if (dt == kFloat32) return kWarpTileVariant;
  if (!is_16bit(dt)) return 5;
  const int64_t m = out.size(-2), n = out.size(-1);
  const int64_t batches = m * n == 0 ? 0 : out.numel() / (m * n);
  const int64_t tiles =
      (m + gemm::kPM - 1) / gemm::kPM * ((n + gemm::kPN - 1) / gemm::kPN) * batches;
  return tiles < kFewTiles ? kWmmaVariant : kWmmaPipelinedVariant;
}

// The rungs that exist for a dtype on `device`: 1..5 for every dtype, then 6 and 8 (WMMA) for
// the 16-bit floats, and 9 (wgmma) where the binary and the device have it; 7 (warp tiles) for
// float32.
std::vector<int> variants_of(DType dt, int device) {
  std::vector<int> v = {1, 2, 3, 4, 5};
  if (is_16bit(dt)) v.insert(v.end(), {kWmmaVariant, kWmmaPipelinedVariant});
  if (is_16bit(dt) && wgmma::available(device)) v.push_back(kWgmmaVariant);
  if (dt == kFloat32) v.push_back(kWarpTileVariant);
  return v;
}

// m * n * k * batches of the product into out.
double gemm_work(const Tensor& out, const Tensor& a) {
  return static_cast<double>(out.numel()) * static_cast<double>(a.size(-1));
}
constexpr double kTeachingRungWork = 1 << 24;

// A launch's geometry plus the batch dims beyond kMaxBatchDims, which the host loops over.
struct Geometry {
  GemmArgs args{};
  std::vector<int64_t> outer_size, outer_a, outer_b, outer_c;
  int64_t outer_count = 1;
};

// Strides of out, a, b; the batch dims merged where all three allow it, size-1 dims dropped.
Geometry make_geometry(const Tensor& out, const Tensor& a, const Tensor& b) {
  Geometry geo;
  GemmArgs& g = geo.args;
  g.m = out.size(-2), g.n = out.size(-1), g.k = a.size(-1);
  g.a_rs = a.stride(-2), g.a_cs = a.stride(-1);
  g.b_rs = b.stride(-2), g.b_cs = b.stride(-1);
  g.c_rs = out.stride(-2), g.c_cs = out.stride(-1);
  std::vector<int64_t> size, sa, sb, sc;  // outermost first
  for (int64_t d = 0; d < out.dim() - 2; ++d) {
    if (out.size(d) == 1) continue;
    if (!size.empty() && sa.back() == a.stride(d) * out.size(d) &&
        sb.back() == b.stride(d) * out.size(d) && sc.back() == out.stride(d) * out.size(d)) {
      size.back() *= out.size(d);
      sa.back() = a.stride(d), sb.back() = b.stride(d), sc.back() = out.stride(d);
      continue;
    }
    size.push_back(out.size(d));
    sa.push_back(a.stride(d)), sb.push_back(b.stride(d)), sc.push_back(out.stride(d));
  }
  const size_t outer = size.size() > kMaxBatchDims ? size.size() - kMaxBatchDims : 0;
  const auto split = static_cast<std::ptrdiff_t>(outer);
  geo.outer_size.assign(size.begin(), size.begin() + split);
  geo.outer_a.assign(sa.begin(), sa.begin() + split);
  geo.outer_b.assign(sb.begin(), sb.begin() + split);
  geo.outer_c.assign(sc.begin(), sc.begin() + split);
  for (int64_t s : geo.outer_size) geo.outer_count *= s;
  g.batch_dims = static_cast<int>(size.size() - outer);
  g.batches = 1;
  for (int d = 0; d < g.batch_dims; ++d) {
    g.batch_size[d] = size[outer + d];
    g.a_bs[d] = sa[outer + d], g.b_bs[d] = sb[outer + d], g.c_bs[d] = sc[outer + d];
    g.batches *= g.batch_size[d];
  }
  return geo;
}

// "N" (unit column stride), "T" (unit row stride) or "S" (strided): the autotune key's layout.
char layout_letter(int64_t rs, int64_t cs) { return cs == 1 ? 'N' : rs == 1 ? 'T' : 'S'; }

// Variant 8's kernel for the operand layouts and tuning, and the bytes of its ring of stages.
template <class T, bool kACol, bool kBCol, int kStages = gemm::kPStages, int kMinBlocks = 1>
std::pair<void (*)(const T*, const T*, T*, GemmArgs, float, float), size_t> pipelined() {
  return {&gemm::gemm_wmma_pipelined<T, kACol, kBCol, kStages, kMinBlocks>,
          gemm::PipelinedTiles<kACol, kBCol>::template kSharedBytes<kStages>};
}

// Variant 8 for (a_col, b_col) under `tuning` (set_gemm_tuning in core/cuda_gemm.h: a tuning
// other than the default is compiled for row-major operands only).
template <class T>
std::pair<void (*)(const T*, const T*, T*, GemmArgs, float, float), size_t> pipelined_for(
    bool a_col, bool b_col, ember::cuda::GemmTuning tuning) {
  if (!a_col && !b_col) {
    const bool two = tuning.min_blocks == 2;
    switch (tuning.stages) {
      case 2:
        return two ? pipelined<T, false, false, 2, 2>() : pipelined<T, false, false, 2, 1>();
      case 3:
        return two ? pipelined<T, false, false, 3, 2>() : pipelined<T, false, false, 3, 1>();
      default:
        return two ? pipelined<T, false, false, 4, 2>() : pipelined<T, false, false>();
    }
  }
  if (a_col) return b_col ? pipelined<T, true, true>() : pipelined<T, true, false>();
  return pipelined<T, false, true>();
}

template <class T>
void launch_variant(int variant, const T* a, const T* b, T* c, const GemmArgs& g,
                    gemm_acc_t<T> alpha, gemm_acc_t<T> beta, const Stream& stream) {
  auto tiles = [](int64_t extent, int tile) {
    return static_cast<unsigned>((extent + tile - 1) / tile);
  };
  const unsigned gz = static_cast<unsigned>(std::min<int64_t>(g.batches, kMaxGridZ));
  auto launch = [&](const char* name, auto kernel, int tile_m, int tile_n, dim3 block,
                    size_t shared_bytes = 0) {
    const unsigned gy = tiles(g.m, tile_m);
    EMBER_CHECK(gy <= kMaxGridY, "matmul: ", g.m, " rows are more than the CUDA GEMM's grid ",
                "covers (", kMaxGridY, " tiles of ", tile_m, ")");
    launch_kernel(name, kernel, dim3(tiles(g.n, tile_n), gy, gz), block, shared_bytes, stream, a, b,
                  c, g, alpha, beta);
  };
  switch (variant) {
    case 1:
      return launch("gemm_naive", &gemm::gemm_naive<T>, 16, 16, dim3(16, 16));
    case 2:
      return launch("gemm_shared", &gemm::gemm_shared<T>, gemm::kSharedTile, gemm::kSharedTile,
                    dim3(gemm::kSharedTile, gemm::kSharedTile));
    case 3:
      return launch("gemm_blocked<registers>",
                    &gemm::gemm_blocked<T, false, false, gemm::Micro::contiguous>, gemm::kBM,
                    gemm::kBN, dim3(gemm::kBlockedThreads));
    case 4:
      return launch("gemm_blocked<float4>",
                    &gemm::gemm_blocked<T, true, false, gemm::Micro::contiguous>, gemm::kBM,
                    gemm::kBN, dim3(gemm::kBlockedThreads));
    case 5:
      return launch("gemm_blocked<double_buffer>",
                    &gemm::gemm_blocked<T, true, true, gemm::Micro::split>, gemm::kBM, gemm::kBN,
                    dim3(gemm::kBlockedThreads));
    case kWmmaVariant:
      if constexpr (is_16bit_v<T>) {
        return launch("gemm_wmma", &gemm::gemm_wmma<T>, gemm::kWM, gemm::kWN,
                      dim3(gemm::kWmmaThreads));
      }
      break;
    case kWarpTileVariant:
      if constexpr (std::is_same_v<T, float>) {
        const bool two = ember::cuda::gemm_tuning().min_blocks == 2;
        return launch("gemm_blocked<warp_tiles>",
                      two ? &gemm::gemm_blocked<T, true, true, gemm::Micro::warp_tiles, 2>
                          : &gemm::gemm_blocked<T, true, true, gemm::Micro::warp_tiles>,
                      gemm::kBM, gemm::kBN, dim3(gemm::kBlockedThreads));
      }
      break;
    case kWgmmaVariant:
      if constexpr (is_16bit_v<T>) {
        // run_ember made A's column stride and B's row stride 1 (Note [A warpgroup GEMM]).
        allow_dynamic_shared("gemm_wgmma", &gemm::gemm_wgmma<T>, gemm::kGSharedBytes);
        return launch("gemm_wgmma", &gemm::gemm_wgmma<T>, gemm::kGM, gemm::kGN,
                      dim3(gemm::kGThreads), gemm::kGSharedBytes);
      }
      break;
    case kWmmaPipelinedVariant:
      if constexpr (is_16bit_v<T>) {
        // The tiles are staged in the operands' own layouts (Note [A pipelined WMMA GEMM]).
        const bool a_col = g.a_rs == 1 && g.a_cs != 1, b_col = g.b_rs == 1 && g.b_cs != 1;
        const auto [kernel, bytes] = pipelined_for<T>(a_col, b_col, ember::cuda::gemm_tuning());
        allow_dynamic_shared("gemm_wmma_pipelined", kernel, bytes);
        return launch("gemm_wmma_pipelined", kernel, gemm::kPM, gemm::kPN,
                      dim3(gemm::kPipelinedThreads), bytes);
      }
      break;
    default:
      break;
  }
  EMBER_ERROR("matmul: GEMM variant ", variant, " does not exist for ", dtype_name(dtype_of_v<T>),
              " (1..5",
              is_16bit_v<T>              ? ", 6 and 8 WMMA, 9 wgmma"
              : std::is_same_v<T, float> ? ", 7 warp tiles"
                                         : "",
              "; set_gemm_variant in core/cuda_gemm.h)");
}

// Variant 9 reads both operands K-major: A with unit column stride, B with unit row stride (B's
// transpose contiguous). An operand in another layout is copied into one first.
std::pair<Tensor, Tensor> k_major_operands(const Tensor& a, const Tensor& b) {
  const bool a_ok = a.stride(-1) == 1 || a.size(-1) == 1;
  const bool b_ok = b.stride(-2) == 1 || b.size(-2) == 1;
  using native::contiguous, native::transpose;
  return {a_ok ? a : contiguous(a), b_ok ? b : transpose(contiguous(transpose(b, -2, -1)), -2, -1)};
}

// Runs ember's `variant` on every batch (looping on the host over the outer batch dims).
void run_ember(int variant, const Tensor& out, const Tensor& a_in, const Tensor& b_in,
               const Scalar& alpha, const Scalar& beta) {
  Tensor a = a_in, b = b_in;
  if (variant == kWgmmaVariant) {
    EMBER_CHECK(is_16bit(out.dtype()) && wgmma::available(out.device().index),
                "matmul: GEMM variant 9 (wgmma) runs float16 / bfloat16 on a compute capability ",
                "9.0 device from a build with sm_90a among CMAKE_CUDA_ARCHITECTURES; here: ",
                dtype_name(out.dtype()), " on ", out.device(),
                wgmma::available(out.device().index) ? "" : ", which cannot run it");
    std::tie(a, b) = k_major_operands(a, b);
  }
  const Geometry geo = make_geometry(out, a, b);
  const Stream stream = current_stream(out.device());
  EMBER_DISPATCH_NUMERIC(out.dtype(), "matmul", [&] {
    using T = scalar_t;
    using Acc = gemm_acc_t<T>;
    const Acc fault = ember::cuda::detail::gemm_fault() == variant ? Acc(2) : Acc(1);
    const Acc al = alpha.to<Acc>() * fault, be = beta.to<Acc>();
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* pc = out.data_ptr<T>();
    for (int64_t o = 0; o < geo.outer_count; ++o) {
      int64_t ao = 0, bo = 0, co = 0;
      for (int64_t d = static_cast<int64_t>(geo.outer_size.size()) - 1, i = o; d >= 0; --d) {
        const int64_t idx = i % geo.outer_size[d];
        i /= geo.outer_size[d];
        ao += idx * geo.outer_a[d], bo += idx * geo.outer_b[d], co += idx * geo.outer_c[d];
      }
      launch_variant<T>(variant, pa + ao, pb + bo, pc + co, geo.args, al, be, stream);
    }
  });
}

// Runs a choice: "ember:<variant>" or "cublas" (which falls back to ember's default where
// cuBLAS cannot express the operands).
void run_choice(const std::string& choice, const Tensor& out, const Tensor& a, const Tensor& b,
                const Scalar& alpha, const Scalar& beta) {
  if (choice == "cublas") {
    if (cublas_gemm(out, a, b, alpha, beta)) return;
    run_ember(default_variant(out), out, a, b, alpha, beta);
    return;
  }
  run_ember(std::stoi(choice.substr(6)), out, a, b, alpha, beta);
}

std::string autotune_key(const Tensor& out, const Tensor& a, const Tensor& b) {
  const Geometry geo = make_geometry(out, a, b);
  const GemmArgs& g = geo.args;
  return std::string(dtype_name(out.dtype())) + " " + std::to_string(g.m) + "x" +
         std::to_string(g.n) + "x" + std::to_string(g.k) + " batch " +
         std::to_string(g.batches * geo.outer_count) + " a:" + layout_letter(g.a_rs, g.a_cs) +
         " b:" + layout_letter(g.b_rs, g.b_cs) + " c:" + layout_letter(g.c_rs, g.c_cs);
}

// Note [Validated autotuning]
// llm.c's habit -- validate before timing -- applied at run time: before a candidate is timed,
// its warm-up result is compared with the default rung's on the same operands, and a candidate
// that differs by more than rounding is rejected (named in the log line and in
// GemmChoice::rejected) and never chosen. The measure is normwise, ||c - ref|| / ||ref|| (in
// float32, float64 for float64 and the integers), against a bound per dtype: 2^-6 for
// bfloat16 and 2^-8 for float16 (outputs rounded to 8 or 11 bits, so two correct kernels differ
// by an ulp here and there), 1e-4 for float32, 1e-10 for float64, 0 for the integers. A
// wrong kernel -- a tile edge dropped, a k block missed, a race -- moves the norm by far more
// (a missed 64-deep k block of 4096 is about 1/8). When the reference holds inf or NaN (from
// the inputs) there is nothing to compare and every candidate is timed. The check costs one
// extra GEMM and two norms per key, once.

// ||c - ref|| / ||ref|| as Note [Validated autotuning] measures it; 0 when ref is not finite.
double relative_difference(const Tensor& c, const Tensor& ref) {
  const DType dt = c.dtype() == kFloat64 || !is_floating(c.dtype()) ? kFloat64 : kFloat32;
  const Tensor r = native::to(ref, dt), x = native::to(c, dt);
  const double scale = native::norm(r).item<double>();
  if (!std::isfinite(scale)) return 0;
  const double diff = native::norm(native::sub(x, r)).item<double>();
  return scale > 0 ? diff / scale : diff;
}

double tolerance(DType dt) {
  if (dt == kBFloat16) return 1.0 / 64;
  if (dt == kFloat16) return 1.0 / 256;
  if (dt == kFloat32) return 1e-4;
  if (dt == kFloat64) return 1e-10;
  return 0;
}

// Times every candidate that passes the check on (a, b) into a scratch output, records and logs
// the fastest.
std::string autotune(const std::string& key, const Tensor& out, const Tensor& a, const Tensor& b,
                     const Scalar& alpha) {
  const QuietWait quiet;  // autotuning's waits are not reported (Note [Sync debug mode])
  std::vector<std::string> candidates;
  for (int v : variants_of(out.dtype(), out.device().index)) {
    // The naive and shared-tile rungs only teach: beyond about 2^24 multiply-adds they are
    // many times slower than rung 3 and would make the first call of a large shape take seconds.
    if (v <= 2 && gemm_work(out, a) > kTeachingRungWork) continue;
    candidates.push_back("ember:" + std::to_string(v));
  }
  if (cublas_is_built() && is_floating(out.dtype())) candidates.push_back("cublas");
  const std::string reference = "ember:" + std::to_string(default_variant(out));
  Tensor expected = empty(out.sizes(), out.options());
  run_choice(reference, expected, a, b, alpha, 0);
  Tensor scratch = empty(out.sizes(), out.options());
  const Stream stream = current_stream(out.device());
  std::string best, report;
  std::vector<std::string> rejected;
  double best_ms = 0;
  for (const std::string& c : candidates) {
    run_choice(c, scratch, a, b, alpha, 0);  // warm-up
    if (c != reference) {
      const double diff = relative_difference(scratch, expected);
      if (!(diff <= tolerance(out.dtype()))) {
        char line[96];
        std::snprintf(line, sizeof line, "%s%s rejected: differs from %s by %.2g",
                      report.empty() ? "" : ", ", c.c_str(), reference.c_str(), diff);
        report += line;
        rejected.push_back(c);
        continue;
      }
    }
    std::vector<double> times;
    for (int r = 0; r < 3; ++r) {
      Event start(DeviceType::CUDA, true), stop(DeviceType::CUDA, true);
      start.record(stream);
      run_choice(c, scratch, a, b, alpha, 0);
      stop.record(stream);
      stop.synchronize();
      times.push_back(start.elapsed_ms(stop));
    }
    std::sort(times.begin(), times.end());
    const double ms = times[1];  // the median
    char line[64];
    std::snprintf(line, sizeof line, "%s%s %.3f ms", report.empty() ? "" : ", ", c.c_str(), ms);
    report += line;
    if (best.empty() || ms < best_ms) best = c, best_ms = ms;
  }
  ember::cuda::detail::record_gemm_choice({key, best, best_ms, rejected});
  std::fprintf(stderr, "ember: EMBER_GEMM=auto: %s -> %s (%s)\n", key.c_str(), best.c_str(),
               report.c_str());
  profiler::mark("gemm autotune: " + key + " -> " + best);
  return best;
}

void batched_gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                         const Scalar& beta) {
  DeviceGuard guard(out.device());
  const ember::cuda::GemmBackend backend = ember::cuda::gemm_backend();
  if (backend == ember::cuda::GemmBackend::cublas) {
    if (cublas_gemm(out, a, b, alpha, beta)) return;
    run_ember(default_variant(out), out, a, b, alpha, beta);
    return;
  }
  if (backend == ember::cuda::GemmBackend::autotune) {
    const std::string key = autotune_key(out, a, b);
    std::string choice = ember::cuda::detail::find_gemm_choice(key);
    if (choice.empty()) choice = autotune(key, out, a, b, alpha);
    run_choice(choice, out, a, b, alpha, beta);
    return;
  }
  const int forced = ember::cuda::gemm_variant();
  run_ember(forced != 0 ? forced : default_variant(out), out, a, b, alpha, beta);
}

}  // namespace

bool wgmma::available(int device) {
#if defined(EMBER_CUDA_SIM) || defined(EMBER_CUDA_WGMMA)
  if (device < 0 || device >= device_count()) return false;
  const DeviceProperties p = properties(device);
  return p.major == 9 && p.minor == 0;
#else
  (void)device;
  return false;
#endif
}

EMBER_REGISTER_KERNEL(batched_gemm_stub, DeviceType::CUDA, batched_gemm_kernel);

}  // namespace ember::kernels::cuda
