#include "data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/ops/factory.h"
#include "core/parallel.h"

namespace ember::data {

namespace {

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

// Note [Reading IDX in one pass]
// read_idx reads the header, then decompresses the data straight into the tensor's storage:
// no growing buffer, no second copy (appending to a std::vector and copying it into the tensor
// made memcpy and page faults most of the half second the 47 MB training images took). The
// header's size is trusted for that allocation only when the file agrees with it, so that a
// corrupt header cannot make us allocate terabytes:
// - a plain file must be exactly header + data bytes long;
// - a gzip file's trailer (ISIZE: the uncompressed size mod 2^32) must equal header + data
//   mod 2^32, and the data must fit deflate's largest ratio (1032:1) of the compressed size.
// Otherwise the data is counted without being stored, for the error message; should it still
// hold exactly the promised bytes (a gzip of several members, whose last trailer covers only
// the last member), a second pass reads it into the tensor.
constexpr uint64_t kMaxDeflateRatio = 1032;

// What the file system says about a file: its size and its last 4 bytes (little-endian: the
// gzip ISIZE field when the file is gzip).
struct FileTail {
  uint64_t size = 0;
  uint32_t last_u32 = 0;
};

FileTail file_tail(const std::string& path) {
  FileTail tail;
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return tail;
  tail.size = static_cast<uint64_t>(f.tellg());
  if (tail.size >= 4) {
    unsigned char b[4] = {};
    f.seekg(-4, std::ios::end);
    f.read(reinterpret_cast<char*>(b), 4);
    if (f)
      tail.last_u32 =
          uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
  return tail;
}

// A file read through zlib: gzip is decompressed, a plain file passes through (gzdirect).
// Every read checks zlib's error state; a gzip stream cut short is an error, not a short file.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    EMBER_CHECK(f_ != nullptr, "FashionMNIST: cannot open ", path, ": ", std::strerror(errno));
    gzbuffer(f_, 1 << 18);  // fewer, larger reads of the compressed file than the 8 KB default
  }
  ~GzReader() { gzclose(f_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes into dst; fewer only at the end of the data. Large reads inflate
  // straight into dst (zlib bypasses its own buffer for them).
  uint64_t read(void* dst, uint64_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    uint64_t got = 0;
    while (got < n) {
      const uint64_t want = std::min<uint64_t>(n - got, uint64_t(1) << 30);  // gzread takes int
      const int k = gzread(f_, p + got, static_cast<unsigned>(want));
      check_state(k);
      if (k == 0) break;
      got += static_cast<uint64_t>(k);
    }
    return got;
  }

  // Reads the rest of the data without keeping it; returns how many bytes it held.
  uint64_t skip_rest() {
    std::vector<unsigned char> scratch(1 << 20);
    uint64_t total = 0;
    for (uint64_t k; (k = read(scratch.data(), scratch.size())) > 0;) total += k;
    return total;
  }

  // Whether the file is not gzip (only known after the first read).
  bool is_plain() const { return gzdirect(f_) != 0; }

 private:
  void check_state(int k) {
    int code = Z_OK;
    const char* msg = gzerror(f_, &code);
    EMBER_CHECK(k >= 0 && code != Z_BUF_ERROR && code != Z_DATA_ERROR, "FashionMNIST: ", path_,
                " is corrupt (", code == Z_BUF_ERROR ? "its gzip stream is truncated" : msg, ")");
  }

  std::string path_;
  gzFile f_;
};

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// path, or path + ".gz" / path without ".gz", whichever exists.
std::string find_file(const std::string& root, const std::string& name) {
  std::string gz = root + "/" + name + ".gz", plain = root + "/" + name;  // returned: not const
  if (file_exists(gz)) return gz;
  if (file_exists(plain)) return plain;
  EMBER_CHECK(false, "FashionMNIST: ", gz,
              " not found. Install Debian's data set with "
              "`apt-get install dataset-fashion-mnist` (it puts the files in ",
              FashionMNIST::kDebianRoot, "), or pass the folder that holds them");
  return {};
}

// Note [Image scaling]
// A pixel v becomes float(v) / 255.0f: what images_.to(kFloat32).div_(255.0) gives (div_ by a
// double scalar divides in float32, by 255.0f), bit for bit. Multiplying by 1.0f / 255 instead
// would round some values differently. The loop vectorises (the conversion and the division).
void scale_pixels(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
}

}  // namespace

Tensor read_idx(const std::string& path, int expected_dims) {
  GzReader reader(path);
  EMBER_CHECK(expected_dims >= 1 && expected_dims <= 3,
              "read_idx: expected_dims must be 1, 2 or 3, got ", expected_dims);
  uint8_t header_bytes[4 + 4 * 3] = {};
  const uint64_t magic_bytes = reader.read(header_bytes, 4);
  EMBER_CHECK(magic_bytes == 4, "read_idx: ", path, " is truncated (", magic_bytes,
              " bytes, no header)");
  const uint32_t magic = big_endian_u32(header_bytes);
  const uint32_t want = 0x800u | static_cast<uint32_t>(expected_dims);
  EMBER_CHECK(magic == want, "read_idx: ", path, " has magic 0x", std::hex, magic, ", expected 0x",
              want, std::dec, " (uint8 data, ", expected_dims,
              " dims): not an IDX file of that kind");
  const uint64_t dims_bytes = 4 * static_cast<uint64_t>(expected_dims);
  EMBER_CHECK(reader.read(header_bytes + 4, dims_bytes) == dims_bytes, "read_idx: ", path,
              " is truncated in its header");
  const uint64_t header = 4 + dims_bytes;
  Shape dims;
  uint64_t count = 1;
  for (int d = 0; d < expected_dims; ++d) {
    const uint32_t n = big_endian_u32(header_bytes + 4 + 4 * d);
    EMBER_CHECK(n <= (1u << 28), "read_idx: ", path, " declares an absurd dim ", n);
    dims.push_back(n);
    // Three dims of 2^28 would overflow the product; 2^48 bytes is absurd already.
    EMBER_CHECK(n == 0 || count <= (uint64_t(1) << 48) / n, "read_idx: ", path,
                " declares an absurd size (dims ", shape_str(dims), ")");
    count *= n;
  }

  // Note [Reading IDX in one pass]: allocate only what the file can hold.
  const FileTail tail = file_tail(path);
  const bool plausible = reader.is_plain()
                             ? tail.size == header + count
                             : static_cast<uint32_t>(header + count) == tail.last_u32 &&
                                   count <= kMaxDeflateRatio * tail.size;
  // The data into a new tensor, checking that the file holds exactly the promised bytes.
  auto read_data = [&](GzReader& r) {
    Tensor t = empty(dims, TensorOptions().dtype(kUInt8));
    const uint64_t got = r.read(t.data_ptr(), count);
    const uint64_t held = got == count ? got + r.skip_rest() : got;
    EMBER_CHECK(held == count, "read_idx: ", path, " holds ", held,
                " bytes of data but its header promises ", count, " (truncated or corrupt)");
    return t;
  };
  if (plausible) return read_data(reader);
  const uint64_t held = reader.skip_rest();
  EMBER_CHECK(held == count, "read_idx: ", path, " holds ", held,
              " bytes of data but its header promises ", count, " (truncated or corrupt)");
  // The promised size after all (a gzip of several members): a second pass keeps the data.
  GzReader again(path);
  again.read(header_bytes, header);
  return read_data(again);
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
              images_.size(0), " images but ", label_path, " has ", labels_u8.size(0), " labels");
  const uint8_t* l = labels_u8.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels_u8.size(0); ++i)
    EMBER_CHECK(l[i] <= 9, "FashionMNIST: ", label_path, " has label ", int(l[i]), " at position ",
                i, " (classes are 0..9)");
  labels_ = labels_u8.to(kInt64);
}

