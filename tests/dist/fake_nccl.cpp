#include "fake_nccl.h"

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#if defined(EMBER_WITH_CUDA)  // a build with a CUDA backend (the tests skip without one)
#include "kernels/cuda/runtime.h"
#endif
#if defined(EMBER_CUDA_SIM)
#include "kernels/cuda/sim/runtime.h"
#endif

namespace ember::dist_test::fake_nccl {

using dist::NcclComm;
using dist::NcclDataType;
using dist::NcclRedOp;
using dist::NcclResult;

const char* const kAsyncErrorString = "fake nccl: injected asynchronous error (a peer went away)";

namespace {

// Work blocking a stream until opened.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
};

struct FakeComm {
  int polls_left = 0;
  bool init_hangs = false;
  bool aborted = false;
  std::vector<std::shared_ptr<Gate>> gates;  // its hung work
};

struct State {
  std::mutex mutex;
  Faults faults;
  Stats stats;
  bool hung_once = false;
  std::vector<std::unique_ptr<FakeComm>> comms;  // kept until reset: handles stay valid
};

State& state() {
  static State* s = new State;  // never destroyed: hung stream work may outlive main()
  return *s;
}

FakeComm* of(NcclComm c) { return reinterpret_cast<FakeComm*>(c); }

size_t element_size(NcclDataType d) {
  switch (d) {
    case NcclDataType::Int8:
    case NcclDataType::Uint8:
      return 1;
    case NcclDataType::Float16:
    case NcclDataType::Bfloat16:
      return 2;
    case NcclDataType::Int32:
    case NcclDataType::Uint32:
    case NcclDataType::Float32:
      return 4;
    case NcclDataType::Int64:
    case NcclDataType::Uint64:
    case NcclDataType::Float64:
      return 8;
  }
  return 0;
}

// Queues work on stream that blocks it until the gate opens (false: this build cannot).
bool queue_gate(FakeComm* comm, const Stream& stream) {
#if defined(EMBER_CUDA_SIM)
  auto gate = std::make_shared<Gate>();
  comm->gates.push_back(gate);
  sim::enqueue(static_cast<sim::Stream*>(kernels::cuda::native_stream(stream)),
               [gate] { gate->wait(); });
  return true;
#else
  (void)comm;
  (void)stream;
  return false;
#endif
}

// The common part of every op: counts it, and hangs it when a fault says so.
NcclResult op(const char* name, int* counter, NcclComm c, const Stream& stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeComm* comm = of(c);
  if (!comm || comm->aborted) return NcclResult::InvalidUsage;
  ++*counter;
  ++s.stats.ops;
  bool hang = false;
  if (s.faults.async_error_after >= 0 && s.stats.ops > s.faults.async_error_after) hang = true;
  if (!s.faults.hang_op.empty() && s.faults.hang_op == name && !s.hung_once) {
    s.hung_once = true;
    hang = true;
  }
  if (hang && !queue_gate(comm, stream)) return NcclResult::InternalError;
  return NcclResult::Success;
}

void copy(void* recv, const void* send, size_t bytes, const Stream& stream) {
  if (recv == send || bytes == 0) return;
#if defined(EMBER_WITH_CUDA)
  kernels::cuda::memcpy_async(recv, send, bytes, kernels::cuda::native_stream(stream), "fake nccl");
#else
  (void)stream;
#endif
}

void set_byte(void* p, int value, const Stream& stream) {
#if defined(EMBER_WITH_CUDA)
  kernels::cuda::memset_async(p, value, 1, kernels::cuda::native_stream(stream), "fake nccl");
#else
  (void)p;
  (void)value;
  (void)stream;
#endif
}

NcclResult get_unique_id(dist::NcclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  std::memcpy(id->internal, "fake-nccl", 9);
  return NcclResult::Success;
}

NcclResult comm_init_rank_config(NcclComm* out, int nranks, const dist::NcclUniqueId& id, int rank,
                                 const dist::NcclConfig& config) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = nullptr;
  if (nranks != 1 || rank != 0 || std::memcmp(id.internal, "fake-nccl", 9) != 0) {
    return NcclResult::InvalidArgument;  // the fake is world size 1
  }
  auto comm = std::make_unique<FakeComm>();
  comm->polls_left = config.blocking ? 0 : s.faults.init_polls;
  comm->init_hangs = s.faults.init_never_finishes;
  *out = reinterpret_cast<NcclComm>(comm.get());
  s.comms.push_back(std::move(comm));
  ++s.stats.inits;
  return config.blocking ? NcclResult::Success : NcclResult::InProgress;
}

