#include "store_group.h"

#include <cstring>

#include "autograd/grad_mode.h"

namespace ember::dist_test {

StoreGroup::StoreGroup(std::shared_ptr<dist::Store> store, int rank, int size,
                       std::chrono::milliseconds timeout)
    : ProcessGroup(rank, size, timeout), store_(std::move(store)) {
  thread_ = std::thread([this] { loop(); });
}

StoreGroup::~StoreGroup() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

dist::WorkPtr StoreGroup::run(Call call) {
  auto work = std::make_shared<dist::Work>(to_string(call.kind), call.fingerprint.seq);
  std::vector<Tensor> keep{call.tensor};
  keep.insert(keep.end(), call.tensors.begin(), call.tensors.end());
  work->keep_alive(std::move(keep));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Job{std::move(call), work});
  }
  cv_.notify_all();
  return work;
}

dist::WorkPtr StoreGroup::run_send(const Tensor&, int dst, int) {
  throw error(dist::ErrorKind::Usage, "send", -1, dst, -1, "the test store group has no send");
}

dist::WorkPtr StoreGroup::run_recv(const Tensor&, int src, int) {
  throw error(dist::ErrorKind::Usage, "recv", -1, src, -1, "the test store group has no recv");
}

void StoreGroup::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (failed()) {
      try {
        throw_if_failed(job.work->op().c_str());
      } catch (...) {
        job.work->finish(std::current_exception());
      }
      continue;
    }
    try {
      execute(job.call);
      job.work->finish();
    } catch (...) {
      fail(job.work, std::current_exception());
    }
  }
}

namespace {
void copy_bytes(const Tensor& dst, const dist::Bytes& src, size_t offset) {
  EMBER_CHECK(src.size() == offset + dst.nbytes(), "store group: got ", src.size() - offset,
              " bytes for a tensor of ", dst.nbytes());
  if (dst.nbytes() > 0) std::memcpy(dst.data_ptr(), src.data() + offset, dst.nbytes());
}
}  // namespace

void StoreGroup::execute(const Call& call) {
  const dist::Fingerprint& mine = call.fingerprint;
  const std::string prefix = "sg/" + std::to_string(mine.seq) + "/";
  dist::Bytes out(sizeof(dist::Fingerprint));
  std::memcpy(out.data(), &mine, sizeof mine);
  const Tensor& t = call.tensor;
  if (t.defined() && call.kind != dist::OpKind::Broadcast) {
    const auto* p = static_cast<const uint8_t*>(t.nbytes() > 0 ? t.data_ptr() : nullptr);
    out.insert(out.end(), p, p + t.nbytes());
  } else if (t.defined() && call.root == rank()) {
    const auto* p = static_cast<const uint8_t*>(t.nbytes() > 0 ? t.data_ptr() : nullptr);
    out.insert(out.end(), p, p + t.nbytes());
  }
  store_->set(prefix + std::to_string(rank()), out);
  std::vector<std::string> keys;
  for (int r = 0; r < size(); ++r) keys.push_back(prefix + std::to_string(r));
  store_->wait(keys, timeout());
  std::vector<dist::Bytes> all;
  std::vector<dist::Fingerprint> prints(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) {
    all.push_back(store_->get(keys[static_cast<size_t>(r)]));
    std::memcpy(&prints[static_cast<size_t>(r)], all.back().data(), sizeof(dist::Fingerprint));
  }
  check_fingerprints(mine, prints);
  const size_t off = sizeof(dist::Fingerprint);
  autograd::NoGradGuard no_grad;
  switch (call.kind) {
    case dist::OpKind::Barrier:
      return;
    case dist::OpKind::Broadcast:
      if (call.root != rank()) copy_bytes(t, all[static_cast<size_t>(call.root)], off);
      return;
    case dist::OpKind::Allgather:
      for (int r = 0; r < size(); ++r)
        copy_bytes(call.tensors[static_cast<size_t>(r)], all[static_cast<size_t>(r)], off);
      return;
    case dist::OpKind::Allreduce: {
      if (call.reduce != dist::ReduceOp::Sum && call.reduce != dist::ReduceOp::Avg) {
        throw error(dist::ErrorKind::Usage, "allreduce", mine.seq, -1, -1,
                    "the test store group reduces with sum and avg only");
      }
      // In rank order, so that every rank computes the same bits.
      Tensor part = t.clone();
      copy_bytes(t, all[0], off);
      for (int r = 1; r < size(); ++r) {
        copy_bytes(part, all[static_cast<size_t>(r)], off);
        t.add_(part);
      }
      if (call.reduce == dist::ReduceOp::Avg) t.div_(static_cast<double>(size()));
      return;
    }
    case dist::OpKind::ReduceScatter:
      break;
  }
  throw error(dist::ErrorKind::Usage, to_string(call.kind), mine.seq, -1, -1,
              "the test store group does not implement it");
}

}  // namespace ember::dist_test
