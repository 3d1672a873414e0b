// The one warp primitive every warp collective of the simulator is built on (warp_ops.h:
// shuffles, votes, __syncwarp; cooperative_groups.h and wmma.h use it too).
//
// Note [Warps in the simulator]
// A simulated warp is 32 consecutive thread ranks of a block (rank / 32). Its lanes do not run
// in lockstep: each is a fiber that runs until it blocks. A collective is a rendezvous: each
// lane of `mask` deposits its value and waits until every lane of `mask` has arrived at a
// collective of the same kind with the same mask; then all of them read all the deposits. This
// is what CUDA's *_sync functions promise since Volta (independent thread scheduling), and it
// is stricter than the hardware about masks: a mask that omits the caller, names a lane beyond
// blockDim or an exited lane, or disagrees with the mask of a lane that is waiting, is a
// synccheck error naming both call sites instead of undefined behaviour. Groups with disjoint
// masks (lanes 0-15 and 16-31 shuffling separately) proceed independently.
#pragma once

#include <cstddef>

namespace ember::sim {

unsigned lane_id();      // lane of the calling thread in its warp, 0..31
unsigned thread_rank();  // linear index of the calling thread in its block
unsigned warp_id();      // thread_rank() / 32

// Blocks until every lane of `mask` in the caller's warp reached a collective of the same kind
// with the same mask (mismatch or a caller outside mask: synccheck error naming `what`, file,
// line); each lane deposits `size` (<= 16) bytes; returns the 32 deposits, lane i's at
// [i * 16]. Valid until the caller's next collective. Lanes of the warp beyond blockDim are
// inactive (a mask naming them is an error).
const unsigned char* warp_exchange(unsigned mask, const void* value, size_t size, const char* what,
                                   const char* file, int line);

// The lanes of the caller's warp that have not exited (what __activemask() returns here).
unsigned live_lanes();

}  // namespace ember::sim
