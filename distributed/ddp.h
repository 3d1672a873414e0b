#pragma once
// DistributedDataParallel: data-parallel training of an nn::Module over a ProcessGroup
// (torch.nn.parallel.DistributedDataParallel). Every rank holds a replica; each runs forward
// and backward on its own part of the batch, and backward leaves every rank with the same
// gradient -- the mean over the ranks -- so the same optimizer step keeps the replicas equal.
//
//   auto net = std::make_shared<Net>();
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(net, pg);  // checks, broadcasts
//   optim::SGD opt(ddp->parameters(), 0.1);
//   Tensor loss = loss_fn(ddp->forward(x_part), y_part);
//   loss.backward();             // gradients averaged over the ranks when backward returns
//   opt.step();
//
//   { auto guard = ddp->no_sync(); ddp->forward(x1); ...backward(); }  // accumulate locally
//   ddp->forward(x2); ...backward();   // reduces the sum of both micro-batches' gradients
//
// DDP is itself a Module with the wrapped one as its child "module": parameters() are the
// wrapped module's, and state_dict() keys carry the "module." prefix (strip it with
// nn::strip_prefix). A module whose forward takes other arguments runs through
// forward_with([&] { return net->forward(a, b); }).
//
// At construction every rank allgathers a compact description of its parameters (dtype and
// shape, in registration order); a difference is a dist::Error of kind Mismatch on every rank
// naming the first mismatching parameter and both shapes. Then rank 0's parameters and buffers
// are broadcast (coalesced per dtype), and the buffers again at each forward unless
// broadcast_buffers is off. Every rank must call forward and backward the same number of times.
//
// Note [DDP gradient buckets]
// Parameters that require grad are taken in REVERSE registration order -- roughly the order
// backward produces their gradients -- and packed into flat buckets, one dtype and device per
// bucket: the first bucket of each (dtype, device) closes once it holds first_bucket_cap_mb
// MiB, later ones at bucket_cap_mb (a parameter larger than the cap gets a bucket of its own).
// A small first bucket starts communication early. Each parameter's post-accumulate-grad hook
// copies its gradient into its slot of the bucket, scaled by 1 / world size, and marks it
// ready; when a bucket is full it is reduced through the communication hook (by default an
// allreduce sum of the pre-scaled values, i.e. the mean) -- asynchronously, so communication
// overlaps the rest of backward. Buckets are launched strictly in bucket order (a full bucket
// waits for the ones before it), so all ranks issue the same collectives in the same order
// whatever order their hooks fire in. At the end of backward -- an engine callback
// (autograd::queue_callback, queued by the first hook) -- DDP launches what is left, waits for
// every bucket in order and copies the results back into .grad (with gradient_as_bucket_view,
// .grad IS a view into the bucket, which saves the copy and the memory). Buckets are not
// rebuilt from the observed hook order (PyTorch does so after the first iteration).
//
// Note [DDP unused parameters]
// A parameter the forward did not use gets no gradient, so its bucket never fills. Without
// find_unused_parameters the end-of-backward callback raises a dist::Error of kind Usage naming
// those parameters, instead of waiting forever (a peer that used them waits for this rank's
// allreduce and fails by the group's timeout). With find_unused_parameters, the callback marks
// them ready with a zero contribution, launches their buckets, and allreduces a map of which
// parameters each rank used: a parameter no rank used keeps its .grad untouched (as PyTorch);
// one that some rank used gets the mean like the others. Their buckets are reduced after the
// graph finishes, without overlap. A backward that reaches no parameter at all (no hook fires)
// reduces nothing, so it must not happen on some ranks only.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace ember::dist {

// One bucket as a communication hook sees it: `buffer` is flat and contiguous, holding the
// bucket's gradients already scaled by 1 / world size; the hook must leave the reduced values
// in it once its work completes (and its `then`, if any, ran).
struct GradBucket {
  int index = 0;
  Tensor buffer;
  std::vector<std::string> parameter_names;
};

// A reduction in flight: DDP waits for `work`, then runs `then` (e.g. decompress into the
// bucket).
struct BucketReduction {
  WorkPtr work;
  std::function<void()> then;
};

// A communication hook starts a bucket's reduction (PyTorch's register_comm_hook).
using CommHook = std::function<BucketReduction(ProcessGroup& group, GradBucket& bucket)>;

namespace comm_hooks {
// The default: allreduce (sum) of the pre-scaled bucket, i.e. the mean over the ranks.
CommHook allreduce();
// Compression: the bucket is cast to float16 / bfloat16, allreduced, and cast back. Halves
// the bytes on the wire at the cost of precision (the sum is rounded to the 16-bit type).
CommHook fp16_compress();
CommHook bf16_compress();
}  // namespace comm_hooks

struct DDPOptions {
  double bucket_cap_mb = 25;             // MiB per bucket (Note [DDP gradient buckets])
  double first_bucket_cap_mb = 1;        // MiB of the first bucket of each dtype and device
  bool broadcast_buffers = true;         // broadcast rank 0's buffers at each forward
  bool find_unused_parameters = false;   // Note [DDP unused parameters]
  bool gradient_as_bucket_view = false;  // .grad are views into the buckets
  CommHook comm_hook;                    // empty: comm_hooks::allreduce()
};

class Reducer;  // ddp.cpp

class DistributedDataParallel : public nn::Module {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          DDPOptions options = {});
  ~DistributedDataParallel() override;

  // Broadcasts the buffers (unless turned off), prepares the gradient reduction of the coming
  // backward (when grad mode is on and no no_sync guard is alive), and runs module->forward.
  Tensor forward(const Tensor& input) override;
  // The same around any call: forward_with([&] { return net->forward(a, b); }).
  template <class Fn>
  auto forward_with(Fn&& fn) {
    pre_forward();
    return fn();
  }
  // What forward does before calling the module (for forward_with and custom signatures).
  void pre_forward();

  // While the guard lives, backward accumulates gradients locally without communication
  // (PyTorch's no_sync); the first synced backward after it reduces the accumulated sum.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  const std::shared_ptr<nn::Module>& module() const { return module_; }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }
  const DDPOptions& options() const { return options_; }
  // The buckets' parameter names, in bucket (launch) order: for tests and tuning.
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DDPOptions options_;
  std::shared_ptr<Reducer> reducer_;
  bool require_backward_sync_ = true;
};

// Broadcasts `tensors` from `root`, coalesced into one flat tensor per dtype and device (for
// DDP's parameters and buffers; any tensors of the group's device work).
void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root);

}  // namespace ember::dist
