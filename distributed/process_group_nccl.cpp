#include "distributed/process_group_nccl.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/allocator.h"
#include "core/cuda.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/profiler.h"

namespace ember::dist {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

const char* build_mode() {
  if (!cuda_is_built()) return "off";
  return cuda::is_simulated() ? "sim" : "real";
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an unknown exception";
  }
}

NcclDataType nccl_dtype(DType d, const char* op, int rank, int size) {
  switch (d) {
    case DType::Bool:
    case DType::UInt8:
      return NcclDataType::Uint8;
    case DType::Int8:
      return NcclDataType::Int8;
    case DType::Int32:
      return NcclDataType::Int32;
    case DType::Int64:
      return NcclDataType::Int64;
    case DType::Float16:
      return NcclDataType::Float16;
    case DType::BFloat16:
      return NcclDataType::Bfloat16;
    case DType::Float32:
      return NcclDataType::Float32;
    case DType::Float64:
      return NcclDataType::Float64;
    case DType::Int16:
      break;
  }
  throw Error(ErrorKind::Usage, op, -1, -1, -1,
              std::string("NCCL has no ") + dtype_name(d) + " type (cast the tensor first)", rank,
              size);
}

// bool tensors travel as uint8: their sum is a logical or (max), their product an and (min).
NcclRedOp nccl_op(ReduceOp op, DType d, const char* name, int rank, int size) {
  if (d == DType::Bool) {
    if (op == ReduceOp::Avg) {
      throw Error(ErrorKind::Usage, name, -1, -1, -1, "avg of bool tensors is not defined", rank,
                  size);
    }
    if (op == ReduceOp::Sum) return NcclRedOp::Max;
    if (op == ReduceOp::Product) return NcclRedOp::Min;
  }
  switch (op) {
    case ReduceOp::Sum:
      return NcclRedOp::Sum;
    case ReduceOp::Avg:
      return NcclRedOp::Avg;
    case ReduceOp::Min:
      return NcclRedOp::Min;
    case ReduceOp::Max:
      return NcclRedOp::Max;
    case ReduceOp::Product:
      return NcclRedOp::Prod;
  }
  return NcclRedOp::Sum;
}

constexpr size_t kFp = sizeof(Fingerprint);

}  // namespace

void NcclWork::block_current_stream() const { end_.block(current_stream(device_)); }

// ---- creation ------------------------------------------------------------------------------

std::shared_ptr<ProcessGroupNCCL> ProcessGroupNCCL::create(std::shared_ptr<Store> store, int rank,
                                                           int size, NcclOptions options) {
  const char* op = "ProcessGroupNCCL";
  if (!options.api) {
    throw Error(ErrorKind::Backend, op, -1, -1, -1,
                std::string("NCCL is not in this build (EMBER_CUDA=") + build_mode() +
                    "): the NCCL backend needs EMBER_CUDA=real; use the Gloo backend "
                    "(ProcessGroupGloo) for cpu tensors",
                rank, size);
  }
  const int devices = cuda::device_count();
  if (devices == 0) {
    throw Error(ErrorKind::Backend, op, -1, -1, -1,
                std::string("no CUDA device: ") +
                    (cuda_is_built() ? "no CUDA-capable device is available on this machine"
                                     : "ember was built without CUDA (EMBER_CUDA=off)") +
                    ", and NCCL needs one GPU per rank",
                rank, size);
  }
  if (!store) throw Error(ErrorKind::Usage, op, -1, -1, -1, "the store is null", rank, size);
  if (options.watchdog_interval.count() <= 0) {
    throw Error(ErrorKind::Usage, op, -1, -1, -1,
                "the watchdog interval must be positive, got " + ms_text(options.watchdog_interval),
                rank, size);
  }
  const int device = options.device < 0 ? cuda::current_device() : options.device;
  if (device >= devices) {
    throw Error(ErrorKind::Usage, op, -1, -1, -1,
                "device cuda:" + std::to_string(device) + " does not exist (" +
                    std::to_string(devices) + " cuda devices)",
                rank, size);
  }
  return std::make_shared<ProcessGroupNCCL>(Private{}, std::move(store), rank, size,
                                            std::move(options), device);
}

