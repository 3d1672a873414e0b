// SyncBatchNorm (distributed/sync_batch_norm.h) on 2 ranks against BatchNorm on the
// concatenated batch: outputs, input gradients, weight / bias gradients, running statistics.
#include <catch2/catch.hpp>

#include "autograd/grad_mode.h"
#include "autograd/ops/shape.h"
#include "core/generator.h"
#include "core/ops/factory.h"
#include "core/ops/random.h"
#include "distributed/sync_batch_norm.h"
#include "group_util.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/normalization.h"

using namespace ember;

namespace {
double max_abs(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 && b.numel() == 0) return 0;
  return (a - b).abs().max().item<double>();
}
std::vector<std::string> keys(const nn::StateDict& d) {
  std::vector<std::string> k;
  for (const auto& e : d) k.push_back(e.first);
  return k;
}
}  // namespace

// params: dims (2 or 4), split (rank 0's share of the 6 samples; 6 leaves rank 1 empty).
DIST_WORKER(sync_bn_matches_batch_norm) {
  auto pg = dist_test::make_test_group(args);
  const bool image = args.param("dims") == "4";
  const int64_t n = 6, c = 3;
  const int64_t split = args.int_param("split", 3);
  manual_seed(5);
  const Tensor full = image ? ember::randn({n, c, 2, 3}) * 2 + 1 : ember::randn({n, c}) * 2 + 1;
  const Tensor upstream = ember::randn(full.sizes());  // d loss / d output
  const int64_t start = args.rank == 0 ? 0 : split;
  const int64_t len = args.rank == 0 ? split : n - split;

  std::shared_ptr<nn::BatchNorm> bn;
  if (image)
    bn = std::make_shared<nn::BatchNorm2d>(c);
  else
    bn = std::make_shared<nn::BatchNorm1d>(c);
  {
    autograd::NoGradGuard no_grad;
    bn->weight.copy_(ember::tensor(std::vector<float>{0.5f, 1.5f, -2.0f}, {3}));
    bn->bias.copy_(ember::tensor(std::vector<float>{0.1f, -0.2f, 0.3f}, {3}));
  }
  // The reference: a second BatchNorm with the same values on the whole batch.
  std::shared_ptr<nn::BatchNorm> ref;
  if (image)
    ref = std::make_shared<nn::BatchNorm2d>(c);
  else
    ref = std::make_shared<nn::BatchNorm1d>(c);
  ref->load_state_dict(bn->state_dict());

  // Converted inside a Sequential: the child is replaced and keeps its tensors.
  auto seq =
      std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{bn});
  dist::convert_sync_batchnorm(seq, pg);
  auto sync = std::dynamic_pointer_cast<dist::SyncBatchNorm>(seq->at(0));
  DIST_EXPECT(sync != nullptr, "convert_sync_batchnorm left ", seq->at(0)->type_name());
  DIST_EXPECT(
      sync->weight.is_alias_of(bn->weight) && sync->running_var.is_alias_of(bn->running_var),
      "the converted module does not keep the BatchNorm's tensors");
  const auto ref_seq = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::BatchNorm1d>(c)});
  DIST_EXPECT(keys(seq->state_dict()) == keys(ref_seq->state_dict()),
              "state_dict names differ from BatchNorm's");

  for (int step = 0; step < 2; ++step) {
    const Tensor x_full = full.clone().requires_grad_();
    const Tensor y_full = ref->forward(x_full);
    (y_full * upstream).sum().backward();

    const Tensor x = full.narrow(0, start, len).clone().requires_grad_();
    const Tensor y = seq->forward(x);
    (y * upstream.narrow(0, start, len)).sum().backward();

    DIST_EXPECT(max_abs(y, y_full.narrow(0, start, len)) < 1e-5, "outputs differ by ",
                max_abs(y, y_full.narrow(0, start, len)));
    DIST_EXPECT(max_abs(x.grad(), x_full.grad().narrow(0, start, len)) < 1e-5,
                "input gradients differ by ",
                max_abs(x.grad(), x_full.grad().narrow(0, start, len)));
    // weight / bias: local sums; their sum over the ranks is the full batch's.
    Tensor wb = ember::cat({sync->weight.grad(), sync->bias.grad()}).contiguous();
    pg->allreduce(wb, dist::ReduceOp::Sum)->wait();
    const Tensor ref_wb = ember::cat({ref->weight.grad(), ref->bias.grad()});
    DIST_EXPECT(max_abs(wb, ref_wb) < 1e-4, "weight/bias gradients differ by ",
                max_abs(wb, ref_wb));
    DIST_EXPECT(max_abs(sync->running_mean, ref->running_mean) < 1e-6 &&
                    max_abs(sync->running_var, ref->running_var) < 1e-5,
                "running statistics differ");
    DIST_EXPECT(sync->num_batches_tracked.item<int64_t>() == step + 1, "num_batches_tracked");
    seq->zero_grad();
    ref->zero_grad();
  }
  // Eval: the running statistics, nothing communicated.
  seq->eval();
  ref->eval();
  const int64_t seq_before = pg->seq();
  const Tensor part = full.narrow(0, start, len);
  const Tensor ye = seq->forward(part);
  DIST_EXPECT(max_abs(ye, ref->forward(full).narrow(0, start, len)) < 1e-5, "eval outputs differ");
  DIST_EXPECT(pg->seq() == seq_before, "eval mode communicated");
  return 0;
}

TEST_CASE("sync batch norm: 2 ranks match BatchNorm1d on the concatenated batch",
          "[dist][syncbn]") {
  auto r = dist_test::run_group_workers("sync_bn_matches_batch_norm", 2);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("sync batch norm: (N, C, H, W) with unequal parts", "[dist][syncbn]") {
  auto r = dist_test::run_group_workers("sync_bn_matches_batch_norm", 2,
                                        {{"dims", "4"}, {"split", "4"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("sync batch norm: a rank with an empty batch still takes part", "[dist][syncbn]") {
  auto r = dist_test::run_group_workers("sync_bn_matches_batch_norm", 2,
                                        {{"dims", "4"}, {"split", "6"}});
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("sync batch norm: training without a process group is a clear error", "[dist][syncbn]") {
  dist::SyncBatchNorm bn(3);
  CHECK_THROWS_WITH(bn.forward(ember::ones({4, 3})), Catch::Contains("no process group"));
  bn.eval();
  CHECK(bn.forward(ember::ones({4, 3})).sizes() == Shape{4, 3});
}
