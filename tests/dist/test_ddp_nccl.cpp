// DistributedDataParallel over ProcessGroupNCCL, world size 1 through the fake NCCL
// (tests/dist/fake_nccl.h) on the CUDA simulator: construction (its parameter check and
// broadcasts run on the cuda device) and a backward whose gradients equal the plain module's.
// Skipped (with a WARN saying why) in builds without a cuda device.
#include <catch2/catch.hpp>

#include "core/cuda.h"
#include "core/generator.h"
#include "core/ops/random.h"
#include "distributed/ddp.h"
#include "distributed/hash_store.h"
#include "distributed/process_group_nccl.h"
#include "fake_nccl.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/linear.h"

using namespace ember;
using namespace std::chrono_literals;
namespace fake = ember::dist_test::fake_nccl;

namespace {

std::shared_ptr<nn::Sequential> make_net(Device device) {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(8, 3)});
  net->to(device);
  return net;
}

}  // namespace

TEST_CASE("ddp over nccl: world size 1 through the fake, gradients equal the plain module's",
          "[dist][ddp][nccl]") {
  if (!cuda::is_available()) {
    WARN("skipped: no cuda device in this build or on this machine");
    return;
  }
  const bool tiny = GENERATE(false, true);
  INFO("tiny bucket cap: " << tiny);
  fake::reset();
  auto store = std::make_shared<dist::HashStore>(5s);
  dist::NcclOptions o;
  o.api = fake::api();
  o.timeout = 5s;
  o.device = 0;
  o.watchdog_interval = 20ms;
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, o);

  const Device dev = Device::cuda(0);
  auto plain = make_net(dev);
  auto wrapped = make_net(dev);
  dist::DDPOptions d;
  if (tiny) d.bucket_cap_mb = d.first_bucket_cap_mb = 1e-6;
  dist::DistributedDataParallel ddp(wrapped, pg, d);
  CHECK(ddp.bucket_parameter_names().size() == (tiny ? 4u : 1u));

  manual_seed(11);
  const Tensor x = randn({6, 4}).to(dev);
  const Tensor y = randn({6, 3}).to(dev);
  auto mse = [](const Tensor& out, const Tensor& t) { return ((out - t) * (out - t)).mean(); };
  mse(plain->forward(x), y).backward();
  mse(ddp.forward(x), y).backward();
  const auto pp = plain->parameters(), pw = wrapped->parameters();
  REQUIRE(pp.size() == pw.size());
  for (size_t i = 0; i < pp.size(); ++i) {
    REQUIRE(pw[i].grad().defined());
    CHECK(pw[i].grad().device() == dev);
    CHECK((pw[i].grad() - pp[i].grad()).abs().max().item<double>() <= 1e-6);
  }
  CHECK(fake::stats().all_reduce >= (tiny ? 4 : 1));
}
