// The real NCCL behind NcclApi (Note [NCCL through a function table] in nccl_api.h). Compiled in
// EMBER_CUDA=real builds only (EMBER_WITH_NCCL; in the others this file is empty), and the one
// file of ember that includes nccl.h.
#if defined(EMBER_WITH_NCCL)

#include <nccl.h>

#include "distributed/nccl_api.h"
#include "kernels/cuda/runtime.h"  // native_stream: ember's Stream -> cudaStream_t

namespace ember::dist {
namespace {

// The mirror types in nccl_api.h carry NCCL's values, so converting is a cast.
static_assert(sizeof(NcclUniqueId) == sizeof(ncclUniqueId), "ncclUniqueId is 128 bytes");
static_assert(static_cast<int>(NcclResult::Success) == ncclSuccess &&
                  static_cast<int>(NcclResult::UnhandledCudaError) == ncclUnhandledCudaError &&
                  static_cast<int>(NcclResult::SystemError) == ncclSystemError &&
                  static_cast<int>(NcclResult::InternalError) == ncclInternalError &&
                  static_cast<int>(NcclResult::InvalidArgument) == ncclInvalidArgument &&
                  static_cast<int>(NcclResult::InvalidUsage) == ncclInvalidUsage &&
                  static_cast<int>(NcclResult::RemoteError) == ncclRemoteError &&
                  static_cast<int>(NcclResult::InProgress) == ncclInProgress,
              "NcclResult mirrors ncclResult_t");
static_assert(static_cast<int>(NcclDataType::Int8) == ncclInt8 &&
                  static_cast<int>(NcclDataType::Uint8) == ncclUint8 &&
                  static_cast<int>(NcclDataType::Int32) == ncclInt32 &&
                  static_cast<int>(NcclDataType::Uint32) == ncclUint32 &&
                  static_cast<int>(NcclDataType::Int64) == ncclInt64 &&
                  static_cast<int>(NcclDataType::Uint64) == ncclUint64 &&
                  static_cast<int>(NcclDataType::Float16) == ncclFloat16 &&
                  static_cast<int>(NcclDataType::Float32) == ncclFloat32 &&
                  static_cast<int>(NcclDataType::Float64) == ncclFloat64 &&
                  static_cast<int>(NcclDataType::Bfloat16) == ncclBfloat16,
              "NcclDataType mirrors ncclDataType_t");
static_assert(static_cast<int>(NcclRedOp::Sum) == ncclSum &&
                  static_cast<int>(NcclRedOp::Prod) == ncclProd &&
                  static_cast<int>(NcclRedOp::Max) == ncclMax &&
                  static_cast<int>(NcclRedOp::Min) == ncclMin &&
                  static_cast<int>(NcclRedOp::Avg) == ncclAvg,
              "NcclRedOp mirrors ncclRedOp_t");

NcclResult res(ncclResult_t r) { return static_cast<NcclResult>(r); }
ncclComm_t comm_of(NcclComm c) { return reinterpret_cast<ncclComm_t>(c); }
ncclDataType_t dt(NcclDataType d) { return static_cast<ncclDataType_t>(d); }
ncclRedOp_t red(NcclRedOp o) { return static_cast<ncclRedOp_t>(o); }
cudaStream_t stream_of(const Stream& s) {
  return static_cast<cudaStream_t>(kernels::cuda::native_stream(s));
}

NcclResult get_unique_id(NcclUniqueId* id) {
  return res(ncclGetUniqueId(reinterpret_cast<ncclUniqueId*>(id)));
}

NcclResult comm_init_rank_config(NcclComm* comm, int nranks, const NcclUniqueId& id, int rank,
                                 const NcclConfig& config) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.blocking = config.blocking ? 1 : 0;
  ncclUniqueId uid;
  static_assert(sizeof(uid.internal) == sizeof(id.internal), "same size");
  for (size_t i = 0; i < sizeof(uid.internal); ++i) uid.internal[i] = id.internal[i];
  ncclComm_t out = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&out, nranks, uid, rank, &c);
  *comm = reinterpret_cast<NcclComm>(out);
  return res(r);
}

NcclResult comm_get_async_error(NcclComm comm, NcclResult* state) {
  ncclResult_t s = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_of(comm), &s);
  *state = res(s);
  return res(r);
}

NcclResult comm_abort(NcclComm comm) { return res(ncclCommAbort(comm_of(comm))); }
NcclResult comm_destroy(NcclComm comm) { return res(ncclCommDestroy(comm_of(comm))); }

NcclResult all_reduce(const void* send, void* recv, size_t count, NcclDataType dtype, NcclRedOp op,
                      NcclComm comm, const Stream& stream) {
  return res(
      ncclAllReduce(send, recv, count, dt(dtype), red(op), comm_of(comm), stream_of(stream)));
}

NcclResult broadcast(const void* send, void* recv, size_t count, NcclDataType dtype, int root,
                     NcclComm comm, const Stream& stream) {
  return res(ncclBroadcast(send, recv, count, dt(dtype), root, comm_of(comm), stream_of(stream)));
}

NcclResult all_gather(const void* send, void* recv, size_t count, NcclDataType dtype, NcclComm comm,
                      const Stream& stream) {
  return res(ncclAllGather(send, recv, count, dt(dtype), comm_of(comm), stream_of(stream)));
}

NcclResult reduce_scatter(const void* send, void* recv, size_t count, NcclDataType dtype,
                          NcclRedOp op, NcclComm comm, const Stream& stream) {
  return res(
      ncclReduceScatter(send, recv, count, dt(dtype), red(op), comm_of(comm), stream_of(stream)));
}

NcclResult send(const void* buf, size_t count, NcclDataType dtype, int peer, NcclComm comm,
                const Stream& stream) {
  return res(ncclSend(buf, count, dt(dtype), peer, comm_of(comm), stream_of(stream)));
}

NcclResult recv(void* buf, size_t count, NcclDataType dtype, int peer, NcclComm comm,
                const Stream& stream) {
  return res(ncclRecv(buf, count, dt(dtype), peer, comm_of(comm), stream_of(stream)));
}

NcclResult group_start() { return res(ncclGroupStart()); }
NcclResult group_end() { return res(ncclGroupEnd()); }

const char* get_error_string(NcclResult r) {
  return ncclGetErrorString(static_cast<ncclResult_t>(r));
}

NcclResult get_version(int* version) { return res(ncclGetVersion(version)); }

const NcclApi kRealNccl = {
    "nccl",
    get_unique_id,
    comm_init_rank_config,
    comm_get_async_error,
    comm_abort,
    comm_destroy,
    all_reduce,
    broadcast,
    all_gather,
    reduce_scatter,
    send,
    recv,
    group_start,
    group_end,
    get_error_string,
    get_version,
};

}  // namespace

const NcclApi* real_nccl_api() { return &kRealNccl; }

}  // namespace ember::dist

#endif  // EMBER_WITH_NCCL
