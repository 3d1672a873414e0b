#pragma once
// The instruction set of the CPU kernels' hot loops. The library is built for baseline x86-64
// (it runs on any x86-64 CPU); a few loops also exist as copies compiled for AVX2 (function
// target attributes, never whole files) and are chosen at run time:
// - float32 <-> float16 / bfloat16 casts (kernels/cpu/convert16.h, AVX2 + F16C);
// - contiguous float16 / bfloat16 element-wise loops (Note [16-bit loops compiled for AVX2] in
//   kernels/cpu/loops.h);
// - the contiguous folds of the reductions (kernels/cpu/reduce_utils.h).
// Each copy computes exactly what the baseline loop computes (no FMA contraction, the same
// order of operations), so results do not depend on the CPU. GEMM has its own AVX2 / AVX-512
// micro-kernels (kernels/cpu/gemm.cpp). EMBER_CPU_ISA=baseline turns the copies off.

namespace ember::kernels::cpu {

// True when the CPU has AVX2 and F16C and EMBER_CPU_ISA is not "baseline" (read once).
bool use_avx2();
// Turns the AVX2 copies on (where the CPU has them) or off for the whole process; returns the
// previous setting. For tests that compare the two: not while kernels run on other threads.
bool set_use_avx2(bool on);

}  // namespace ember::kernels::cpu
