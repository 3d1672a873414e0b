#pragma once
// ProcessGroupNCCL: the collectives of cuda tensors over NCCL, one GPU per process
// (torch.distributed's ProcessGroupNCCL).
//
//   auto store = std::make_shared<dist::TCPStore>(...);
//   dist::NcclOptions opts;
//   opts.timeout = std::chrono::seconds(60);
//   opts.device = local_rank;                         // this process's GPU
//   auto pg = dist::ProcessGroupNCCL::create(store, rank, world_size, opts);
//   Tensor g = ...;                                   // cuda:local_rank
//   pg->allreduce(g, dist::ReduceOp::Avg)->wait();
//
// NCCL refuses two ranks on one GPU: a machine with one GPU runs world size 1. EMBER_CUDA=sim and
// off builds have no NCCL; create() raises a clear dist::Error at once there (and in a real build
// on a machine without a GPU). The tests drive this class through a fake NCCL (Note [NCCL through
// a function table] in nccl_api.h).
//
// Note [The NCCL group's stream]
// Each group queues its NCCL work on a stream of its own. An operation is ordered after the work
// already queued on the caller's current stream (an event recorded there, which the NCCL stream
// waits for), so a gradient computed just before allreduce is complete when NCCL reads it, and the
// caller's thread never blocks. Its end event is recorded on the NCCL stream after it. Work::wait()
// blocks the calling thread until that end event has completed (the watchdog finishes the Work when
// it sees it), so everything queued afterwards, on any stream, sees the result: a synchronising
// wait, simple and always safe. NcclWork::block_current_stream() is PyTorch's non-blocking variant:
// it makes the current stream wait for the end event and returns at once. The tensors of an
// operation are marked used by the NCCL stream (record_stream), so the caching allocator never
// hands their memory to other work before NCCL is done with it, even if the caller drops them.
//
// Note [Fingerprints on the NCCL stream]
// Before each collective the ranks all-gather their 40-byte Fingerprint (Note [Collective sequence
// numbers] in process_group.h) on the NCCL stream, ahead of the data, and copy the result to pinned
// host memory. A mismatched call is itself an all-gather of the same size on every rank, so the
// exchange always completes. The watchdog compares the fingerprints as soon as they arrive: on a
// mismatch the Work fails with the Mismatch error naming both calls, and the communicator is
// aborted (the mismatched data operation queued behind it would hang or mix data). Checking on the
// watchdog, not by blocking the caller until the exchange is back, keeps collectives asynchronous:
// DDP's bucket allreduces queue back to back while backward runs.
//
// Note [The NCCL watchdog]
// Two threads watch a group. The watchdog polls the pending Works (their fingerprint and end
// events, every millisecond while one is pending), NCCL's asynchronous error state and the
// deadlines (each operation must finish within the group's timeout of being called). On an
// asynchronous error or a passed deadline it aborts the communicator (comm_abort stops NCCL's
// kernels), fails the operation with Backend (NCCL's error string) or Timeout, fails every other
// pending Work with Aborted, and marks the group failed (Note [A failed group stays failed]). The
// monitor thread talks to the store, so a slow or dead store never delays the watchdog: it
// reports this rank's failure to the peers under "<name>/abort" ("<rank>:<reason>"; the first
// report wins, compare_set), and polls that key for a peer's report, on which the group aborts
// itself with Aborted "rank R reported: <reason>". Each check runs every watchdog_interval. A
// failure with no one waiting is also printed once to stderr.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/stream.h"
#include "distributed/nccl_api.h"
#include "distributed/process_group.h"
#include "distributed/store.h"

namespace ember::dist {

struct NcclOptions {
  // The deadline of every operation, and of creating the communicator (PyTorch's default for
  // NCCL is 10 minutes; ember's store default of 5 is used here).
  std::chrono::milliseconds timeout{Store::kDefaultTimeout};
  // The NCCL to use (Note [NCCL through a function table]); null: none in this build.
  const NcclApi* api = real_nccl_api();
  // The cuda device of this rank; -1: the calling thread's current cuda device.
  int device = -1;
  // How often the watchdog checks NCCL's asynchronous error and the store's abort key (Note [The
  // NCCL watchdog]); pending events are polled every millisecond regardless.
  std::chrono::milliseconds watchdog_interval{100};
  // The prefix of the group's store keys ("<name>/unique_id", "<name>/abort"). Groups sharing a
  // store need different names.
  std::string name = "nccl";
};

// A Work of the NCCL group: finished by the watchdog when its end event has completed.
class NcclWork : public Work {
 public:
  NcclWork(std::string op, int64_t seq) : Work(std::move(op), seq) {}
  // Makes the calling thread's current stream (of the group's device) wait for the operation's
  // end, without blocking the thread (Note [The NCCL group's stream]).
  void block_current_stream() const;

