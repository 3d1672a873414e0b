#pragma once
// SyncBatchNorm: batch normalisation whose statistics are taken over the whole global batch --
// every rank's part of it -- instead of each rank's own part (torch.nn.SyncBatchNorm). With
// small per-rank batches (detection, segmentation) the per-rank statistics are too noisy.
//
//   auto net = dist::convert_sync_batchnorm(model, pg);   // BatchNorm1d/2d -> SyncBatchNorm
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(net, pg);
//
// It has BatchNorm's parameters and buffers under the same names (weight, bias, running_mean,
// running_var, num_batches_tracked), so state_dicts move freely between the two. Input
// (N, C, *), any number of dims >= 2.
//
// Note [SyncBatchNorm statistics]
// In training, each rank computes its per-channel mean, BIASED variance and element count, and
// the ranks allgather them (one collective of 2C + 1 values); every rank then combines them by
// counts -- mean = sum n_r m_r / N, var = sum n_r (v_r + (m_r - mean)^2) / N (Chan's parallel
// formula: no E[x^2] - E[x]^2 cancellation) -- and normalises with the global mean and
// invstd. The running statistics are updated with the global mean and the unbiased global
// variance, as BatchNorm on the concatenated batch would. Backward is a custom autograd
// function: each rank sums grad and grad * xhat over its part per channel, the ranks allreduce
// the two sums (when the input needs a gradient), and
//   grad_input = (grad - sum_dy / N - xhat * sum_dy_xhat / N) * invstd * weight.
// weight's and bias's gradients are the local sums (DDP then averages them over the ranks like
// any other gradient). A rank with an empty batch still takes part in both collectives with a
// count of zero, so every rank must run forward and backward. Double backward is not
// supported. In eval mode the running statistics are used and nothing is communicated (eval
// without running statistics normalises each rank with its own batch, as PyTorch).

#include <memory>
#include <optional>
#include <string>

#include "distributed/process_group.h"
#include "nn/module.h"
#include "nn/normalization.h"

namespace ember::dist {

class SyncBatchNorm : public nn::Module {
 public:
  explicit SyncBatchNorm(int64_t num_features, std::shared_ptr<ProcessGroup> group = nullptr,
                         double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true,
                         DType dtype = kFloat32);
  // Takes over bn's settings and its parameter and buffer TENSORS (the same objects, so an
  // optimizer made before the conversion still trains them).
  SyncBatchNorm(const nn::BatchNorm& bn, std::shared_ptr<ProcessGroup> group);

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;  // as BatchNorm's

  void set_process_group(std::shared_ptr<ProcessGroup> group) { group_ = std::move(group); }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine;
  bool track_running_stats;
  Tensor weight, bias;                                    // undefined without affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined without tracking

 private:
  std::shared_ptr<ProcessGroup> group_;
};

// Replaces every BatchNorm1d / BatchNorm2d in module's tree (module itself included) by a
// SyncBatchNorm over `group` that keeps its parameters and buffers, and returns the new root
// (module itself unless module is a BatchNorm). Children are swapped with
// Module::replace_module: a custom module's typed member pointer to a converted child must be
// reassigned by the caller, so convert models built from Sequential / ModuleList / ModuleDict,
// or convert before keeping pointers.
std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module,
                                                   std::shared_ptr<ProcessGroup> group);

}  // namespace ember::dist
