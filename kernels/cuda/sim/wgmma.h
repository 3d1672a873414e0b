// Hopper's warpgroup matrix multiply (wgmma.mma_async, sm_90a) for kernels in the simulator: what
// kernels/cuda/wgmma.cuh calls in a sim build, where a real build emits the PTX instructions.
//
//   uint32_t addr = shared_address(&smem[0]);        // the shared-window address of a pointer
//   wgmma_fence();                                     // wgmma.fence
//   wgmma_issue(desc_a, desc_b, d, 256, true, true);   // wgmma.mma_async m64n256k16, bf16
//   wgmma_commit();                                    // wgmma.commit_group
//   wgmma_wait(1);                                     // wgmma.wait_group 1
//
// Note [wgmma in the simulator] (wgmma.cpp) says what is modelled: K-major operands in shared
// memory with the 128-byte swizzle, f16 / bf16 inputs, float accumulators.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::sim::detail {

// The address a pointer into the block's dynamic shared memory has in the shared window (what
// __cvta_generic_to_shared gives on a GPU): the dynamic memory starts at kDynamicWindowBase, a
// multiple of 256 but not of 1024, so a kernel that needs a 1024-byte aligned tile must round
// up as it must on a GPU, where nothing promises more than 16 bytes. Other pointers are an Error.
constexpr uint32_t kDynamicWindowBase = 0x300;
uint32_t shared_address(const void* p, const char* file, int line);

void wgmma_fence();
// d: the calling thread's n / 2 accumulators; accumulate false: d = A * B, true: d += A * B.
void wgmma_issue(uint64_t desc_a, uint64_t desc_b, float* d, int n, bool accumulate, bool bf16,
                 const char* file, int line);
void wgmma_commit();
// Completes every wgmma of the calling thread but those of its newest `newest_pending` groups.
void wgmma_wait(unsigned newest_pending);

}  // namespace ember::sim::detail
