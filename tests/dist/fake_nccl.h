#pragma once
// A fake NCCL for the tests (Note [NCCL through a function table] in distributed/nccl_api.h): an
// NcclApi for world size 1 whose ops copy on the given stream with ember's CUDA runtime, plus the
// faults the watchdog must catch. One fake per process: reset() before each test case sets its
// faults and statistics (and releases the work a previous case left hung).
//
//   fake_nccl::Faults f;
//   f.hang_op = "all_reduce";                 // its first call never completes
//   fake_nccl::reset(f);
//   opts.api = fake_nccl::api();

#include <functional>
#include <string>

#include "distributed/nccl_api.h"

namespace ember::dist_test::fake_nccl {

struct Faults {
  // The first call of this op ("all_reduce", "broadcast", "all_gather", "reduce_scatter") queues
  // work that blocks its stream until comm_abort (a peer that never arrives). Needs can_hang().
  std::string hang_op;
  // Once this many ops have been called, comm_get_async_error reports SystemError (with
  // kAsyncErrorString) and every later op hangs, as a broken connection leaves NCCL's kernels.
  int async_error_after = -1;
  // comm_init_rank_config stays InProgress forever.
  bool init_never_finishes = false;
  // The n-th all_gather call (1-based) writes 1 into byte 8 of what it gathers: the op field of
  // a Fingerprint, so that rank 0 seems to have called broadcast.
  int corrupt_all_gather = -1;
  // How many comm_get_async_error polls a new communicator stays InProgress before Success.
  int init_polls = 3;
};

struct Stats {
  int inits = 0, aborts = 0, destroys = 0;
  int all_reduce = 0, broadcast = 0, all_gather = 0, reduce_scatter = 0, groups = 0;
  int ops = 0;  // every op call
};

// What the fake's get_error_string says for the injected asynchronous error.
extern const char* const kAsyncErrorString;

void reset(const Faults& faults = {});
const dist::NcclApi* api();
Stats stats();
// Whether this build can queue work that blocks a stream (the simulator's host work).
bool can_hang();
// Blocks stream (a cuda stream) until the returned function is called. Needs can_hang().
std::function<void()> block(const Stream& stream);

}  // namespace ember::dist_test::fake_nccl
