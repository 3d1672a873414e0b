#pragma once
// The process group a DDP / SyncBatchNorm test worker runs over: Gloo on loopback, meeting
// through the FileStore at param "store".

#include <memory>

#include "distributed/file_store.h"
#include "distributed/process_group_gloo.h"
#include "harness.h"

namespace ember::dist_test {

inline std::shared_ptr<dist::ProcessGroup> make_test_group(const WorkerArgs& args) {
  using namespace std::chrono_literals;
  auto store = std::make_shared<dist::FileStore>(args.param("store"), 20s);
  dist::GlooOptions o;
  o.hostname = "127.0.0.1";
  o.timeout = 20s;
  o.rendezvous_timeout = 20s;
  return dist::ProcessGroupGloo::create(store, args.rank, args.world_size, o);
}

// Runs worker `name` on `world_size` ranks with a fresh store and `params`; every rank must
// exit 0.
inline std::vector<RankResult> run_group_workers(const std::string& name, int world_size,
                                                 std::map<std::string, std::string> params = {}) {
  using namespace std::chrono_literals;
  RunOptions o;
  o.params = std::move(params);
  o.params["store"] = scratch_dir() + "/store";
  o.timeout = 50s;
  return run_workers(name, world_size, o);
}

}  // namespace ember::dist_test
