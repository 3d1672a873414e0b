// The optimizers' update kernels on cuda (kernels/cuda/optim.cu): the native steps and the
// optim:: classes with parameters on a cuda device against the same steps on the cpu, for every
// option the kernels take, every float dtype, contiguous and strided tensors; the state lives
// on the parameter's device and the step counter on the host; and a short training of a tiny
// model on cuda follows the cpu's. The simulator reproduces the cpu's bits; a GPU may differ
// by an ulp or so per step where nvcc contracts a * b + c into an fma. Every case is tagged
// [cuda] and says why it returns early when there is no device.

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "core/ops/optim.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using ember::testing::have_cuda;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);
const std::vector<DType> kDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16};

double eps_of(DType dt) {
  return dt == kFloat64 ? 0x1p-52 : dt == kFloat32 ? 0x1p-23 : dt == kFloat16 ? 0x1p-10 : 0x1p-7;
}

// `dev` (a cuda tensor) equals `cpu`: bit for bit in the simulator, within `ulps` ulps of the
// dtype (relative to the tensor's largest magnitude) on a GPU.
void check_close(const Tensor& cpu, const Tensor& dev, const std::string& what, double ulps = 8) {
  INFO(what);
  REQUIRE(cpu.defined() == dev.defined());
  if (!cpu.defined()) return;
  CHECK(dev.device() == kDev);
  REQUIRE(dev.sizes() == cpu.sizes());
  REQUIRE(dev.dtype() == cpu.dtype());
  const std::vector<double> a = values(cpu), b = values(dev);
  if (cuda::is_simulated()) {
    CHECK(a == b);
    return;
  }
  double scale = 0;
  for (double x : a) scale = std::fmax(scale, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": cpu " << a[i] << ", cuda " << b[i]);
    CHECK(std::fabs(a[i] - b[i]) <= ulps * eps_of(cpu.dtype()) * std::fmax(scale, 1e-30));
  }
}

// A [rows, cols] cpu tensor of dtype dt with values in [lo, hi): contiguous, or the transpose
// of a [cols, rows] one.
Tensor operand(int64_t rows, int64_t cols, DType dt, bool strided, double lo, double hi) {
  Tensor base = rand(strided ? Shape{cols, rows} : Shape{rows, cols}, kFloat64) * (hi - lo) + lo;
  base = base.to(dt);
  return strided ? base.t() : base;
}

// t on the device with t's layout (a transposed cpu tensor gives a transposed cuda tensor).
Tensor to_device(const Tensor& t) {
  if (!t.defined()) return t;
  if (t.is_contiguous()) return t.to(kDev);
  return t.t().contiguous().to(kDev).t();
}

struct Layout {
  int64_t rows, cols;
  bool strided;
};
// Small contiguous, small transposed, and several thousand elements (many CUDA blocks).
const std::vector<Layout> kLayouts = {{5, 7, false}, {5, 7, true}, {70, 130, false}};

std::string label(DType dt, const Layout& l) {
  return std::string(dtype_name(dt)) + (l.strided ? " strided " : " contiguous ") +
         std::to_string(l.rows) + "x" + std::to_string(l.cols);
}

// Runs `step(tensors, k)` three times on cpu operands and on their cuda copies; after each step
// every operand agrees (operands: the parameter, then the states; the gradient is drawn anew
// for each step, op(tensors..., grad)).
using StepFn = std::function<void(const std::vector<Tensor>& ops, const Tensor& grad, int step)>;
void check_steps(const std::vector<Tensor>& cpu_ops, const Layout& l, DType dt, const StepFn& step,
                 const std::string& what) {
  std::vector<Tensor> dev_ops;
  for (const Tensor& t : cpu_ops) dev_ops.push_back(to_device(t));
  for (int k = 1; k <= 3; ++k) {
    const Tensor g = operand(l.rows, l.cols, dt, l.strided, -1, 1);
    step(cpu_ops, g, k);
    step(dev_ops, to_device(g), k);
    for (size_t j = 0; j < cpu_ops.size(); ++j)
      check_close(cpu_ops[j], dev_ops[j],
                  what + ", step " + std::to_string(k) + ", operand " + std::to_string(j));
  }
}

}  // namespace

