// The autograd engine and graph (autograd/): leaves, accumulation, retain_graph, hooks,
// in-place checks and rebasing, grad modes, anomaly mode, deep graphs, memory.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>

#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::values;

namespace {
Tensor leaf(std::vector<double> v, Shape shape) {
  return tensor(v, shape, kFloat64).requires_grad_();
}
}  // namespace

TEST_CASE("backward of a small expression gives the analytic gradients", "[autograd]") {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor b = leaf({0.5, -1, 2}, {3});
  Tensor a = leaf({0.25}, {1});
  Tensor loss = ((x * b).exp() + a).sum();
  loss.backward();
  std::vector<double> gx = values(x.grad()), gb = values(b.grad());
  for (int i = 0; i < 3; ++i) {
    const double xv = i + 1.0, bv = std::vector<double>{0.5, -1, 2}[i];
    CHECK(gx[i] == Approx(bv * std::exp(xv * bv)));
    CHECK(gb[i] == Approx(xv * std::exp(xv * bv)));
  }
  CHECK(values(a.grad()) == std::vector<double>{3.0});  // broadcast [1] -> [3]: summed
  CHECK(loss.grad_fn()->name() == "SumBackward");
  CHECK(x.is_leaf());
  CHECK(!loss.is_leaf());
}

TEST_CASE("leaves accumulate gradients across backward calls until zeroed", "[autograd]") {
  Tensor w = leaf({1, 2}, {2});
  (w * 3.0).sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{3, 3});
  (w * 2.0).sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{5, 5});
  w.grad().zero_();
  (w * w).sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{2, 4});
  w.set_grad(Tensor());  // "set to none"
  CHECK(!w.grad().defined());
  (w * 1.0).sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{1, 1});
}

TEST_CASE("non-leaves keep no grad unless retain_grad", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  Tensor z = y * y;
  z.sum().backward(Tensor(), /*retain_graph=*/true);
  CHECK_THROWS_WITH(y.grad(), Contains("retain_grad"));
  Tensor y2 = x * 2.0;
  y2.retain_grad();
  CHECK(y2.retains_grad());
  (y2 * y2).sum().backward();
  CHECK(values(y2.grad()) == std::vector<double>{4, 8});  // d(y^2)/dy = 2y
}

TEST_CASE("a second backward through freed buffers fails clearly, retain_graph allows it",
          "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor loss = (x * x).sum();  // mul saves x
  loss.backward();
  CHECK_THROWS_WITH(loss.backward(), Contains("backward through the graph a second time"));
  Tensor x2 = leaf({1, 2}, {2});
  Tensor loss2 = (x2 * x2).sum();
  loss2.backward(Tensor(), true);
  loss2.backward();
  CHECK(values(x2.grad()) == std::vector<double>{4, 8});
}

TEST_CASE("backward on a non-scalar needs a gradient", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH(y.backward(), Contains("only for scalar outputs"));
  y.backward(tensor(std::vector<double>{1, 10}, {2}, kFloat64));
  CHECK(values(x.grad()) == std::vector<double>{2, 20});
  CHECK_THROWS_WITH(y.backward(ones({3}, kFloat64)), Contains("Mismatch in shape"));
  Tensor plain = ones({2});
  CHECK_THROWS_WITH(plain.sum().backward(), Contains("does not require grad"));
}

TEST_CASE("autograd::grad returns gradients without touching .grad", "[autograd]") {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = leaf({4}, {1});
  Tensor unused = leaf({0}, {1});
  Tensor out = (x * x * y).sum();
  Tensors g = autograd::grad({out}, {x, y}, {}, true);
  CHECK(values(g[0]) == std::vector<double>{8, 16, 24});
  CHECK(values(g[1]) == std::vector<double>{14});
  CHECK(!x.grad().defined());
  CHECK_THROWS_WITH(autograd::grad({out}, {unused}, {}, true), Contains("allow_unused"));
  Tensors g2 = autograd::grad({out}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  CHECK(g2[0].defined());
  CHECK(!g2[1].defined());
}

TEST_CASE("backward with inputs accumulates only into those", "[autograd]") {
  Tensor a = leaf({1}, {1});
  Tensor b = leaf({2}, {1});
  Tensor loss = (a * b).sum();
  loss.backward(Tensor(), false, false, {a});
  CHECK(values(a.grad()) == std::vector<double>{2});
  CHECK(!b.grad().defined());
}

TEST_CASE("hooks run in order and may replace the gradient", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  std::vector<int> order;
  y.register_hook([&](const Tensor& g) {
    order.push_back(1);
    return g * 10.0;
  });
  y.register_hook([&](const Tensor& g) {
    order.push_back(2);
    CHECK(values(g) == std::vector<double>{10, 10});  // sees the first hook's replacement
    return Tensor();                                  // keep it
  });
  int64_t h = x.register_hook([&](const Tensor& g) {
    order.push_back(3);
    return g + 1.0;
  });
  int post_calls = 0;
  std::vector<double> seen_by_post_hook;
  x.register_post_accumulate_grad_hook([&](const Tensor& leaf_tensor) {
    ++post_calls;
    seen_by_post_hook = values(leaf_tensor.grad());
  });
  y.sum().backward();
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(post_calls == 1);
  CHECK(seen_by_post_hook == std::vector<double>{31, 31});  // after accumulation
  CHECK(values(x.grad()) == std::vector<double>{31, 31});
  x.remove_hook(h);
  x.set_grad(Tensor());
  order.clear();
  (x * 1.0).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{1, 1});
  CHECK(order.empty());
}

