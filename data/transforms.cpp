#include "data/transforms.h"

#include "autograd/ops/random.h"
#include "autograd/ops/shape.h"
#include "core/error.h"
#include "core/ops/factory.h"
#include "data/dataset.h"

namespace ember::data::transforms {

namespace {

void check_image(const char* what, const Tensor& image) {
  EMBER_CHECK(image.defined() && image.dim() == 3, what, ": expected an image (C, H, W), got ",
              image.defined() ? image.sizes() : Shape{});
}

// A uniform integer in [0, n) from this thread's sample generator.
int64_t draw_below(int64_t n) {
  return randint(0, n, {1}, TensorOptions().dtype(kInt64), &sample_generator()).item<int64_t>();
}

}  // namespace

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  EMBER_CHECK(!mean_.empty() && mean_.size() == std_.size(), "Normalize: ", mean_.size(),
              " means but ", std_.size(), " stds");
  for (double s : std_) EMBER_CHECK(s != 0.0, "Normalize: a std of 0 divides by zero");
}

Tensor Normalize::operator()(const Tensor& image) const {
  check_image("Normalize", image);
  const int64_t C = image.size(0);
  const int64_t n = static_cast<int64_t>(mean_.size());
  EMBER_CHECK(n == 1 || n == C, "Normalize: ", n, " channel statistics for an image of ", C,
              " channels");
  if (n == 1) return (image - mean_[0]) / std_[0];
  Tensor mean = tensor(mean_, {C, 1, 1}, TensorOptions().dtype(kFloat64)).to(image.dtype());
  Tensor std = tensor(std_, {C, 1, 1}, TensorOptions().dtype(kFloat64)).to(image.dtype());
  return (image - mean) / std;
}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  EMBER_CHECK(height > 0 && width > 0 && padding >= 0, "RandomCrop: size ", height, "x", width,
              " and padding ", padding, " must be positive (padding >= 0)");
}

Tensor RandomCrop::operator()(const Tensor& image) const {
  check_image("RandomCrop", image);
  Tensor padded = padding_ > 0 ? pad(image, {padding_, padding_, padding_, padding_}) : image;
  const int64_t H = padded.size(1), W = padded.size(2);
  EMBER_CHECK(height_ <= H && width_ <= W, "RandomCrop: a ", height_, "x", width_,
              " window does not fit the padded image ", H, "x", W);
  const int64_t top = draw_below(H - height_ + 1), left = draw_below(W - width_ + 1);
  return padded.narrow(1, top, height_).narrow(2, left, width_).contiguous();
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip: p = ", p, " is not in [0, 1]");
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image) const {
  check_image("RandomHorizontalFlip", image);
  const double u = rand({1}, TensorOptions().dtype(kFloat64), &sample_generator()).item<double>();
  return u < p_ ? flip(image, {2}) : image;
}

Tensor Compose::operator()(const Tensor& image) const {
  Tensor x = image;
  for (const auto& t : transforms_) x = t(x);
  return x;
}

}  // namespace ember::data::transforms
