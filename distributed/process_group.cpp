#include "distributed/process_group.h"

#include <cstring>

namespace ember::dist {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Product:
      return "product";
  }
  return "?";
}

const char* to_string(OpKind op) {
  switch (op) {
    case OpKind::Allreduce:
      return "allreduce";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::Allgather:
      return "allgather";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::Barrier:
      return "barrier";
  }
  return "?";
}

const char* profiler_name(OpKind op, const char* backend) {
  static const char* const gloo[] = {"gloo:allreduce", "gloo:broadcast", "gloo:allgather",
                                     "gloo:reduce_scatter", "gloo:barrier"};
  static const char* const nccl[] = {"nccl:allreduce", "nccl:broadcast", "nccl:allgather",
                                     "nccl:reduce_scatter", "nccl:barrier"};
  const int i = static_cast<int>(op);
  if (i < 0 || i > static_cast<int>(OpKind::Barrier)) return "collective";
  return std::strcmp(backend, "nccl") == 0 ? nccl[i] : gloo[i];
}

std::string describe(const Fingerprint& f) {
  const auto kind = static_cast<OpKind>(f.op);
  std::string s = std::string(f.op >= 0 && f.op <= 4 ? to_string(kind) : "an unknown op") + " #" +
                  std::to_string(f.seq);
  if (kind == OpKind::Barrier) return s;
  s += " [";
  s += f.dtype >= 0 ? dtype_name(static_cast<DType>(f.dtype)) : "?";
  s += ", " + std::to_string(f.numel) + " elements";
  if (f.reduce_op >= 0) s += std::string(", ") + to_string(static_cast<ReduceOp>(f.reduce_op));
  if (f.root >= 0) s += ", root " + std::to_string(f.root);
  return s + "]";
}

// ---- Work ----------------------------------------------------------------------------------

Work::Work(std::string op, int64_t seq) : op_(std::move(op)), seq_(seq) {}

bool Work::is_completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Work::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void Work::wait(std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_cv_.wait_for(lock, timeout, [&] { return done_; })) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw Error(ErrorKind::Timeout, op_, seq_, -1, s,
                "Work::wait gave up after " + std::to_string(timeout.count()) +
                    " ms (the operation is still running)");
  }
  if (error_) std::rethrow_exception(error_);
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
  }
  done_cv_.notify_all();
}

// ---- ProcessGroup --------------------------------------------------------------------------

ProcessGroup::ProcessGroup(int rank, int size, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(
        ErrorKind::Usage, "ProcessGroup", -1, -1, -1,
        "rank " + std::to_string(rank) + " is not in a world of size " + std::to_string(size));
  }
  if (timeout.count() <= 0) {
    throw Error(ErrorKind::Usage, "ProcessGroup", -1, -1, -1,
                "the timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  }
}

Error ProcessGroup::error(ErrorKind kind, const std::string& op, int64_t seq, int peer,
                          double elapsed, const std::string& detail) const {
  return Error(kind, op, seq, peer, elapsed, detail, rank_, size_);
}

std::exception_ptr ProcessGroup::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

void ProcessGroup::throw_if_failed(const char* op) const {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_) return;
    text = failure_text_;
  }
  throw error(ErrorKind::Aborted, op, -1, -1, -1, "the group failed earlier: " + text);
}

void ProcessGroup::fail(const WorkPtr& work, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_) {
      failure_ = error;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        failure_text_ = e.what();
      } catch (...) {
        failure_text_ = "an unknown exception";
      }
    }
  }
  if (work) work->finish(std::move(error));
}

void ProcessGroup::check_tensor(const char* op, const Tensor& t, const char* what) const {
  if (!t.defined())
    throw error(ErrorKind::Usage, op, -1, -1, -1, std::string(what) + " is undefined");
  if (t.device().type != device_type()) {
    throw error(ErrorKind::Usage, op, -1, -1, -1,
                std::string(what) + " is on " + t.device().str() + ", the " + backend_name() +
                    " backend takes " + (device_type() == DeviceType::CPU ? "cpu" : "cuda") +
                    " tensors");
  }
  if (!t.is_contiguous()) {
    throw error(ErrorKind::Usage, op, -1, -1, -1,
                std::string(what) + " must be contiguous (sizes " + detail::str(t.sizes()) +
                    ", strides " + detail::str(t.strides()) + ")");
  }
}