Example FashionMNIST::get(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size(), "FashionMNIST: index ", index, " is out of range for ",
              size(), " examples");
  const int64_t pixels = images_.size(1) * images_.size(2);
  Tensor image = empty({1, images_.size(1), images_.size(2)}, TensorOptions().dtype(kFloat32));
  scale_pixels(images_.data_ptr<uint8_t>() + index * pixels, image.data_ptr<float>(), pixels);
  if (transform_) image = transform_(image);
  return {image, labels_[index]};
}

Example FashionMNIST::get_batch(const std::vector<int64_t>& indices) const {
  if (transform_) return Dataset::get_batch(indices);  // transforms act on one image at a time
  for (int64_t i : indices)
    EMBER_CHECK(i >= 0 && i < size(), "FashionMNIST: index ", i, " is out of range for ", size(),
                " examples");
  // One pass (Note [Image scaling]): each picked image is converted straight into the batch,
  // where index_select, to(kFloat32) and div_ took three passes and two temporaries.
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t h = images_.size(1), w = images_.size(2), pixels = h * w;
  Tensor images = empty({n, 1, h, w}, TensorOptions().dtype(kFloat32));
  Tensor labels = empty({n}, TensorOptions().dtype(kInt64));
  const uint8_t* src = images_.data_ptr<uint8_t>();
  const int64_t* src_labels = labels_.data_ptr<int64_t>();
  float* dst = images.data_ptr<float>();
  int64_t* dst_labels = labels.data_ptr<int64_t>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(pixels, 1));
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      scale_pixels(src + indices[i] * pixels, dst + i * pixels, pixels);
      dst_labels[i] = src_labels[indices[i]];
    }
  });
  return {images, labels};
}

}  // namespace ember::data
