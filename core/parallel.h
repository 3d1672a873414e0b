#pragma once
// One thread pool for all of ember, sized to the cores (EMBER_NUM_THREADS overrides).
//
// parallel_for(begin, end, grain, fn) splits [begin, end) into at most num_threads() chunks of
// at least `grain` items and calls fn(chunk_begin, chunk_end) on the pool, the calling thread
// taking one chunk itself. Ranges smaller than grain, and calls made from inside a pool task,
// run inline on the calling thread: nesting never oversubscribes the cores. Eigen's GEMM runs
// on these same threads (kernels/cpu/linalg.cpp splits the product itself), so no second
// threading runtime is ever started.

#include <cstdint>
#include <functional>

namespace ember {

int num_threads();
// Resizes the pool (n >= 1). Not to be called while a parallel_for is running.
void set_num_threads(int n);
bool in_parallel_region();

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Work under this size (elements) is not worth waking other threads for.
constexpr int64_t kGrainSize = 32768;

}  // namespace ember
