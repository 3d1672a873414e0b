// Activation checkpointing (autograd/checkpoint.h, nn/checkpoint.h): the same outputs and
// gradients bit for bit, less memory held between forward and backward, dropout's mask and
// BatchNorm's statistics as without it, retain_graph, double backward, nesting, autocast, and
// the errors for a function that does not recompute what it computed.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

std::shared_ptr<nn::Sequential> mlp(int64_t width, int64_t depth, double dropout = 0.0) {
  auto net = std::make_shared<nn::Sequential>();
  for (int64_t i = 0; i < depth; ++i) {
    net->push_back(std::make_shared<nn::Linear>(width, width));
    net->push_back(std::make_shared<nn::Tanh>());
    if (dropout > 0) net->push_back(std::make_shared<nn::Dropout>(dropout));
  }
  return net;
}

std::vector<Tensor> grads_of(const nn::Module& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.grad().detach().clone());
  return out;
}

void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i], b[i]));
}

// One forward and backward; segments 0 = no checkpointing.
struct Step {
  Tensor y;
  std::vector<Tensor> grads;
  Tensor grad_x;
};
Step run(nn::Sequential& net, const Tensor& x_in, int64_t segments) {
  net.zero_grad();
  Tensor x = x_in.detach().clone().requires_grad_();
  Tensor y = segments == 0 ? net(x) : nn::checkpoint_sequential(net, segments, x);
  (y * y).sum().backward();
  return {y.detach(), grads_of(net), x.grad().clone()};
}

}  // namespace

TEST_CASE("checkpoint_sequential: same outputs and gradients, bit for bit", "[checkpoint]") {
  manual_seed(11);
  auto net = mlp(16, 6);
  const Tensor x = randn({8, 16});
  const Step plain = run(*net, x, 0);
  const int64_t n = static_cast<int64_t>(net->size());
  for (int64_t segments : {int64_t{1}, int64_t{2}, int64_t{3}, n}) {
    INFO("segments " << segments);
    const int64_t before = autograd::num_recomputations();
    const Step ck = run(*net, x, segments);
    CHECK(autograd::num_recomputations() - before == segments - 1);  // one per region
    CHECK(same_bits(ck.y, plain.y));
    CHECK(same_bits(ck.grad_x, plain.grad_x));
    check_same(ck.grads, plain.grads);
  }
  CHECK_THROWS_WITH(nn::checkpoint_sequential(*net, 0, x),
                    Contains("0 segments for a Sequential of 12 modules"));
  CHECK_THROWS_WITH(nn::checkpoint_sequential(*net, 13, x), Contains("13 segments"));
  CHECK_THROWS_WITH(nn::checkpoint_sequential(nn::Sequential(), 1, x), Contains("is empty"));
}

TEST_CASE("checkpoint: the memory held between forward and backward", "[checkpoint]") {
  manual_seed(12);
  const int64_t depth = 16, width = 128, batch = 256;
  auto net = mlp(width, depth);
  const Tensor x = randn({batch, width});
  auto held_after_forward = [&](int64_t segments) {
    net->zero_grad();
    const int64_t base = memory_allocated(kCPU);
    Tensor y = segments == 0 ? (*net)(x) : nn::checkpoint_sequential(*net, segments, x);
    const int64_t held = memory_allocated(kCPU) - base;
    y.sum().backward();
    return held;
  };
  const int64_t act = batch * width * 4;  // one float32 activation: 128 KiB
  const int64_t plain = held_after_forward(0);
  const int64_t four = held_after_forward(4);
  const int64_t every = held_after_forward(2 * depth);
  // Without checkpointing each Tanh keeps its output, which is also what the next Linear
  // keeps: 16 activations (the Linear outputs die; x was there before).
  CHECK(plain >= depth * act);
  CHECK(plain < (depth + 1) * act);
  // Four segments of 4 layers: the outputs of the three checkpointed ones, and the last one's 4.
  CHECK(four >= 7 * act);
  CHECK(four < 8 * act);
  // One region per module holds every module's output, the Linears' too: more than without.
  CHECK(every >= 2 * depth * act - act);
}

TEST_CASE("checkpoint: dropout draws the same mask in the recomputation", "[checkpoint]") {
  auto net = mlp(32, 3, /*dropout=*/0.5);
  manual_seed(13);
  const Tensor x = randn({16, 32});
  manual_seed(100);
  const Step plain = run(*net, x, 0);
  const Tensor after_plain = randn({4});  // where the stream is after the step
  manual_seed(100);
  const Step ck = run(*net, x, 3);
  const Tensor after_ck = randn({4});
  CHECK(same_bits(ck.y, plain.y));
  check_same(ck.grads, plain.grads);
  // The rerun's draws were given back: the stream goes on as without checkpointing.
  CHECK(same_bits(after_ck, after_plain));

  // Without preserve_rng_state the rerun draws other masks: the gradients differ.
  manual_seed(100);
  net->zero_grad();
  Tensor xr = x.clone().requires_grad_();
  autograd::CheckpointOptions options;
  options.preserve_rng_state = false;
  Tensor y = nn::checkpoint_sequential(*net, 3, xr, options);
  (y * y).sum().backward();
  CHECK(same_bits(y.detach(), plain.y));
  CHECK_FALSE(same_bits(net->parameters()[0].grad(), plain.grads[0]));
}

