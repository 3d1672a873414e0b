// The cost of DistributedDataParallel per training step: a plain step (forward, cross-entropy,
// backward, SGD step) on the bare ember-train model against the same step through
// dist::DistributedDataParallel, with the default buckets, with a tiny bucket cap (one bucket per
// parameter, the most collectives) and with the fp16 compression hook.
//
//   ./build/bench/bench_ddp                      # the MLP, Gloo over loopback, world 1 then 2
//   ./build/bench/bench_ddp --model cnn --world 2
//   ./build/bench/bench_ddp --quick              # few iterations (a smoke run)
//   ./build-gpu/bench/bench_ddp --backend nccl --device cuda   # NCCL, world 1, on a GPU
//
// Options: --model mlp|cnn (examples/models.h), --world N[,N...] (default 1,2; nccl: 1),
// --backend gloo|nccl, --device cpu|cuda (nccl needs cuda and an EMBER_CUDA=real build: other
// builds exit 1 at once saying so), --iters N (timed steps of each variant), --quick.
//
// Like bench_dist, the program starts itself once per rank (posix_spawn of /proc/self/exe with
// --rank; PR_SET_PDEATHSIG so no rank outlives it), the ranks meet through a FileStore in a
// temporary directory, and rank 0 prints the table. Each rank trains on its own batch of 64
// random images (1, 28, 28) with random labels, on one thread (set_num_threads(1)). Every variant
// has its own copy of the model (the same initial weights), its own SGD and, for the DDP ones,
// its own process group, so a variant that fails cannot disturb the others.
//
// Before timing, every variant runs one backward on the same batch on every rank, and the DDP
// gradients are checked against the plain step's (they must be equal: the mean over ranks of
// equal gradients; within float rounding, and within fp16's for the compression hook). Then the
// variants alternate step by step in the same processes (the first of each round rotates, so
// none always follows the same one), and the table gives the median seconds per step of each,
// its ratio to the plain step and the difference. On cuda every timed step ends with
// cuda::synchronize(), so a step's time includes its kernels. At world > 1 a DDP step also
// waits for the slowest rank (its collectives do), which a plain step does not: on a machine with
// fewer free cores than ranks that waiting, not the communication, can dominate.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_ranks.h"
#include "bench_util.h"
#include "core/cuda.h"
#include "core/generator.h"
#include "core/ops/random.h"
#include "core/parallel.h"
#include "distributed/ddp.h"
#include "distributed/file_store.h"
#include "distributed/nccl_api.h"
#include "distributed/process_group_gloo.h"
#include "distributed/process_group_nccl.h"
#include "examples/models.h"
#include "nn/functional.h"
#include "optim/sgd.h"

using namespace ember;

namespace {

constexpr int64_t kBatch = 64;  // per rank
constexpr double kLr = 0.01;

struct Config {
  std::string model = "mlp";
  std::string backend = "gloo";
  std::string device = "cpu";
  std::vector<int> worlds;  // empty: the default for the backend
  int iters = -1;           // -1: the default for the model
  bool quick = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_ddp: %s\nusage: bench_ddp [--model mlp|cnn] [--world N[,N...]] "
               "[--backend gloo|nccl] [--device cpu|cuda] [--iters N] [--quick]\n",
               why.c_str());
  std::exit(2);
}

std::vector<int> parse_worlds(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int w = std::atoi(item.c_str());
    if (w < 1 || w > 64) usage("--world takes sizes from 1 to 64, e.g. 1,2 (got '" + s + "')");
    out.push_back(w);
  }
  if (out.empty()) usage("--world needs a size");
  return out;
}

// The user's options, as given to every rank.
std::vector<std::string> config_args(const Config& c) {
  std::vector<std::string> a = {"--model",  c.model,  "--backend", c.backend,
                                "--device", c.device, "--iters",   std::to_string(c.iters)};
  if (c.quick) a.push_back("--quick");
  return a;
}

Config parse_config(int argc, char** argv, int first) {
  Config c;
  for (int i = first; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--quick") {
      c.quick = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string v = argv[++i];
    if (flag == "--model")
      c.model = v;
    else if (flag == "--backend")
      c.backend = v;
    else if (flag == "--device")
      c.device = v;
    else if (flag == "--world")
      c.worlds = parse_worlds(v);
    else if (flag == "--iters")
      c.iters = std::atoi(v.c_str());
    else
      usage("unknown option " + flag);
  }
  if (c.model != "mlp" && c.model != "cnn") usage("--model is mlp or cnn (got " + c.model + ")");
  if (c.backend != "gloo" && c.backend != "nccl") usage("--backend is gloo or nccl");
  if (c.device != "cpu" && c.device != "cuda") usage("--device is cpu or cuda");
  if (c.backend == "nccl" && c.device != "cuda")
    usage("--backend nccl moves cuda tensors: add --device cuda");
  if (c.backend == "gloo" && c.device != "cpu")
    usage("--backend gloo moves cpu tensors: use --backend nccl with --device cuda");
  if (c.worlds.empty())
    c.worlds = c.backend == "nccl" ? std::vector<int>{1} : std::vector<int>{1, 2};
  if (c.iters == -1) c.iters = c.quick ? 5 : (c.model == "mlp" ? 200 : 30);
  if (c.iters < 1) usage("--iters must be at least 1");
  return c;
}

