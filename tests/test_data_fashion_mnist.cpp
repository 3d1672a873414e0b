// Fashion-MNIST's fast paths (data/fashion_mnist.cpp): get / get_batch in one pass (Note [Image
// scaling]) and read_idx straight into the tensor (Note [Reading IDX in one pass]), checked
// against the expressions they replace and on gzip files built here byte by byte.

#include <ember/ember.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "data/fashion_mnist.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

using Bytes = std::vector<uint8_t>;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ember_fmnist_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void put_u32_be(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
void put_u32_le(Bytes& out, uint32_t v) {
  for (int s = 0; s <= 24; s += 8) out.push_back(static_cast<uint8_t>(v >> s));
}

// n images of 28 x 28 whose pixels run through all 256 byte values: pixel p of image i is
// (p + 37 i) % 256.
Bytes idx_images(uint32_t n) {
  Bytes out;
  put_u32_be(out, 0x803);
  put_u32_be(out, n);
  put_u32_be(out, 28);
  put_u32_be(out, 28);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t p = 0; p < 28 * 28; ++p) out.push_back(static_cast<uint8_t>((p + 37 * i) % 256));
  return out;
}
Bytes idx_labels(uint32_t n) {
  Bytes out;
  put_u32_be(out, 0x801);
  put_u32_be(out, n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>((3 * i + 1) % 10));
  return out;
}

uint32_t crc32(const Bytes& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// One gzip member holding `data` in stored (uncompressed) deflate blocks: RFC 1952's header,
// blocks of at most 65535 bytes (BFINAL/BTYPE byte, LEN, NLEN, the bytes), CRC-32 and ISIZE.
// `isize` overrides the trailer's size field.
Bytes gzip_member(const Bytes& data, const uint32_t* isize = nullptr) {
  Bytes out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  size_t pos = 0;
  do {
    const size_t len = std::min<size_t>(data.size() - pos, 65535);
    const bool last = pos + len == data.size();
    out.push_back(last ? 1 : 0);
    out.push_back(static_cast<uint8_t>(len));
    out.push_back(static_cast<uint8_t>(len >> 8));
    out.push_back(static_cast<uint8_t>(~len));
    out.push_back(static_cast<uint8_t>(~len >> 8));
    out.insert(out.end(), data.begin() + pos, data.begin() + pos + len);
    pos += len;
  } while (pos < data.size());
  put_u32_le(out, crc32(data));
  put_u32_le(out, isize ? *isize : static_cast<uint32_t>(data.size()));
  return out;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return std::vector<unsigned char>(p, p + c.numel() * static_cast<int64_t>(c.element_size()));
}

}  // namespace

TEST_CASE("FashionMNIST get and get_batch: bit for bit the old three-pass expression", "[data]") {
  TempDir dir;
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_images(7));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels(7));
  data::FashionMNIST ds(dir.path, false);
  REQUIRE(ds.size() == 7);

  // Every byte value converts as to(kFloat32).div_(255.0) does (Note [Image scaling]).
  Tensor all = arange(256, TensorOptions().dtype(kUInt8));
  Tensor old_scaled = all.to(kFloat32).div_(255.0);
  for (int v = 0; v < 256; ++v) {
    INFO("byte " << v);
    const float fast = static_cast<float>(v) / 255.0f;
    // Bit for bit on purpose: the same float, not merely an equal one.
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
    CHECK(std::memcmp(&fast, old_scaled.data_ptr<float>() + v, sizeof(float)) == 0);
  }

  // A shuffled batch with a repeat; every image covers all 256 values.
  const std::vector<int64_t> idx = {5, 0, 6, 3, 3, 1};
  data::Example b = ds.get_batch(idx);
  Tensor idx_t = tensor(idx, {6}, TensorOptions().dtype(kInt64));
  Tensor want = ds.images().index_select(0, idx_t).to(kFloat32).div_(255.0).unsqueeze(1);
  REQUIRE(b.data.sizes() == Shape{6, 1, 28, 28});
  CHECK(b.data.dtype() == kFloat32);
  CHECK(bytes_of(b.data) == bytes_of(want));
  CHECK(b.target.dtype() == kInt64);
  CHECK(values(b.target) == values(ds.labels().index_select(0, idx_t)));
  // An empty batch.
  data::Example none = ds.get_batch({});
  CHECK(none.data.sizes() == Shape{0, 1, 28, 28});
  CHECK(none.target.sizes() == Shape{0});
  CHECK_THROWS_WITH(ds.get_batch({2, 7}), Catch::Contains("index 7 is out of range"));

  for (int64_t i = 0; i < ds.size(); ++i) {
    data::Example e = ds.get(i);
    REQUIRE(e.data.sizes() == Shape{1, 28, 28});
    CHECK(bytes_of(e.data) == bytes_of(ds.images()[i].to(kFloat32).div_(255.0).unsqueeze(0)));
    CHECK(e.target.item<int64_t>() == (3 * i + 1) % 10);
  }
}