ProcessGroupNCCL::ProcessGroupNCCL(Private, std::shared_ptr<Store> store, int rank, int size,
                                   NcclOptions options, int device)
    : ProcessGroup(rank, size, options.timeout),
      store_(std::move(store)),
      options_(std::move(options)),
      api_(options_.api),
      device_(Device::cuda(device)),
      stream_(new_stream(device_)) {
  init_communicator();
  watchdog_ = std::thread([this] { watchdog_loop(); });
  monitor_ = std::thread([this] { monitor_loop(); });
}

void ProcessGroupNCCL::init_communicator() {
  const char* op = "ProcessGroupNCCL";
  const auto start = Clock::now();
  const auto deadline = start + options_.timeout;
  const std::string key = options_.name + "/unique_id";
  NcclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank() == 0) {
    const NcclResult r = api_->get_unique_id(&id);
    if (r != NcclResult::Success) {
      throw error(ErrorKind::Backend, op, -1, -1, seconds_since(start),
                  std::string("ncclGetUniqueId failed: ") + api_->get_error_string(r));
    }
    const auto* p = reinterpret_cast<const uint8_t*>(&id);
    store_->set(key, Bytes(p, p + sizeof(id)));
  } else {
    Bytes b;
    try {
      store_->wait({key}, options_.timeout);
      b = store_->get(key);
    } catch (const Error& e) {
      throw error(e.kind(), op, -1, 0, seconds_since(start),
                  "rank 0 did not publish NCCL's unique id ('" + key + "') within " +
                      ms_text(options_.timeout) + " (" + e.what() + ")");
    }
    if (b.size() != sizeof(id)) {
      throw error(ErrorKind::Backend, op, -1, 0, seconds_since(start),
                  "the unique id under '" + key + "' has " + std::to_string(b.size()) +
                      " bytes, expected " + std::to_string(sizeof(id)));
    }
    std::memcpy(&id, b.data(), sizeof(id));
  }

  DeviceGuard guard(device_);
  NcclComm comm = nullptr;
  NcclConfig config;
  config.blocking = false;
  NcclResult r = api_->comm_init_rank_config(&comm, size(), id, rank(), config);
  const auto give_up = [&](ErrorKind kind, const std::string& detail) {
    if (comm) api_->comm_abort(comm);
    throw error(kind, op, -1, -1, seconds_since(start), detail);
  };
  if (r != NcclResult::Success && r != NcclResult::InProgress) {
    give_up(ErrorKind::Backend,
            std::string("ncclCommInitRankConfig failed: ") + api_->get_error_string(r));
  }
  // Note [The NCCL watchdog]: a non-blocking communicator is ready when its state is Success.
  for (;;) {
    NcclResult state = NcclResult::InProgress;
    r = api_->comm_get_async_error(comm, &state);
    if (r != NcclResult::Success) {
      give_up(ErrorKind::Backend,
              std::string("ncclCommGetAsyncError failed: ") + api_->get_error_string(r));
    }
    if (state == NcclResult::Success) break;
    if (state != NcclResult::InProgress) {
      give_up(ErrorKind::Backend, std::string("creating the NCCL communicator failed: ") +
                                      api_->get_error_string(state));
    }
    if (Clock::now() >= deadline) {
      give_up(ErrorKind::Timeout, "the NCCL communicator of " + std::to_string(size()) +
                                      " ranks was not ready within " + ms_text(options_.timeout) +
                                      " (every rank must create it with the same unique id; a "
                                      "rank that never started stalls the others)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  comm_ = comm;
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  watchdog_.join();  // returns once every pending Work finished or failed (their deadlines)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_monitor_ = true;
  }
  wake_.notify_all();
  monitor_.join();  // sets a pending abort report first
  std::lock_guard<std::mutex> lock(comm_mutex_);
  if (comm_) api_->comm_destroy(comm_);
  comm_ = nullptr;
}

// ---- queuing operations --------------------------------------------------------------------

void ProcessGroupNCCL::check_device(const char* op, const Tensor& t) const {
  if (t.device() != device_) {
    throw error(ErrorKind::Usage, op, -1, -1, -1,
                "a tensor is on " + t.device().str() + ", this group's device is " + device_.str());
  }
}

void ProcessGroupNCCL::check(NcclResult r, const char* call,
                             const std::shared_ptr<NcclWork>& work) {
  if (r == NcclResult::InProgress) {
    // A non-blocking communicator may return before the call is queued: poll until it is.
    for (;;) {
      NcclResult state = NcclResult::InProgress;
      r = api_->comm_get_async_error(comm_, &state);
      if (r == NcclResult::Success) r = state;
      if (r != NcclResult::InProgress) break;
      if (aborting_) {
        throw error(ErrorKind::Aborted, work->op(), work->seq(), -1, seconds_since(work->started_),
                    std::string(call) + " was interrupted: the communicator was aborted");
      }
      if (Clock::now() >= work->deadline_) {
        throw error(ErrorKind::Timeout, work->op(), work->seq(), -1, seconds_since(work->started_),
                    std::string(call) + " stayed in progress for " + ms_text(options_.timeout));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (r != NcclResult::Success) {
    throw error(ErrorKind::Backend, work->op(), work->seq(), -1, seconds_since(work->started_),
                std::string(call) + " failed: " + api_->get_error_string(r));
  }
}

std::shared_ptr<NcclWork> ProcessGroupNCCL::begin(const std::string& op, int64_t seq) {
  auto work = std::make_shared<NcclWork>(op, seq);
  work->device_ = device_;
  work->started_ = Clock::now();
  work->deadline_ = work->started_ + options_.timeout;
  return work;
}

// Note [Fingerprints on the NCCL stream]. fp_host_: pinned, [mine | rank 0's | rank 1's | ...].
void ProcessGroupNCCL::exchange_fingerprint(const std::shared_ptr<NcclWork>& work) {
  const int64_t n = static_cast<int64_t>(kFp) * (size() + 1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!staging_.empty()) {
      work->fp_host_ = std::move(staging_.back());
      staging_.pop_back();
    }
  }
  // Pinned, so that both copies are queued (a pageable one would block this thread).
  if (!work->fp_host_.defined()) work->fp_host_ = pin_memory(empty({n}, kUInt8));
  std::memcpy(work->fp_host_.data_ptr(), &work->mine_, kFp);
  work->fp_device_ = empty({n}, TensorOptions().dtype(kUInt8).device(device_));
  const int64_t mine = static_cast<int64_t>(kFp);
  native::copy_(work->fp_device_.narrow(0, 0, mine), work->fp_host_.narrow(0, 0, mine), true);
  auto* dev = static_cast<uint8_t*>(work->fp_device_.data_ptr());
  check(api_->all_gather(dev, dev + kFp, kFp, NcclDataType::Uint8, comm_, stream_),
        "ncclAllGather (the fingerprints)", work);
  native::copy_(work->fp_host_.narrow(0, mine, n - mine),
                work->fp_device_.narrow(0, mine, n - mine), true);
  work->fp_done_.record(stream_);
  work->has_fingerprint_ = true;
}

void ProcessGroupNCCL::enqueue(const std::shared_ptr<NcclWork>& work,
                               const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    if (t.defined() && t.numel() > 0) record_stream(t.storage()->data_ptr, stream_);
  }
  std::vector<Tensor> keep = tensors;
  keep.push_back(work->fp_device_);
  work->keep_alive(std::move(keep));
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) {
      pending_.push_back(work);
      wake_.notify_all();
      return;
    }
    text = abort_text_;
  }
  // Aborted between queuing the work and here: abort_with did not take it.
  fail(work,
       std::make_exception_ptr(error(ErrorKind::Aborted, work->op(), work->seq(), -1, -1,
                                     "the communicator was aborted while it was queued: " + text)));
}