// ---- one rank ----------------------------------------------------------------------------

struct Variant {
  std::string name;
  std::shared_ptr<nn::Sequential> net;
  std::shared_ptr<dist::DistributedDataParallel> ddp;  // null: the plain step
  std::unique_ptr<optim::SGD> opt;
  double tolerance = 0;  // of the gradient check, relative to each gradient's largest entry
  std::vector<double> seconds;

  Tensor forward(const Tensor& x) { return ddp ? ddp->forward(x) : net->forward(x); }
  size_t buckets() const { return ddp ? ddp->bucket_parameter_names().size() : 0; }
};

std::shared_ptr<dist::ProcessGroup> make_group(const Config& c,
                                               const std::shared_ptr<dist::Store>& store, int rank,
                                               int world, const std::string& name) {
  const auto timeout = std::chrono::seconds(60);
  if (c.backend == "nccl") {
    dist::NcclOptions o;
    o.timeout = timeout;
    o.device = rank;
    o.name = name;
    return dist::ProcessGroupNCCL::create(store, rank, world, o);
  }
  dist::GlooOptions o;
  o.hostname = "127.0.0.1";
  o.timeout = timeout;
  o.rendezvous_timeout = timeout;
  o.prefix = name;
  return dist::ProcessGroupGloo::create(store, rank, world, o);
}

// A batch of random images and labels on `device`, drawn from `seed`.
std::pair<Tensor, Tensor> random_batch(uint64_t seed, Device device) {
  manual_seed(seed);
  Tensor x = randn({kBatch, 1, 28, 28});
  Tensor y = randint(10, {kBatch});
  return {x.to(device), y.to(device)};
}

// One backward of every variant on the same batch; the largest difference of each DDP
// variant's gradients from the plain step's, relative to each gradient's largest entry.
// Returns false (after printing why) when one is beyond its tolerance.
bool validate(std::vector<Variant>& vs, const Tensor& x, const Tensor& y, int rank,
              std::string& summary) {
  std::vector<std::vector<Tensor>> grads;
  for (Variant& v : vs) {
    v.net->zero_grad();
    nn::functional::cross_entropy(v.forward(x), y).backward();
    std::vector<Tensor> g;
    for (const Tensor& p : v.net->parameters()) g.push_back(p.grad().to(kCPU).clone());
    grads.push_back(std::move(g));
    v.net->zero_grad();
  }
  bool ok = true;
  std::ostringstream s;
  for (size_t k = 1; k < vs.size(); ++k) {
    double worst = 0;
    for (size_t i = 0; i < grads[0].size(); ++i) {
      const double scale = std::max(grads[0][i].abs().max().item<double>(), 1e-30);
      worst = std::max(worst, (grads[k][i] - grads[0][i]).abs().max().item<double>() / scale);
    }
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s%s %.1e (tolerance %.0e)", k > 1 ? ", " : "",
                  vs[k].name.c_str(), worst, vs[k].tolerance);
    s << buf;
    if (!(worst <= vs[k].tolerance)) {
      std::fprintf(stderr,
                   "bench_ddp rank %d: %s: the DDP gradients differ from the plain step's "
                   "by %.3e of their largest entry (tolerance %.0e)\n",
                   rank, vs[k].name.c_str(), worst, vs[k].tolerance);
      ok = false;
    }
  }
  summary = s.str();
  return ok;
}