TEST_CASE("checkpoint: BatchNorm's running statistics are updated once", "[checkpoint]") {
  manual_seed(14);
  auto make = [] {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Linear>(8, 8));
    net->push_back(std::make_shared<nn::BatchNorm1d>(8));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::Linear>(8, 4));
    return net;
  };
  auto a = make(), b = make();
  b->load_state_dict(a->state_dict());
  const Tensor x = randn({10, 8});
  for (int i = 0; i < 3; ++i) {
    const Step pa = run(*a, x, 0);
    const Step pb = run(*b, x, 2);
    check_same(pb.grads, pa.grads);
  }
  const nn::StateDict ba = a->named_buffers(), bb = b->named_buffers();
  REQUIRE(ba.size() == 3);
  REQUIRE(bb.size() == 3);
  for (size_t i = 0; i < ba.size(); ++i) {
    INFO(ba[i].first);
    CHECK(bb[i].first == ba[i].first);
    CHECK(same_bits(bb[i].second, ba[i].second));
  }
  CHECK(bb[2].first == "1.num_batches_tracked");
  CHECK(bb[2].second.item<int64_t>() == 3);
}

TEST_CASE("checkpoint: retain_graph recomputes again, grad() leaves .grad alone", "[checkpoint]") {
  manual_seed(15);
  Tensor w = randn({6, 6}).requires_grad_();
  const Tensor x = randn({3, 6}).requires_grad_();
  auto f = [&](const Tensor& in) { return matmul(in, w).sin().exp(); };
  Tensor ref_loss = f(x).sum();
  const Tensors ref = autograd::grad({ref_loss}, {x, w});

  Tensor loss = autograd::checkpoint(f, x).sum();
  const int64_t before = autograd::num_recomputations();
  const Tensors g1 = autograd::grad({loss}, {x, w}, {}, /*retain_graph=*/true);
  const Tensors g2 = autograd::grad({loss}, {x, w});
  CHECK(autograd::num_recomputations() - before == 2);
  CHECK_FALSE(w.grad().defined());
  for (size_t i = 0; i < 2; ++i) {
    CHECK(same_bits(g1[i], ref[i]));
    CHECK(same_bits(g2[i], ref[i]));
  }
  CHECK_THROWS_WITH(autograd::grad({loss}, {x, w}),
                    Contains("backward through the graph a second time"));
}

