// The whole training stack on a cuda device: ember-train's CNN (examples/models.h) trained for a
// few Adam steps on real Fashion-MNIST images, on the cpu and on the (simulated) device from the
// same initial weights, must give the same losses within float32 tolerance; a checkpoint saved
// from the device loads on the cpu and back (map_location). Tagged [cuda]; skipped without a
// device or without Debian's dataset-fashion-mnist.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "cuda_test_util.h"
#include "data/fashion_mnist.h"
#include "examples/models.h"
#include "nn/loss.h"
#include "optim/adam.h"
#include "serialize/checkpoint.h"
#include "test_util.h"

using namespace ember;
using ember::testing::have_cuda;
using ember::testing::values;

namespace {

bool have_fashion_mnist() {
  if (std::ifstream(std::string(data::FashionMNIST::kDebianRoot) + "/train-images-idx3-ubyte.gz")
          .good())
    return true;
  WARN("skipped: dataset-fashion-mnist is not installed");
  return false;
}

// The first n training images, normalised like ember-train (mean 0.2860, std 0.3530), and
// their labels.
std::pair<Tensor, Tensor> first_images(int64_t n) {
  data::FashionMNIST train(data::FashionMNIST::kDebianRoot, true);
  std::vector<Tensor> images, labels;
  for (int64_t i = 0; i < n; ++i) {
    data::Example e = train.get(i);
    images.push_back((e.data - 0.2860) / 0.3530);
    labels.push_back(e.target);
  }
  return {stack(images), stack(labels)};
}

// Losses of `steps` Adam steps of the CNN (initial weights from seed 5) on batches of 16 of
// (x, y), everything on `device`; the model ends trained.
std::vector<double> train_steps(nn::Module& model, const Tensor& x, const Tensor& y, int steps,
                                Device device) {
  optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3));
  std::vector<double> losses;
  const int64_t batches = x.size(0) / 16;
  for (int s = 0; s < steps; ++s) {
    const int64_t b = s % batches;
    Tensor xb = x.narrow(0, b * 16, 16).to(device), yb = y.narrow(0, b * 16, 16).to(device);
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model.forward(xb), yb);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace

TEST_CASE("the CNN trains on a cuda device with the cpu's losses, its checkpoint moves devices",
          "[cuda]") {
  if (!have_cuda() || !have_fashion_mnist()) return;
  const Device dev = Device::cuda(0);
  auto [x, y] = first_images(32);
  manual_seed(5);
  auto cpu_model = examples::make_cnn();
  manual_seed(5);
  auto dev_model = examples::make_cnn();
  dev_model->to(dev);
  for (const Tensor& p : dev_model->parameters()) REQUIRE(p.device() == dev);

  const int kSteps = 4;
  const std::vector<double> cpu = train_steps(*cpu_model, x, y, kSteps, kCPU);
  const std::vector<double> gpu = train_steps(*dev_model, x, y, kSteps, dev);
  for (int s = 0; s < kSteps; ++s) {
    INFO("step " << s << ": cpu loss " << cpu[s] << ", cuda loss " << gpu[s]);
    CHECK(std::isfinite(gpu[s]));
    CHECK(std::abs(gpu[s] - cpu[s]) <= 1e-4 * std::max(1.0, std::abs(cpu[s])));
  }
  CHECK(cpu.back() < cpu.front());  // it learns, on both

  // Parameters after training agree too.
  const auto cpu_params = cpu_model->named_parameters(), dev_params = dev_model->named_parameters();
  REQUIRE(cpu_params.size() == dev_params.size());
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    INFO(cpu_params[i].first);
    const std::vector<double> a = values(cpu_params[i].second), b = values(dev_params[i].second);
    double worst = 0;
    for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
    CHECK(worst < 1e-4);
  }

  // A checkpoint written from the device loads into a cpu model, and back onto the device.
  const std::string path = "test_cuda_train.safetensors";
  save_checkpoint(path, TrainingState{dev_model.get()}, CheckpointInfo{1, kSteps, {}});
  manual_seed(99);
  auto restored = examples::make_cnn();
  load_checkpoint(path, TrainingState{restored.get()}, kCPU);
  manual_seed(98);
  auto back = examples::make_cnn();
  back->to(dev);
  load_checkpoint(path, TrainingState{back.get()}, dev);
  const auto r = restored->named_parameters(), d = back->named_parameters();
  for (size_t i = 0; i < r.size(); ++i) {
    INFO(r[i].first);
    CHECK(r[i].second.device() == kCPU);
    CHECK(d[i].second.device() == dev);
    CHECK(values(r[i].second) == values(dev_params[i].second));
    CHECK(values(d[i].second) == values(dev_params[i].second));
  }
  std::remove(path.c_str());
}