int run_rank(int rank, int world, const std::string& store_path, const Config& c) {
  bench::die_with_parent();
  set_num_threads(1);
  const bool cuda = c.device == "cuda";
  const Device device = cuda ? Device::cuda(rank) : kCPU;
  if (cuda) cuda::set_device(rank);
  auto store = std::make_shared<dist::FileStore>(store_path, std::chrono::seconds(60));

  std::vector<Variant> vs(4);
  vs[0].name = "plain step (no DDP)";
  vs[1].name = "DDP, default buckets";
  vs[2].name = "DDP, tiny bucket cap";
  vs[3].name = "DDP, fp16 comm hook";
  for (size_t k = 0; k < vs.size(); ++k) {
    Variant& v = vs[k];
    manual_seed(0);  // the same initial weights everywhere
    v.net = examples::make_model(c.model);
    v.net->to(device);
    if (k > 0) {
      dist::DDPOptions o;
      if (k == 2) o.bucket_cap_mb = o.first_bucket_cap_mb = 1e-6;  // a bucket per parameter
      if (k == 3) o.comm_hook = dist::comm_hooks::fp16_compress();
      v.tolerance = k == 3 ? 2e-3 : 1e-5;
      auto group = make_group(c, store, rank, world, "ddp" + std::to_string(k));
      v.ddp = std::make_shared<dist::DistributedDataParallel>(v.net, group, o);
    }
    v.opt = std::make_unique<optim::SGD>(v.net->parameters(), optim::SGDOptions(kLr));
  }

  {  // the same batch on every rank: DDP's mean gradient is the plain one
    auto [x, y] = random_batch(12345, device);
    std::string summary;
    if (!validate(vs, x, y, rank, summary)) return 1;
    if (rank == 0) {
      int64_t params = 0;
      for (const Tensor& p : vs[0].net->parameters()) params += p.numel();
      std::printf(
          "bench_ddp: %s (%lld parameters, %.2f MiB of float32 gradients), batch %lld per "
          "rank of random images, 1 thread per rank, %s on %s, world %d, %d steps of each "
          "variant (alternating)\n",
          c.model.c_str(), static_cast<long long>(params),
          static_cast<double>(params) * 4 / (1 << 20), static_cast<long long>(kBatch),
          c.backend.c_str(), cuda ? device.str().c_str() : "loopback", world, c.iters);
      std::printf(
          "validation (same batch on every rank; largest gradient difference from the "
          "plain step, relative): %s\n\n",
          summary.c_str());
    }
  }

  auto [x, y] = random_batch(1000 + static_cast<uint64_t>(rank), device);
  auto step = [&](Variant& v) {
    v.opt->zero_grad();
    nn::functional::cross_entropy(v.forward(x), y).backward();
    v.opt->step();
    if (cuda) cuda::synchronize();
  };
  // Every rank runs the same sequence, so the DDP collectives line up.
  const int warmup = std::max(2, c.iters / 10);
  for (int i = 0; i < warmup; ++i)
    for (Variant& v : vs) step(v);
  for (int i = 0; i < c.iters; ++i) {
    for (size_t j = 0; j < vs.size(); ++j) {
      Variant& v = vs[(static_cast<size_t>(i) + j) % vs.size()];
      const double t0 = bench::now_seconds();
      step(v);
      v.seconds.push_back(bench::now_seconds() - t0);
    }
  }

  if (rank == 0) {
    const double plain = bench::median(vs[0].seconds);
    std::printf("| variant | buckets | median ms/step | DDP / plain | DDP - plain ms |\n");
    std::printf("|---|---|---|---|---|\n");
    for (const Variant& v : vs) {
      const double m = bench::median(v.seconds);
      std::printf("| %s | %s | %.3f | %.2f | %+.3f |\n", v.name.c_str(),
                  v.ddp ? std::to_string(v.buckets()).c_str() : "-", m * 1e3, m / plain,
                  (m - plain) * 1e3);
    }
    std::fflush(stdout);
  }
  for (Variant& v : vs)
    if (v.ddp) v.ddp->process_group()->barrier()->wait();
  return 0;
}

// ---- the launcher ------------------------------------------------------------------------

// Refuses NCCL where it cannot run, with the reason, before any rank starts.
void check_nccl_usable(const Config& c, int world) {
  if (c.backend != "nccl") return;
  if (dist::real_nccl_api() == nullptr) {
    std::fprintf(stderr,
                 "bench_ddp: --backend nccl needs NCCL, and this build has none: NCCL is built "
                 "only with EMBER_CUDA=real (this build: EMBER_CUDA=%s). Build one with "
                 "`cmake --preset cuda` or bench/gpu.sh on a machine with a GPU.\n",
                 cuda::is_simulated() ? "sim" : "off");
    std::exit(1);
  }
  const int gpus = cuda::device_count();
  if (gpus < world) {
    std::fprintf(stderr,
                 "bench_ddp: --backend nccl with world %d needs %d cuda devices (one per rank; "
                 "NCCL refuses two ranks on one GPU), and %d %s usable\n",
                 world, world, gpus, gpus == 1 ? "is" : "are");
    std::exit(1);
  }
}

// Starts `world` ranks and waits for them (10 minutes at most); any failure kills the rest.
int run_world(const Config& c, int world) {
  return bench::run_ranks("bench_ddp", world, config_args(c), std::chrono::minutes(10));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "--rank") == 0) {
    const int rank = std::atoi(argv[2]);
    try {
      return run_rank(rank, std::atoi(argv[3]), argv[4], parse_config(argc, argv, 5));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_ddp rank %d: error: %s\n", rank, e.what());
      return 1;
    }
  }
  const Config c = parse_config(argc, argv, 1);
  int status = 0;
  for (size_t i = 0; i < c.worlds.size() && status == 0; ++i) {
    check_nccl_usable(c, c.worlds[i]);
    if (i > 0) std::printf("\n");
    std::fflush(stdout);
    status = run_world(c, c.worlds[i]);
  }
  return status;
}
