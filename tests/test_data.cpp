// Datasets, Fashion-MNIST from Debian's IDX files, and transforms (data/).

#include <ember/ember.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/transforms.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

// A scratch folder removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ember_data_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

// An uncompressed IDX file of n images of h x w (value = (i + r + c) % 256) or of n labels.
std::vector<uint8_t> idx_images(uint32_t n, uint32_t h, uint32_t w) {
  std::vector<uint8_t> out;
  put_u32(out, 0x803);
  put_u32(out, n);
  put_u32(out, h);
  put_u32(out, w);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t r = 0; r < h; ++r)
      for (uint32_t c = 0; c < w; ++c) out.push_back(static_cast<uint8_t>((i + r + c) % 256));
  return out;
}
std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  put_u32(out, 0x801);
  put_u32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  if (a.numel() == 0) return 0.0;
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

bool have_debian_fashion_mnist() {
  return std::ifstream(std::string(data::FashionMNIST::kDebianRoot) + "/train-images-idx3-ubyte.gz")
      .good();
}

}  // namespace

TEST_CASE("TensorDataset, Subset, ConcatDataset and random_split", "[data]") {
  Tensor x = arange(10 * 3, TensorOptions().dtype(kFloat32)).reshape({10, 3});
  Tensor y = arange(10, TensorOptions().dtype(kInt64));
  auto ds = std::make_shared<data::TensorDataset>(x, y);
  REQUIRE(ds->size() == 10);
  data::Example e = ds->get(4);
  CHECK(values(e.data) == std::vector<double>{12, 13, 14});
  CHECK(e.target.item<int64_t>() == 4);
  CHECK_THROWS_WITH(ds->get(10), Catch::Contains("index 10 is out of range"));
  CHECK_THROWS_WITH(data::TensorDataset(x, y.narrow(0, 0, 9)),
                    Catch::Contains("10 rows but target has 9"));

  data::Example b = ds->get_batch({3, 1, 3});
  CHECK(b.data.sizes() == Shape{3, 3});
  CHECK(values(b.target) == std::vector<double>{3, 1, 3});
  // The batched path gives what stacking single examples gives.
  data::Example s = data::stack_examples({ds->get(3), ds->get(1), ds->get(3)});
  CHECK(values(s.data) == values(b.data));

  data::Subset sub(ds, {7, 2});
  CHECK(sub.size() == 2);
  CHECK(sub.get(0).target.item<int64_t>() == 7);
  CHECK_THROWS_WITH(data::Subset(ds, {11}), Catch::Contains("index 11"));

  data::ConcatDataset cat({ds, std::make_shared<data::Subset>(ds, std::vector<int64_t>{5})});
  CHECK(cat.size() == 11);
  CHECK(cat.get(9).target.item<int64_t>() == 9);
  CHECK(cat.get(10).target.item<int64_t>() == 5);

  Generator g1(3), g2(3);
  auto parts = data::random_split(ds, std::vector<int64_t>{6, 4}, &g1);
  auto again = data::random_split(ds, std::vector<int64_t>{6, 4}, &g2);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0]->size() == 6);
  CHECK(parts[1]->size() == 4);
  CHECK(parts[0]->indices() == again[0]->indices());  // same seed, same split
  std::set<int64_t> seen(parts[0]->indices().begin(), parts[0]->indices().end());
  seen.insert(parts[1]->indices().begin(), parts[1]->indices().end());
  CHECK(seen.size() == 10);  // disjoint and complete
  CHECK_THROWS_WITH(data::random_split(ds, std::vector<int64_t>{6, 3}),
                    Catch::Contains("add up to 9"));
  auto frac = data::random_split(ds, std::vector<double>{0.25, 0.75});
  CHECK(frac[0]->size() + frac[1]->size() == 10);
  CHECK(frac[0]->size() == 3);  // floor(2.5) = 2, plus the first remainder
}

TEST_CASE("FashionMNIST reads Debian's files", "[data]") {
  if (!have_debian_fashion_mnist()) {
    WARN("dataset-fashion-mnist is not installed; skipping");
    return;
  }
  data::FashionMNIST train(data::FashionMNIST::kDebianRoot, true);
  data::FashionMNIST test(data::FashionMNIST::kDebianRoot, false);
  REQUIRE(train.size() == 60000);
  REQUIRE(test.size() == 10000);
  // Balanced classes: 6,000 per class in training, 1,000 in test.
  Tensor counts = zeros({10}, TensorOptions().dtype(kInt64));
  counts.index_add_(0, train.labels(), ones_like(train.labels()));
  for (double c : values(counts)) CHECK(c == 6000);
  CHECK(train.labels()[0].item<int64_t>() == 9);  // the first training image is an ankle boot
  CHECK(std::string(data::FashionMNIST::class_name(9)) == "Ankle boot");
  data::Example e = train.get(0);
  CHECK(e.data.sizes() == Shape{1, 28, 28});
  CHECK(e.data.dtype() == kFloat32);
  CHECK(e.data.min().item<float>() >= 0.0f);
  CHECK(e.data.max().item<float>() <= 1.0f);
  data::Example b = train.get_batch({0, 59999});
  CHECK(b.data.sizes() == Shape{2, 1, 28, 28});
  CHECK(max_diff(b.data[0], e.data) == 0.0);
}

