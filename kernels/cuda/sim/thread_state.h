// threadIdx, blockIdx, blockDim, gridDim and warpSize for kernels running in the simulator.
//
// Each simulated GPU thread has a ThreadState; the worker running it points t_thread at it
// before the thread runs (a fiber switch or the next turn of loop mode), so the built-ins are
// plain reads through one thread_local pointer. They are macros because CUDA's are variables
// (`threadIdx.x`), and the state is per simulated thread, not per OS thread.
#pragma once

// clang-format off
#include "kernels/cuda/sim/qualifiers.h"  // before any CUDA header
// clang-format on

#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::sim::detail {

struct BlockState {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned threads = 0;  // blockDim.x * .y * .z
};

// A cp.async copy issued and not yet landed (Note [cp.async in the simulator] in pipeline.cpp).
struct AsyncCopy {
  void* dst;
  const void* src;
  size_t bytes;
  unsigned group;  // the commit group it belongs to (the number of commits before it)
};

// A wgmma.mma_async issued and not yet waited for (Note [wgmma in the simulator] in wgmma.cpp).
struct PendingMma {
  uint64_t desc_a, desc_b;
  float* d;  // the issuing thread's accumulators (n / 2 of them)
  int n;
  bool accumulate;
  bool bf16;       // else float16
  unsigned group;  // the number of wgmma commits before it
  const char* file;
  int line;
};

struct ThreadState {
  uint3 thread_idx;
  unsigned rank = 0;  // linear index in the block: x + y * blockDim.x + z * blockDim.x * .y
  BlockState* block = nullptr;
  std::vector<AsyncCopy> async_copies;  // issued cp.async copies still in flight
  unsigned async_commits = 0;           // __pipeline_commit calls so far
  std::vector<PendingMma> mma_ops;      // issued wgmma.mma_async not yet waited for
  unsigned mma_commits = 0;             // wgmma commit_group calls so far
};

// Lands every copy `t` still has in flight (a thread that exits), and forgets its groups.
void async_land_all(ThreadState& t);
// A thread that exits with a wgmma still in flight is an Error (wgmma.cpp).
void mma_check_exit(ThreadState& t);

// initial-exec: a read is one %fs-relative load instead of a __tls_get_addr call (the library
// is linked, not dlopen'ed late, so its TLS is in the static block).
extern thread_local ThreadState* t_thread __attribute__((tls_model("initial-exec")));

// The running simulated thread; outside a kernel this throws Error.
[[noreturn]] void no_kernel_thread(const char* what);
inline ThreadState& current_thread(const char* what) {
  ThreadState* t = t_thread;
  if (__builtin_expect(t == nullptr, 0)) no_kernel_thread(what);
  return *t;
}

}  // namespace ember::sim::detail

#define threadIdx (::ember::sim::detail::current_thread("threadIdx").thread_idx)
#define blockIdx (::ember::sim::detail::current_thread("blockIdx").block->block_idx)
#define blockDim (::ember::sim::detail::current_thread("blockDim").block->block_dim)
#define gridDim (::ember::sim::detail::current_thread("gridDim").block->grid_dim)
#ifndef warpSize
#define warpSize 32
#endif
