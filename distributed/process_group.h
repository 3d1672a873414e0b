#pragma once
// ProcessGroup: the collectives of `size` ranks (torch.distributed.ProcessGroup), and Work, the
// handle of one operation in flight. A backend (Gloo for CPU tensors, process_group_gloo.h;
// NCCL for cuda tensors, process_group_nccl.h) implements them; this base class gives every
// backend the same argument checks, sequence numbers and failure state.
//
//   auto pg = dist::ProcessGroupGloo::create(store, rank, world_size, opts);
//   Tensor g = ...;                                   // the same shape and dtype on every rank
//   pg->allreduce(g, dist::ReduceOp::Avg)->wait();    // g is now the mean over the ranks
//   auto w = pg->broadcast(params, /*root=*/0);       // asynchronous: do other work, then
//   w->wait();                                        // raises dist::Error if it failed
//
// Every collective works in place on contiguous tensors of the backend's device and returns at
// once; the operations of one group run in the order they were called. Tensors passed to an
// operation must not be touched until its Work completes (the Work keeps them alive).
//
// Note [Collective sequence numbers]
// Each collective of a group gets the next sequence number (1, 2, ...). Before its data moves,
// the ranks exchange a fingerprint of the call -- sequence number, op, dtype, element count,
// root, reduction -- and compare them. A rank that calls broadcast where its peers call
// allreduce, or the same op with another size, gets a dist::Error of kind Mismatch naming both
// calls ("this rank called allreduce #7 [float32, 1024 elements], rank 0 called broadcast #7
// [float32, 1024 elements]") on every rank, instead of a hang or garbage. The exchange is one
// small extra message per collective (measured in bench/bench_dist.cpp). Point-to-point send
// and recv are not collectives: they carry a tag, and are not numbered.
//
// Note [A failed group stays failed]
// When an operation fails (timeout, a lost peer, an abort, a mismatch), its Work raises the error
// and the group is marked failed: every later call on it raises a dist::Error of kind Aborted
// that quotes the first failure. A communicator that lost a peer mid-collective cannot be
// trusted again; a job recovers by restarting its processes (ember-run --max-restarts).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/error.h"

namespace ember::dist {

enum class ReduceOp { Sum, Avg, Min, Max, Product };
const char* to_string(ReduceOp op);

// The handle of one operation (torch.distributed.Work).
class Work {
 public:
  Work(std::string op, int64_t seq);
  virtual ~Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Whether the operation has finished (successfully or not). Never blocks.
  bool is_completed() const;
  // Blocks until the operation finishes and raises its error if it failed. With a timeout,
  // raises a Timeout dist::Error when it has not finished by then (the operation itself still
  // runs under the group's own timeout). Returns once it succeeded.
  void wait();
  void wait(std::chrono::milliseconds timeout);
  // The error it failed with (null while running or after success).
  std::exception_ptr exception() const;

  const std::string& op() const { return op_; }
  int64_t seq() const { return seq_; }

  // For backends: marks the operation finished, with the error it failed with, if any. Wakes
  // every waiter. Only the first call counts.
  void finish(std::exception_ptr error = nullptr);
  // Tensors the operation reads or writes: kept alive until the Work is destroyed.
  void keep_alive(std::vector<Tensor> tensors) { tensors_ = std::move(tensors); }

 private:
  std::string op_;
  int64_t seq_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<Tensor> tensors_;
};

using WorkPtr = std::shared_ptr<Work>;

// What a collective is, as the ranks compare it (Note [Collective sequence numbers]).
enum class OpKind : int32_t { Allreduce, Broadcast, Allgather, ReduceScatter, Barrier };
const char* to_string(OpKind op);
// The profiler's name of a collective run by a backend ("gloo:allreduce", "nccl:allreduce"):
// a string with static storage, for core/record_function.h. `backend` is "gloo" or "nccl".
const char* profiler_name(OpKind op, const char* backend);

struct Fingerprint {
  int64_t seq = 0;
  int32_t op = 0;          // OpKind
  int32_t dtype = -1;      // DType, -1 for barrier
  int64_t numel = 0;       // elements of the (per-rank) tensor
  int32_t root = -1;       // broadcast's root
  int32_t reduce_op = -1;  // ReduceOp, for allreduce and reduce_scatter
  int32_t rank = -1;       // who sent it
  int32_t pad = 0;
};
static_assert(sizeof(Fingerprint) == 40, "Fingerprint is exchanged as raw bytes");
std::string describe(const Fingerprint& f);  // "allreduce #7 [float32, 1024 elements, sum]"

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, std::chrono::milliseconds timeout);
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  virtual std::string backend_name() const = 0;  // "gloo", "nccl"

  // tensor: the same shape and dtype on every rank; becomes the reduction over all ranks (Avg:
  // the sum divided by size(), in the tensor's dtype).
  WorkPtr allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  // tensor: root's values are copied into every rank's tensor.
  WorkPtr broadcast(const Tensor& tensor, int root);
  // outputs: size() tensors shaped like input; outputs[r] receives rank r's input.
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input);
  // inputs: size() tensors shaped like output; output receives the reduction over the ranks of
  // their inputs[rank()].
  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                         ReduceOp op = ReduceOp::Sum);
  // Completes once every rank has called it.
  WorkPtr barrier();
  // Point to point: tensor goes to rank dst / is filled from rank src; the tags must match.
  WorkPtr send(const Tensor& tensor, int dst, int tag = 0);
  WorkPtr recv(const Tensor& tensor, int src, int tag = 0);

  // Note [A failed group stays failed]: the first failure, or null.
  std::exception_ptr failure() const;
  bool failed() const { return failure() != nullptr; }
  // The sequence number of the last collective called (0 before the first).
  int64_t seq() const { return seq_; }

 protected:
  // One collective, checked and numbered, for the backend to run.
  struct Call {
    Fingerprint fingerprint;
    OpKind kind = OpKind::Barrier;
    ReduceOp reduce = ReduceOp::Sum;
    int root = -1;
    Tensor tensor;                // allreduce, broadcast: in place; allgather: the input;
                                  // reduce_scatter: the output
    std::vector<Tensor> tensors;  // allgather: the outputs; reduce_scatter: the inputs
  };
  // Starts a checked collective; the backend exchanges the fingerprints (check_fingerprints)
  // before moving data, and finishes the returned Work (through fail() on an error).
  virtual WorkPtr run(Call call) = 0;
  virtual WorkPtr run_send(const Tensor& tensor, int dst, int tag) = 0;
  virtual WorkPtr run_recv(const Tensor& tensor, int src, int tag) = 0;
  // The device type this backend's tensors live on.
  virtual DeviceType device_type() const = 0;

  // Compares this rank's fingerprint with all ranks' (indexed by rank); raises the Mismatch
  // dist::Error naming the first rank that differs.
  void check_fingerprints(const Fingerprint& mine, const std::vector<Fingerprint>& all) const;
  // Records the first failure (Note [A failed group stays failed]) and finishes work with it.
  void fail(const WorkPtr& work, std::exception_ptr error);
  // Raises the Aborted error when the group has failed.
  void throw_if_failed(const char* op) const;
  // An error about this group: fills in rank and size.
  Error error(ErrorKind kind, const std::string& op, int64_t seq, int peer, double elapsed,
              const std::string& detail) const;

 private:
  void check_tensor(const char* op, const Tensor& t, const char* what) const;
  WorkPtr start(Call call);

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  int64_t seq_ = 0;
  mutable std::mutex failure_mutex_;
  std::exception_ptr failure_;
  std::string failure_text_;
};

}  // namespace ember::dist
