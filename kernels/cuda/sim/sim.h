// The umbrella a kernel source includes in a simulator build (through kernels/cuda/common.cuh):
// everything a .cu file compiled by the host compiler needs to mean what it means under nvcc.
// The README's section "The CUDA simulator" says what the simulator models and what it does not.
#pragma once

// The qualifiers first: the CUDA headers below only define them when they are not defined yet.
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include "kernels/cuda/sim/barrier.h"
#include "kernels/cuda/sim/pipeline.h"
#include "kernels/cuda/sim/runtime.h"
#include "kernels/cuda/sim/shared.h"
#include "kernels/cuda/sim/thread_state.h"
#include "kernels/cuda/sim/warp.h"
#include "kernels/cuda/sim/warp_ops.h"
#include "kernels/cuda/sim/wgmma.h"

// The device-side library (intrinsics, atomics, cooperative groups, WMMA) lives in its own
// headers next to this one.
#if __has_include("kernels/cuda/sim/intrinsics.h")
#include "kernels/cuda/sim/intrinsics.h"
#endif
#if __has_include("kernels/cuda/sim/atomics.h")
#include "kernels/cuda/sim/atomics.h"
#endif
#if __has_include("kernels/cuda/sim/cooperative_groups.h")
#include "kernels/cuda/sim/cooperative_groups.h"
#endif
#if __has_include("kernels/cuda/sim/wmma.h")
#include "kernels/cuda/sim/wmma.h"
#endif

// After every standard header above (libstdc++'s shared_ptr_base.h spells
// `__attribute__((__noinline__))`; see qualifiers.h).
// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
#ifndef __noinline__
#define __noinline__ __attribute__((noinline))
#endif
// NOLINTEND(bugprone-reserved-identifier)
