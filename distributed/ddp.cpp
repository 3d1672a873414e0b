#include "distributed/ddp.h"

#include <map>
#include <sstream>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/ops/factory.h"
#include "core/record_function.h"

namespace ember::dist {

namespace {

constexpr const char* kOp = "DistributedDataParallel";

Error usage(const ProcessGroup& g, const std::string& detail) {
  return Error(ErrorKind::Usage, kOp, -1, -1, -1, detail, g.rank(), g.size());
}

int64_t mib_to_bytes(double mb) { return static_cast<int64_t>(mb * 1024.0 * 1024.0); }

// A tensor's slot `numel` elements at `offset` of flat `buffer`, shaped like `like`.
Tensor slot_view(const Tensor& buffer, int64_t offset, const Tensor& like) {
  return buffer.narrow(0, offset, like.numel()).view(like.sizes());
}

// Parameter descriptions exchanged at construction: per parameter dtype, ndim, dims.
std::vector<int64_t> describe_parameters(const std::vector<Tensor>& params) {
  std::vector<int64_t> d{static_cast<int64_t>(params.size())};
  for (const Tensor& p : params) {
    d.push_back(static_cast<int64_t>(p.dtype()));
    d.push_back(p.dim());
    for (int64_t s : p.sizes()) d.push_back(s);
  }
  return d;
}

struct ParamDesc {
  DType dtype;
  Shape shape;
};

std::vector<ParamDesc> parse_description(const int64_t* d) {
  std::vector<ParamDesc> out(static_cast<size_t>(d[0]));
  size_t k = 1;
  for (ParamDesc& p : out) {
    p.dtype = static_cast<DType>(d[k++]);
    const int64_t ndim = d[k++];
    for (int64_t i = 0; i < ndim; ++i) p.shape.push_back(d[k++]);
  }
  return out;
}

std::string describe(const ParamDesc& p) {
  return detail::str(p.shape) + " " + dtype_name(p.dtype);
}

// Allgathers every rank's description and raises the Mismatch error on the first difference.
void check_same_parameters(ProcessGroup& group, const std::vector<std::string>& names,
                           const std::vector<Tensor>& params) {
  const std::vector<int64_t> mine = describe_parameters(params);
  // The exchange runs on the parameters' device: an NCCL group moves only cuda tensors.
  const Device device = params.empty() ? Device(kCPU) : params[0].device();
  const TensorOptions on_device = TensorOptions(kInt64).device(device);
  Tensor length = ember::full({1}, static_cast<double>(mine.size()), on_device);
  std::vector<Tensor> lengths;
  lengths.reserve(static_cast<size_t>(group.size()));
  for (int r = 0; r < group.size(); ++r) lengths.push_back(ember::zeros({1}, on_device));
  group.allgather(lengths, length)->wait();
  int64_t longest = 0;
  for (const Tensor& l : lengths) longest = std::max(longest, l.item<int64_t>());
  Tensor padded = ember::full({longest}, -1.0, TensorOptions(kInt64));
  for (size_t i = 0; i < mine.size(); ++i) padded.data_ptr<int64_t>()[i] = mine[i];
  padded = padded.to(device);
  std::vector<Tensor> all;
  all.reserve(static_cast<size_t>(group.size()));
  for (int r = 0; r < group.size(); ++r) all.push_back(ember::zeros({longest}, on_device));
  group.allgather(all, padded)->wait();
  for (Tensor& a : all) a = a.to(kCPU).contiguous();

  const std::vector<ParamDesc> local = parse_description(mine.data());
  for (int r = 0; r < group.size(); ++r) {
    if (r == group.rank()) continue;
    const std::vector<ParamDesc> other =
        parse_description(all[static_cast<size_t>(r)].data_ptr<int64_t>());
    const size_t n = std::min(local.size(), other.size());
    for (size_t i = 0; i <= n; ++i) {
      std::string detail;
      if (i < n) {
        if (local[i].dtype == other[i].dtype && local[i].shape == other[i].shape) continue;
        detail = "parameter '" + names[i] + "' (index " + std::to_string(i) + ") is " +
                 describe(local[i]) + " on this rank but " + describe(other[i]) + " on rank " +
                 std::to_string(r);
      } else if (local.size() != other.size()) {
        detail = "this rank has " + std::to_string(local.size()) + " parameters, rank " +
                 std::to_string(r) + " has " + std::to_string(other.size());
        if (local.size() > n) detail += " (the first extra one here is '" + names[n] + "')";
      } else {
        break;
      }
      throw Error(ErrorKind::Mismatch, kOp, -1, r, -1,
                  detail + ": every rank must wrap the same model", group.rank(), group.size());
    }
  }
}

}  // namespace

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  if (group.size() == 1 || tensors.empty()) return;
  autograd::NoGradGuard no_grad;
  // Groups by (dtype, device) in order of first appearance.
  std::vector<std::vector<const Tensor*>> groups;
  std::map<std::tuple<int, int, int>, size_t> index;
  for (const Tensor& t : tensors) {
    const auto key = std::make_tuple(static_cast<int>(t.dtype()), static_cast<int>(t.device().type),
                                     t.device().index);
    auto it = index.find(key);
    if (it == index.end()) it = index.emplace(key, groups.size()).first, groups.emplace_back();
    groups[it->second].push_back(&t);
  }
  std::vector<std::pair<Tensor, WorkPtr>> flats;
  for (const auto& g : groups) {
    int64_t total = 0;
    for (const Tensor* t : g) total += t->numel();
    Tensor flat = ember::empty({total}, TensorOptions(g[0]->dtype()).device(g[0]->device()));
    int64_t off = 0;
    for (const Tensor* t : g) {
      slot_view(flat, off, *t).copy_(*t);
      off += t->numel();
    }
    flats.emplace_back(flat, group.broadcast(flat, root));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    flats[i].second->wait();
    if (group.rank() == root) continue;
    int64_t off = 0;
    for (const Tensor* t : groups[i]) {
      t->copy_(slot_view(flats[i].first, off, *t));
      off += t->numel();
    }
  }
}