TEST_CASE("no_grad records nothing, enable_grad and set_grad_enabled switch it", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  {
    NoGradGuard no_grad;
    Tensor y = x * 2.0;
    CHECK(!y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
    {
      EnableGradGuard enable;
      CHECK((x * 2.0).requires_grad());
    }
  }
  autograd::set_grad_enabled(false);
  CHECK(!(x * 2.0).requires_grad());
  autograd::set_grad_enabled(true);
  CHECK((x * 2.0).requires_grad());
  Tensor d = (x * 2.0).detach();
  CHECK(!d.requires_grad());
  CHECK(d.is_alias_of(x) == false);
}

TEST_CASE("InferenceMode makes tensors that can never join a graph", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor inf;
  {
    InferenceMode guard;
    inf = x * 2.0;
    CHECK(!inf.requires_grad());
    CHECK(inf.is_inference());
    CHECK(InferenceMode::is_enabled());
    inf.add_(1.0);  // allowed inside
  }
  CHECK(!InferenceMode::is_enabled());
  CHECK_THROWS_WITH(inf.requires_grad_(), Contains("inference tensor"));
  CHECK_THROWS_WITH(inf.add_(1.0), Contains("Inplace update to inference tensor"));
  CHECK_THROWS_WITH((x * inf).sum().backward(), Contains("Inference tensors cannot be saved"));
  CHECK(!x.is_inference());
}

TEST_CASE("changing a saved tensor in place before backward is an error naming both versions",
          "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 1.0;
  Tensor z = y.exp();  // saves its result
  z.mul_(2.0);
  Tensor loss = z.sum();
  try {
    loss.backward();
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("modified by an inplace operation"));
    CHECK_THAT(msg, Contains("ExpBackward"));
    CHECK_THAT(msg, Contains("is at version 1; expected version 0"));
  }
}

TEST_CASE("in-place on a leaf that requires grad is refused, on a non-leaf rebased", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  CHECK_THROWS_WITH(x.mul_(2.0), Contains("a leaf Variable that requires grad"));
  CHECK_THROWS_WITH(x.narrow(0, 0, 1).mul_(2.0), Contains("view of a leaf Variable"));
  {
    NoGradGuard no_grad;
    x.mul_(1.0);  // optimizers do this
  }
  Tensor y = x * 3.0;
  y.mul_(x);  // y <- 3 x^2
  CHECK(y.grad_fn()->name() == "MulBackward");
  CHECK(!y.is_leaf());
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{6, 12});  // 6 x
  // As in PyTorch, y.mul_(y) overwrites the `other` that mul saved: backward says so.
  Tensor z = x * 3.0;
  z.mul_(z);
  CHECK_THROWS_WITH(z.sum().backward(), Contains("modified by an inplace operation"));
}

TEST_CASE("in-place through a view rebases the base with CopySlices", "[autograd]") {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor y = x * 1.0;
  Tensor v = y.narrow(0, 1, 2);
  v.mul_(10.0);  // y = [x0, 10 x1, 10 x2, x3]
  CHECK(y.grad_fn()->name() == "CopySlices");
  CHECK(values(y) == std::vector<double>{1, 20, 30, 4});
  (y * tensor(std::vector<double>{1, 2, 3, 4}, {4}, kFloat64)).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{1, 20, 30, 4});

  // A plain buffer filled through a view from a tensor that requires grad joins the graph.
  Tensor a = leaf({5, 6}, {2});
  Tensor buf = zeros({4}, kFloat64);
  buf.narrow(0, 2, 2).copy_(a * 2.0);
  CHECK(buf.requires_grad());
  (buf * buf).sum().backward();
  CHECK(values(a.grad()) == std::vector<double>{40, 48});  // d(2a)^2 = 8a
}

