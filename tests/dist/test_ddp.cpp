// DistributedDataParallel (distributed/ddp.h): 2 ranks on half-batches end with the parameters
// 1 process gets on the full batch.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/grad_mode.h"
#include "core/generator.h"
#include "core/ops/factory.h"
#include "core/ops/random.h"
#include "core/profiler.h"
#include "distributed/ddp.h"
#include "distributed/hash_store.h"
#include "group_util.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/linear.h"

using namespace ember;
using dist_test::WorkerArgs;

namespace {

// Linear(4, 8) -> Tanh -> Linear(8, 3), or with an extra Linear that forward never uses.
struct Net : nn::Module {
  explicit Net(bool with_unused, int64_t hidden = 8) : Module("Net") {
    body = register_module(
        "body", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                    std::make_shared<nn::Linear>(4, hidden), std::make_shared<nn::Tanh>(),
                    std::make_shared<nn::Linear>(hidden, 3)}));
    if (with_unused) unused = register_module("unused", std::make_shared<nn::Linear>(3, 3));
  }
  Tensor forward(const Tensor& x) override { return body->forward(x); }
  std::shared_ptr<nn::Sequential> body;
  std::shared_ptr<nn::Linear> unused;
};

std::shared_ptr<Net> make_net(uint64_t seed, bool with_unused = false) {
  manual_seed(seed);
  return std::make_shared<Net>(with_unused);
}

Tensor mse(const Tensor& out, const Tensor& y) { return ((out - y) * (out - y)).mean(); }

void sgd_step(nn::Module& m, double lr) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& p : m.parameters()) {
    if (p.grad().defined()) p.sub_(p.grad() * lr);
  }
  m.zero_grad();
}

// The full batch of step `step` (the same on every rank) and this rank's half of it.
struct Batch {
  Tensor x, y;
};
Batch full_batch(int step) {
  manual_seed(1000 + static_cast<uint64_t>(step));
  return {ember::randn({8, 4}), ember::randn({8, 3})};
}
Batch half(const Batch& b, const WorkerArgs& args) {
  const int64_t n = b.x.size(0) / args.world_size;
  return {b.x.narrow(0, n * args.rank, n), b.y.narrow(0, n * args.rank, n)};
}

double max_diff(nn::Module& a, nn::Module& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  double d = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    d = std::max(d, (pa[i] - pb[i]).abs().max().item<double>());
  return d;
}

dist::DDPOptions options_from(const WorkerArgs& args) {
  dist::DDPOptions o;
  if (args.param("tiny") == "1") o.bucket_cap_mb = o.first_bucket_cap_mb = 1e-6;
  o.gradient_as_bucket_view = args.param("view") == "1";
  o.find_unused_parameters = args.param("find_unused") == "1";
  if (args.param("hook") == "fp16") o.comm_hook = dist::comm_hooks::fp16_compress();
  if (args.param("hook") == "bf16") o.comm_hook = dist::comm_hooks::bf16_compress();
  return o;
}

}  // namespace

