// The CUDA multi-tensor kernels (kernels/cuda/multi_tensor.cu, Note [Multi-tensor optimizer
// steps] in core/ops/multi_tensor.h): SGD, Adam and AdamW over many parameters of odd sizes in
// few launches give the per-parameter kernels' bits, the optimizers take that path on one cuda
// device and match the CPU, and clip_grad_norm_'s one-pass total norm matches the CPU's. Tagged
// [cuda]; without a device each case says why and returns.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cuda.h"
#include "core/ops/multi_tensor.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ember;
using ember::testing::have_cuda;
using ember::testing::same_bits;
using ember::testing::values;

namespace {

const Device kDev = Device::cuda(0);

// Sizes that cut chunks (kMultiTensorChunk) and fill the launches' tensor tables: 0, 1, odd
// sizes, a chunk and one more, 3 chunks and a bit.
std::vector<int64_t> odd_sizes(int count) {
  std::vector<int64_t> s;
  const int64_t pattern[] = {1, 7, 0, 130, 65536, 65537, 3, 1000, 3 * 65536 + 5, 33, 4097};
  for (int i = 0; i < count; ++i) s.push_back(pattern[i % 11] + (i / 11));
  return s;
}

Tensor sample(int64_t n, DType dt, uint64_t seed) {
  manual_seed(seed);
  return (rand({n}, kFloat64) * 2 - 1).to(dt);
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

}  // namespace

TEST_CASE("cuda multi-tensor SGD and Adam steps give the per-parameter kernels' bits", "[cuda]") {
  if (!have_cuda()) return;
  REQUIRE(multi_sgd_step_stub.has_kernel(DeviceType::CUDA));
  REQUIRE(multi_adam_step_stub.has_kernel(DeviceType::CUDA));
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    const std::vector<int64_t> sizes = odd_sizes(dt == kFloat32 ? 60 : 25);
    std::vector<Tensor> params, grads, m, v, vmax;
    for (size_t i = 0; i < sizes.size(); ++i) {
      params.push_back(sample(sizes[i], dt, 10 * i + 1).to(kDev));
      grads.push_back(sample(sizes[i], dt, 10 * i + 2).to(kDev));
      m.push_back(sample(sizes[i], dt, 10 * i + 3).to(kDev));
      v.push_back((sample(sizes[i], dt, 10 * i + 4) * 0.1).abs().to(kDev));
      vmax.push_back((sample(sizes[i], dt, 10 * i + 5) * 0.1).abs().to(kDev));
    }
    SECTION("SGD") {
      for (int variant = 0; variant < 3; ++variant) {
        INFO("variant " << variant);
        std::vector<Tensor> p1 = clones(params), b1 = clones(m), p2 = clones(params),
                            b2 = clones(m);
        std::vector<SgdUpdate> updates;
        for (size_t i = 0; i < sizes.size(); ++i) {
          SgdCoefficients c{0.1, variant == 0 ? 0.0 : 0.9, 0.1, 0.01, false, variant == 2, false};
          if (variant == 2) c.dampening = 0, c.nesterov = true, c.first = i % 2 == 0;
          const Tensor buf = c.momentum != 0.0 ? b1[i] : Tensor();
          updates.push_back({p1[i], grads[i], buf, c});
          native::sgd_step_(p2[i], grads[i], c.momentum != 0.0 ? b2[i] : Tensor(), c);
        }
        native::sgd_steps_(updates);
        for (size_t i = 0; i < sizes.size(); ++i) {
          INFO("parameter " << i << " of " << sizes[i]);
          CHECK(same_bits(p1[i], p2[i]));
          CHECK(same_bits(b1[i], b2[i]));
        }
      }
    }
    SECTION("Adam and AdamW, with and without amsgrad") {
      for (int variant = 0; variant < 4; ++variant) {
        INFO("variant " << variant);
        std::vector<Tensor> p1 = clones(params), m1 = clones(m), v1 = clones(v), x1 = clones(vmax);
        std::vector<Tensor> p2 = clones(params), m2 = clones(m), v2 = clones(v), x2 = clones(vmax);
        std::vector<AdamUpdate> updates;
        for (size_t i = 0; i < sizes.size(); ++i) {
          AdamCoefficients c;
          c.lr = 1e-2;
          c.beta1 = 0.9;
          c.beta2 = 0.999;
          c.eps = 1e-8;
          c.weight_decay = 0.05;
          const double t = 1 + static_cast<double>(i % 3);  // parameters at different steps
          c.step_size = c.lr / (1 - std::pow(c.beta1, t));
          c.bias_correction2_sqrt = std::sqrt(1 - std::pow(c.beta2, t));
          c.decoupled = variant % 2 == 1;
          c.amsgrad = variant >= 2;
          c.maximize = i % 5 == 0;
          updates.push_back({p1[i], grads[i], m1[i], v1[i], c.amsgrad ? x1[i] : Tensor(), c});
          native::adam_step_(p2[i], grads[i], m2[i], v2[i], c.amsgrad ? x2[i] : Tensor(), c);
        }
        native::adam_steps_(updates);
        for (size_t i = 0; i < sizes.size(); ++i) {
          INFO("parameter " << i << " of " << sizes[i]);
          CHECK(same_bits(p1[i], p2[i]));
          CHECK(same_bits(m1[i], m2[i]));
          CHECK(same_bits(v1[i], v2[i]));
          CHECK(same_bits(x1[i], x2[i]));
        }
      }
    }
  }
}