NcclResult comm_get_async_error(NcclComm c, NcclResult* result) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeComm* comm = of(c);
  if (!comm || comm->aborted) return NcclResult::InvalidUsage;
  if (comm->init_hangs) {
    *result = NcclResult::InProgress;
  } else if (comm->polls_left > 0) {
    --comm->polls_left;
    *result = NcclResult::InProgress;
  } else if (s.faults.async_error_after >= 0 && s.stats.ops > s.faults.async_error_after) {
    *result = NcclResult::SystemError;
  } else {
    *result = NcclResult::Success;
  }
  return NcclResult::Success;
}

NcclResult comm_abort(NcclComm c) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeComm* comm = of(c);
  if (!comm || comm->aborted) return NcclResult::InvalidUsage;
  comm->aborted = true;
  for (auto& g : comm->gates) g->release();  // as ncclCommAbort stops NCCL's kernels
  ++s.stats.aborts;
  return NcclResult::Success;
}

NcclResult comm_destroy(NcclComm c) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  FakeComm* comm = of(c);
  if (!comm || comm->aborted) return NcclResult::InvalidUsage;
  comm->aborted = true;
  ++s.stats.destroys;
  return NcclResult::Success;
}

// The ops: counted (and hung, when a fault says so) first, then the copy a world of one makes.
NcclResult all_reduce(const void* send, void* recv, size_t count, NcclDataType dtype, NcclRedOp,
                      NcclComm comm, const Stream& stream) {
  const NcclResult r = op("all_reduce", &state().stats.all_reduce, comm, stream);
  // One rank: every reduction (avg divides by 1) is the input.
  if (r == NcclResult::Success) copy(recv, send, count * element_size(dtype), stream);
  return r;
}

NcclResult broadcast(const void* send, void* recv, size_t count, NcclDataType dtype, int root,
                     NcclComm comm, const Stream& stream) {
  if (root != 0) return NcclResult::InvalidArgument;
  const NcclResult r = op("broadcast", &state().stats.broadcast, comm, stream);
  if (r == NcclResult::Success) copy(recv, send, count * element_size(dtype), stream);
  return r;
}

NcclResult all_gather(const void* send, void* recv, size_t count, NcclDataType dtype, NcclComm comm,
                      const Stream& stream) {
  const NcclResult r = op("all_gather", &state().stats.all_gather, comm, stream);
  if (r != NcclResult::Success) return r;
  copy(recv, send, count * element_size(dtype), stream);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.stats.all_gather == s.faults.corrupt_all_gather && count * element_size(dtype) > 8) {
    set_byte(static_cast<char*>(recv) + 8, 1, stream);
  }
  return r;
}

NcclResult reduce_scatter(const void* send, void* recv, size_t count, NcclDataType dtype, NcclRedOp,
                          NcclComm comm, const Stream& stream) {
  const NcclResult r = op("reduce_scatter", &state().stats.reduce_scatter, comm, stream);
  if (r == NcclResult::Success) copy(recv, send, count * element_size(dtype), stream);
  return r;
}

NcclResult send(const void*, size_t, NcclDataType, int, NcclComm, const Stream&) {
  return NcclResult::InvalidArgument;  // no peer in a world of one
}

NcclResult recv(void*, size_t, NcclDataType, int, NcclComm, const Stream&) {
  return NcclResult::InvalidArgument;
}

NcclResult group_start() {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().stats.groups;
  return NcclResult::Success;
}

NcclResult group_end() { return NcclResult::Success; }

const char* get_error_string(NcclResult r) {
  if (r == NcclResult::SystemError) return kAsyncErrorString;
  return dist::to_string(r);
}

NcclResult get_version(int* version) {
  *version = 22809;
  return NcclResult::Success;
}

const dist::NcclApi kFake = {
    "fake nccl",          get_unique_id, comm_init_rank_config,
    comm_get_async_error, comm_abort,    comm_destroy,
    all_reduce,           broadcast,     all_gather,
    reduce_scatter,       send,          recv,
    group_start,          group_end,     get_error_string,
    get_version,
};

}  // namespace

void reset(const Faults& faults) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& c : s.comms) {
    for (auto& g : c->gates) g->release();
  }
  // Communicators of earlier cases stay allocated (a group may still poll them while it shuts
  // down); they are small.
  for (auto& c : s.comms) c->gates.clear();
  s.faults = faults;
  s.stats = Stats{};
  s.hung_once = false;
}

const dist::NcclApi* api() { return &kFake; }

Stats stats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

std::function<void()> block(const Stream& stream) {
#if defined(EMBER_CUDA_SIM)
  auto gate = std::make_shared<Gate>();
  sim::enqueue(static_cast<sim::Stream*>(kernels::cuda::native_stream(stream)),
               [gate] { gate->wait(); });
  return [gate] { gate->release(); };
#else
  (void)stream;
  return [] {};
#endif
}

bool can_hang() {
#if defined(EMBER_CUDA_SIM)
  return true;
#else
  return false;
#endif
}

}  // namespace ember::dist_test::fake_nccl