TEST_CASE("other views of a base see its new history after an in-place op", "[autograd]") {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor y = x * 1.0;
  Tensor first = y.narrow(0, 0, 2);
  Tensor second = y.narrow(0, 1, 2);  // overlaps `first` in y[1]
  first.mul_(10.0);                   // y = [10, 20, 3, 4]; second = [20, 3]
  CHECK(values(second) == std::vector<double>{20, 3});
  (second * 1.0).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 10, 1, 0});

  // A view made under no_grad from a tensor that requires grad may not be written with grad on.
  Tensor z = x * 1.0;
  Tensor v;
  {
    NoGradGuard no_grad;
    v = z.narrow(0, 0, 2);
  }
  CHECK_THROWS_WITH(v.mul_(2.0), Contains("created in no_grad mode"));
}

TEST_CASE("a 100000-deep chain backpropagates and is freed without stack overflow", "[autograd]") {
  Tensor x = leaf({1.0}, {1});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{1.0});
  y = Tensor();  // drops the whole chain: Note [Iterative graph teardown]
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z.exp().mul(0.0).add(x);  // saves tensors on the way
  z = Tensor();
  SUCCEED("teardown of a graph holding saved tensors did not overflow the stack");
}

TEST_CASE("backward frees saved buffers: memory returns to its baseline", "[autograd]") {
  Tensor w = randn({64, 64}, kFloat64).requires_grad_();
  Tensor x = randn({64, 64}, kFloat64);
  auto step = [&] {
    Tensor h = (x * w).exp();
    Tensor loss = (h * h).mean();
    loss.backward();
  };
  step();  // .grad exists from here on
  const int64_t baseline = static_cast<int64_t>(memory_stats(kCPU).allocated_bytes);
  for (int i = 0; i < 5; ++i) step();
  CHECK(static_cast<int64_t>(memory_stats(kCPU).allocated_bytes) == baseline);
  // Saved buffers go as soon as backward used them, even while the graph is still referenced.
  Tensor h = (x * w).exp();
  Tensor loss = (h * h).mean();
  h = Tensor();
  const int64_t with_graph = static_cast<int64_t>(memory_stats(kCPU).allocated_bytes);
  loss.backward();
  CHECK(static_cast<int64_t>(memory_stats(kCPU).allocated_bytes) < with_graph);
}

TEST_CASE("create_graph makes the backward differentiable", "[autograd]") {
  Tensor x = leaf({2.0, 3.0}, {2});
  Tensor y = (x * x * x).sum();  // dy/dx = 3x^2, d2y/dx2 = 6x
  Tensors g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  CHECK(g[0].requires_grad());
  CHECK(values(g[0]) == std::vector<double>{12, 27});
  g[0].sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{12, 18});
}

namespace {
struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * x * x * scale;
  }
  static Tensors backward(autograd::AutogradContext* ctx, const Tensors& grads) {
    Tensor x = ctx->get_saved_variables()[0];
    const double scale = std::any_cast<double>(ctx->saved_data["scale"]);
    return {grads[0] * x * x * (3.0 * scale)};
  }
};

struct MaxWithIndex : autograd::Function<MaxWithIndex> {
  static Tensors forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor idx = x.argmax(0, true);
    Tensor val = x.gather(0, idx);
    ctx->save_for_backward({idx});
    ctx->saved_data["n"] = x.size(0);
    ctx->mark_non_differentiable({idx});
    return {val, idx};
  }
  static Tensors backward(autograd::AutogradContext* ctx, const Tensors& grads) {
    Tensor idx = ctx->get_saved_variables()[0];
    const int64_t n = std::any_cast<int64_t>(ctx->saved_data["n"]);
    return {zeros({n}, kFloat64).scatter(0, idx, grads[0])};
  }
};
}  // namespace

