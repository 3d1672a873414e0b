// Saved-tensor hooks (autograd/saved_hooks.h): what pack and unpack see and when, nesting, the
// version check that survives them, the checks on what unpack returns, double backward, and
// SaveOnCpu on the cpu and (simulator or GPU) on a cuda device.

#include <ember/ember.h>

#include <any>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
using Catch::Contains;

namespace {

// Hooks that keep a clone of each saved tensor and count the calls.
struct Counting {
  int packs = 0, unpacks = 0;
  std::vector<Shape> shapes;
  autograd::PackHook pack() {
    return [this](const Tensor& t) -> std::any {
      ++packs;
      shapes.push_back(t.sizes());
      return t.clone();
    };
  }
  autograd::UnpackHook unpack() {
    return [this](const std::any& p) {
      ++unpacks;
      return std::any_cast<Tensor>(p);
    };
  }
};

}  // namespace

TEST_CASE("saved tensor hooks: pack at save, unpack in backward, same gradients", "[autograd]") {
  manual_seed(3);
  Tensor x = randn({4, 5}).requires_grad_(), w = randn({5, 3}).requires_grad_();
  auto loss_of = [&] { return (matmul(x, w).tanh() * 2.0).exp().sum(); };
  loss_of().backward();
  const Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.grad().zero_();
  w.grad().zero_();

  Counting c;
  Tensor loss;
  {
    autograd::SavedTensorsHooksGuard hooks(c.pack(), c.unpack());
    loss = loss_of();
  }
  // matmul saves x and w, tanh and exp their outputs; mul by a scalar and sum save nothing.
  CHECK(c.packs == 4);
  CHECK(c.unpacks == 0);
  CHECK(c.shapes[0] == Shape{4, 5});
  CHECK(c.shapes[1] == Shape{5, 3});
  // Tensors saved after the guard ends are kept as usual.
  Tensor other = (x * x).sum();
  CHECK(c.packs == 4);
  loss.backward();
  CHECK(c.unpacks == 4);
  CHECK(same_bits(x.grad(), gx));
  CHECK(same_bits(w.grad(), gw));
  other.backward();
  CHECK(c.unpacks == 4);
}

TEST_CASE("saved tensor hooks nest: the innermost guard packs", "[autograd]") {
  Tensor x = randn({3}).requires_grad_();
  Counting outer, inner;
  Tensor a, b;
  {
    autograd::SavedTensorsHooksGuard g1(outer.pack(), outer.unpack());
    a = (x * x).sum();  // mul saves both operands
    {
      autograd::SavedTensorsHooksGuard g2(inner.pack(), inner.unpack());
      b = x.exp().sum();
    }
    CHECK(autograd::current_saved_tensor_hooks() != nullptr);
  }
  CHECK(autograd::current_saved_tensor_hooks() == nullptr);
  CHECK(outer.packs == 2);
  CHECK(inner.packs == 1);
  b.backward();
  CHECK(inner.unpacks == 1);
  CHECK(outer.unpacks == 0);
  a.backward();
  CHECK(outer.unpacks == 2);
  CHECK_THROWS_WITH(autograd::SavedTensorsHooksGuard(nullptr, outer.unpack()),
                    Contains("both a pack and an unpack hook"));
}

TEST_CASE("saved tensor hooks keep the in-place check while the saved tensor lives", "[autograd]") {
  Counting c;
  Tensor x = randn({4}).requires_grad_();
  Tensor h = x * 1.0, loss;
  {
    autograd::SavedTensorsHooksGuard hooks(c.pack(), c.unpack());
    loss = (h * h).sum();  // saves h twice: clones, but h's storage is alive
  }
  {
    autograd::NoGradGuard no_grad;
    h.add_(1.0);
  }
  CHECK_THROWS_WITH(loss.backward(), Contains("modified by an inplace operation"));

  // Once the saved tensor's storage is gone, nothing can change it: the packed copy serves.
  Tensor y = randn({4}).requires_grad_();
  Tensor loss2;
  {
    autograd::SavedTensorsHooksGuard hooks(c.pack(), c.unpack());
    Tensor t = y * 3.0;
    loss2 = (t * t).sum();
  }
  loss2.backward();
  CHECK(max_difference(y.grad(), y.detach() * 18.0) < 1e-5);
}

