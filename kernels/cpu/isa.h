#pragma once
// The instruction set of the CPU kernels' hot loops. The library is built for baseline x86-64
// (it runs on any x86-64 CPU); a few loops also exist as copies compiled for AVX2 (function
// target attributes, never whole files) and are chosen at run time:
// - float32 <-> float16 / bfloat16 casts (kernels/cpu/convert16.h, AVX2 + F16C);
// - contiguous float16 / bfloat16 element-wise loops (Note [16-bit loops compiled for AVX2] in
//   kernels/cpu/loops.h);
// - the contiguous folds of the reductions (kernels/cpu/reduce_utils.h);
// - the row passes of softmax, log_softmax, cross-entropy and layer_norm (with_cpu_isa below),
//   which also have a copy compiled for AVX-512.
// Each copy computes exactly what the baseline loop computes (no FMA contraction, the same
// order of operations), so results do not depend on the CPU. GEMM has its own AVX2 / AVX-512
// micro-kernels (kernels/cpu/gemm.cpp). EMBER_CPU_ISA=baseline turns the copies off,
// EMBER_CPU_ISA=avx2 the AVX-512 ones.

// A lambda whose body must be compiled into its caller (with_cpu_isa below).
#define EMBER_INLINE_LAMBDA __attribute__((always_inline))

namespace ember::kernels::cpu {

// The copies a loop may have, narrowest first.
enum class CpuIsa { kBaseline, kAvx2, kAvx512 };

// The widest copy this process runs: what the CPU has (AVX2 with F16C; AVX-512F) capped by
// EMBER_CPU_ISA=baseline|avx2 (read once).
CpuIsa cpu_isa();
// Sets that cap for the whole process (the CPU's own limit still applies); returns the previous
// setting. For tests that compare the copies: not while kernels run on other threads.
CpuIsa set_cpu_isa(CpuIsa isa);
// cpu_isa() >= kAvx2.
bool use_avx2();
// set_cpu_isa(on ? the widest : baseline), returning whether the AVX2 copies were on.
bool set_use_avx2(bool on);

// Runs f() compiled for AVX-512, for AVX2 or as baseline code, as cpu_isa() says. f is a lambda
// marked EMBER_INLINE_LAMBDA, so that its body, and the EMBER_CPU_INLINE helpers it calls
// (kernels/cpu/rows.h), are compiled into every copy:
//
//   with_cpu_isa([&]() EMBER_INLINE_LAMBDA { softmax_line_body(x, 1, y, 1, n, false); });
//
// GCC's -mavx512f brings FMA with it, and contracting a * b + c into one rounding would change
// the copy's results; so the AVX-512 copy is compiled with -ffp-contract=off (the one use of
// GCC's optimize attribute in ember).
template <class F>
__attribute__((target("avx2"))) void run_avx2(const F& f) {
  f();
}
template <class F>
__attribute__((target("avx512f"), optimize("fp-contract=off"))) void run_avx512(const F& f) {
  f();
}
template <class F>
void with_cpu_isa(const F& f) {
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      run_avx512(f);
      break;
    case CpuIsa::kAvx2:
      run_avx2(f);
      break;
    case CpuIsa::kBaseline:
      f();
      break;
  }
}

}  // namespace ember::kernels::cpu