void ProcessGroup::check_fingerprints(const Fingerprint& mine,
                                      const std::vector<Fingerprint>& all) const {
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    const Fingerprint& f = all[static_cast<size_t>(r)];
    if (f.seq == mine.seq && f.op == mine.op && f.dtype == mine.dtype && f.numel == mine.numel &&
        f.root == mine.root && f.reduce_op == mine.reduce_op) {
      continue;
    }
    throw error(ErrorKind::Mismatch, to_string(static_cast<OpKind>(mine.op)), mine.seq, r, -1,
                "this rank called " + describe(mine) + ", rank " + std::to_string(r) + " called " +
                    describe(f));
  }
}

WorkPtr ProcessGroup::start(Call call) {
  const char* op = to_string(call.kind);
  throw_if_failed(op);
  call.fingerprint.seq = ++seq_;
  call.fingerprint.op = static_cast<int32_t>(call.kind);
  call.fingerprint.rank = rank_;
  if (call.tensor.defined()) {
    call.fingerprint.dtype = static_cast<int32_t>(call.tensor.dtype());
    call.fingerprint.numel = call.tensor.numel();
  }
  return run(std::move(call));
}

WorkPtr ProcessGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  check_tensor("allreduce", tensor, "the tensor");
  Call c;
  c.kind = OpKind::Allreduce;
  c.reduce = op;
  c.fingerprint.reduce_op = static_cast<int32_t>(op);
  c.tensor = tensor;
  return start(std::move(c));
}

WorkPtr ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor("broadcast", tensor, "the tensor");
  if (root < 0 || root >= size_) {
    throw error(ErrorKind::Usage, "broadcast", -1, -1, -1,
                "root " + std::to_string(root) + " is not a rank of this group of size " +
                    std::to_string(size_));
  }
  Call c;
  c.kind = OpKind::Broadcast;
  c.root = root;
  c.fingerprint.root = root;
  c.tensor = tensor;
  return start(std::move(c));
}

WorkPtr ProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_tensor("allgather", input, "the input");
  if (static_cast<int>(outputs.size()) != size_) {
    throw error(ErrorKind::Usage, "allgather", -1, -1, -1,
                "expected " + std::to_string(size_) + " output tensors (one per rank), got " +
                    std::to_string(outputs.size()));
  }
  for (const Tensor& o : outputs) {
    check_tensor("allgather", o, "an output");
    if (o.sizes() != input.sizes() || o.dtype() != input.dtype()) {
      throw error(ErrorKind::Usage, "allgather", -1, -1, -1,
                  "every output must match the input " + detail::str(input.sizes()) + " " +
                      dtype_name(input.dtype()) + ", got " + detail::str(o.sizes()) + " " +
                      dtype_name(o.dtype()));
    }
  }
  Call c;
  c.kind = OpKind::Allgather;
  c.tensor = input;
  c.tensors = outputs;
  return start(std::move(c));
}

WorkPtr ProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                     ReduceOp op) {
  check_tensor("reduce_scatter", output, "the output");
  if (static_cast<int>(inputs.size()) != size_) {
    throw error(ErrorKind::Usage, "reduce_scatter", -1, -1, -1,
                "expected " + std::to_string(size_) + " input tensors (one per rank), got " +
                    std::to_string(inputs.size()));
  }
  for (const Tensor& in : inputs) {
    check_tensor("reduce_scatter", in, "an input");
    if (in.sizes() != output.sizes() || in.dtype() != output.dtype()) {
      throw error(ErrorKind::Usage, "reduce_scatter", -1, -1, -1,
                  "every input must match the output " + detail::str(output.sizes()) + " " +
                      dtype_name(output.dtype()) + ", got " + detail::str(in.sizes()) + " " +
                      dtype_name(in.dtype()));
    }
  }
  Call c;
  c.kind = OpKind::ReduceScatter;
  c.reduce = op;
  c.fingerprint.reduce_op = static_cast<int32_t>(op);
  c.tensor = output;
  c.tensors = inputs;
  return start(std::move(c));
}

WorkPtr ProcessGroup::barrier() {
  Call c;
  c.kind = OpKind::Barrier;
  return start(std::move(c));
}

WorkPtr ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  throw_if_failed("send");
  check_tensor("send", tensor, "the tensor");
  if (dst < 0 || dst >= size_ || dst == rank_) {
    throw error(ErrorKind::Usage, "send", -1, dst, -1,
                "destination " + std::to_string(dst) + " is not another rank of this group");
  }
  return run_send(tensor, dst, tag);
}

WorkPtr ProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  throw_if_failed("recv");
  check_tensor("recv", tensor, "the tensor");
  if (src < 0 || src >= size_ || src == rank_) {
    throw error(ErrorKind::Usage, "recv", -1, src, -1,
                "source " + std::to_string(src) + " is not another rank of this group");
  }
  return run_recv(tensor, src, tag);
}

}  // namespace ember::dist
