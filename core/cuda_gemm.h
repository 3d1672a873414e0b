#pragma once
// Which kernel runs a GEMM on a cuda device (every matmul-family op: matmul, mm, bmm, addmm,
// linear, dot, outer and the ops built on them), as torch.backends.cudnn.benchmark chooses
// convolutions:
//
//   ember::cuda::set_gemm_backend(ember::cuda::GemmBackend::cublas);  // or EMBER_GEMM=cublas
//   ember::cuda::set_gemm_variant(3);  // ember's ladder, rung 3 (or EMBER_GEMM_VARIANT=3)
//
// Note [GEMM backends]
// - ember (the default; EMBER_GEMM=ember): ember's hand-written kernels (kernels/cuda/gemm.cuh,
//   the ladder of Note [The GEMM ladder]): variant 7 (warp tiles) for float32, 5 for the other
//   SIMT dtypes, and for float16 and bfloat16 the tensor cores with float32 accumulation:
//   variant 8 (pipelined WMMA), or 6 (WMMA, smaller tiles) for products of fewer than 128
//   tiles of 128 x 128. set_gemm_variant(v) forces rung v (1..5 for every dtype, 6 and 8 only
//   for float16/bfloat16, 7 only for float32, 9 -- wgmma -- for float16/bfloat16 on a compute
//   capability 9.0 device with a build for sm_90a, and in the simulator); 0 restores the
//   default. Variant 9 is not yet a default: it was written without a GPU and waits for a run
//   on one to be checked against variant 8; auto tries it, checked (below).
// - cublas (EMBER_GEMM=cublas): cuBLAS's cublasGemmStridedBatchedEx, the reference, in real
//   builds only (a simulated build raises an ember::Error saying so). Integer dtypes, and
//   layouts cuBLAS cannot express (a matrix with no unit stride, a batch of more than one
//   strided dim), run ember's kernel instead.
// - auto (EMBER_GEMM=auto): the first GEMM of each (dtype, m, n, k, batch, operand layouts)
//   times every candidate -- the ladder's variants for the dtype (without the naive and
//   shared-tile rungs beyond 2^24 multiply-adds), and cuBLAS in real builds --
//   with events (one warm-up and three timed runs each, into a scratch output), caches the
//   fastest and prints one line to stderr naming it; later GEMMs of that key run the choice.
//   Each candidate's warm-up result is first checked against the default rung's (Note
//   [Validated autotuning] in kernels/cuda/gemm.cu): one that differs by more than the dtype's
//   rounding is rejected, named in the line and in GemmChoice::rejected, and never chosen --
//   which is how variant 9 (wgmma) takes part although no GPU run has checked it yet.
//   None of ember's GEMM kernels splits k or uses atomics, so every candidate is deterministic
//   (cuBLAS's default GEMM algorithms too) and deterministic mode (core/determinism.h) excludes
//   none of them.
// The environment variables are read once, at the first GEMM or query; the setters override
// them. A bad value is an Error naming it.

#include <string>
#include <vector>

namespace ember::cuda {

enum class GemmBackend { ember, cublas, autotune };

// "ember", "cublas" or "auto".
const char* gemm_backend_name(GemmBackend backend);
// The backend in use (EMBER_GEMM's, until set_gemm_backend).
GemmBackend gemm_backend();
void set_gemm_backend(GemmBackend backend);
// By name: "ember", "cublas" or "auto" (anything else is an Error).
void set_gemm_backend(const std::string& name);

// The forced rung of ember's ladder (0: the default per dtype; EMBER_GEMM_VARIANT's until set).
int gemm_variant();
void set_gemm_variant(int variant);
// Whether rung 9 (wgmma) runs on cuda device `device`: a build with sm_90a code (or the
// simulator) and a compute capability 9.0 device. False without a CUDA backend or device.
bool gemm_wgmma_available(int device = 0);

// How rungs 7 and 8 are compiled, for a benchmark that sweeps them on a GPU (bench_gemm_cuda's
// tuning table) before a default is fixed: min_blocks, the blocks per SM each kernel is compiled
// to fit (1, or 2: at most 128 registers a thread, which may spill), and stages, rung 8's
// pipeline depth (2, 3 or 4). The default, {1, 4}, serves every operand layout; another tuning
// applies to float32 (rung 7) and to row-major operands (rung 8), the others keep the default.
// Anything else is an Error.
struct GemmTuning {
  int min_blocks = 1;
  int stages = 4;
};
GemmTuning gemm_tuning();
void set_gemm_tuning(GemmTuning tuning);

// What EMBER_GEMM=auto chose so far: key "float32 129x65x33 batch 1 a:N b:T c:N", choice
// "ember:5" or "cublas", and the chosen candidate's time in milliseconds.
struct GemmChoice {
  std::string key;
  std::string choice;
  double ms = 0;
  std::vector<std::string> rejected;  // candidates whose result differed from the default's
};
std::vector<GemmChoice> gemm_autotune_choices();
// Forgets every choice (the next GEMM of each key benchmarks again).
void clear_gemm_autotune_cache();

namespace detail {
// For the CUDA backend: the cached choice for key ("" when none), and recording one.
std::string find_gemm_choice(const std::string& key);
void record_gemm_choice(const GemmChoice& choice);
// A fault injected for tests of the autotuner's check: launches of ember's rung `variant`
// compute with alpha doubled (0: none, the default). Not for anything else.
void set_gemm_fault(int variant);
int gemm_fault();
}  // namespace detail

}  // namespace ember::cuda