WorkPtr ProcessGroupNCCL::run(Call call) {
  const char* op = to_string(call.kind);
  if (call.tensor.defined()) check_device(op, call.tensor);
  for (const Tensor& t : call.tensors) check_device(op, t);
  NcclDataType dtype = NcclDataType::Uint8;
  NcclRedOp red = NcclRedOp::Sum;
  if (call.tensor.defined()) {
    dtype = nccl_dtype(call.tensor.dtype(), op, rank(), size());
    if (call.kind == OpKind::Allreduce || call.kind == OpKind::ReduceScatter) {
      red = nccl_op(call.reduce, call.tensor.dtype(), op, rank(), size());
    }
  }

  auto work = begin(op, call.fingerprint.seq);
  work->mine_ = call.fingerprint;
  std::vector<Tensor> used = call.tensors;
  if (call.tensor.defined()) used.push_back(call.tensor);
  try {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (aborting_ || !comm_) {
      throw_if_failed(op);
      throw error(ErrorKind::Aborted, op, work->seq(), -1, -1, "the communicator was aborted");
    }
    DeviceGuard device_guard(device_);
    // Note [The NCCL group's stream]: after the caller's queued work.
    work->ready_.record(current_stream(device_));
    work->ready_.block(stream_);
    StreamGuard stream_guard(stream_);
    exchange_fingerprint(work);
    const Tensor& t = call.tensor;
    const size_t count = t.defined() ? static_cast<size_t>(t.numel()) : 0;
    // The collective's time on the device, for the profiler (core/profiler.h).
    profiler::DeviceKernelTimer timer(profiler_name(call.kind, "nccl"), stream_);
    if (count > 0) {
      switch (call.kind) {
        case OpKind::Allreduce:
          check(api_->all_reduce(t.data_ptr(), t.data_ptr(), count, dtype, red, comm_, stream_),
                "ncclAllReduce", work);
          break;
        case OpKind::Broadcast:
          check(
              api_->broadcast(t.data_ptr(), t.data_ptr(), count, dtype, call.root, comm_, stream_),
              "ncclBroadcast", work);
          break;
        case OpKind::Allgather: {
          // One all-gather into a flat buffer, then a copy into each output.
          Tensor flat = empty({static_cast<int64_t>(count) * size()},
                              TensorOptions().dtype(t.dtype()).device(device_));
          check(api_->all_gather(t.data_ptr(), flat.data_ptr(), count, dtype, comm_, stream_),
                "ncclAllGather", work);
          const auto n = static_cast<int64_t>(count);
          for (int r = 0; r < size(); ++r) {
            const Tensor& out = call.tensors[static_cast<size_t>(r)];
            native::copy_(out, flat.narrow(0, r * n, n).view(out.sizes()));
          }
          used.push_back(flat);
          break;
        }
        case OpKind::ReduceScatter: {
          Tensor flat = empty({static_cast<int64_t>(count) * size()},
                              TensorOptions().dtype(t.dtype()).device(device_));
          const auto n = static_cast<int64_t>(count);
          for (int r = 0; r < size(); ++r) {
            const Tensor& in = call.tensors[static_cast<size_t>(r)];
            native::copy_(flat.narrow(0, r * n, n).view(in.sizes()), in);
          }
          check(api_->reduce_scatter(flat.data_ptr(), t.data_ptr(), count, dtype, red, comm_,
                                     stream_),
                "ncclReduceScatter", work);
          used.push_back(flat);
          break;
        }
        case OpKind::Barrier:
          break;  // the fingerprint exchange is the barrier
      }
    }
    timer.finish();
    work->end_.record(stream_);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Aborted && !work->end_.was_recorded() && !work->has_fingerprint_) {
      throw;  // nothing was queued: the group had failed already
    }
    abort_with(work, std::current_exception(), e.what(), true);
    return work;
  } catch (const std::exception& e) {
    // Some of the operation may be queued: the ranks are out of step, the communicator is lost.
    abort_with(work,
               std::make_exception_ptr(error(ErrorKind::Backend, op, work->seq(), -1,
                                             seconds_since(work->started_),
                                             std::string("queuing it failed: ") + e.what())),
               e.what(), true);
    return work;
  }
  enqueue(work, used);
  return work;
}