namespace comm_hooks {

CommHook allreduce() {
  return [](ProcessGroup& group, GradBucket& bucket) {
    return BucketReduction{group.allreduce(bucket.buffer, ReduceOp::Sum), nullptr};
  };
}

namespace {
CommHook compress(DType wire) {
  return [wire](ProcessGroup& group, GradBucket& bucket) {
    autograd::NoGradGuard no_grad;
    Tensor packed = bucket.buffer.to(wire);
    Tensor buffer = bucket.buffer;
    WorkPtr work = group.allreduce(packed, ReduceOp::Sum);
    return BucketReduction{work, [packed, buffer] {
                             autograd::NoGradGuard no_grad;
                             buffer.copy_(packed);
                           }};
  };
}
}  // namespace

CommHook fp16_compress() { return compress(kFloat16); }
CommHook bf16_compress() { return compress(kBFloat16); }

}  // namespace comm_hooks

// ---- Reducer: buckets, hooks and the end-of-backward reduction (Note [DDP gradient buckets]) --

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  Reducer(std::shared_ptr<ProcessGroup> group, const nn::StateDict& named, const DDPOptions& o)
      : group_(std::move(group)), options_(o) {
    if (!options_.comm_hook) options_.comm_hook = comm_hooks::allreduce();
    for (const auto& [name, p] : named) {
      if (p.requires_grad()) slots_.push_back(Slot{name, p, -1, 0});
    }
    build_buckets();
  }

  ~Reducer() { drain(); }

  // Hooks hold the reducer weakly: after the DDP is gone they do nothing.
  void install_hooks() {
    std::weak_ptr<Reducer> weak = shared_from_this();
    for (size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].param.register_post_accumulate_grad_hook([weak, i](const Tensor&) {
        if (auto self = weak.lock()) self->grad_ready(i);
      });
    }
  }

  // A forward that will be followed by a synced backward.
  void prepare() {
    drain();
    ready_.assign(slots_.size(), 0);
    for (Bucket& b : buckets_) {
      b.pending = static_cast<int>(b.slots.size());
      b.reduction = {};
    }
    next_launch_ = 0;
    expect_hooks_ = true;
    callback_queued_ = false;
  }
  // A forward under no_sync: its backward accumulates locally.
  void skip() {
    drain();
    expect_hooks_ = false;
  }

  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const Bucket& b : buckets_) {
      out.emplace_back();
      for (size_t s : b.slots) out.back().push_back(slots_[s].name);
    }
    return out;
  }

 private:
  struct Slot {
    std::string name;
    Tensor param;
    int bucket;
    int64_t offset;
  };
  struct Bucket {
    Tensor buffer;
    std::vector<size_t> slots;
    int pending = 0;
    BucketReduction reduction;
  };

  void build_buckets() {
    // Reverse registration order; one open bucket per (dtype, device).
    std::map<std::tuple<int, int, int>, int> open, closed_count;
    std::vector<int64_t> bytes;
    std::vector<std::vector<size_t>> members;
    for (size_t k = slots_.size(); k-- > 0;) {
      const Tensor& p = slots_[k].param;
      const auto key = std::make_tuple(static_cast<int>(p.dtype()),
                                       static_cast<int>(p.device().type), p.device().index);
      auto it = open.find(key);
      if (it == open.end()) {
        it = open.emplace(key, static_cast<int>(members.size())).first;
        members.emplace_back();
        bytes.push_back(0);
      }
      const int b = it->second;
      members[static_cast<size_t>(b)].push_back(k);
      bytes[static_cast<size_t>(b)] += static_cast<int64_t>(p.nbytes());
      const int64_t cap = mib_to_bytes(closed_count[key] == 0 ? options_.first_bucket_cap_mb
                                                              : options_.bucket_cap_mb);
      if (bytes[static_cast<size_t>(b)] >= cap) {
        open.erase(it);
        ++closed_count[key];
      }
    }
    // Buckets are numbered in the order of their first parameter (reverse registration order).
    for (const auto& m : members) {
      Bucket bucket;
      bucket.slots = m;
      int64_t total = 0;
      for (size_t s : m) {
        slots_[s].bucket = static_cast<int>(buckets_.size());
        slots_[s].offset = total;
        total += slots_[s].param.numel();
      }
      const Tensor& first = slots_[m[0]].param;
      bucket.buffer = ember::zeros({total}, TensorOptions(first.dtype()).device(first.device()));
      buckets_.push_back(std::move(bucket));
    }
  }

  Tensor view_of(size_t s) const {
    const Slot& slot = slots_[s];
    return slot_view(buckets_[static_cast<size_t>(slot.bucket)].buffer, slot.offset, slot.param);
  }

  static bool is_view(const Tensor& grad, const Tensor& view) {
    return grad.defined() && grad.is_alias_of(view) &&
           grad.storage_offset() == view.storage_offset() && grad.sizes() == view.sizes() &&
           grad.strides() == view.strides();
  }

  // The post-accumulate hook of slot s.
  void grad_ready(size_t s) {
    if (!expect_hooks_) return;
    if (ready_[s]) {
      throw usage(*group_,
                  "parameter '" + slots_[s].name +
                      "' got a gradient twice in one iteration (a second backward through the "
                      "same forward?); DDP reduces once per forward");
    }
    if (!callback_queued_) {
      std::weak_ptr<Reducer> weak = shared_from_this();
      autograd::queue_callback([weak] {
        if (auto self = weak.lock()) self->finalize();
      });
      callback_queued_ = true;
    }
    autograd::NoGradGuard no_grad;
    const Tensor grad = slots_[s].param.grad();
    const Tensor view = view_of(s);
    const double scale = 1.0 / group_->size();
    if (is_view(grad, view)) {
      view.mul_(scale);
    } else {
      view.copy_(grad);
      view.mul_(scale);
      if (options_.gradient_as_bucket_view) slots_[s].param.set_grad(view);
    }
    mark_ready(s);
  }

  void mark_ready(size_t s) {
    ready_[s] = 1;
    Bucket& b = buckets_[static_cast<size_t>(slots_[s].bucket)];
    if (--b.pending == 0) launch_ready();
  }

  // Launches the full buckets at the head of the order (Note [DDP gradient buckets]).
  void launch_ready() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      Bucket& b = buckets_[next_launch_];
      GradBucket gb;
      gb.index = static_cast<int>(next_launch_);
      gb.buffer = b.buffer;
      for (size_t s : b.slots) gb.parameter_names.push_back(slots_[s].name);
      profiler::RecordFunction range("ddp.launch_bucket");
      b.reduction = options_.comm_hook(*group_, gb);
      EMBER_CHECK(b.reduction.work != nullptr, kOp, ": the communication hook returned no Work");
      ++next_launch_;
    }
  }

  // Waits for reductions left in flight by an interrupted backward (errors are dropped: the
  // group reports its failure on the next call).
  void drain() {
    for (Bucket& b : buckets_) {
      if (!b.reduction.work) continue;
      try {
        b.reduction.work->wait();
      } catch (...) {
      }
      b.reduction = {};
    }
  }

  // The engine callback: the graph is done (Note [DDP unused parameters]).
  void finalize() {
    expect_hooks_ = false;
    autograd::NoGradGuard no_grad;
    std::vector<size_t> unused;
    for (size_t s = 0; s < slots_.size(); ++s)
      if (!ready_[s]) unused.push_back(s);
    if (!unused.empty() && !options_.find_unused_parameters) {
      std::string names;
      for (size_t i = 0; i < unused.size() && i < 10; ++i)
        names += (i ? ", '" : "'") + slots_[unused[i]].name + "'";
      if (unused.size() > 10) names += ", ...";
      throw usage(*group_, std::to_string(unused.size()) +
                               " parameter(s) got no gradient in this backward pass: " + names +
                               ". Every parameter must take part in the loss on every rank, or "
                               "pass find_unused_parameters = true");
    }
    for (size_t s : unused) {
      view_of(s).zero_();
      mark_ready(s);
    }
    launch_ready();
    Tensor used;
    WorkPtr used_work;
    if (options_.find_unused_parameters) {
      used = ember::zeros({static_cast<int64_t>(slots_.size())},
                          TensorOptions(kInt32).device(slots_[0].param.device()));
      Tensor local = ember::zeros({static_cast<int64_t>(slots_.size())}, TensorOptions(kInt32));
      for (size_t s = 0; s < slots_.size(); ++s) local.data_ptr<int32_t>()[s] = ready_[s] ? 1 : 0;
      for (size_t s : unused) local.data_ptr<int32_t>()[s] = 0;
      used.copy_(local);
      used_work = group_->allreduce(used, ReduceOp::Sum);
    }
    for (Bucket& b : buckets_) {
      BucketReduction r = std::move(b.reduction);
      b.reduction = {};
      // The end of backward waiting on communication that did not overlap with it.
      profiler::RecordFunction range("ddp.wait_bucket");
      r.work->wait();
      if (r.then) r.then();
    }
    Tensor used_cpu;
    if (used_work) {
      used_work->wait();
      used_cpu = used.cpu();
    }
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (used_cpu.defined() && used_cpu.data_ptr<int32_t>()[s] == 0) continue;  // no rank used it
      const Tensor& p = slots_[s].param;
      const Tensor view = view_of(s);
      const Tensor grad = p.grad();
      if (options_.gradient_as_bucket_view) {
        if (!is_view(grad, view)) p.set_grad(view);
      } else if (grad.defined()) {
        grad.copy_(view);
      } else {
        p.set_grad(view.clone());
      }
    }
  }

  std::shared_ptr<ProcessGroup> group_;
  DDPOptions options_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::vector<char> ready_;
  size_t next_launch_ = 0;
  bool expect_hooks_ = false;
  bool callback_queued_ = false;
};