TEST_CASE("read_idx: gzip files, one pass and every corruption check", "[data]") {
  TempDir dir;
  const Bytes images = idx_images(150);  // 117,616 bytes: two stored blocks
  const std::string gz = dir.file("images.gz");

  SECTION("a valid gzip file reads as the plain one") {
    write_bytes(gz, gzip_member(images));
    write_bytes(dir.file("images"), images);
    Tensor a = data::read_idx(gz, 3), b = data::read_idx(dir.file("images"), 3);
    REQUIRE(a.sizes() == Shape{150, 28, 28});
    CHECK(a.dtype() == kUInt8);
    CHECK(bytes_of(a) == bytes_of(b));
    CHECK(bytes_of(a) == std::vector<unsigned char>(images.begin() + 16, images.end()));
  }
  SECTION("several gzip members (the trailer sizes only the last): the second pass") {
    const Bytes first(images.begin(), images.begin() + 1000);
    const Bytes rest(images.begin() + 1000, images.end());
    Bytes file = gzip_member(first);
    const Bytes second = gzip_member(rest);
    file.insert(file.end(), second.begin(), second.end());
    write_bytes(gz, file);
    Tensor a = data::read_idx(gz, 3);
    CHECK(bytes_of(a) == std::vector<unsigned char>(images.begin() + 16, images.end()));
  }
  SECTION("a gzip stream cut short") {
    Bytes file = gzip_member(images);
    file.resize(file.size() / 2);
    write_bytes(gz, file);
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains(gz) && Catch::Contains("corrupt"));
    file.resize(20);  // inside the IDX header
    write_bytes(gz, file);
    CHECK_THROWS_AS(data::read_idx(gz, 3), Error);
  }
  SECTION("a gzip stream whose trailer lies about the size") {
    const uint32_t wrong = static_cast<uint32_t>(images.size() + 1);
    write_bytes(gz, gzip_member(images, &wrong));
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains(gz) && Catch::Contains("corrupt"));
  }
  SECTION("a complete gzip stream with fewer or more bytes than the header promises") {
    Bytes short_data(images.begin(), images.end() - 5);
    write_bytes(gz, gzip_member(short_data));
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains("holds 117595 bytes of data") &&
                                                 Catch::Contains("promises 117600"));
    Bytes long_data = images;
    long_data.push_back(7);
    write_bytes(gz, gzip_member(long_data));
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains("holds 117601 bytes of data"));
  }
  SECTION("absurd headers are errors without allocating what they promise") {
    // 2^20 images promised (822 MB) in a small file: neither file could hold them, so the data
    // is counted, not allocated.
    Bytes huge = images;
    huge[4] = 0x00, huge[5] = 0x10, huge[6] = 0x00, huge[7] = 0x00;
    write_bytes(gz, gzip_member(huge));
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains("promises 822083584"));
    write_bytes(dir.file("huge"), huge);
    CHECK_THROWS_WITH(data::read_idx(dir.file("huge"), 3), Catch::Contains("promises 822083584"));
    // Dims whose product would overflow.
    Bytes overflow = images;
    for (int d = 0; d < 3; ++d) {
      overflow[4 + 4 * d] = 0x10, overflow[5 + 4 * d] = 0, overflow[6 + 4 * d] = 0;
      overflow[7 + 4 * d] = 0;  // 2^28 each
    }
    write_bytes(gz, gzip_member(overflow));
    CHECK_THROWS_WITH(data::read_idx(gz, 3), Catch::Contains("absurd"));
  }
  SECTION("plain files: trailing bytes and a short header") {
    Bytes extra = images;
    extra.push_back(1);
    write_bytes(dir.file("plain"), extra);
    CHECK_THROWS_WITH(data::read_idx(dir.file("plain"), 3),
                      Catch::Contains("holds 117601 bytes of data"));
    write_bytes(dir.file("plain"), Bytes(images.begin(), images.begin() + 10));
    CHECK_THROWS_WITH(data::read_idx(dir.file("plain"), 3), Catch::Contains("truncated"));
    write_bytes(dir.file("plain"), Bytes(images.begin(), images.begin() + 3));
    CHECK_THROWS_WITH(data::read_idx(dir.file("plain"), 3), Catch::Contains("3 bytes, no header"));
  }
}
