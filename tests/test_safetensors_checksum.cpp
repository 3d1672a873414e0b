// ember's checksums in safetensors files (Note [safetensors checksums] in
// serialize/safetensors.h): written for every tensor and the metadata, verified on load, so that
// a flipped byte anywhere in a file ember wrote is refused; files without them (PyTorch's) load.

#include <ember/ember.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

#include "serialize/safetensors.h"

using namespace ember;
using Catch::Contains;

namespace {

safetensors::File parse(const std::string& bytes) {
  return safetensors::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "f");
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

uint64_t header_length(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return n;
}

// A uint8 tensor holding the bytes of `s`.
Tensor bytes_tensor(const std::string& s) {
  Tensor t = empty({static_cast<int64_t>(s.size())}, TensorOptions(kUInt8));
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

// `bytes` with the first occurrence of `from` replaced by `to` (of the same length).
std::string replaced(std::string bytes, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  const size_t at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, from.size(), to);
  return bytes;
}

}  // namespace

TEST_CASE("safetensors checksums: written for each tensor and the metadata", "[serialize]") {
  // "123456789" is the CRC-32 check string: its crc32 is cbf43926 (zlib, Python's zlib.crc32).
  const std::string bytes =
      safetensors::serialize({{"w", bytes_tensor("123456789")}, {"e", zeros({0})}}, {{"k", "v"}});
  const std::string header = bytes.substr(8, header_length(bytes));
  CHECK_THAT(header, Contains(R"("ember.crc32.w":"cbf43926")"));
  CHECK_THAT(header, Contains(R"("ember.crc32.e":"00000000")"));  // an empty tensor
  // The metadata's checksum covers the user's entries as written, {"k":"v"}: the crc32 of
  // those 9 bytes is the checksum of a tensor holding them.
  const std::string meta_crc =
      header.substr(header.find(R"("ember.crc32.__metadata__":")") + 28, 8);
  const std::string of_bytes = safetensors::serialize({{"m", bytes_tensor(R"({"k":"v"})")}});
  CHECK_THAT(of_bytes, Contains(R"("ember.crc32.m":")" + meta_crc + "\""));

  safetensors::File file = parse(bytes);
  CHECK(file.checksummed);
  CHECK(file.metadata == std::map<std::string, std::string>{{"k", "v"}});  // checksums hidden
  CHECK(file.tensors.size() == 2);

  // Without checksums: the reference writer's bytes, which load unverified.
  const std::string plain =
      safetensors::serialize({{"w", bytes_tensor("123456789")}}, {}, safetensors::Checksums::None);
  CHECK(plain.find("ember.crc32") == std::string::npos);
  CHECK_FALSE(parse(plain).checksummed);

  // The keys are reserved while the writer adds its own.
  CHECK_THAT(error_of([&] {
               safetensors::serialize({}, {{"ember.crc32.w", "00000000"}});
             }),
             Contains("'ember.crc32.w' is reserved"));
}

TEST_CASE("safetensors checksums: PyTorch's files load unverified", "[serialize]") {
  for (const char* name : {"safetensors_dtypes.safetensors", "checkpoint_torch.safetensors"}) {
    INFO(name);
    safetensors::File file =
        safetensors::load_file(std::string(EMBER_GOLDEN_DIR) + "/" + std::string(name));
    CHECK_FALSE(file.checksummed);
    CHECK_FALSE(file.tensors.empty());
  }
}

TEST_CASE("safetensors checksums: a flipped byte in a tensor names the tensor", "[serialize]") {
  Tensor w = arange(0, 16).to(kFloat32);
  Tensor b = full({3}, 0.5);
  const std::string bytes = safetensors::serialize({{"w", w}, {"b", b}}, {{"epoch", "3"}});
  const size_t data = 8 + header_length(bytes);
  REQUIRE(bytes.size() == data + 16 * 4 + 3 * 4);

  std::string bad = bytes;
  bad[data + 4 * 5 + 1] ^= 0x01;  // w[5]: still a finite float, silently wrong without the check
  CHECK_THAT(error_of([&] { parse(bad); }),
             Contains("safetensors: f: tensor 'w': the data is corrupt (crc32 mismatch"));
  bad = bytes;
  bad[bytes.size() - 1] ^= 0x40;  // b[2]
  CHECK_THAT(error_of([&] { parse(bad); }), Contains("tensor 'b': the data is corrupt"));

  // load_file reads the tensors straight into their storage and checks them there.
  char tmpl[] = "/tmp/ember_checksum_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  bad = bytes;
  bad[data] ^= 0x80;
  REQUIRE(::write(fd, bad.data(), bad.size()) == static_cast<ssize_t>(bad.size()));
  ::close(fd);
  CHECK_THAT(error_of([&] { safetensors::load_file(tmpl); }),
             Contains(std::string(tmpl) + ": tensor 'w': the data is corrupt (crc32 mismatch"));
  // The metadata alone still reads (the header is intact): no tensor bytes are read.
  CHECK(safetensors::load_metadata(tmpl) == std::map<std::string, std::string>{{"epoch", "3"}});
  ::unlink(tmpl);
}

