#pragma once
// StoreGroup: a test-only ProcessGroup whose collectives go through a Store (a FileStore shared
// by the ranks of a dist_tests run). Each collective #s: every rank sets its fingerprint and
// bytes under "sg/<s>/<rank>", waits for all ranks' keys (the group's timeout), checks the
// fingerprints, and reduces locally in rank order -- slow, but exact and the same on every
// rank. One worker thread runs the calls in order, so Work completes asynchronously as with a
// real backend. allreduce (sum, avg), broadcast, allgather and barrier; the rest raise a
// Usage error. It lets DDP and SyncBatchNorm be tested independently of the Gloo backend.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "distributed/process_group.h"
#include "distributed/store.h"

namespace ember::dist_test {

class StoreGroup : public dist::ProcessGroup {
 public:
  StoreGroup(std::shared_ptr<dist::Store> store, int rank, int size,
             std::chrono::milliseconds timeout);
  ~StoreGroup() override;
  std::string backend_name() const override { return "store"; }

 protected:
  dist::WorkPtr run(Call call) override;
  dist::WorkPtr run_send(const Tensor& tensor, int dst, int tag) override;
  dist::WorkPtr run_recv(const Tensor& tensor, int src, int tag) override;
  DeviceType device_type() const override { return DeviceType::CPU; }

 private:
  struct Job {
    Call call;
    dist::WorkPtr work;
  };
  void loop();
  void execute(const Call& call);

  std::shared_ptr<dist::Store> store_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ember::dist_test