// ---- DistributedDataParallel -----------------------------------------------------------------

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 DDPOptions options)
    : Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(std::move(group)),
      options_(std::move(options)) {
  EMBER_CHECK(module_ != nullptr, kOp, ": the module is null");
  EMBER_CHECK(group_ != nullptr, kOp, ": the process group is null");
  if (!(options_.bucket_cap_mb > 0) || !(options_.first_bucket_cap_mb > 0)) {
    throw usage(*group_, "bucket_cap_mb and first_bucket_cap_mb must be positive, got " +
                             std::to_string(options_.bucket_cap_mb) + " and " +
                             std::to_string(options_.first_bucket_cap_mb));
  }
  register_module("module", module_);
  const nn::StateDict named = module_->named_parameters();
  std::vector<std::string> names;
  std::vector<Tensor> params;
  for (const auto& [name, p] : named) {
    names.push_back(name);
    params.push_back(p);
  }
  check_same_parameters(*group_, names, params);
  std::vector<Tensor> state = params;
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  broadcast_coalesced(*group_, state, 0);
  reducer_ = std::make_shared<Reducer>(group_, named, options_);
  reducer_->install_hooks();
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::pre_forward() {
  if (options_.broadcast_buffers) broadcast_coalesced(*group_, module_->buffers(), 0);
  if (!autograd::is_grad_enabled()) return;
  if (require_backward_sync_) {
    reducer_->prepare();
  } else {
    reducer_->skip();
  }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  pre_forward();
  return (*module_)(input);
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  return reducer_->bucket_names();
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.require_backward_sync_) {
  ddp_.require_backward_sync_ = false;
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.require_backward_sync_ = previous_; }

}  // namespace ember::dist
