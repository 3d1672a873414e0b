// wgmma for kernels in the simulator (wgmma.h).
//
// Note [wgmma in the simulator]
// On a GPU, wgmma.mma_async is issued by a warpgroup (four consecutive warps, the first one's
// index a multiple of 4) and runs asynchronously: it reads A and B from shared memory through
// their descriptors and writes the accumulator registers at some time between the issue and the
// wgmma.wait_group that covers its group (commit_group closes a group, as cp.async's commits
// do). The simulator takes the latest time, as it does for cp.async (Note [cp.async in the
// simulator] in pipeline.cpp): an issue records the descriptors and where the accumulators are,
// and at the wait covering its group the thread reads the operands and updates its own
// accumulators. Each thread computes just the elements of D it holds in the m64nNk16 fragment
// (warp w of the group holds rows 16w .. 16w + 15; lane l's element i lies at row
// 16w + l / 4 + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * (l % 4) + i % 2), so no thread needs
// another's registers. So:
// - a kernel that uses its accumulators before the wait sees them unchanged, and computes
//   garbage;
// - a kernel that writes shared memory a wgmma in flight still reads races with that read: the
//   block keeps the operand ranges of its wgmmas in flight, and a cp.async issued into one
//   (which may land at once on a GPU, however late the simulator lands it) is an Error, as is,
//   with racecheck on, an ordinary store into one; the reads themselves are reported to
//   racecheck as the issuing thread's, at the wait;
// - a thread that exits with a wgmma in flight is an Error.
// The descriptors are decoded for the one layout ember's kernels use: K-major, 128-byte swizzle
// (mode 1), base offset 0. Element (r, k) of the 64 x 16 A or N x 16 B operand lies at
// start + (r / 8) * SBO + (r % 8) * 128 + 2 * k, whose bits 4-6 are then XORed with its bits 7-9;
// so the start must lie in the first 128-byte row of a 1024-byte aligned atom, and k moves along
// a row by moving the start 32 bytes. Any other swizzle mode or a nonzero base offset is an Error
// ("not modelled"), as is an address outside the dynamic shared memory. Not checked: the
// wgmma.fence a GPU needs before a wgmma whose accumulators were written otherwise, that the
// warpgroup's 128 threads issue together with the same descriptors (each thread here computes
// its part from its own), and fence.proxy.async (the simulator has one proxy). Products of the
// 16-bit inputs are exact in float and the k sum runs in order from the accumulator; a tensor
// core sums in another order, so compare with tolerances.
#include "kernels/cuda/sim/wgmma.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/cuda/sim/engine.h"
#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/shared.h"
#include "kernels/cuda/sim/thread_state.h"

namespace ember::sim::detail {

namespace {

std::string site(const char* what, const char* file, int line) {
  return std::string(what) + " (" + file + ":" + std::to_string(line) + ")";
}

float half_to_float(uint16_t h) {
  const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  float v = 0;
  if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    v = mantissa != 0 ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return (h & 0x8000) != 0 ? -v : v;
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// One operand's descriptor, decoded (Note [wgmma in the simulator]).
struct Operand {
  uint32_t start, stride;  // bytes: the start address, and SBO (between 8-row groups)
};

Operand decode(uint64_t desc, const char* which, const std::string& where) {
  const auto field = [&](int shift, uint64_t mask) { return (desc >> shift) & mask; };
  const Operand o{static_cast<uint32_t>(field(0, 0x3FFF) << 4),
                  static_cast<uint32_t>(field(32, 0x3FFF) << 4)};
  const uint64_t swizzle = field(62, 3), base_offset = field(49, 7);
  if (swizzle != 1 || base_offset != 0) {
    fail(where + ": " + which + "'s descriptor has swizzle mode " + std::to_string(swizzle) +
         " and base offset " + std::to_string(base_offset) +
         "; the simulator models the 128-byte swizzle (mode 1) with base offset 0 only");
  }
  if ((o.start & 0x380) != 0) {
    fail(where + ": " + which + "'s start address " + std::to_string(o.start) +
         " is not in the first 128-byte row of a 1024-byte swizzle atom");
  }
  if (o.stride == 0) fail(where + ": " + which + "'s stride byte offset is 0");
  return o;
}

// The shared memory [lo, hi) an operand of `rows` rows spans, from its 8-row groups.
std::pair<const char*, const char*> span(const Block& b, const Operand& o, int rows,
                                         const std::string& where) {
  const uint32_t lo = o.start & ~127u;
  const uint32_t hi = lo + static_cast<uint32_t>((rows + 7) / 8 - 1) * o.stride + 1024;
  if (lo < kDynamicWindowBase || hi - kDynamicWindowBase > b.run->dynamic_shared) {
    fail(where + ": its operand spans shared addresses [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "), outside the block's dynamic shared memory [" +
         std::to_string(kDynamicWindowBase) + ", " +
         std::to_string(kDynamicWindowBase + b.run->dynamic_shared) + ")");
  }
  const char* data = b.worker->dynamic.data;
  return {data + (lo - kDynamicWindowBase), data + (hi - kDynamicWindowBase)};
}

// Adds (+1) or removes (-1) op's operands from the block's ranges in flight.
void track(Block& b, const PendingMma& op, int delta, const std::string& where) {
  const Operand a = decode(op.desc_a, "A", where), bo = decode(op.desc_b, "B", where);
  for (const auto& [lo, hi] : {span(b, a, 64, where), span(b, bo, op.n, where)}) {
    auto it = b.mma_reads.begin();
    while (it != b.mma_reads.end() && (it->lo != lo || it->hi != hi)) ++it;
    if (delta > 0 && it == b.mma_reads.end()) {
      b.mma_reads.push_back({lo, hi, 1, op.file, op.line});
    } else if (delta > 0) {
      ++it->count;
    } else if (it != b.mma_reads.end() && --it->count == 0) {
      b.mma_reads.erase(it);
    }
  }
}

void execute(const PendingMma& op, const ThreadState& t) {
  Block& b = current_block("wgmma.wait_group");
  const std::string where = site("wgmma.mma_async", op.file, op.line);
  track(b, op, -1, where);
  const Operand a = decode(op.desc_a, "A", where), bo = decode(op.desc_b, "B", where);
  const SharedSlot& dynamic = b.worker->dynamic;
  const size_t bytes = b.run->dynamic_shared;
  auto element = [&](const Operand& o, int r, int k) {
    uint32_t addr = o.start + static_cast<uint32_t>(r / 8) * o.stride +
                    static_cast<uint32_t>(r % 8) * 128 + static_cast<uint32_t>(2 * k);
    addr ^= ((addr >> 7) & 7) << 4;
    if (addr < kDynamicWindowBase || addr - kDynamicWindowBase + 2 > bytes) {
      fail(where + ": reads shared address " + std::to_string(addr) +
           ", outside the block's dynamic shared memory [" + std::to_string(kDynamicWindowBase) +
           ", " + std::to_string(kDynamicWindowBase + bytes) + ")");
    }
    const char* p = dynamic.data + (addr - kDynamicWindowBase);
    race_raw(p, 2, false);
    uint16_t h = 0;
    std::memcpy(&h, p, sizeof h);
    return op.bf16 ? bf16_to_float(h) : half_to_float(h);
  };
  const int warp = static_cast<int>(t.rank / 32 % 4), lane = static_cast<int>(t.rank % 32);
  float arow[2][16];
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 16; ++k) arow[half][k] = element(a, 16 * warp + lane / 4 + 8 * half, k);
  for (int group = 0; group < op.n / 8; ++group) {
    for (int c = 0; c < 2; ++c) {
      float bcol[16];
      for (int k = 0; k < 16; ++k) bcol[k] = element(bo, 8 * group + 2 * (lane % 4) + c, k);
      for (int half = 0; half < 2; ++half) {
        float& d = op.d[4 * group + 2 * half + c];
        float sum = op.accumulate ? d : 0.0f;
        for (int k = 0; k < 16; ++k) sum += arow[half][k] * bcol[k];
        d = sum;
      }
    }
  }
}

}  // namespace