TEST_CASE("custom Function: forward and backward with a context", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = Cube::apply(x, 2.0);
  CHECK(y.grad_fn()->name() == "CubeBackward");
  CHECK(values(y) == std::vector<double>{2, 16});
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{6, 24});
  autograd::GradcheckResult r =
      autograd::gradcheck([](const Tensors& in) { return Tensors{Cube::apply(in[0], 0.5)}; },
                          {leaf({0.3, -1.2, 2.0}, {3})});
  INFO(r.report);
  CHECK(r.ok);

  Tensor z = leaf({1, 5, 3}, {3});
  Tensors outs = MaxWithIndex::apply(z);
  CHECK(outs[0].requires_grad());
  CHECK(!outs[1].requires_grad());
  outs[0].sum().backward();
  CHECK(values(z.grad()) == std::vector<double>{0, 1, 0});
  // Without grad the context records nothing.
  NoGradGuard no_grad;
  CHECK(!Cube::apply(x, 1.0).requires_grad());
}

TEST_CASE("gradcheck reports the worst element of a wrong derivative", "[autograd]") {
  struct WrongSquare : autograd::Function<WrongSquare> {
    static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
      ctx->save_for_backward({x});
      return x * x;
    }
    static Tensors backward(autograd::AutogradContext* ctx, const Tensors& grads) {
      return {grads[0] * ctx->get_saved_variables()[0] * 3.0};  // should be 2x
    }
  };
  autograd::GradcheckResult r = autograd::gradcheck(
      [](const Tensors& in) { return Tensors{WrongSquare::apply(in[0])}; }, {leaf({1, 2}, {2})});
  CHECK(!r.ok);
  CHECK_THAT(r.report, Contains("analytical 6") && Contains("numerical 4"));
  CHECK_THROWS_WITH(
      autograd::gradcheck([](const Tensors& in) { return in; }, {ones({2}).requires_grad_()}),
      Contains("float64"));
}

TEST_CASE("anomaly mode names the backward node and forward op that made a NaN", "[autograd]") {
  struct NanBackward : autograd::Function<NanBackward> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
    static Tensors backward(autograd::AutogradContext*, const Tensors& grads) {
      return {grads[0] * std::nan("")};
    }
  };
  Tensor x = leaf({1, 2}, {2});
  {
    autograd::DetectAnomalyGuard guard;
    Tensor y = NanBackward::apply(x).exp().sum();
    try {
      y.backward();
      FAIL("expected an anomaly error");
    } catch (const Error& e) {
      CHECK_THAT(std::string(e.what()), Contains("NanBackward") && Contains("nan"));
    }
  }
  CHECK(!autograd::is_anomaly_enabled());
  // A built-in op: sqrt'(0) is infinite. The error names the node, the forward op, its inputs
  // and where it was made (a backtrace through this test).
  {
    autograd::DetectAnomalyGuard guard;
    Tensor z = tensor(std::vector<double>{0.0, 4.0}, {2}, kFloat64).requires_grad_();
    Tensor loss = (z * 1.0).sqrt().sum();
    try {
      loss.backward();
      FAIL("expected an anomaly error");
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK_THAT(msg, Contains("SqrtBackward") && Contains("forward op sqrt"));
      CHECK_THAT(msg, Contains("sqrt(float64 [2])") && Contains("made at"));
      CHECK_THAT(msg, Contains("#0"));  // the recorded backtrace
    }
  }
  // Without anomaly mode the NaN goes through silently, as in PyTorch.
  NanBackward::apply(x).sum().backward();
  CHECK(std::isnan(values(x.grad())[0]));
}

TEST_CASE("anomaly forward check names the first op whose output holds NaN or Inf", "[autograd]") {
  Tensor x = leaf({1000.0, 1.0}, {2});
  autograd::DetectAnomalyGuard guard(/*check_forward=*/true);
  Tensor y = x * 2.0;  // fine
  try {
    Tensor z = y.exp();  // overflows to inf
    FAIL("expected an anomaly error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()),
               Contains("forward op exp (float64 [2])") && Contains("first op"));
  }
}

TEST_CASE("to_dot draws the graph with node names and leaf shapes", "[autograd]") {
  Tensor w = leaf({1, 2}, {2});
  w.set_name("w");
  Tensor loss = (w.exp() * 2.0).sum();
  std::string dot = autograd::to_dot(loss);
  CHECK_THAT(dot, Contains("digraph"));
  CHECK_THAT(dot, Contains("SumBackward"));
  CHECK_THAT(dot, Contains("MulBackward"));
  CHECK_THAT(dot, Contains("ExpBackward"));
  CHECK_THAT(dot, Contains("AccumulateGrad"));
  CHECK_THAT(dot, Contains("w\\nfloat64 [2]"));
  // next_functions as the graph API shows them
  auto fn = loss.grad_fn();
  REQUIRE(fn->next_functions().size() == 1);
  CHECK(fn->next_functions()[0].fn->name() == "MulBackward");
}

