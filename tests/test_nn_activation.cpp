// Activations, dropout and embedding (nn/activation.h, nn/dropout.h, nn/embedding.h): forward
// and backward against PyTorch's golden values (tests/golden/gen_nn_activation.py), plus what
// goldens cannot show: dropout's statistics, determinism and train/eval switching, embedding's
// default initialisation and padding row, printing, in-place forms and error messages.

#include <ember/ember.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <sstream>

#include "golden.h"
#include "nn/repr.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::check_close;
using ember::testing::Golden;
using ember::testing::golden;
using ember::testing::printed;
using ember::testing::values;
namespace F = ember::nn::functional;

namespace {

constexpr double kAtol = 1e-12, kRtol = 1e-11;

// Runs `fn` on case `name`'s input, backpropagates its grad_output and compares the output and
// the input gradient with PyTorch's.
void check_activation(const std::string& name, const std::function<Tensor(const Tensor&)>& fn) {
  const Golden& g = golden("nn_activation");
  INFO("case " << name);
  Tensor x = g[name + ".input"].requires_grad_();
  Tensor y = fn(x);
  check_close(y, g[name + ".output"], kAtol, kRtol, name + " output");
  (y * g[name + ".grad_output"]).sum().backward();
  check_close(x.grad(), g[name + ".grad_input"], kAtol, kRtol, name + " grad_input");
}

}  // namespace

TEST_CASE("activations match PyTorch, forward and backward", "[nn][golden]") {
  check_activation("relu", [](const Tensor& x) { return F::relu(x); });
  check_activation("leaky_relu", [](const Tensor& x) { return F::leaky_relu(x); });
  check_activation("leaky_relu_0.2", [](const Tensor& x) { return F::leaky_relu(x, 0.2); });
  check_activation("gelu", [](const Tensor& x) { return F::gelu(x); });
  check_activation("gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); });
  check_activation("silu", [](const Tensor& x) { return F::silu(x); });
  check_activation("tanh", [](const Tensor& x) { return F::tanh(x); });
  check_activation("sigmoid", [](const Tensor& x) { return F::sigmoid(x); });
  check_activation("softmax_dim1", [](const Tensor& x) { return F::softmax(x, 1); });
  check_activation("softmax_dim0", [](const Tensor& x) { return F::softmax(x, 0); });
  check_activation("log_softmax_dim1", [](const Tensor& x) { return F::log_softmax(x, 1); });
  check_activation("softmax_3d_last", [](const Tensor& x) { return F::softmax(x, -1); });
  check_activation("log_softmax_3d_mid", [](const Tensor& x) { return F::log_softmax(x, 1); });
  check_activation("log_softmax_large", [](const Tensor& x) { return F::log_softmax(x, 1); });
}

TEST_CASE("activation modules match PyTorch", "[nn][golden]") {
  auto via = [](std::shared_ptr<nn::Module> m) {
    return [m](const Tensor& x) { return m->forward(x); };
  };
  check_activation("relu", via(std::make_shared<nn::ReLU>()));
  check_activation("leaky_relu", via(std::make_shared<nn::LeakyReLU>()));
  check_activation("leaky_relu_0.2", via(std::make_shared<nn::LeakyReLU>(0.2)));
  check_activation("gelu", via(std::make_shared<nn::GELU>()));
  check_activation("gelu_tanh", via(std::make_shared<nn::GELU>("tanh")));
  check_activation("silu", via(std::make_shared<nn::SiLU>()));
  check_activation("tanh", via(std::make_shared<nn::Tanh>()));
  check_activation("sigmoid", via(std::make_shared<nn::Sigmoid>()));
  check_activation("softmax_dim1", via(std::make_shared<nn::Softmax>(1)));
  check_activation("log_softmax_3d_mid", via(std::make_shared<nn::LogSoftmax>(1)));
  // A chain of them in a Sequential, against the functional chain.
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::LeakyReLU>(0.1), std::make_shared<nn::GELU>(),
      std::make_shared<nn::Softmax>(-1)});
  Tensor x = randn({3, 4}, kFloat64);
  check_close((*net)(x), F::softmax(F::gelu(F::leaky_relu(x, 0.1)), -1), 0, 0, "Sequential");
}

