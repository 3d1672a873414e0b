// CUDA's asynchronous copies from global to shared memory (<cuda_pipeline.h>'s primitives, cp.async
// on sm_80+) for kernels in the simulator:
//
//   __pipeline_memcpy_async(&tile[i], src + i, 16);  // 4, 8 or 16 bytes, both addresses aligned
//                                                     // (a 4th argument zero-fills the tail)
//   __pipeline_commit();                              // closes a group of copies
//   __pipeline_wait_prior(1);                         // all but the newest group have landed
//
// Note [cp.async in the simulator] (pipeline.cpp) says when a copy lands.
#pragma once

#include <cstddef>

namespace ember::sim::detail {
void async_copy(void* dst, const void* src, size_t bytes, size_t zfill, const char* file, int line);
void async_commit();
void async_wait(size_t newest_pending);
}  // namespace ember::sim::detail

// NOLINTBEGIN(bugprone-reserved-identifier)
// zfill: the last zfill bytes of dst are zeroed instead of copied.
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t bytes, size_t zfill = 0,
                                    const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  ember::sim::detail::async_copy(dst, src, bytes, zfill, file, line);
}
inline void __pipeline_commit() { ember::sim::detail::async_commit(); }
inline void __pipeline_wait_prior(size_t prior) { ember::sim::detail::async_wait(prior); }
// NOLINTEND(bugprone-reserved-identifier)
