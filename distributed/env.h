#pragma once
// Rank resolution: which rank this process is, of how many, and where the store is, from the
// environment its launcher set -- so ember-run, torchrun, srun and mpirun all start an ember job.
//
//   dist::RankInfo info = dist::rank_info_from_env();
//   auto store = dist::store_from_env(info, std::chrono::seconds(60));
//
// Note [Rank sources]
// The first source whose variables are present wins, in this order:
//   "env"   (ember-run, torchrun): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (both default to
//           RANK and WORLD_SIZE: one node), MASTER_ADDR, MASTER_PORT
//   "ompi"  (Open MPI's mpirun): OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   "pmi"   (MPICH / Intel MPI's hydra): PMI_RANK, PMI_SIZE; local rank and size from
//           MPI_LOCALRANKID / MPI_LOCALNRANKS when set (else one node)
//   "slurm" (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the node's task count from
//           SLURM_NTASKS_PER_NODE or SLURM_STEP_TASKS_PER_NODE ("2(x3),1": this node's entry, by
//           SLURM_NODEID), MASTER_ADDR defaulting to the first host of SLURM_JOB_NODELIST
//           ("node[01-04,07],gpu3" -> "node01")
//   "none"  no variables: a world of 1.
// For every source MASTER_ADDR and MASTER_PORT come from the environment when set; MASTER_PORT
// defaults to 29500, MASTER_ADDR to 127.0.0.1 when every rank is on this node (a job spanning
// nodes without a MASTER_ADDR is an error). A value that is not a number, or is out of range (a
// rank >= the world size), raises dist::Error (Usage) naming the variable and its value.
// Inside an sbatch script (not under srun) Slurm's variables describe the allocation, not a
// task: start the program with srun.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace ember::dist {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "none";  // "env", "ompi", "pmi", "slurm" or "none" (Note [Rank sources])
  int restart_count = 0;        // EMBER_RESTART_COUNT: which attempt of a restarted ember-run job
  bool store_hosted = false;    // EMBER_STORE_HOSTED: the launcher serves the store
};

RankInfo rank_info_from_env();

// The store of the job: a TCPStore client of MASTER_ADDR:MASTER_PORT with `timeout`. Unless
// the launcher hosts the server (EMBER_STORE_HOSTED=1, set by ember-run), rank 0 starts it in
// process (is_server), and rank 0 waits up to `timeout` for every rank to connect. A world of 1
// not launched by ember-run gets an in-process HashStore (no port is needed). The store returned
// is a PrefixStore "run<restart_count>" over that one, so a restarted job's keys never meet the
// keys of the attempt before it.
std::shared_ptr<Store> store_from_env(const RankInfo& info, std::chrono::milliseconds timeout);

// The first host of a Slurm node list in its compressed syntax: "node[01-04,07],gpu3" -> "node01",
// "gpu3,node1" -> "gpu3", "rack[2-3]-n[5,7]" -> "rack2-n5". A malformed list raises dist::Error
// (Usage) naming `variable`.
std::string slurm_first_host(const std::string& nodelist, const char* variable);
// Slurm's tasks-per-node list expanded: "2(x3),1" -> {2, 2, 2, 1}.
std::vector<int> slurm_tasks_per_node(const std::string& spec, const char* variable);

}  // namespace ember::dist