WorkPtr ProcessGroupNCCL::run_send(const Tensor& tensor, int dst, int /*tag*/) {
  return run_point_to_point("send", tensor, dst);
}

WorkPtr ProcessGroupNCCL::run_recv(const Tensor& tensor, int src, int /*tag*/) {
  return run_point_to_point("recv", tensor, src);
}

// send and recv: no fingerprint (they are not numbered), the same ordering as a collective.
WorkPtr ProcessGroupNCCL::run_point_to_point(const char* op, const Tensor& tensor, int peer) {
  const bool is_send = std::strcmp(op, "send") == 0;
  check_device(op, tensor);
  const NcclDataType dtype = nccl_dtype(tensor.dtype(), op, rank(), size());
  auto work = begin(op, -1);
  try {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (aborting_ || !comm_) {
      throw_if_failed(op);
      throw error(ErrorKind::Aborted, op, -1, -1, -1, "the communicator was aborted");
    }
    DeviceGuard device_guard(device_);
    work->ready_.record(current_stream(device_));
    work->ready_.block(stream_);
    if (tensor.numel() > 0) {
      const auto n = static_cast<size_t>(tensor.numel());
      if (is_send) {
        check(api_->send(tensor.data_ptr(), n, dtype, peer, comm_, stream_), "ncclSend", work);
      } else {
        check(api_->recv(tensor.data_ptr(), n, dtype, peer, comm_, stream_), "ncclRecv", work);
      }
    }
    work->end_.record(stream_);
  } catch (const std::exception& e) {
    if (!work->end_.was_recorded() && failed()) throw;
    abort_with(work, std::current_exception(), e.what(), true);
    return work;
  }
  enqueue(work, {tensor});
  return work;
}