 private:
  friend class ProcessGroupNCCL;
  Device device_;
  Event ready_{DeviceType::CUDA};    // on the caller's stream: the inputs are computed
  Event fp_done_{DeviceType::CUDA};  // the fingerprints have arrived in fp_host_
  Event end_{DeviceType::CUDA};      // the operation has finished
  bool has_fingerprint_ = false;
  bool fp_checked_ = false;
  Fingerprint mine_;
  Tensor fp_device_, fp_host_;
  std::chrono::steady_clock::time_point started_, deadline_;
};

class ProcessGroupNCCL final : public ProcessGroup {
 public:
  // Creates the communicator: rank 0 makes NCCL's unique id and sets it in the store, the others
  // get it (waiting up to options.timeout), then every rank creates a non-blocking communicator
  // and waits for it, up to options.timeout. Raises dist::Error: Backend when there is no NCCL
  // (sim and off builds) or no cuda device, at once; Timeout when a rank never sets the id or the
  // communicator never finishes; Backend with NCCL's message when NCCL fails.
  static std::shared_ptr<ProcessGroupNCCL> create(std::shared_ptr<Store> store, int rank, int size,
                                                  NcclOptions options = {});
  // Waits for the pending operations (each finishes, or fails at its deadline), then destroys the
  // communicator unless it was aborted.
  ~ProcessGroupNCCL() override;

  std::string backend_name() const override { return "nccl"; }
  Device device() const { return device_; }
  // The stream the group's NCCL work runs on (Note [The NCCL group's stream]).
  Stream stream() const { return stream_; }
  const NcclApi& api() const { return *api_; }
  // Aborts the communicator: pending Works fail with Aborted naming reason, the peers are told
  // through the store, and every later call raises (Note [A failed group stays failed]).
  void abort(const std::string& reason = "aborted by the user");

 protected:
  WorkPtr run(Call call) override;
  // NCCL has no tags: sends and receives between two ranks match in the order they are called,
  // and tag is ignored.
  WorkPtr run_send(const Tensor& tensor, int dst, int tag) override;
  WorkPtr run_recv(const Tensor& tensor, int src, int tag) override;
  WorkPtr run_point_to_point(const char* op, const Tensor& tensor, int peer);
  DeviceType device_type() const override { return DeviceType::CUDA; }

 private:
  struct Private {};

 public:
  ProcessGroupNCCL(Private, std::shared_ptr<Store> store, int rank, int size, NcclOptions options,
                   int device);

 private:
  void init_communicator();
  // Checks a result of an op call; polls InProgress until done (bounded by the work's deadline).
  void check(NcclResult r, const char* call, const std::shared_ptr<NcclWork>& work);
  void check_device(const char* op, const Tensor& t) const;
  std::shared_ptr<NcclWork> begin(const std::string& op, int64_t seq);
  void enqueue(const std::shared_ptr<NcclWork>& work, const std::vector<Tensor>& tensors);
  void exchange_fingerprint(const std::shared_ptr<NcclWork>& work);
  // Compares a Work's gathered fingerprints; aborts on a mismatch (returns false then).
  bool check_work_fingerprints(const std::shared_ptr<NcclWork>& work);
  // Aborts the communicator and fails the pending Works: `first` (may be null) with error, the
  // others with Aborted. Reports to the peers unless `report` is false.
  void abort_with(const std::shared_ptr<NcclWork>& first, const std::exception_ptr& error,
                  const std::string& reason, bool report);
  void watchdog_loop();
  void monitor_loop();
  std::string abort_key() const { return options_.name + "/abort"; }

  std::shared_ptr<Store> store_;
  NcclOptions options_;
  const NcclApi* api_;
  Device device_;
  Stream stream_;

  std::mutex comm_mutex_;  // NCCL calls on the communicator (the caller's and abort's)
  NcclComm comm_ = nullptr;
  std::atomic<bool> aborting_{false};  // abort_with has begun (it runs once)

  std::mutex mutex_;  // everything below
  std::condition_variable wake_;
  std::deque<std::shared_ptr<NcclWork>> pending_;
  bool aborted_ = false;         // abort_with has taken the pending Works
  std::string abort_text_;       // the error it aborted with
  bool stop_ = false;            // the watchdog ends once nothing is pending
  bool stop_monitor_ = false;    // the monitor ends once it has set the pending report
  std::vector<Tensor> staging_;  // pinned fingerprint buffers of finished Works, for reuse
  std::string report_;           // for the monitor to set in the store
  std::string peer_report_;      // what a peer reported (the monitor found the abort key)
  std::thread watchdog_, monitor_;
};

}  // namespace ember::dist
