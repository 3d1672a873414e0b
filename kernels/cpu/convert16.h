#pragma once
// Contiguous runs of float32 <-> float16 / bfloat16 conversions, the hot loop of every cast in
// mixed precision and of DDP's fp16 comm hook: n values from `in` to `out`, the same bits as
// the scalar conversions of core/half.h (round to nearest even, a NaN becomes the quiet NaN
// those give, subnormals exact).
//
// On a CPU with AVX2 and F16C they run on 8 values per instruction (F16C's vcvtps2ph and
// vcvtph2ps, AVX2 integer rounding for bfloat16), chosen once at run time; elsewhere the scalar
// conversions run in a loop the compiler vectorises for baseline x86-64. The same choice makes
// cpu_kernel run contiguous float16 / bfloat16 element-wise loops compiled for AVX2
// (kernels/cpu/loops.h). EMBER_CPU_ISA=baseline forces the portable loops everywhere (for
// comparing the two; kernels/cpu/isa.h).

#include <cstdint>

#include "core/half.h"
#include "kernels/cpu/isa.h"

namespace ember::kernels::cpu {

void convert_run(const float* in, Half* out, int64_t n);
void convert_run(const Half* in, float* out, int64_t n);
void convert_run(const float* in, BFloat16* out, int64_t n);
void convert_run(const BFloat16* in, float* out, int64_t n);

}  // namespace ember::kernels::cpu