TEST_CASE("leaky_relu: slope at 0, in place, dtypes", "[nn]") {
  Tensor x = tensor<double>({-2.0, 0.0, 3.0}).requires_grad_();
  F::leaky_relu(x, 0.25).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0.25, 0.25, 1.0});  // PyTorch: slope at 0

  Tensor y = tensor<float>({-4.0f, 2.0f});
  const uint32_t before = y.version();
  Tensor r = F::leaky_relu(y, 0.5, /*inplace=*/true);
  CHECK(values(y) == std::vector<double>{-2.0, 2.0});
  CHECK(r.is_alias_of(y));
  CHECK(y.version() > before);

  // In place on a non-leaf keeps the gradient right.
  Tensor a = tensor<double>({-1.0, 2.0}).requires_grad_();
  Tensor b = a * 3;
  F::leaky_relu(b, 0.1, true);
  b.sum().backward();
  CHECK(values(a.grad())[0] == Approx(0.3));
  CHECK(values(a.grad())[1] == Approx(3.0));

  CHECK(F::leaky_relu(tensor<float>({-1.0f})).dtype() == kFloat32);
  CHECK(F::leaky_relu(tensor<double>({-1.0}).to(kFloat16)).dtype() == kFloat16);
  CHECK_THROWS_WITH(F::leaky_relu(tensor<int64_t>({1, -1})),
                    Contains("leaky_relu") && Contains("int64"));
}

TEST_CASE("softmax and log_softmax with a dtype", "[nn]") {
  Tensor x = tensor<float>({1.0f, 2.0f, 3.0f}).to(kFloat16);
  Tensor y = F::softmax(x, 0, kFloat32);
  CHECK(y.dtype() == kFloat32);
  CHECK(values(y)[2] == Approx(std::exp(1.0) / (std::exp(-1.0) + 1.0 + std::exp(1.0))));
  CHECK(F::log_softmax(x, -1, kFloat64).dtype() == kFloat64);
  CHECK(F::softmax(x, 0).dtype() == kFloat16);
}

TEST_CASE("relu and silu in place", "[nn]") {
  Tensor x = tensor<double>({-1.0, 2.0});
  Tensor r = F::relu(x, true);
  CHECK(r.is_alias_of(x));
  CHECK(values(x) == std::vector<double>{0.0, 2.0});
  auto m = std::make_shared<nn::SiLU>(true);
  Tensor y = tensor<double>({1.0});
  m->forward(y);
  CHECK(values(y)[0] == Approx(1.0 / (1.0 + std::exp(-1.0))));
}

TEST_CASE("activation modules print as PyTorch", "[nn]") {
  CHECK(printed(nn::ReLU()) == "ReLU()");
  CHECK(printed(nn::ReLU(true)) == "ReLU(inplace=True)");
  CHECK(printed(nn::LeakyReLU()) == "LeakyReLU(negative_slope=0.01)");
  CHECK(printed(nn::LeakyReLU(0.2, true)) == "LeakyReLU(negative_slope=0.2, inplace=True)");
  CHECK(printed(nn::GELU()) == "GELU(approximate='none')");
  CHECK(printed(nn::GELU("tanh")) == "GELU(approximate='tanh')");
  CHECK(printed(nn::SiLU()) == "SiLU()");
  CHECK(printed(nn::Tanh()) == "Tanh()");
  CHECK(printed(nn::Sigmoid()) == "Sigmoid()");
  CHECK(printed(nn::Softmax(1)) == "Softmax(dim=1)");
  CHECK(printed(nn::LogSoftmax(-1)) == "LogSoftmax(dim=-1)");
  CHECK(printed(nn::Dropout()) == "Dropout(p=0.5, inplace=False)");
  CHECK(printed(nn::Dropout2d(0.2)) == "Dropout2d(p=0.2, inplace=False)");
  CHECK(printed(nn::Embedding(10, 3)) == "Embedding(10, 3)");
  CHECK(printed(nn::Embedding(5, 3, -1)) == "Embedding(5, 3, padding_idx=4)");
  CHECK_THROWS_WITH(nn::GELU("fast"), Contains("GELU") && Contains("fast"));
}

TEST_CASE("python_float writes doubles as Python's repr", "[nn]") {
  using nn::python_float;
  CHECK(python_float(0.01) == "0.01");
  CHECK(python_float(0.5) == "0.5");
  CHECK(python_float(1.0) == "1.0");
  CHECK(python_float(0.0) == "0.0");
  CHECK(python_float(-2.5) == "-2.5");
  CHECK(python_float(0.1) == "0.1");
  CHECK(python_float(1e-5) == "1e-05");
  CHECK(python_float(0.0001) == "0.0001");
  CHECK(python_float(123456.0) == "123456.0");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(1.5e-7) == "1.5e-07");
  CHECK(python_float(0.30000000000000004) == "0.30000000000000004");
}

// ---- dropout ----------------------------------------------------------------------------------