TEST_CASE("cuda SGD step equals the cpu's for every option", "[cuda][optim]") {
  if (!have_cuda()) return;
  manual_seed(21);
  struct Case {
    double momentum, dampening, weight_decay;
    bool nesterov, maximize;
  };
  const std::vector<Case> cases = {{0.0, 0.0, 0.0, false, false},
                                   {0.0, 0.0, 0.01, false, true},
                                   {0.9, 0.1, 0.01, false, false},
                                   {0.9, 0.0, 0.0, true, true},
                                   {0.5, 0.0, 0.1, true, false}};
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (const Case& c : cases) {
        const std::string what = label(dt, l) + " momentum " + std::to_string(c.momentum) +
                                 (c.nesterov ? " nesterov" : "") + (c.maximize ? " maximize" : "");
        std::vector<Tensor> ops{operand(l.rows, l.cols, dt, l.strided, -1, 1)};
        if (c.momentum != 0.0) ops.push_back(operand(l.rows, l.cols, dt, l.strided, -1, 1));
        check_steps(
            ops, l, dt,
            [&](const std::vector<Tensor>& t, const Tensor& g, int k) {
              const SgdCoefficients s{0.05,       c.momentum, c.dampening, c.weight_decay,
                                      c.nesterov, c.maximize, k == 1};
              native::sgd_step_(t[0], g, t.size() > 1 ? t[1] : Tensor(), s);
            },
            what);
      }
}

TEST_CASE("cuda Adam and AdamW steps equal the cpu's for every option", "[cuda][optim]") {
  if (!have_cuda()) return;
  manual_seed(22);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (bool decoupled : {false, true})
        for (bool amsgrad : {false, true})
          for (double wd : {0.0, 0.05}) {
            const std::string what = label(dt, l) + (decoupled ? " AdamW" : " Adam") +
                                     (amsgrad ? " amsgrad" : "") + " wd " + std::to_string(wd);
            std::vector<Tensor> ops{operand(l.rows, l.cols, dt, l.strided, -1, 1),
                                    operand(l.rows, l.cols, dt, l.strided, -0.1, 0.1),
                                    operand(l.rows, l.cols, dt, l.strided, 0, 0.01)};
            if (amsgrad) ops.push_back(operand(l.rows, l.cols, dt, l.strided, 0, 0.01));
            check_steps(
                ops, l, dt,
                [&](const std::vector<Tensor>& t, const Tensor& g, int k) {
                  AdamCoefficients c;
                  c.lr = 1e-2;
                  c.beta1 = 0.9;
                  c.beta2 = 0.999;
                  c.eps = 1e-8;
                  c.weight_decay = wd;
                  c.step_size = c.lr / (1.0 - std::pow(c.beta1, k));
                  c.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(c.beta2, k));
                  c.decoupled = decoupled;
                  c.amsgrad = amsgrad;
                  c.maximize = k == 2;
                  native::adam_step_(t[0], g, t[1], t[2], amsgrad ? t[3] : Tensor(), c);
                },
                what);
          }
}

TEST_CASE("cuda RMSprop step equals the cpu's for every option", "[cuda][optim]") {
  if (!have_cuda()) return;
  manual_seed(23);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (bool centered : {false, true})
        for (double momentum : {0.0, 0.9})
          for (double wd : {0.0, 0.02}) {
            const std::string what = label(dt, l) + (centered ? " centered" : "") + " momentum " +
                                     std::to_string(momentum) + " wd " + std::to_string(wd);
            std::vector<Tensor> ops{operand(l.rows, l.cols, dt, l.strided, -1, 1),
                                    operand(l.rows, l.cols, dt, l.strided, 1, 2)};
            if (centered) ops.push_back(operand(l.rows, l.cols, dt, l.strided, -0.5, 0.5));
            if (momentum > 0.0) ops.push_back(operand(l.rows, l.cols, dt, l.strided, -0.1, 0.1));
            check_steps(
                ops, l, dt,
                [&](const std::vector<Tensor>& t, const Tensor& g, int k) {
                  RmspropCoefficients c;
                  c.lr = 1e-2;
                  c.alpha = 0.99;
                  c.eps = 1e-8;
                  c.weight_decay = wd;
                  c.momentum = momentum;
                  c.centered = centered;
                  c.maximize = k == 3;
                  native::rmsprop_step_(t[0], g, t[1], centered ? t[2] : Tensor(),
                                        momentum > 0.0 ? t.back() : Tensor(), c);
                },
                what);
          }
}

