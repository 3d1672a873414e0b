#include "data/fashion_mnist.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/ops/factory.h"

namespace ember::data {

namespace {

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

// The whole file, decompressed when it is gzip (zlib's gzread passes plain files through).
std::vector<uint8_t> read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "FashionMNIST: cannot open ", path, ": ", std::strerror(errno));
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      EMBER_CHECK(false, "FashionMNIST: ", path, " is corrupt (", msg, ")");
    }
    if (n == 0) break;
    out.insert(out.end(), chunk.begin(), chunk.begin() + n);
  }
  return out;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// path, or path + ".gz" / path without ".gz", whichever exists.
std::string find_file(const std::string& root, const std::string& name) {
  const std::string gz = root + "/" + name + ".gz", plain = root + "/" + name;
  if (file_exists(gz)) return gz;
  if (file_exists(plain)) return plain;
  EMBER_CHECK(false, "FashionMNIST: ", gz, " not found. Install Debian's data set with "
              "`apt-get install dataset-fashion-mnist` (it puts the files in ",
              FashionMNIST::kDebianRoot, "), or pass the folder that holds them");
  return {};
}

}  // namespace

Tensor read_idx(const std::string& path, int expected_dims) {
  const std::vector<uint8_t> bytes = read_all(path);
  EMBER_CHECK(bytes.size() >= 4, "read_idx: ", path, " is truncated (", bytes.size(),
              " bytes, no header)");
  const uint32_t magic = big_endian_u32(bytes.data());
  const uint32_t want = 0x800u | static_cast<uint32_t>(expected_dims);
  EMBER_CHECK(magic == want, "read_idx: ", path, " has magic 0x", std::hex, magic,
              ", expected 0x", want, std::dec, " (uint8 data, ", expected_dims,
              " dims): not an IDX file of that kind");
  const size_t header = 4 + 4 * static_cast<size_t>(expected_dims);
  EMBER_CHECK(bytes.size() >= header, "read_idx: ", path, " is truncated in its header");
  Shape dims;
  size_t count = 1;
  for (int d = 0; d < expected_dims; ++d) {
    const uint32_t n = big_endian_u32(bytes.data() + 4 + 4 * d);
    EMBER_CHECK(n <= (1u << 28), "read_idx: ", path, " declares an absurd dim ", n);
    dims.push_back(n);
    count *= n;
  }
  EMBER_CHECK(bytes.size() - header == count, "read_idx: ", path, " holds ",
              bytes.size() - header, " bytes of data but its header promises ", count,
              " (truncated or corrupt)");
  Tensor t = empty(dims, TensorOptions().dtype(kUInt8));
  if (count > 0) std::memcpy(t.data_ptr<uint8_t>(), bytes.data() + header, count);
  return t;
}

std::string FashionMNIST::default_root() {
  const char* env = std::getenv("EMBER_FASHION_MNIST");
  return env != nullptr && *env != '\0' ? env : kDebianRoot;
}

const char* FashionMNIST::class_name(int64_t label) {
  static const char* const kNames[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  EMBER_CHECK(label >= 0 && label < 10, "FashionMNIST: no class ", label, " (0..9)");
  return kNames[label];
}

FashionMNIST::FashionMNIST(const std::string& root, bool train, Transform transform)
    : transform_(std::move(transform)) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string image_path = find_file(root, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_file(root, prefix + "-labels-idx1-ubyte");
  images_ = read_idx(image_path, 3);
  Tensor labels_u8 = read_idx(label_path, 1);
  EMBER_CHECK(images_.size(1) == 28 && images_.size(2) == 28, "FashionMNIST: ", image_path,
              " holds images of ", images_.size(1), "x", images_.size(2), ", expected 28x28");
  EMBER_CHECK(images_.size(0) == labels_u8.size(0), "FashionMNIST: ", image_path, " has ",
              images_.size(0), " images but ", label_path, " has ", labels_u8.size(0),
              " labels");
  const uint8_t* l = labels_u8.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels_u8.size(0); ++i)
    EMBER_CHECK(l[i] <= 9, "FashionMNIST: ", label_path, " has label ", int(l[i]),
                " at position ", i, " (classes are 0..9)");
  labels_ = labels_u8.to(kInt64);
}

Example FashionMNIST::get(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size(), "FashionMNIST: index ", index,
              " is out of range for ", size(), " examples");
  Tensor image = images_[index].to(kFloat32).div_(255.0).unsqueeze(0);
  if (transform_) image = transform_(image);
  return {image, labels_[index]};
}

Example FashionMNIST::get_batch(const std::vector<int64_t>& indices) const {
  if (transform_) return Dataset::get_batch(indices);  // transforms act on one image at a time
  for (int64_t i : indices)
    EMBER_CHECK(i >= 0 && i < size(), "FashionMNIST: index ", i, " is out of range for ", size(),
                " examples");
  Tensor idx = tensor(indices, {static_cast<int64_t>(indices.size())}, TensorOptions().dtype(kInt64));
  Tensor images = images_.index_select(0, idx).to(kFloat32).div_(255.0).unsqueeze(1);
  return {images, labels_.index_select(0, idx)};
}

}  // namespace ember::data