TEST_CASE("dropout: fraction dropped, scale and mean", "[nn]") {
  const int64_t n = 200000;
  for (double p : {0.1, 0.3, 0.5, 0.8}) {
    INFO("p = " << p);
    Generator gen(1234);
    Tensor y = F::dropout(ones({n}, kFloat64), p, true, &gen);
    std::vector<double> v = values(y);
    int64_t dropped = 0;
    bool scaled = true;
    for (double e : v) {
      if (e == 0.0)
        ++dropped;
      else
        scaled = scaled && std::abs(e - 1.0 / (1.0 - p)) < 1e-15;
    }
    CHECK(scaled);
    // 5 standard deviations of a binomial fraction: sqrt(p (1 - p) / n) <= 0.0012.
    CHECK(static_cast<double>(dropped) / n == Approx(p).margin(0.006));
    CHECK(y.mean().item<double>() == Approx(1.0).margin(0.03));
  }
}

TEST_CASE("dropout: deterministic under a seeded Generator", "[nn]") {
  Tensor x = randn({50, 40}, kFloat32);
  Generator a(7), b(7), c(8);
  Tensor ya = F::dropout(x, 0.4, true, &a);
  Tensor yb = F::dropout(x, 0.4, true, &b);
  Tensor yc = F::dropout(x, 0.4, true, &c);
  CHECK(values(ya) == values(yb));
  CHECK(values(ya) != values(yc));
  // The stream moves on: a second draw from the same generator gives another mask.
  CHECK(values(F::dropout(x, 0.4, true, &a)) != values(ya));
  // The default generator follows manual_seed.
  manual_seed(99);
  Tensor d1 = F::dropout(x, 0.4);
  manual_seed(99);
  Tensor d2 = F::dropout(x, 0.4);
  CHECK(values(d1) == values(d2));
}

TEST_CASE("dropout: p = 0, p = 1, eval, gradient and errors", "[nn]") {
  Tensor x = randn({4, 5}, kFloat64).requires_grad_();
  CHECK(F::dropout(x, 0.0).is_same(x));
  CHECK(F::dropout(x, 0.7, /*training=*/false).is_same(x));
  Tensor zero = F::dropout(x, 1.0);
  CHECK(values(zero) == std::vector<double>(20, 0.0));

  // d y / d x = mask / (1 - p) = y / x.
  Generator gen(3);
  Tensor y = F::dropout(x, 0.25, true, &gen);
  y.sum().backward();
  std::vector<double> g = values(x.grad()), yv = values(y), xv = values(x);
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(yv[i] / xv[i]));

  // In place: the input holds the result.
  Tensor z = ones({1000}, kFloat32);
  Generator g1(5), g2(5);
  Tensor expect = F::dropout(z, 0.5, true, &g1);
  Tensor r = F::dropout(z, 0.5, true, &g2, /*inplace=*/true);
  CHECK(r.is_alias_of(z));
  CHECK(values(z) == values(expect));

  CHECK_THROWS_WITH(F::dropout(x, 1.5), Contains("dropout") && Contains("1.5"));
  CHECK_THROWS_WITH(F::dropout(x, -0.1), Contains("between 0 and 1"));
  CHECK_THROWS_WITH(F::dropout(tensor<int64_t>({1, 2})), Contains("dropout") && Contains("int64"));
  CHECK_THROWS_WITH(nn::Dropout(2.0), Contains("Dropout"));
}

TEST_CASE("dropout2d zeroes whole channels", "[nn]") {
  const double p = 0.3;
  Generator gen(11);
  Tensor y = F::dropout2d(ones({16, 500, 2, 3}, kFloat64), p, true, &gen);
  std::vector<double> v = values(y);
  int64_t dropped = 0;
  bool whole = true;
  for (int64_t ch = 0; ch < 16 * 500; ++ch) {
    const double first = v[ch * 6];
    for (int64_t k = 0; k < 6; ++k) whole = whole && v[ch * 6 + k] == first;
    whole = whole && (first == 0.0 || std::abs(first - 1.0 / (1.0 - p)) < 1e-15);
    dropped += first == 0.0;
  }
  CHECK(whole);
  CHECK(static_cast<double>(dropped) / (16 * 500) == Approx(p).margin(0.03));

  // Unbatched (C, H, W): channels are the first dim.
  Generator gen2(12);
  std::vector<double> u = values(F::dropout2d(ones({400, 2, 2}, kFloat32), 0.5, true, &gen2));
  int64_t zero_channels = 0;
  for (int64_t c = 0; c < 400; ++c) {
    CHECK(u[c * 4] == u[c * 4 + 3]);
    zero_channels += u[c * 4] == 0.0;
  }
  CHECK(zero_channels > 140);
  CHECK(zero_channels < 260);

  CHECK_THROWS_WITH(F::dropout2d(ones({3, 4})), Contains("dropout2d") && Contains("[3, 4]"));
  CHECK_THROWS_WITH(F::dropout2d(ones({1, 2, 3, 4, 5})), Contains("dropout2d"));
}