// 3 SGD steps; params: tiny, view, find_unused, hook, accumulate (no_sync micro-batches), tol.
DIST_WORKER(ddp_equivalence) {
  auto pg = dist_test::make_test_group(args);
  const bool unused = args.param("find_unused") == "1";
  const bool accumulate = args.param("accumulate") == "1";
  // Rank 1 starts from other weights: the construction broadcast must fix that.
  auto net = make_net(args.rank == 0 ? 7 : 99, unused);
  auto ref = make_net(7, unused);
  dist::DistributedDataParallel ddp(net, pg, options_from(args));
  DIST_EXPECT(max_diff(*net, *ref) == 0, "the parameters were not broadcast from rank 0");
  for (int step = 0; step < 3; ++step) {
    const int micro = accumulate ? 2 : 1;
    for (int m = 0; m < micro; ++m) {
      const Batch b = full_batch(step * 2 + m);
      const Batch h = half(b, args);
      mse(ref->forward(b.x), b.y).backward();
      if (m + 1 < micro) {
        auto guard = ddp.no_sync();
        mse(ddp.forward(h.x), h.y).backward();
      } else {
        mse(ddp.forward(h.x), h.y).backward();
      }
    }
    sgd_step(*ref, 0.1);
    sgd_step(*net, 0.1);
  }
  const double tol = std::stod(args.param("tol", "1e-5"));
  const double d = max_diff(*net, *ref);
  DIST_EXPECT(d <= tol, "rank ", args.rank, ": DDP parameters differ from the full batch by ", d);
  if (unused) {
    DIST_EXPECT(!net->unused->weight.grad().defined(), "an unused parameter got a gradient");
  }
  if (args.param("view") == "1") {
    // One bucket (a small model): every .grad lives in the same flat buffer.
    mse(ddp.forward(half(full_batch(9), args).x), half(full_batch(9), args).y).backward();
    const auto ps = net->parameters();
    for (const Tensor& p : ps)
      DIST_EXPECT(p.grad().is_alias_of(ps[0].grad()), "a .grad is not a view into the bucket");
  }
  return 0;
}

