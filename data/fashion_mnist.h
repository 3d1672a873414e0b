#pragma once
// Fashion-MNIST (Zalando's 28x28 grey clothing images in 10 classes: 60,000 for training and
// 10,000 for testing), read from the IDX files that Debian's dataset-fashion-mnist package
// installs in /usr/share/datasets/fashion-mnist:
//
//   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz
//   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz
//
// (uncompressed copies without ".gz" are read too).
//
//   data::FashionMNIST train(data::FashionMNIST::default_root(), /*train=*/true);
//   data::Example ex = train.get(0);   // data (1, 28, 28) float32 in [0, 1], target int64 ()
//
// IDX: a big-endian header, the magic 0x00000803 (images, 3 dims) or 0x00000801 (labels,
// 1 dim), then each dim as a big-endian uint32, then the uint8 values row-major. Missing files
// are an error that names the path and the package to install; a wrong magic, a truncated file,
// mismatched counts or a label above 9 are errors naming the file.

#include <cstdint>
#include <functional>
#include <string>

#include "data/dataset.h"

namespace ember::data {

class FashionMNIST : public Dataset {
 public:
  // Applied to each image (float32 (1, 28, 28) in [0, 1]) by get(); e.g. a transforms::Compose.
  using Transform = std::function<Tensor(const Tensor&)>;

  static constexpr const char* kDebianRoot = "/usr/share/datasets/fashion-mnist";
  // $EMBER_FASHION_MNIST if set, else kDebianRoot.
  static std::string default_root();
  // The class names, index = label.
  static const char* class_name(int64_t label);

  FashionMNIST(const std::string& root, bool train, Transform transform = {});

  int64_t size() const override { return labels_.size(0); }
  Example get(int64_t index) const override;
  // Without a transform: data float32 (B, 1, 28, 28), target int64 (B), built in one pass over
  // the picked images; the same values as stacking get() (Note [Image scaling]).
  Example get_batch(const std::vector<int64_t>& indices) const override;

  // All images as uint8 (N, 28, 28) and labels as int64 (N), as stored.
  const Tensor& images() const { return images_; }
  const Tensor& labels() const { return labels_; }

 private:
  Tensor images_, labels_;
  Transform transform_;
};

// Reads one IDX file (gzip-compressed or not) into a uint8 tensor of its dims. `expected_dims`
// is 3 for images, 1 for labels (1 to 3). One pass: the data is decompressed straight into the
// tensor, which is allocated only when the file can hold what the header promises (Note
// [Reading IDX in one pass] in data/fashion_mnist.cpp). A wrong magic, a short header, absurd
// dims, a gzip stream that is cut short or fails its checks, and data of another size than the
// header promises are errors naming the file.
Tensor read_idx(const std::string& path, int expected_dims);

}  // namespace ember::data