TEST_CASE("cuda multi-tensor steps cover more than one launch's block table", "[cuda]") {
  if (!have_cuda()) return;
  // 201 chunks: the block table (200 entries) is full in the middle of the tensor.
  const int64_t n = 201 * kMultiTensorChunk - 3;
  const Tensor p = sample(n, kFloat32, 1).to(kDev), g = sample(n, kFloat32, 2).to(kDev);
  const Tensor p1 = p.clone(), p2 = p.clone(), b1 = g.clone(), b2 = g.clone();
  const SgdCoefficients c{0.1, 0.9, 0.0, 0.0, false, false, false};
  native::sgd_steps_({{p1, g, b1, c}, {p1.narrow(0, 0, 0), g.narrow(0, 0, 0), Tensor(), {}}});
  native::sgd_step_(p2, g, b2, c);
  CHECK(same_bits(p1, p2));
  CHECK(same_bits(b1, b2));
}

TEST_CASE("optim SGD, Adam and AdamW on one cuda device match the CPU", "[cuda]") {
  if (!have_cuda()) return;
  const std::vector<int64_t> sizes = odd_sizes(40);
  std::vector<Tensor> cpu, dev;
  for (size_t i = 0; i < sizes.size(); ++i) {
    cpu.push_back(sample(sizes[i], kFloat32, i + 1).requires_grad_(true));
    dev.push_back(cpu.back().detach().to(kDev).requires_grad_(true));
  }
  auto run = [&](optim::Optimizer& opt, const std::vector<Tensor>& ps, int steps) {
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < ps.size(); ++i) {
        if (i % 7 == 3 && s == 1) {  // a parameter without a gradient in one step
          ps[i].set_grad(Tensor());
          continue;
        }
        ps[i].set_grad(sample(sizes[i], kFloat32, 100 * s + i).to(ps[i].device()));
      }
      opt.step();
    }
  };
  const double tol = cuda::is_simulated() ? 0.0 : 1e-5;  // a GPU contracts into fmas
  auto check_same = [&](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("parameter " << i << " of " << sizes[i]);
      const std::vector<double> x = values(a[i].detach()), y = values(b[i].detach());
      REQUIRE(x.size() == y.size());
      for (size_t k = 0; k < x.size(); ++k) CHECK(std::abs(x[k] - y[k]) <= tol);
    }
  };
  SECTION("SGD") {
    optim::SGD a(cpu, optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
    optim::SGD b(dev, optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
    run(a, cpu, 3);
    run(b, dev, 3);
    check_same(cpu, dev);
  }
  SECTION("Adam") {
    optim::Adam a(cpu, optim::AdamOptions(1e-2).amsgrad(true));
    optim::Adam b(dev, optim::AdamOptions(1e-2).amsgrad(true));
    run(a, cpu, 3);
    run(b, dev, 3);
    check_same(cpu, dev);
  }
  SECTION("AdamW") {
    optim::AdamW a(cpu, optim::AdamWOptions(1e-2).weight_decay(0.1));
    optim::AdamW b(dev, optim::AdamWOptions(1e-2).weight_decay(0.1));
    run(a, cpu, 3);
    run(b, dev, 3);
    check_same(cpu, dev);
  }
}

TEST_CASE("optimizer steps on parameters of two devices still match the CPU", "[cuda]") {
  if (!have_cuda() || cuda::device_count() < 2) return;
  std::vector<Tensor> cpu, dev;
  for (int i = 0; i < 4; ++i) {
    cpu.push_back(sample(100 + i, kFloat32, i + 1).requires_grad_(true));
    dev.push_back(cpu.back().detach().to(Device::cuda(i % 2)).requires_grad_(true));
    cpu.back().set_grad(sample(100 + i, kFloat32, i + 50));
    dev.back().set_grad(cpu.back().grad().to(dev.back().device()));
  }
  optim::Adam a(cpu, optim::AdamOptions(1e-2));
  optim::Adam b(dev, optim::AdamOptions(1e-2));
  a.step();
  b.step();
  for (size_t i = 0; i < cpu.size(); ++i) CHECK(values(cpu[i].detach()) == values(dev[i].detach()));
}

TEST_CASE("cuda clip_grad_norm_ takes one pass over all gradients and matches the CPU", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    const std::vector<int64_t> sizes = odd_sizes(30);
    std::vector<Tensor> cpu, dev;
    for (size_t i = 0; i < sizes.size(); ++i) {
      cpu.push_back(sample(sizes[i], dt, i + 1).requires_grad_(true));
      dev.push_back(cpu.back().detach().to(kDev).requires_grad_(true));
      cpu.back().set_grad(sample(sizes[i], dt, i + 70));
      dev.back().set_grad(cpu.back().grad().to(kDev));
    }
    std::vector<Tensor> grads;
    for (const Tensor& p : dev) grads.push_back(p.grad());
    REQUIRE(native::multi_tensor_norm_applies(grads));
    const Tensor want = nn::utils::clip_grad_norm_(cpu, 1.0);
    const Tensor got = nn::utils::clip_grad_norm_(dev, 1.0);
    REQUIRE(got.device() == kDev);
    CHECK(got.dtype() == dt);
    const double rel = dt == kFloat16    ? 2e-3
                       : dt == kBFloat16 ? 1.6e-2
                       : dt == kFloat32  ? 1e-5
                                         : 1e-12;
    CHECK(std::abs(got.item<double>() - want.item<double>()) <= rel * want.item<double>());
    for (size_t i = 0; i < cpu.size(); ++i) {
      INFO("gradient " << i);
      const std::vector<double> x = values(cpu[i].grad()), y = values(dev[i].grad());
      for (size_t k = 0; k < x.size(); ++k) CHECK(std::abs(x[k] - y[k]) <= 4 * rel);
    }
    // The CPU total of total_norm2 agrees too (its kernel sums in double).
    std::vector<Tensor> host_grads;
    for (const Tensor& p : cpu) host_grads.push_back(p.grad());
    CHECK(std::abs(native::total_norm2(grads).item<double>() -
                   native::total_norm2(host_grads).item<double>()) <=
          rel * native::total_norm2(host_grads).item<double>());
  }
}

TEST_CASE("cuda total_norm2 over more partial sums than the finishing block has threads",
          "[cuda]") {
  // 700 small tensors: a block (one partial) each, so the finishing kernel's threads each add
  // more than one partial before the block's reduction.
  if (!have_cuda()) return;
  std::vector<Tensor> cpu, dev;
  for (int i = 0; i < 700; ++i) {
    cpu.push_back(sample(1 + i % 3, kFloat32, static_cast<size_t>(i) + 5));
    dev.push_back(cpu.back().to(kDev));
  }
  const double want = native::total_norm2(cpu).item<double>();
  const Tensor got = native::total_norm2(dev);
  CHECK(got.device() == kDev);
  CHECK(std::abs(got.item<double>() - want) <= 1e-5 * want);
  CHECK(got.item<double>() == native::total_norm2(dev).item<double>());  // the same bits again
}

TEST_CASE("cuda total_norm2 of tensors that are all empty is 0", "[cuda]") {
  if (!have_cuda()) return;
  const Tensor e = empty({0}, TensorOptions(kFloat32).device(kDev));
  CHECK(native::total_norm2({e, e}).item<double>() == 0.0);
}
