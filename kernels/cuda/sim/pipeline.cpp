// cp.async for kernels in the simulator (pipeline.h).
//
// Note [cp.async in the simulator]
// On a GPU a cp.async copy lands in shared memory at some time between its issue and the
// __pipeline_wait_prior that covers its group; until then the bytes there are whatever they
// were. The simulator takes the latest time it may land: an issued copy only records its source
// and destination, and lands (is copied, and reported to racecheck as a write by the issuing
// thread) at the wait that covers it -- or when the thread exits. So a kernel that reads a
// staged tile before waiting for it reads the stage's old bytes (the NaN of initcheck's fill, or
// the previous tile) and computes wrong results, and one that waits but skips the barrier after
// the wait is a racecheck hazard. The issue is checked like the hardware's: 4, 8 or 16 bytes,
// both addresses aligned to the size, the destination in the block's shared memory and the
// source outside it; anything else is an Error naming the call site. Approximation: a read of
// the destination by another thread between the issue and the wait is not reported (the write
// is seen at the wait).
#include "kernels/cuda/sim/pipeline.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/cuda/sim/engine.h"
#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/shared.h"
#include "kernels/cuda/sim/thread_state.h"

namespace ember::sim::detail {

namespace {

void land(const AsyncCopy& c) {
  race_raw(c.dst, c.bytes, true);
  std::memcpy(c.dst, c.src, c.bytes);
}

}  // namespace

void async_copy(void* dst, const void* src, size_t bytes, size_t zfill, const char* file,
                int line) {
  ThreadState& t = current_thread("__pipeline_memcpy_async");
  const std::string where =
      std::string("__pipeline_memcpy_async (") + file + ":" + std::to_string(line) + ")";
  if (bytes != 4 && bytes != 8 && bytes != 16)
    fail(where + ": copies 4, 8 or 16 bytes, not " + std::to_string(bytes));
  if (zfill > bytes) fail(where + ": zero-fills more bytes than it copies");
  if (reinterpret_cast<std::uintptr_t>(dst) % bytes != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % bytes != 0) {
    fail(where + ": the source and the destination must be aligned to the " +
         std::to_string(bytes) + " bytes copied");
  }
  if (shared_slot_holding(dst, bytes) == nullptr)
    fail(where + ": the destination is not in the block's shared memory");
  if (shared_slot_holding(src, 1) != nullptr)
    fail(where + ": the source is in shared memory (cp.async copies from global memory)");
  // The copy may land at once on a GPU: into operands a wgmma in flight reads, it is a race.
  const Block& b = current_block("__pipeline_memcpy_async");
  if (!b.mma_reads.empty()) mma_check_write(b, dst, bytes, where);
  if (zfill > 0) {
    // The zero-filled tail is a plain write now; the copied head lands later.
    race_raw(static_cast<char*>(dst) + (bytes - zfill), zfill, true);
    std::memset(static_cast<char*>(dst) + (bytes - zfill), 0, zfill);
  }
  if (bytes > zfill) t.async_copies.push_back({dst, src, bytes - zfill, t.async_commits});
}

void async_commit() { ++current_thread("__pipeline_commit").async_commits; }

void async_wait(size_t newest_pending) {
  ThreadState& t = current_thread("__pipeline_wait_prior");
  // Groups numbered below `limit` must have landed: all but the newest `newest_pending`.
  const unsigned limit = t.async_commits > newest_pending
                             ? t.async_commits - static_cast<unsigned>(newest_pending)
                             : 0;
  size_t kept = 0;
  for (const AsyncCopy& c : t.async_copies) {
    if (c.group < limit)
      land(c);
    else
      t.async_copies[kept++] = c;
  }
  t.async_copies.resize(kept);
}

void async_land_all(ThreadState& t) {
  for (const AsyncCopy& c : t.async_copies) land(c);
  t.async_copies.clear();
  t.async_commits = 0;
}

}  // namespace ember::sim::detail
