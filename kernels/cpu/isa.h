#pragma once
// The instruction set of the CPU kernels' hot loops. The library is built for baseline x86-64
// (it runs on any x86-64 CPU); a few loops also exist as copies compiled for AVX2 (function
// target attributes, never whole files) and are chosen at run time:
// - float32 <-> float16 / bfloat16 casts (kernels/cpu/convert16.h, AVX2 + F16C);
// - contiguous float16 / bfloat16 element-wise loops (Note [16-bit loops compiled for AVX2] in
//   kernels/cpu/loops.h);
// - the contiguous folds of the reductions (kernels/cpu/reduce_utils.h);
// - the row passes of softmax, log_softmax, cross-entropy and layer_norm (with_cpu_isa below).
// Each copy computes exactly what the baseline loop computes (no FMA contraction, the same
// order of operations), so results do not depend on the CPU. GEMM has its own AVX2 / AVX-512
// micro-kernels (kernels/cpu/gemm.cpp). EMBER_CPU_ISA=baseline turns the copies off.

// A lambda whose body must be compiled into its caller (with_cpu_isa below).
#define EMBER_INLINE_LAMBDA __attribute__((always_inline))

namespace ember::kernels::cpu {

// True when the CPU has AVX2 and F16C and EMBER_CPU_ISA is not "baseline" (read once).
bool use_avx2();
// Turns the AVX2 copies on (where the CPU has them) or off for the whole process; returns the
// previous setting. For tests that compare the two: not while kernels run on other threads.
bool set_use_avx2(bool on);

// Runs f() compiled for AVX2 when use_avx2(), as baseline code otherwise. f is a lambda marked
// EMBER_INLINE_LAMBDA, so that its body, and the EMBER_CPU_INLINE helpers it calls
// (kernels/cpu/rows.h), are compiled into both copies:
//
//   with_cpu_isa([&]() EMBER_INLINE_LAMBDA { softmax_line_body(x, 1, y, 1, n, false); });
template <class F>
__attribute__((target("avx2"))) void run_avx2(const F& f) {
  f();
}
template <class F>
void with_cpu_isa(const F& f) {
  if (use_avx2()) {
    run_avx2(f);
  } else {
    f();
  }
}

}  // namespace ember::kernels::cpu