TEST_CASE("FashionMNIST: missing, corrupt and truncated files are clear errors", "[data]") {
  TempDir dir;
  CHECK_THROWS_WITH(data::FashionMNIST(dir.path, true),
                    Catch::Contains("apt-get install dataset-fashion-mnist"));
  // A consistent uncompressed pair loads.
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_images(3, 28, 28));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels({1, 2, 9}));
  data::FashionMNIST ok(dir.path, false);
  CHECK(ok.size() == 3);
  CHECK(ok.get(2).target.item<int64_t>() == 9);
  CHECK(ok.images()[1][0][0].item<uint8_t>() == 1);

  // Truncated image data.
  auto bytes = idx_images(3, 28, 28);
  bytes.resize(bytes.size() - 5);
  write_bytes(dir.file("t10k-images-idx3-ubyte"), bytes);
  CHECK_THROWS_WITH(data::FashionMNIST(dir.path, false), Catch::Contains("truncated or corrupt"));
  // Wrong magic (a labels file where images belong).
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_labels({1, 2, 3}));
  CHECK_THROWS_WITH(data::FashionMNIST(dir.path, false), Catch::Contains("magic"));
  // Counts that do not match, and a label out of range.
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_images(3, 28, 28));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels({1, 2}));
  CHECK_THROWS_WITH(data::FashionMNIST(dir.path, false), Catch::Contains("2 labels"));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels({1, 12, 3}));
  CHECK_THROWS_WITH(data::FashionMNIST(dir.path, false), Catch::Contains("label 12"));
  // A corrupt gzip stream.
  std::remove(dir.file("t10k-images-idx3-ubyte").c_str());
  write_bytes(dir.file("t10k-images-idx3-ubyte.gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2});
  CHECK_THROWS_AS(data::FashionMNIST(dir.path, false), Error);
}

TEST_CASE("transforms: Normalize, RandomCrop, RandomHorizontalFlip, Compose", "[data]") {
  namespace T = data::transforms;
  Tensor img = arange(2 * 4 * 5, TensorOptions().dtype(kFloat32)).reshape({2, 4, 5});
  Tensor n = T::Normalize({1.0, 2.0}, {2.0, 4.0})(img);
  CHECK(n[0][0][0].item<float>() == Approx(-0.5));
  CHECK(n[1][0][0].item<float>() == Approx((20.0 - 2.0) / 4.0));
  CHECK_THROWS_WITH(T::Normalize({1, 2, 3}, {1, 1, 1})(img), Catch::Contains("3 channel"));
  CHECK_THROWS_WITH(T::Normalize({0}, {0}), Catch::Contains("std of 0"));

  // Every crop is a window of the zero-padded image; over many draws all offsets appear.
  data::set_sample_seed(5);
  T::RandomCrop crop(4, 1);
  std::set<double> corners;
  for (int i = 0; i < 200; ++i) {
    Tensor c = crop(img);
    REQUIRE(c.sizes() == Shape{2, 4, 4});
    corners.insert(c[0][0][0].item<float>());
  }
  CHECK(corners.size() > 5);
  CHECK_THROWS_WITH(T::RandomCrop(9)(img), Catch::Contains("does not fit"));

  // Reseeding replays the same random choices.
  data::set_sample_seed(11);
  Tensor a = T::Compose({T::RandomCrop(4, 2), T::RandomHorizontalFlip()})(img);
  data::set_sample_seed(11);
  Tensor b = T::Compose({T::RandomCrop(4, 2), T::RandomHorizontalFlip()})(img);
  CHECK(max_diff(a, b) == 0.0);

  CHECK(max_diff(T::RandomHorizontalFlip(1.0)(img), flip(img, {2})) == 0.0);
  CHECK(max_diff(T::RandomHorizontalFlip(0.0)(img), img) == 0.0);
  int flipped = 0;
  for (int i = 0; i < 400; ++i)
    flipped += max_diff(T::RandomHorizontalFlip(0.5)(img), img) > 0 ? 1 : 0;
  CHECK(flipped > 140);
  CHECK(flipped < 260);
}
