#pragma once
// ember-train's data parallelism. Started as one rank of several -- by ember-run, torchrun,
// srun or mpirun (the variables of Note [Rank sources] in distributed/env.h) -- the process
// joins the job's store, builds a process group (Gloo for --device cpu, NCCL for --device cuda,
// one GPU per process: cuda:LOCAL_RANK) and trains through dist::DistributedDataParallel:
//
//   ember-run --nproc-per-node 2 ember-train --model mlp --epochs 1 --threads 1
//
// Each rank reads its share of every epoch (data::DistributedSampler, seeded by --seed), so a
// step of R ranks sees R * --batch-size images; the gradients are averaged over the ranks. The
// epoch's training loss and accuracy are summed over the ranks before they are reported, so
// every rank prints the same numbers; rank 0 alone writes the metrics CSV and the checkpoints,
// and every rank resumes from them. A world of one (no variables) trains as before.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"
#include "distributed/env.h"
#include "distributed/process_group.h"
#include "distributed/process_group_gloo.h"
#include "distributed/process_group_nccl.h"
#include "distributed/store.h"

namespace ember::examples {

struct DistSetup {
  dist::RankInfo info;
  std::shared_ptr<dist::Store> store;
  std::shared_ptr<dist::ProcessGroup> group;  // null in a world of one

  bool active() const { return group != nullptr; }
  bool is_main() const { return info.rank == 0; }
  int rank() const { return info.rank; }
  int world_size() const { return info.world_size; }
};

// backend: "auto" (gloo for cpu, nccl for cuda), "gloo" or "nccl"; cuda: --device cuda (a
// cuda rank uses cuda:LOCAL_RANK, device_for).
// info: dist::rank_info_from_env().
inline DistSetup setup_distributed(const dist::RankInfo& info, const std::string& backend,
                                   bool cuda, std::chrono::milliseconds timeout) {
  DistSetup d;
  d.info = info;
  if (d.info.world_size <= 1) return d;
  const std::string use = backend == "auto" ? (cuda ? "nccl" : "gloo") : backend;
  EMBER_CHECK(use != "nccl" || cuda,
              "--dist-backend nccl needs --device cuda (NCCL moves cuda "
              "tensors; use gloo for the cpu)");
  EMBER_CHECK(use != "gloo" || !cuda,
              "--dist-backend gloo moves cpu tensors; with --device cuda "
              "use nccl (or --dist-backend auto)");
  d.store = dist::store_from_env(d.info, timeout);
  if (use == "gloo") {
    dist::GlooOptions o;
    o.timeout = timeout;
    o.rendezvous_timeout = timeout;
    d.group = dist::ProcessGroupGloo::create(d.store, d.info.rank, d.info.world_size, o);
  } else {
    dist::NcclOptions o;
    o.timeout = timeout;
    o.device = d.info.local_rank;
    d.group = dist::ProcessGroupNCCL::create(d.store, d.info.rank, d.info.world_size, o);
  }
  return d;
}

// The device of this rank: cuda:LOCAL_RANK for a cuda rank of a job, else `asked`.
inline Device device_for(const dist::RankInfo& info, Device asked) {
  if (info.world_size > 1 && asked.is_cuda()) return Device::cuda(info.local_rank);
  return asked;
}

// Sums `values` over the ranks, in place (float64 on the cpu through the group's device).
inline void sum_over_ranks(const DistSetup& d, std::vector<double>& values, Device device) {
  if (!d.active() || values.empty()) return;
  Tensor t = tensor(values, {static_cast<int64_t>(values.size())});
  if (device.is_cuda()) t = t.to(device);
  d.group->allreduce(t, dist::ReduceOp::Sum)->wait();
  Tensor back = t.to(kCPU).contiguous();
  const double* p = back.data_ptr<double>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = p[i];
}

}  // namespace ember::examples
