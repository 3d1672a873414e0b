#pragma once
// Fashion-MNIST as ember-train (and the benchmarks) feed it to the models: images normalised
// with the training set's mean 0.2860 and std 0.3530, batches gathered in one pass.
//
//   auto train = std::make_shared<examples::NormalizedFashionMNIST>(
//       std::make_shared<data::FashionMNIST>(root, /*train=*/true));
//   data::DataLoader loader(train, opt);   // b.data (B, 1, 28, 28) float32, b.target int64 (B)
//
// Without augmentation, get_batch reads the uint8 pixels of the batch straight into a float32
// batch, x = (p / 255 - mean) / std computed as p * scale + shift: one pass, no intermediate
// tensors (FashionMNIST::get_batch then two more passes would be three). With a base dataset
// that has a transform (augmentation on [0, 1] images), the base's examples are normalised in
// place afterwards. `limit` keeps only the first `limit` examples (0: all), for quick runs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/ops/factory.h"
#include "core/tensor.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"

namespace ember::examples {

class NormalizedFashionMNIST : public data::Dataset {
 public:
  static constexpr double kMean = 0.2860;
  static constexpr double kStd = 0.3530;

  // `augmented`: whether `base` has a transform (its get() is then used, one image at a time).
  explicit NormalizedFashionMNIST(std::shared_ptr<const data::FashionMNIST> base,
                                  bool augmented = false, int64_t limit = 0)
      : base_(std::move(base)),
        augmented_(augmented),
        size_(limit > 0 ? std::min(limit, base_->size()) : base_->size()) {
    EMBER_CHECK(base_->images().is_contiguous() && base_->labels().is_contiguous(),
                "NormalizedFashionMNIST: the base dataset's tensors must be contiguous");
  }

  int64_t size() const override { return size_; }

  data::Example get(int64_t index) const override { return get_batch_impl({index}, false); }

  data::Example get_batch(const std::vector<int64_t>& indices) const override {
    return get_batch_impl(indices, true);
  }

 private:
  // A batch (B, 1, 28, 28) / target (B), or one example (1, 28, 28) / target () when !batched.
  data::Example get_batch_impl(const std::vector<int64_t>& indices, bool batched) const {
    for (int64_t i : indices)
      EMBER_CHECK(i >= 0 && i < size_, "NormalizedFashionMNIST: index ", i, " is out of range for ",
                  size_, " examples");
    const int64_t n = static_cast<int64_t>(indices.size());
    constexpr int64_t kPixels = 28 * 28;
    const float scale = static_cast<float>(1.0 / (255.0 * kStd));
    const float shift = static_cast<float>(-kMean / kStd);
    Tensor data, target = empty({n}, TensorOptions().dtype(kInt64));
    const int64_t* labels = base_->labels().data_ptr<int64_t>();
    int64_t* t = target.data_ptr<int64_t>();
    for (int64_t b = 0; b < n; ++b) t[b] = labels[indices[static_cast<size_t>(b)]];
    if (augmented_) {
      // The base's transform works on [0, 1] images; normalise its results in place.
      data::Example ex = base_->get_batch(indices);
      data = ex.data.contiguous();
      float* x = data.data_ptr<float>();
      const float inv_std = static_cast<float>(1.0 / kStd);
      const float neg_mean = static_cast<float>(-kMean);
      for (int64_t k = 0, e = data.numel(); k < e; ++k) x[k] = (x[k] + neg_mean) * inv_std;
    } else {
      data = empty({n, 1, 28, 28}, TensorOptions().dtype(kFloat32));
      const uint8_t* pixels = base_->images().data_ptr<uint8_t>();
      float* x = data.data_ptr<float>();
      for (int64_t b = 0; b < n; ++b) {
        const uint8_t* p = pixels + indices[static_cast<size_t>(b)] * kPixels;
        float* out = x + b * kPixels;
        for (int64_t k = 0; k < kPixels; ++k) out[k] = static_cast<float>(p[k]) * scale + shift;
      }
    }
    if (!batched) return {data.squeeze(0), target.squeeze(0)};
    return {data, target};
  }

  std::shared_ptr<const data::FashionMNIST> base_;
  bool augmented_;
  int64_t size_;
};

}  // namespace ember::examples