TEST_CASE("cuda Adagrad step equals the cpu's for every option", "[cuda][optim]") {
  if (!have_cuda()) return;
  manual_seed(24);
  for (DType dt : kDTypes)
    for (const Layout& l : kLayouts)
      for (double wd : {0.0, 0.1})
        for (bool maximize : {false, true}) {
          const std::string what =
              label(dt, l) + " wd " + std::to_string(wd) + (maximize ? " maximize" : "");
          std::vector<Tensor> ops{operand(l.rows, l.cols, dt, l.strided, -1, 1),
                                  operand(l.rows, l.cols, dt, l.strided, 0, 0.5)};
          check_steps(
              ops, l, dt,
              [&](const std::vector<Tensor>& t, const Tensor& g, int k) {
                AdagradCoefficients c;
                c.clr = 0.1 / (1 + (k - 1) * 0.01);
                c.eps = 1e-10;
                c.weight_decay = wd;
                c.maximize = maximize;
                native::adagrad_step_(t[0], g, t[1], c);
              },
              what);
        }
}

namespace {

// An optimizer over `params` (one parameter list on one device).
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct NamedOptimizer {
  std::string name;
  MakeOptimizer make;
};

template <class Opt, class Options>
NamedOptimizer named(std::string name, const Options& options) {
  return {std::move(name), [options](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
            return std::make_unique<Opt>(std::move(p), options);
          }};
}

std::vector<NamedOptimizer> optimizers() {
  using namespace optim;
  return {
      named<SGD>("SGD", SGDOptions(0.1)),
      named<SGD>("SGD momentum nesterov wd",
                 SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-2)),
      named<SGD>("SGD momentum dampening maximize",
                 SGDOptions(0.05).momentum(0.5).dampening(0.2).maximize(true)),
      named<Adam>("Adam", AdamOptions(1e-2)),
      named<Adam>("Adam amsgrad wd", AdamOptions(1e-2).amsgrad(true).weight_decay(0.1)),
      named<AdamW>("AdamW", AdamWOptions(1e-2)),
      named<AdamW>("AdamW amsgrad maximize", AdamWOptions(1e-2).amsgrad(true).maximize(true)),
      named<RMSprop>("RMSprop", RMSpropOptions(1e-2)),
      named<RMSprop>("RMSprop centered momentum wd",
                     RMSpropOptions(1e-2).centered(true).momentum(0.9).weight_decay(0.01)),
      named<Adagrad>("Adagrad", AdagradOptions(0.1)),
      named<Adagrad>("Adagrad lr_decay wd init maximize", AdagradOptions(0.1)
                                                              .lr_decay(0.05)
                                                              .weight_decay(0.02)
                                                              .initial_accumulator_value(0.1)
                                                              .maximize(true)),
  };
}

}  // namespace

TEST_CASE("optim:: optimizers step cuda parameters as they step cpu ones", "[cuda][optim]") {
  if (!have_cuda()) return;
  for (const NamedOptimizer& o : optimizers()) {
    for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
      INFO(o.name << " " << dt);
      manual_seed(31);
      const Tensor w0 = operand(4, 6, dt, false, -1, 1), b0 = operand(1, 9, dt, false, -1, 1);
      std::vector<Tensor> cpu{w0.clone().requires_grad_(), b0.clone().requires_grad_()};
      std::vector<Tensor> dev{w0.to(kDev).requires_grad_(), b0.to(kDev).requires_grad_()};
      auto cpu_opt = o.make(cpu);
      auto dev_opt = o.make(dev);
      for (int k = 1; k <= 4; ++k) {
        for (size_t j = 0; j < cpu.size(); ++j) {
          const Tensor g = operand(cpu[j].size(0), cpu[j].size(1), dt, false, -1, 1);
          cpu[j].set_grad(g);
          dev[j].set_grad(g.to(kDev));
        }
        cpu_opt->step();
        dev_opt->step();
        for (size_t j = 0; j < cpu.size(); ++j) {
          check_close(cpu[j].detach(), dev[j].detach(),
                      "step " + std::to_string(k) + " parameter " + std::to_string(j));
          // The states are on the parameter's device; a step counter stays on the host.
          for (const auto& [name, s] : dev_opt->state(dev[j]).entries()) {
            INFO("state " << name);
            if (name == "step") {
              CHECK(s.device() == kCPU);
              CHECK(values(s) == values(cpu_opt->state(cpu[j]).at(name)));
            } else {
              check_close(cpu_opt->state(cpu[j]).at(name), s, "state " + name);
            }
          }
        }
      }
    }
  }
}