TEST_CASE("a 2-layer MLP trained by hand with SGD converges", "[autograd]") {
  manual_seed(0);
  // A smooth synthetic regression target: y = sin(x0) + x1 * x2 - 0.5 x3.
  Tensor x = randn({128, 4});
  Tensor y =
      (x.select(1, 0).sin() + x.select(1, 1) * x.select(1, 2) - x.select(1, 3) * 0.5).unsqueeze(1);
  Tensor w1 = (randn({4, 32}) * 0.5).requires_grad_();
  Tensor b1 = zeros({32}).requires_grad_();
  Tensor w2 = (randn({32, 1}) * 0.2).requires_grad_();
  Tensor b2 = zeros({1}).requires_grad_();
  auto loss_fn = [&] {
    Tensor h = (x.matmul(w1) + b1).relu();
    Tensor pred = h.matmul(w2) + b2;
    return ((pred - y) * (pred - y)).mean();
  };
  const float initial = loss_fn().item<float>();
  float last = initial;
  for (int step = 0; step < 300; ++step) {
    Tensor loss = loss_fn();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor* p : {&w1, &b1, &w2, &b2}) {
      p->sub_(p->grad() * 0.05);
      p->grad().zero_();
    }
    last = loss.item<float>();
  }
  INFO("initial loss " << initial << ", final " << last);
  CHECK(last < initial * 0.1f);
  CHECK(std::isfinite(last));
}

TEST_CASE("embedding gives no gradient to the padding row, unused split pieces are fine",
          "[autograd]") {
  Tensor weight = randn({4, 3}, kFloat64).requires_grad_();
  Tensor idx = tensor(std::vector<int64_t>{0, 2, 2, 1}, {4}, kInt64);
  embedding(weight, idx, /*padding_idx=*/2).sum().backward();
  CHECK(values(weight.grad()) ==
        std::vector<double>{1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0});  // rows 0, 1 once; row 2 none

  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {6});
  std::vector<Tensor> pieces = (x * 1.0).split(2);
  (pieces[1] * 3.0).sum().backward();  // pieces 0 and 2 never used
  CHECK(values(x.grad()) == std::vector<double>{0, 0, 3, 3, 0, 0});
}

TEST_CASE("an in-place op that saves its own target leaves no reference cycle", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  std::weak_ptr<autograd::Node> node;
  {
    Tensor z = x * 3.0;
    z.mul_(z);  // mul saved `z`, whose grad_fn is now that very node
    node = z.grad_fn();
    CHECK(!node.expired());
    Tensor v = (x * 1.0).narrow(0, 0, 1);
    v.mul_(v);  // the same through a view (CopySlices)
  }
  CHECK(node.expired());  // freed with z: no cycle kept it alive
}

namespace {
int counted_backward_calls = 0;
struct Counted : autograd::Function<Counted> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 1.0; }
  static Tensors backward(autograd::AutogradContext*, const Tensors& grads) {
    ++counted_backward_calls;
    return {grads[0]};
  }
};
}  // namespace

TEST_CASE("each node runs once, after all its gradients arrived", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = Counted::apply(x);
  Tensor z = (y * 2.0 + y * 3.0 + y.exp() * 0.0).sum();  // three paths into y's node
  counted_backward_calls = 0;
  z.backward();
  CHECK(counted_backward_calls == 1);
  CHECK(values(x.grad()) == std::vector<double>{5, 5});
}

TEST_CASE("grad mode is per thread", "[autograd]") {
  Tensor x = leaf({1}, {1});
  NoGradGuard no_grad;
  bool other_thread_records = false;
  std::thread t([&] { other_thread_records = (x * 2.0).requires_grad(); });
  t.join();
  CHECK(other_thread_records);
  CHECK(!(x * 2.0).requires_grad());
}

TEST_CASE("requires_grad_ and detach_ check what they are given", "[autograd]") {
  CHECK_THROWS_WITH(ones({2}, kInt64).requires_grad_(), Contains("floating point"));
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH(y.requires_grad_(false), Contains("leaf"));
  y.detach_();
  CHECK(y.is_leaf());
  CHECK(!y.requires_grad());
  CHECK(values(y) == std::vector<double>{2, 4});
  CHECK_THROWS_WITH(x.narrow(0, 0, 1).detach_(), Contains("view"));
  x.requires_grad_(false);
  CHECK(!(x * 2.0).requires_grad());
}