TEST_CASE("checkpoint: double backward through a checkpointed region", "[checkpoint]") {
  manual_seed(16);
  Tensor w = randn({4, 4}).requires_grad_();
  Tensor x = randn({2, 4}).requires_grad_();
  auto f = [&](const Tensor& in) { return matmul(in, w).tanh(); };
  auto second = [&](bool ck) {
    w.set_grad(Tensor());
    Tensor y = ck ? autograd::checkpoint(f, x) : f(x);
    Tensor gx = autograd::grad({(y * y).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    (gx * gx).sum().backward();
    return w.grad().clone();
  };
  const Tensor ref = second(false);
  CHECK(max_difference(second(true), ref) < 1e-6);
  CHECK(abs(ref).sum().item<double>() > 0);
}

TEST_CASE("checkpoint: regions nest, and several inputs and outputs", "[checkpoint]") {
  manual_seed(17);
  Tensor w = randn({5, 5}).requires_grad_();
  Tensor a = randn({3, 5}).requires_grad_(), b = randn({3, 5}).requires_grad_();
  auto inner = [&](const Tensor& t) { return matmul(t, w).sigmoid(); };
  auto outer = [&](const Tensors& in) -> Tensors {
    Tensor h = autograd::checkpoint(inner, in[0] * in[1]);
    return {h.exp(), (h * in[1]).cos()};
  };
  auto loss_of = [&](bool ck) {
    Tensors o = ck ? autograd::checkpoint(outer, {a, b}) : outer({a, b});
    return (o[0] * o[1]).sum();
  };
  const Tensors ref = autograd::grad({loss_of(false)}, {a, b, w});
  const Tensors got = autograd::grad({loss_of(true)}, {a, b, w});
  for (size_t i = 0; i < 3; ++i) CHECK(same_bits(got[i], ref[i]));
}

TEST_CASE("checkpoint: autocast in the forward is autocast in the recomputation", "[checkpoint]") {
  manual_seed(18);
  auto net = mlp(16, 3);
  const Tensor x = randn({8, 16});
  auto step = [&](int64_t segments) {
    net->zero_grad();
    Tensor y;
    {
      autocast::AutocastGuard amp(DeviceType::CPU);
      y = segments == 0 ? (*net)(x) : nn::checkpoint_sequential(*net, segments, x);
    }
    CHECK(y.dtype() == kBFloat16);
    sq(y.to(kFloat32)).sum().backward();
    return grads_of(*net);
  };
  check_same(step(3), step(0));
}

TEST_CASE("checkpoint: the errors", "[checkpoint]") {
  manual_seed(19);
  Tensor w = randn({4, 4}).requires_grad_();

  SECTION("an input changed in place after the forward") {
    Tensor x = randn({2, 4});
    Tensor loss =
        autograd::checkpoint([&](const Tensor& t) { return matmul(t, w).tanh(); }, x).sum();
    x.add_(1.0);
    CHECK_THROWS_WITH(loss.backward(),
                      Contains("checkpoint: input 0 (float32 [2, 4] on cpu) of the "
                               "checkpointed function was modified in place"));
  }
  SECTION("a function that computes other shapes the second time") {
    int calls = 0;
    auto f = [&](const Tensor& t) {
      ++calls;
      Tensor u = calls == 1 ? t : t.narrow(0, 0, 1);
      return matmul(u, w).tanh().sum();
    };
    Tensor loss = autograd::checkpoint(f, randn({2, 4}));
    CHECK_THROWS_WITH(loss.backward(),
                      Contains("saved tensor 0 of the recomputation is float32 [1, "
                               "4] on cpu, but the forward saved float32 [2, 4]"));
  }
  SECTION("a function that saves fewer tensors the second time") {
    int calls = 0;
    auto f = [&](const Tensor& t) {
      Tensor h = matmul(t, w);
      if (++calls == 1) h = h.exp();
      return h.sum();
    };
    Tensor loss = autograd::checkpoint(f, randn({2, 4}));
    CHECK_THROWS_WITH(loss.backward(),
                      Contains("the recomputation saved 1 tensors for backward, but "
                               "the forward saved 2"));
  }
  SECTION("a tensor the function saves and then changes in place") {
    auto f = [&](const Tensor& t) {
      Tensor h = matmul(t, w).exp();  // exp saves its output
      h.mul_(2.0);
      return h.sum();
    };
    // Without checkpointing it is the usual error; with it, the same error from the rerun.
    CHECK_THROWS_WITH(f(randn({2, 4})).backward(), Contains("modified by an inplace operation"));
    Tensor loss = autograd::checkpoint(f, randn({2, 4}));
    CHECK_THROWS_WITH(loss.backward(), Contains("modified by an inplace operation during the "
                                                "recomputation"));
  }
  SECTION("no function") {
    CHECK_THROWS_WITH(autograd::checkpoint(autograd::CheckpointFn(), Tensors{w}),
                      Contains("no function"));
  }
}

TEST_CASE("checkpoint: with grad mode off it is the function itself", "[checkpoint]") {
  Tensor w = randn({3, 3}).requires_grad_();
  autograd::NoGradGuard no_grad;
  const int64_t before = autograd::num_recomputations();
  Tensor y = autograd::checkpoint([&](const Tensor& t) { return matmul(t, w); }, randn({2, 3}));
  CHECK_FALSE(y.requires_grad());
  CHECK(autograd::num_recomputations() == before);
  CHECK_FALSE(autograd::is_recomputing());
}

TEST_CASE("checkpoint: the recomputation is a range in the profile", "[checkpoint]") {
  Tensor w = randn({3, 3}).requires_grad_();
  Tensor loss =
      autograd::checkpoint([&](const Tensor& t) { return matmul(t, w).tanh(); }, randn({2, 3}))
          .sum();
  profiler::Profiler prof;
  prof.start();
  loss.backward();
  const profiler::Result result = prof.stop();
  bool found = false;
  for (const profiler::FunctionEvent& e : result.events()) {
    if (e.name != "checkpoint.recompute") continue;
    found = true;
    // Inside a backward node's range, with the rerun's ops inside it.
    CHECK(e.depth >= 1);
  }
  CHECK(found);
}

TEST_CASE("checkpoint on a cuda device: same gradients, less device memory", "[checkpoint][cuda]") {
  if (!have_cuda()) return;
  manual_seed(20);
  const Device dev = Device::cuda(0);
  auto net = mlp(64, 6, /*dropout=*/0.25);
  net->to(dev);
  const Tensor x = randn({64, 64}).to(dev);
  auto step = [&](int64_t segments) {
    manual_seed(200);
    net->zero_grad();
    const int64_t base = memory_allocated(dev);
    Tensor y = segments == 0 ? (*net)(x) : nn::checkpoint_sequential(*net, segments, x);
    const int64_t held = memory_allocated(dev) - base;
    (y * y).sum().backward();
    cuda::synchronize();
    return std::make_pair(held, grads_of(*net));
  };
  auto [held_plain, g_plain] = step(0);
  auto [held_ck, g_ck] = step(6);
  check_same(g_ck, g_plain);
  CHECK(held_ck < held_plain / 2);
}