TEST_CASE("Dropout and Dropout2d switch with train() and eval()", "[nn]") {
  auto drop = std::make_shared<nn::Dropout>(0.5);
  auto drop2d = std::make_shared<nn::Dropout2d>(0.5);
  auto net = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{drop, drop2d});
  Tensor x = ones({4, 8, 3, 3});
  auto has_zero = [](const Tensor& t) { return t.eq(0).any().item<bool>(); };

  CHECK(drop->is_training());
  CHECK(has_zero(drop->forward(x)));
  CHECK(has_zero(drop2d->forward(x)));
  net->eval();
  CHECK_FALSE(drop->is_training());
  CHECK(drop->forward(x).is_same(x));
  CHECK(drop2d->forward(x).is_same(x));
  CHECK((*net)(x).is_same(x));
  net->train();
  CHECK(has_zero((*net)(x)));
  CHECK(drop->parameters().empty());
}

// ---- embedding --------------------------------------------------------------------------------

TEST_CASE("embedding matches PyTorch, padding row without gradient", "[nn][golden]") {
  const Golden& g = golden("nn_activation");
  for (const std::string name : {"embedding", "embedding_padding"}) {
    INFO("case " << name);
    const std::optional<int64_t> pad =
        name == "embedding_padding" ? std::optional<int64_t>(1) : std::nullopt;
    // Functional form.
    Tensor w = g[name + ".weight"].requires_grad_();
    Tensor y = F::embedding(g[name + ".indices"], w, pad);
    check_close(y, g[name + ".output"], 0, 0, name + " output");
    (y * g[name + ".grad_output"]).sum().backward();
    check_close(w.grad(), g[name + ".grad_weight"], kAtol, kRtol, name + " grad_weight");
    // Module, weights loaded by PyTorch's key.
    nn::Embedding m(6, 3, pad, kFloat64);
    m.load_state_dict({{"weight", g[name + ".weight"]}});
    Tensor ym = m(g[name + ".indices"]);
    check_close(ym, g[name + ".output"], 0, 0, name + " module output");
    (ym * g[name + ".grad_output"]).sum().backward();
    check_close(m.weight.grad(), g[name + ".grad_weight"], kAtol, kRtol, name + " module grad");
  }
}

TEST_CASE("Embedding: N(0, 1) initialisation, zero padding row, keys, errors", "[nn]") {
  manual_seed(0);
  nn::Embedding big(2000, 64);
  std::vector<double> v = values(big.weight);
  double mean = 0, sq = 0;
  for (double e : v) mean += e, sq += e * e;
  mean /= v.size();
  const double std_dev = std::sqrt(sq / v.size() - mean * mean);
  CHECK(std::abs(mean) < 0.01);
  CHECK(std_dev == Approx(1.0).margin(0.01));
  CHECK(big.weight.requires_grad());
  CHECK(big.weight.dtype() == kFloat32);

  nn::Embedding padded(10, 4, -2, kFloat64);
  REQUIRE(padded.padding_idx().has_value());
  CHECK(*padded.padding_idx() == 8);
  CHECK(values(padded.weight.select(0, 8)) == std::vector<double>(4, 0.0));
  CHECK(padded.weight.is_leaf());
  Tensor idx = tensor<int64_t>({8, 1, 8, 3}, {2, 2});
  Tensor y = padded(idx);
  CHECK(y.sizes() == Shape{2, 2, 4});
  y.sum().backward();
  CHECK(values(padded.weight.grad().select(0, 8)) == std::vector<double>(4, 0.0));
  CHECK(values(padded.weight.grad().select(0, 1)) == std::vector<double>(4, 1.0));

  nn::StateDict sd = padded.state_dict();
  REQUIRE(sd.size() == 1);
  CHECK(sd[0].first == "weight");

  CHECK_THROWS_WITH(nn::Embedding(5, 3, 5), Contains("padding_idx") && Contains("5"));
  CHECK_THROWS_WITH(nn::Embedding(5, 3, -6), Contains("padding_idx"));
  CHECK_THROWS_WITH(padded(tensor<int64_t>({10})), Contains("10"));
}
