#pragma once
// Image transforms (torchvision.transforms) on one image tensor (C, H, W), floating point:
//
//   auto t = data::transforms::Compose({data::transforms::RandomCrop(28, /*padding=*/4),
//                                       data::transforms::RandomHorizontalFlip(),
//                                       data::transforms::Normalize({0.2860}, {0.3530})});
//   data::FashionMNIST train(root, true, t);
//
// Random transforms draw from data::sample_generator() (data/dataset.h), which the DataLoader
// reseeds per batch, so augmented batches are reproducible whatever the number of workers.

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ember::data::transforms {

using Transform = std::function<Tensor(const Tensor&)>;

// (x - mean[c]) / std[c] per channel; one value serves every channel. A std of 0 or a channel
// count that matches neither 1 nor the image's is an error.
class Normalize {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& image) const;

 private:
  std::vector<double> mean_, std_;
};

// Pads each side by `padding` (zeros), then cuts a size x size window at a uniformly random
// position. A window larger than the padded image is an error.
class RandomCrop {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0) : RandomCrop(size, size, padding) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding);
  Tensor operator()(const Tensor& image) const;

 private:
  int64_t height_, width_, padding_;
};

// Mirrors the image left-right with probability p.
class RandomHorizontalFlip {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image) const;

 private:
  double p_;
};

// The transforms in order.
class Compose {
 public:
  explicit Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {}
  Tensor operator()(const Tensor& image) const;

 private:
  std::vector<Transform> transforms_;
};

}  // namespace ember::data::transforms