// ---- failure -------------------------------------------------------------------------------

void ProcessGroupNCCL::abort(const std::string& reason) {
  abort_with(nullptr,
             std::make_exception_ptr(error(ErrorKind::Aborted, "abort", -1, -1, -1, reason)),
             reason, true);
}

void ProcessGroupNCCL::abort_with(const std::shared_ptr<NcclWork>& first,
                                  const std::exception_ptr& err, const std::string& reason,
                                  bool report) {
  if (aborting_.exchange(true)) {  // someone else is aborting, or did
    if (first) fail(first, err);
    return;
  }
  // The group's failure is this error (Note [A failed group stays failed]), recorded before any
  // Work fails with an Aborted error quoting it.
  fail(nullptr, err);
  const std::string text = what_of(err);
  // Take the pending Works before aborting: once NCCL's kernels stop, their end events complete,
  // and the watchdog must not mistake that for success. A Work queued after this is failed by
  // enqueue() (aborted_ is set under the same lock).
  std::deque<std::shared_ptr<NcclWork>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    abort_text_ = text;
    pending.swap(pending_);
    if (report) report_ = std::to_string(rank()) + ":" + reason;
  }
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_) api_->comm_abort(comm_);
    comm_ = nullptr;
  }
  wake_.notify_all();
  if (first) fail(first, err);
  for (const auto& w : pending) {
    if (w == first) continue;
    fail(w, std::make_exception_ptr(
                error(ErrorKind::Aborted, w->op(), w->seq(), -1, seconds_since(w->started_),
                      "it was pending when the communicator was aborted: " + text)));
  }
  std::fprintf(stderr, "ember dist: nccl (rank %d of %d): %s; the communicator was aborted\n",
               rank(), size(), text.c_str());
}

bool ProcessGroupNCCL::check_work_fingerprints(const std::shared_ptr<NcclWork>& w) {
  w->fp_checked_ = true;
  std::vector<Fingerprint> all(static_cast<size_t>(size()));
  std::memcpy(all.data(), static_cast<const uint8_t*>(w->fp_host_.data_ptr()) + kFp,
              kFp * all.size());
  try {
    check_fingerprints(w->mine_, all);
  } catch (const Error& e) {
    abort_with(w, std::current_exception(), e.what(), true);
    return false;
  }
  return true;
}

// ---- the watchdog and the monitor (Note [The NCCL watchdog]) --------------------------------

