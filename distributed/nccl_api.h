#pragma once
// NcclApi: every NCCL call the NCCL backend (process_group_nccl.h) makes, as a table of function
// pointers, with ember's own mirror of NCCL's types, so that this header never includes nccl.h.
//
//   const NcclApi* api = real_nccl_api();   // the real NCCL in EMBER_CUDA=real builds, else null
//   opts.api = &my_fake;                    // or any table with the same meaning (the tests' fake)
//
// Note [NCCL through a function table]
// NCCL's data path needs a GPU, but the logic around it -- a communicator created without
// blocking, deadlines, the watchdog that aborts a communicator and fails the pending Work, the
// abort reports to the peers -- is where the bugs are, and it must be tested in CI on machines
// without one. So ProcessGroupNCCL reaches NCCL only through this table: real_nccl_api()
// (distributed/nccl_real.cpp, compiled in EMBER_CUDA=real builds only) forwards to libnccl, and
// tests/dist/fake_nccl.h is a world-size-1 NCCL on the CUDA simulator with fault modes (an op
// that never completes, an asynchronous error, an init that never finishes). The table's
// functions mean what NCCL's of the same names mean (ncclAllReduce for all_reduce, ...), and
// return NCCL's result codes; the one difference is that an op takes ember's Stream (a cuda
// stream of the communicator's device) where NCCL takes a cudaStream_t.

#include <cstddef>

#include "core/stream.h"

namespace ember::dist {

// ncclComm_t: an opaque communicator handle.
struct NcclCommHandle;
using NcclComm = NcclCommHandle*;

// ncclUniqueId: what rank 0 makes and every rank passes to comm_init_rank_config.
struct NcclUniqueId {
  char internal[128];
};

// ncclResult_t, with NCCL's values.
enum class NcclResult : int {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7,  // a non-blocking communicator's call has not finished yet
};

// ncclDataType_t, with NCCL's values.
enum class NcclDataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
};

// ncclRedOp_t (the predefined ones), with NCCL's values.
enum class NcclRedOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };

// The part of ncclConfig_t ember sets; the rest keeps NCCL's defaults.
struct NcclConfig {
  bool blocking = false;  // false: calls return InProgress, poll comm_get_async_error
};

struct NcclApi {
  const char* name;  // "nccl", "fake nccl": for messages

  NcclResult (*get_unique_id)(NcclUniqueId* id);
  NcclResult (*comm_init_rank_config)(NcclComm* comm, int nranks, const NcclUniqueId& id, int rank,
                                      const NcclConfig& config);
  // The communicator's state: Success, InProgress (a non-blocking call still running) or the
  // error an asynchronous operation hit.
  NcclResult (*comm_get_async_error)(NcclComm comm, NcclResult* state);
  // Stops the communicator's work in flight and frees it; never blocks on peers.
  NcclResult (*comm_abort)(NcclComm comm);
  NcclResult (*comm_destroy)(NcclComm comm);

  // Collectives and point to point, queued on stream (a cuda stream of the communicator's
  // device). Counts are elements; all_gather's is per rank (recv holds nranks * count), and
  // reduce_scatter's is the result's (send holds nranks * count).
  NcclResult (*all_reduce)(const void* send, void* recv, size_t count, NcclDataType dtype,
                           NcclRedOp op, NcclComm comm, const Stream& stream);
  NcclResult (*broadcast)(const void* send, void* recv, size_t count, NcclDataType dtype, int root,
                          NcclComm comm, const Stream& stream);
  NcclResult (*all_gather)(const void* send, void* recv, size_t count, NcclDataType dtype,
                           NcclComm comm, const Stream& stream);
  NcclResult (*reduce_scatter)(const void* send, void* recv, size_t count, NcclDataType dtype,
                               NcclRedOp op, NcclComm comm, const Stream& stream);
  NcclResult (*send)(const void* buf, size_t count, NcclDataType dtype, int peer, NcclComm comm,
                     const Stream& stream);
  NcclResult (*recv)(void* buf, size_t count, NcclDataType dtype, int peer, NcclComm comm,
                     const Stream& stream);
  NcclResult (*group_start)();
  NcclResult (*group_end)();

  const char* (*get_error_string)(NcclResult result);
  // NCCL_VERSION code: major * 10000 + minor * 100 + patch.
  NcclResult (*get_version)(int* version);
};

// The real NCCL (libnccl, linked in EMBER_CUDA=real builds); null in sim and off builds.
const NcclApi* real_nccl_api();

// "success", "in progress", ...: NcclResult's name, for messages when no table is at hand.
const char* to_string(NcclResult result);

}  // namespace ember::dist