uint32_t shared_address(const void* p, const char* file, int line) {
  Block& b = current_block("shared_address");
  const SharedSlot* slot = shared_slot_holding(p, 1);
  if (slot == nullptr || slot != &b.worker->dynamic) {
    fail(site("shared_address", file, line) +
         ": the simulator gives shared-window addresses to the dynamic shared memory only");
  }
  return kDynamicWindowBase +
         static_cast<uint32_t>(static_cast<const char*>(p) - b.worker->dynamic.data);
}

void wgmma_fence() { current_thread("wgmma.fence"); }

void wgmma_issue(uint64_t desc_a, uint64_t desc_b, float* d, int n, bool accumulate, bool bf16,
                 const char* file, int line) {
  ThreadState& t = current_thread("wgmma.mma_async");
  const std::string where = site("wgmma.mma_async", file, line);
  if (t.block->threads % 128 != 0) {
    fail(where + ": a warpgroup is 128 threads, and the block has " +
         std::to_string(t.block->threads));
  }
  if (n < 8 || n > 256 || n % 8 != 0)
    fail(where + ": N is a multiple of 8 from 8 to 256, not " + std::to_string(n));
  const PendingMma op{desc_a, desc_b, d, n, accumulate, bf16, t.mma_commits, file, line};
  track(current_block("wgmma.mma_async"), op, +1, where);  // a bad descriptor fails here
  t.mma_ops.push_back(op);
}

void mma_check_write(const Block& b, const void* p, size_t bytes, const std::string& what) {
  const char* q = static_cast<const char*>(p);
  for (const MmaRead& r : b.mma_reads) {
    if (q < r.hi && q + bytes > r.lo) {
      fail(what + " lands in shared memory that a wgmma in flight reads (" +
           site("wgmma.mma_async", r.file, r.line) +
           "): wait for it (wgmma.wait_group) and pass a barrier before refilling its tile");
    }
  }
}

void wgmma_commit() { ++current_thread("wgmma.commit_group").mma_commits; }

void wgmma_wait(unsigned newest_pending) {
  ThreadState& t = current_thread("wgmma.wait_group");
  const unsigned limit = t.mma_commits > newest_pending ? t.mma_commits - newest_pending : 0;
  size_t kept = 0;
  for (size_t i = 0; i < t.mma_ops.size(); ++i) {
    const PendingMma op = t.mma_ops[i];
    if (op.group < limit)
      execute(op, t);
    else
      t.mma_ops[kept++] = op;
  }
  t.mma_ops.resize(kept);
}

void mma_check_exit(ThreadState& t) {
  const bool pending = !t.mma_ops.empty();
  const PendingMma first = pending ? t.mma_ops.front() : PendingMma{};
  t.mma_ops.clear();
  t.mma_commits = 0;
  if (pending) {
    fail(site("wgmma.mma_async", first.file, first.line) +
         ": the thread exits with this wgmma in flight (no wgmma.wait_group covers it)");
  }
}

}  // namespace ember::sim::detail