TEST_CASE("saved tensor hooks: what unpack returns is checked", "[autograd]") {
  Tensor x = randn({2, 3}).requires_grad_();
  Tensor loss;
  {
    autograd::SavedTensorsHooksGuard hooks([](const Tensor&) -> std::any { return 0; },
                                           [](const std::any&) { return zeros({3}); });
    loss = (x * x).sum();
  }
  CHECK_THROWS_WITH(loss.backward(), Contains("the unpack hook returned float32 [3] for a tensor "
                                              "saved as float32 [2, 3] (node MulBackward"));
  Tensor loss2;
  {
    autograd::SavedTensorsHooksGuard hooks([](const Tensor&) -> std::any { return 0; },
                                           [](const std::any&) { return Tensor(); });
    loss2 = x.exp().sum();
  }
  CHECK_THROWS_WITH(loss2.backward(), Contains("an undefined tensor"));
}

TEST_CASE("saved tensor hooks under create_graph: history kept or refused", "[autograd]") {
  manual_seed(5);
  Tensor x = randn({5}).requires_grad_();
  // Reference: d/dx sum(d/dx sum(x^3)) = sum(6x) -> 6 per element.
  auto second = [&](autograd::SavedTensorsHooksGuard* unused) {
    (void)unused;
    Tensor y = (x * x * x).sum();
    Tensor g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    return autograd::grad({g.sum()}, {x})[0];
  };
  Tensor ref = second(nullptr);
  {
    // Hooks that keep the tensor itself: the history is there, double backward matches.
    autograd::SavedTensorsHooksGuard keep(
        [](const Tensor& t) -> std::any { return t; },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    CHECK(same_bits(second(&keep), ref));
  }
  {
    // Hooks that keep only the data: refused under create_graph, not a wrong answer.
    autograd::SavedTensorsHooksGuard data(
        [](const Tensor& t) -> std::any { return t.detach(); },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    CHECK_THROWS_WITH(second(&data), Contains("without autograd history"));
  }
}

TEST_CASE("saved tensor hooks: a saved output does not keep its node alive", "[autograd]") {
  Tensor x = randn({3}).requires_grad_();
  std::weak_ptr<autograd::Node> node;
  {
    autograd::SavedTensorsHooksGuard keep(
        [](const Tensor& t) -> std::any { return t; },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    Tensor y = x.exp();  // exp saves its output
    node = y.grad_fn();
    CHECK_FALSE(node.expired());
    Tensor g = autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true)[0];
    CHECK(max_difference(g, x.detach().exp()) < 1e-6);
  }
  CHECK(node.expired());
}

TEST_CASE("SaveOnCpu keeps cpu tensors as they are", "[autograd]") {
  manual_seed(6);
  Tensor x = randn({4, 4}).requires_grad_();
  (x.tanh() * x).sum().backward();
  const Tensor ref = x.grad().clone();
  x.grad().zero_();
  Tensor loss;
  {
    autograd::SaveOnCpu offload;
    loss = (x.tanh() * x).sum();
  }
  loss.backward();
  CHECK(same_bits(x.grad(), ref));
}

TEST_CASE("SaveOnCpu moves a cuda model's activations to the host", "[autograd][cuda]") {
  if (!have_cuda()) return;
  manual_seed(7);
  const Device dev = Device::cuda(0);
  auto net = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 4; ++i) {
    net->push_back(std::make_shared<nn::Linear>(64, 64));
    net->push_back(std::make_shared<nn::Tanh>());
  }
  net->to(dev);
  const Tensor x = randn({128, 64}).to(dev);
  auto step = [&](bool offload, bool pin) {
    net->zero_grad();
    empty_cache(dev);
    const int64_t base = memory_allocated(dev);
    reset_peak_memory_stats(dev);
    Tensor loss;
    int64_t held = 0;
    {
      std::optional<autograd::SaveOnCpu> guard;
      if (offload) guard.emplace(pin);
      loss = sq((*net)(x)).mean();
      held = memory_allocated(dev) - base;
    }
    loss.backward();
    cuda::synchronize();
    std::vector<Tensor> grads;
    for (const Tensor& p : net->parameters()) grads.push_back(p.grad().cpu());
    return std::make_pair(held, grads);
  };
  auto [held_plain, g_plain] = step(false, false);
  auto [held_cpu, g_cpu] = step(true, false);
  auto [held_pinned, g_pinned] = step(true, true);
  for (size_t i = 0; i < g_plain.size(); ++i) {
    CHECK(same_bits(g_cpu[i], g_plain[i]));
    CHECK(same_bits(g_pinned[i], g_plain[i]));
  }
  // Between forward and backward the device held 8 activations of 128x64 floats (32 KiB each)
  // plus the loss; offloaded, only the output and the loss stay.
  CHECK(held_cpu < held_plain / 2);
  CHECK(held_pinned < held_plain / 2);
}
