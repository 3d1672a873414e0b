#pragma once
// Helpers of the Gloo tests (test_gloo*.cpp): a group made from a worker's parameters, tensors
// from and to doubles.

#include <memory>
#include <string>
#include <vector>

#include "core/ops/factory.h"
#include "core/tensor.h"
#include "distributed/file_store.h"
#include "distributed/process_group_gloo.h"
#include "harness.h"

namespace ember::dist_test {

// The group of a worker: FileStore at param "store"; timeouts from "timeout_ms" and "rdzv_ms";
// "algo" = "hd" for halving-doubling; loopback.
inline std::shared_ptr<dist::ProcessGroupGloo> make_gloo(const WorkerArgs& args,
                                                         const std::string& prefix = "") {
  auto store = std::make_shared<dist::FileStore>(args.param("store"), std::chrono::seconds(30));
  dist::GlooOptions o;
  o.timeout = std::chrono::milliseconds(args.int_param("timeout_ms", 10000));
  o.rendezvous_timeout = std::chrono::milliseconds(args.int_param("rdzv_ms", 20000));
  o.hostname = "127.0.0.1";
  o.algorithm = args.param("algo") == "hd" ? dist::AllreduceAlgorithm::HalvingDoubling
                                           : dist::AllreduceAlgorithm::Ring;
  o.prefix = prefix.empty() ? args.param("prefix", "g") : prefix;
  return dist::ProcessGroupGloo::create(store, args.rank, args.world_size, o);
}

inline Tensor from_doubles(const std::vector<double>& v, DType dtype) {
  return from_vector(v).to(dtype);
}

inline std::vector<double> to_doubles(const Tensor& t) {
  Tensor d = t.to(kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace ember::dist_test