namespace {

// A tiny model built only from element-wise ops (the cuda matmul and the reductions of a loss
// come with their own kernels): y = tanh(x * w1 + b1) * w2 + b2 with dropout on the hidden
// values, every parameter of x's shape.
class Tiny : public nn::Module {
 public:
  explicit Tiny(int64_t n) : Module("Tiny") {
    register_parameter("w1", randn({n}) * 0.5);
    register_parameter("b1", randn({n}) * 0.1);
    register_parameter("w2", randn({n}) * 0.5);
    register_parameter("b2", zeros({n}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = nn::functional::dropout(tanh(x * param("w1") + param("b1")), 0.2, is_training());
    return h * param("w2") + param("b2");
  }

 private:
  // The parameter `name`, looked up (to() replaces the tensors).
  Tensor param(const std::string& name) const {
    for (const auto& [key, p] : named_parameters())
      if (key == name) return p;
    return Tensor();
  }
};

}  // namespace

TEST_CASE("a tiny model trains on cuda as on the cpu", "[cuda][optim]") {
  if (!have_cuda()) return;
  const int64_t n = 37;
  manual_seed(5);
  auto cpu_model = std::make_shared<Tiny>(n);
  manual_seed(5);
  auto dev_model = std::make_shared<Tiny>(n);
  dev_model->to(kDev);
  optim::Adam cpu_opt(cpu_model->parameters(), optim::AdamOptions(0.05).weight_decay(1e-3));
  optim::Adam dev_opt(dev_model->parameters(), optim::AdamOptions(0.05).weight_decay(1e-3));
  manual_seed(6);
  const Tensor x = randn({n}), target = sin(x * 2.0);
  const Tensor xd = x.to(kDev), td = target.to(kDev);
  auto squared_error = [&](nn::Module& model) {
    model.eval();
    const std::vector<double> e = values(model.forward(x) - target);
    model.train();
    double sum = 0;
    for (double v : e) sum += v * v;
    return sum;
  };
  const double initial_error = squared_error(*cpu_model);
  manual_seed(7);  // the dropout masks: the cpu and the cuda default generators from one seed
  for (int step = 0; step < 8; ++step) {
    INFO("step " << step);
    for (int side = 0; side < 2; ++side) {
      nn::Module& model = side == 0 ? static_cast<nn::Module&>(*cpu_model) : *dev_model;
      optim::Optimizer& opt = side == 0 ? static_cast<optim::Optimizer&>(cpu_opt) : dev_opt;
      opt.zero_grad();
      const Tensor y = model.forward(side == 0 ? x : xd);
      const Tensor diff = y - (side == 0 ? target : td);
      // The gradient of sum(diff^2) / n, given to backward directly (no reduction kernel needed).
      (diff * diff).backward(full({n}, 1.0 / static_cast<double>(n)).to(y.device()));
      opt.step();
    }
    const auto cpu_params = cpu_model->parameters(), dev_params = dev_model->parameters();
    REQUIRE(cpu_params.size() == dev_params.size());
    for (size_t j = 0; j < cpu_params.size(); ++j)
      check_close(cpu_params[j].detach(), dev_params[j].detach(), "parameter " + std::to_string(j),
                  64);
  }
  // It learned, on both devices alike.
  CHECK(squared_error(*cpu_model) < 0.5 * initial_error);
  cpu_model->eval();
  dev_model->eval();
  const Tensor e_cpu = cpu_model->forward(x) - target, e_dev = dev_model->forward(xd) - td;
  check_close(e_cpu.detach(), e_dev.detach(), "final error", 64);
}