TEST_CASE("safetensors checksums: a flipped bit anywhere in the file is refused", "[serialize]") {
  const std::string bytes = safetensors::serialize(
      {{"w", arange(0, 6).to(kFloat32).reshape({2, 3})}, {"n", full({2}, 7, kInt64)}},
      {{"epoch", "3"}, {"name", "run"}});
  REQUIRE_NOTHROW(parse(bytes));
  // Every bit of every byte after the length prefix: the header's structure (parser), the
  // metadata (its checksum), the checksums themselves and the tensors' bytes (their checksums).
  for (size_t i = 8; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " ('" << bytes[i] << "') bit " << bit);
      CHECK_THROWS_AS(parse(bad), Error);
    }
  }
}

TEST_CASE("safetensors checksums: damaged metadata and checksum entries", "[serialize]") {
  const std::string bytes = safetensors::serialize({{"w", ones({4})}}, {{"epoch", "3"}});
  CHECK_THAT(error_of([&] { parse(replaced(bytes, R"("epoch":"3")", R"("epoch":"4")")); }),
             Contains("\"__metadata__\": the metadata is corrupt (crc32 mismatch"));
  // A checksum renamed: the tensor lacks one, or one names no tensor.
  CHECK_THAT(error_of([&] { parse(replaced(bytes, "\"ember.crc32.w\"", "\"ember.crc32.v\"")); }),
             Contains("tensor 'w': has no checksum 'ember.crc32.w'"));
  const std::string two = safetensors::serialize({{"w", ones({4})}, {"v", ones({1})}});
  CHECK_THAT(error_of([&] { parse(replaced(two, "\"ember.crc32.v\"", "\"ember.crc32.x\"")); }),
             Contains("tensor 'v': has no checksum"));
  // Not 8 hex digits.
  const std::string forged = safetensors::serialize(
      {{"w", ones({4})}}, {{"ember.crc32.__metadata__", "zz"}, {"ember.crc32.w", "00000000"}},
      safetensors::Checksums::None);
  CHECK_THAT(
      error_of([&] { parse(forged); }),
      Contains(
          "the checksum 'ember.crc32.__metadata__' should be 8 lowercase hex digits, got 'zz'"));
  // Tensor checksums without the metadata's: the marker itself was damaged.
  const std::string unmarked = safetensors::serialize({{"w", ones({4})}}, {{"ember.crc32.w", "0"}},
                                                      safetensors::Checksums::None);
  CHECK_THAT(error_of([&] { parse(unmarked); }), Contains("8 lowercase hex digits"));
  const std::string unmarked2 = safetensors::serialize(
      {{"w", ones({4})}}, {{"ember.crc32.w", "00000000"}}, safetensors::Checksums::None);
  CHECK_THAT(error_of([&] { parse(unmarked2); }),
             Contains("has ember checksums but no 'ember.crc32.__metadata__'"));
  // A checksum naming a tensor the file does not have.
  auto value_of = [&](const std::string& key) {
    return bytes.substr(bytes.find("\"" + key + "\":\"") + key.size() + 4, 8);
  };
  const std::string extra =
      safetensors::serialize({{"w", ones({4})}},
                             {{"epoch", "3"},
                              {"ember.crc32.__metadata__", value_of("ember.crc32.__metadata__")},
                              {"ember.crc32.w", value_of("ember.crc32.w")},
                              {"ember.crc32.ghost", "00000000"}},
                             safetensors::Checksums::None);
  // (the same file without the ghost loads: the forged checksums are the real ones)
  CHECK_NOTHROW(parse(
      safetensors::serialize({{"w", ones({4})}},
                             {{"epoch", "3"},
                              {"ember.crc32.__metadata__", value_of("ember.crc32.__metadata__")},
                              {"ember.crc32.w", value_of("ember.crc32.w")}},
                             safetensors::Checksums::None)));
  CHECK_THAT(error_of([&] { parse(extra); }),
             Contains("the checksum 'ember.crc32.ghost' names no tensor of the file"));
}