void ProcessGroupNCCL::watchdog_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_ && pending_.empty()) return;
    wake_.wait_for(lock,
                   pending_.empty() ? options_.watchdog_interval : std::chrono::milliseconds(1));
    if (aborted_) continue;  // abort_with failed the pending Works; enqueue() fails later ones
    const std::vector<std::shared_ptr<NcclWork>> works(pending_.begin(), pending_.end());
    const std::string peer = peer_report_;
    lock.unlock();
    std::shared_ptr<NcclWork> oldest = works.empty() ? nullptr : works.front();
    try {
      // A peer's report, found by the monitor.
      if (!peer.empty()) {
        const size_t colon = peer.find(':');
        const std::string who = peer.substr(0, colon);
        const std::string why = colon == std::string::npos ? "" : peer.substr(colon + 1);
        const std::string detail = "rank " + who + " reported: " + why;
        abort_with(oldest,
                   std::make_exception_ptr(
                       error(ErrorKind::Aborted, oldest ? oldest->op() : "ProcessGroupNCCL",
                             oldest ? oldest->seq() : -1, std::atoi(who.c_str()),
                             oldest ? seconds_since(oldest->started_) : -1.0, detail)),
                   detail, false);
        lock.lock();
        continue;
      }
      // NCCL's asynchronous error (a lost connection, a failed kernel).
      NcclResult state = NcclResult::Success;
      {
        std::unique_lock<std::mutex> comm_lock(comm_mutex_, std::try_to_lock);
        if (comm_lock.owns_lock() && comm_) {
          const NcclResult r = api_->comm_get_async_error(comm_, &state);
          if (r != NcclResult::Success) state = r;
        }
      }
      if (state != NcclResult::Success && state != NcclResult::InProgress) {
        const std::string detail =
            std::string("NCCL reported an asynchronous error: ") + api_->get_error_string(state);
        abort_with(oldest,
                   std::make_exception_ptr(
                       error(ErrorKind::Backend, oldest ? oldest->op() : "ProcessGroupNCCL",
                             oldest ? oldest->seq() : -1, -1,
                             oldest ? seconds_since(oldest->started_) : -1.0, detail)),
                   detail, true);
        lock.lock();
        continue;
      }
      // The pending Works, oldest first: they finish in order on the group's stream.
      for (const auto& w : works) {
        const bool ended = w->end_.query();
        if (w->has_fingerprint_ && !w->fp_checked_ && (ended || w->fp_done_.query())) {
          if (!check_work_fingerprints(w)) break;
        }
        if (ended) {
          std::lock_guard<std::mutex> guard(mutex_);
          // Not at the front any more: abort_with took it (and fails it).
          if (aborted_ || pending_.empty() || pending_.front() != w) break;
          pending_.pop_front();
          if (w->has_fingerprint_ && staging_.size() < 16) staging_.push_back(w->fp_host_);
          w->finish();
          continue;
        }
        if (Clock::now() >= w->deadline_) {
          const std::string detail =
              "NCCL did not finish it within " + ms_text(options_.timeout) +
              " (the group's timeout): a peer may have died, stopped or called another "
              "collective";
          abort_with(w,
                     std::make_exception_ptr(error(ErrorKind::Timeout, w->op(), w->seq(), -1,
                                                   seconds_since(w->started_), detail)),
                     w->op() + (w->seq() >= 0 ? " #" + std::to_string(w->seq()) : "") +
                         " timed out after " + ms_text(options_.timeout),
                     true);
        }
        break;  // the later ones cannot finish before this one
      }
    } catch (const std::exception& e) {
      // An event query failed (a CUDA error): the device's work is lost.
      abort_with(oldest,
                 std::make_exception_ptr(error(
                     ErrorKind::Backend, oldest ? oldest->op() : "ProcessGroupNCCL",
                     oldest ? oldest->seq() : -1, -1, -1, std::string("watchdog: ") + e.what())),
                 e.what(), true);
    }
    lock.lock();
  }
}

void ProcessGroupNCCL::monitor_loop() {
  const std::string key = abort_key();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!report_.empty()) {
      const std::string report = std::move(report_);
      report_.clear();
      lock.unlock();
      try {
        store_->compare_set(key, {}, to_bytes(report));  // the first report wins
      } catch (const std::exception&) {
        // The store is gone: the peers find out by their own deadlines.
      }
      lock.lock();
      continue;
    }
    if (stop_monitor_) return;
    wake_.wait_for(lock, options_.watchdog_interval);
    if (aborting_ || !report_.empty() || stop_monitor_ || !peer_report_.empty()) continue;
    lock.unlock();
    std::string found;
    try {
      if (store_->check({key})) found = store_->get_string(key);
    } catch (const std::exception&) {
      // A store that cannot answer now says nothing about the peers; try again next time.
    }
    lock.lock();
    if (!found.empty() && found.substr(0, found.find(':')) != std::to_string(rank())) {
      peer_report_ = found;
      wake_.notify_all();
    }
  }
}

}  // namespace ember::dist
