// __syncthreads and its reducing variants, for kernels in the simulator.
//
// A barrier counts arrivals: it opens when every thread of the block that has not exited waits
// at it. Threads waiting at different barrier call sites, a thread that exits while others wait,
// or a barrier that can never open (a deadlock) are synccheck errors that name the kernel and
// the source lines. The call site comes from __builtin_FILE()/__builtin_LINE() default
// arguments, which the compiler evaluates where the call is written (like CUDA's own names,
// these are functions, so `::__syncthreads()` works too).
#pragma once

namespace ember::sim::detail {

enum class BarrierKind { plain, count, all, any };
int block_barrier(BarrierKind kind, int predicate, const char* what, const char* file, int line);

}  // namespace ember::sim::detail

// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::sim::detail::block_barrier(::ember::sim::detail::BarrierKind::plain, 0, "__syncthreads",
                                      file, line);
}
inline int __syncthreads_count(int predicate, const char* file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
  return ::ember::sim::detail::block_barrier(::ember::sim::detail::BarrierKind::count,
                                             predicate != 0, "__syncthreads_count", file, line);
}
inline int __syncthreads_and(int predicate, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  return ::ember::sim::detail::block_barrier(::ember::sim::detail::BarrierKind::all, predicate != 0,
                                             "__syncthreads_and", file, line);
}
inline int __syncthreads_or(int predicate, const char* file = __builtin_FILE(),
                            int line = __builtin_LINE()) {
  return ::ember::sim::detail::block_barrier(::ember::sim::detail::BarrierKind::any, predicate != 0,
                                             "__syncthreads_or", file, line);
}
// NOLINTEND(bugprone-reserved-identifier)