TEST_CASE("ddp: 2 ranks on half-batches match 1 process on the full batch", "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_equivalence", 2);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("ddp: a tiny bucket cap (one bucket per parameter)", "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_equivalence", 2, {{"tiny", "1"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("ddp: no_sync accumulates locally, the next backward reduces the sum", "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_equivalence", 2, {{"accumulate", "1"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("ddp: gradient_as_bucket_view", "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_equivalence", 2, {{"view", "1"}, {"accumulate", "1"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("ddp: find_unused_parameters with a parameter forward never uses", "[dist][ddp]") {
  auto r =
      dist_test::run_group_workers("ddp_equivalence", 2, {{"find_unused", "1"}, {"tiny", "1"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("ddp: fp16 and bf16 compression hooks", "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_equivalence", 2, {{"hook", "fp16"}, {"tol", "2e-3"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
  r = dist_test::run_group_workers("ddp_equivalence", 2,
                                   {{"hook", "bf16"}, {"tiny", "1"}, {"tol", "2e-2"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

// Without find_unused_parameters, backward names the parameter that got no gradient.
DIST_WORKER(ddp_unused_error) {
  auto pg = dist_test::make_test_group(args);
  auto net = make_net(7, /*with_unused=*/true);
  dist::DistributedDataParallel ddp(net, pg);
  const Batch h = half(full_batch(0), args);
  try {
    mse(ddp.forward(h.x), h.y).backward();
  } catch (const dist::Error& e) {
    const std::string m = e.what();
    DIST_EXPECT(e.kind() == dist::ErrorKind::Usage, m);
    DIST_EXPECT(m.find("'unused.weight'") != std::string::npos &&
                    m.find("'unused.bias'") != std::string::npos &&
                    m.find("find_unused_parameters") != std::string::npos,
                m);
    return 0;
  }
  DIST_EXPECT(false, "backward with an unused parameter did not raise");
  return 1;
}

TEST_CASE("ddp: an unused parameter without find_unused_parameters is an error naming it",
          "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_unused_error", 2);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

// Rank 1's hidden layer is 9 wide: construction fails on both ranks naming it.
DIST_WORKER(ddp_shape_mismatch) {
  auto pg = dist_test::make_test_group(args);
  manual_seed(3);
  auto net = std::make_shared<Net>(false, args.rank == 0 ? 8 : 9);
  try {
    dist::DistributedDataParallel ddp(net, pg);
  } catch (const dist::Error& e) {
    const std::string m = e.what();
    DIST_EXPECT(e.kind() == dist::ErrorKind::Mismatch, m);
    DIST_EXPECT(m.find("'body.0.weight'") != std::string::npos, m);
    const bool both =
        m.find("[8, 4]") != std::string::npos && m.find("[9, 4]") != std::string::npos;
    DIST_EXPECT(both, m);
    return 0;
  }
  DIST_EXPECT(false, "different models did not raise");
  return 1;
}

TEST_CASE("ddp: different parameter shapes on the ranks are an error naming the parameter",
          "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_shape_mismatch", 2);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

// Buckets in reverse registration order, launched during backward (before its end).
DIST_WORKER(ddp_buckets_overlap) {
  auto pg = dist_test::make_test_group(args);
  auto net = make_net(7);
  dist::DDPOptions o;
  o.bucket_cap_mb = o.first_bucket_cap_mb = 1e-6;
  dist::DistributedDataParallel ddp(net, pg, o);
  const auto buckets = ddp.bucket_parameter_names();
  DIST_EXPECT(buckets.size() == 4, buckets.size(), " buckets");
  DIST_EXPECT(buckets[0][0] == "body.2.bias" && buckets[3][0] == "body.0.weight", buckets[0][0]);
  dist::DistributedDataParallel one(make_net(7), pg);
  DIST_EXPECT(one.bucket_parameter_names().size() == 1, "default caps: one bucket");
  // The first layer's weight gets its gradient last; by then the later buckets are launched.
  int64_t launched_before_last = -1;
  const int64_t before = pg->seq();
  std::dynamic_pointer_cast<nn::Linear>(net->body->at(0))
      ->weight.register_post_accumulate_grad_hook(
          [&](const Tensor&) { launched_before_last = pg->seq() - before; });
  const Batch h = half(full_batch(0), args);
  mse(ddp.forward(h.x), h.y).backward();
  DIST_EXPECT(launched_before_last >= 3, "only ", launched_before_last,
              " buckets were launched before backward's last gradient");
  return 0;
}

TEST_CASE("ddp: buckets follow reverse registration order and launch during backward",
          "[dist][ddp]") {
  auto r = dist_test::run_group_workers("ddp_buckets_overlap", 2);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

// One rank in this process: the profiler sees each bucket's launch during backward, the wait at
// its end, and the allreduce on the Gloo group's own thread.
TEST_CASE("ddp: a profiled backward shows the bucket launches, the waits and the allreduces",
          "[dist][ddp]") {
  using namespace std::chrono_literals;
  auto store = std::make_shared<dist::HashStore>(20s);
  dist::GlooOptions o;
  o.hostname = "127.0.0.1";
  o.timeout = 20s;
  o.rendezvous_timeout = 20s;
  auto group = dist::ProcessGroupGloo::create(store, 0, 1, o);
  dist::DDPOptions opt;
  opt.bucket_cap_mb = 0.0001;  // one bucket per parameter
  opt.first_bucket_cap_mb = 0.0001;
  dist::DistributedDataParallel ddp(make_net(3), group, opt);
  const Batch b = full_batch(0);
  profiler::Profiler prof;
  prof.start();
  mse(ddp.forward(b.x), b.y).backward();
  const profiler::Result r = prof.stop();
  size_t launches = 0, waits = 0, allreduces = 0, in_backward = 0;
  int main_thread = -1;
  for (const profiler::FunctionEvent& e : r.events()) {
    if (e.name == "ddp.launch_bucket") {
      ++launches;
      main_thread = e.thread;
      // Launched from a gradient hook, inside the backward pass.
      for (int64_t p = e.parent; p >= 0; p = r.events()[static_cast<size_t>(p)].parent)
        if (r.events()[static_cast<size_t>(p)].category == profiler::Category::backward) {
          ++in_backward;
          break;
        }
    }
    if (e.name == "ddp.wait_bucket") ++waits;
  }
  for (const profiler::FunctionEvent& e : r.events())
    if (e.name == "gloo:allreduce") {
      ++allreduces;
      CHECK(e.thread != main_thread);
    }
  CHECK(launches >= 2);  // tiny buckets: more than one
  CHECK(waits == launches);
  CHECK(allreduces >= launches);
  CHECK(in_backward + 1 >= launches);  // the last may be launched by the end-of-backward callback
}
