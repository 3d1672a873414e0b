// safetensors reader and writer (serialize/safetensors.h): every dtype against a file written by
// PyTorch (tests/golden/gen_safetensors.py), byte-identical writing, atomic saves, and hostile
// files (each case below, a fixed-seed mutation run, and the corpus in tests/fuzz/safetensors).
//
// Environment hooks (the suite never needs them):
//   EMBER_SAFETENSORS_EXPORT=FILE     also writes the golden tensors with ember to FILE, for
//                                     `gen_safetensors.py --check FILE` (PyTorch reads it back).
//   EMBER_SAFETENSORS_WRITE_CORPUS=DIR writes each hostile case below to DIR/bad_<label>.

#include <ember/ember.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "serialize/safetensors.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// ---- the tensors of tests/golden/safetensors_dtypes.safetensors ------------------------------

// Mirrors value() in gen_safetensors.py: element i (row-major) of a formula tensor.
double formula(DType dt, int64_t i) {
  switch (dt) {
    case kFloat64:
    case kFloat32:
      return static_cast<double>((i * 7) % 13 - 6) / 3.0;
    case kFloat16:
    case kBFloat16:
      return static_cast<double>(i % 9 - 4) * 0.25;
    case kInt64:
      return static_cast<double>((i - 3) * 3037000499LL);  // exact: |v| < 2^53
    case kInt32:
      return static_cast<double>((i - 12) * 98765432LL);
    case kInt16:
      return static_cast<double>((i - 2) * 1000);
    case kInt8:
      return static_cast<double>(i * 9 - 100);
    case kUInt8:
      return static_cast<double>((i * 37) % 256);
    case kBool:
      return i % 3 == 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

Tensor formula_tensor(DType dt, const Shape& shape) {
  Tensor t = empty(shape, TensorOptions(dt));
  EMBER_DISPATCH_ALL(dt, "formula_tensor", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<scalar_t>(formula(dt, i));
  });
  return t;
}

template <class Bits>
Tensor bits_tensor(DType dt, const std::vector<Bits>& bits) {
  REQUIRE(itemsize(dt) == sizeof(Bits));
  Tensor t = empty({static_cast<int64_t>(bits.size())}, TensorOptions(dt));
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * sizeof(Bits));
  return t;
}

struct FormulaSpec {
  std::string name;
  DType dtype;
  Shape shape;
};

// Mirrors FORMULA_TENSORS in gen_safetensors.py (same order).
const std::string kUnicodeName =
    "unicode_\xc3\xa9_\xe5\x90\x8d_\xf0\x9f\x98\x80 \"q\" \\ /";  // é, 名, U+1F600
const std::vector<FormulaSpec> kFormulaTensors = {
    {"f64", kFloat64, {2, 3}},     {"f32", kFloat32, {4, 5}}, {"f16", kFloat16, {7}},
    {"bf16", kBFloat16, {3, 3}},   {"i64", kInt64, {6}},      {"empty_f32", kFloat32, {0, 4}},
    {"i32_3d", kInt32, {2, 3, 4}}, {"u8", kUInt8, {16}},      {"i16", kInt16, {5}},
    {"i8", kInt8, {3, 4}},         {"bool", kBool, {2, 5}},   {"scalar_f64", kFloat64, {}},
    {kUnicodeName, kFloat16, {2}},
};

const std::map<std::string, std::string> kMetadata = {
    {"format", "pt"}, {"producer", "gen_safetensors.py"}, {"note", "line 1\nline \xc3\xa9"}};

// The golden file's tensors, built by ember. With `strided`, some are non-contiguous views
// holding the same values (the writer must store them row-major).
TensorDict golden_tensors(bool strided = false) {
  TensorDict out;
  for (const auto& s : kFormulaTensors) {
    Tensor t = formula_tensor(s.dtype, s.shape);
    if (strided && s.name == "f32") {  // a transposed [5, 4] buffer seen as [4, 5]
      Tensor v = empty({5, 4}, TensorOptions(kFloat32)).t();
      v.copy_(t);
      REQUIRE_FALSE(v.is_contiguous());
      t = v;
    }
    if (strided && s.name == "u8") {  // every other element of a [32] buffer
      Tensor v = zeros({32}, TensorOptions(kUInt8)).slice(0, 0, 32, 2);
      v.copy_(t);
      REQUIRE_FALSE(v.is_contiguous());
      t = v;
    }
    out.emplace_back(s.name, t);
  }
  out.emplace_back("special_f32", bits_tensor<uint32_t>(
                                      kFloat32, {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x80000000u,
                                                 0x00000001u, 0x7F7FFFFFu, 0xFF7FFFFFu}));
  out.emplace_back("special_f16", bits_tensor<uint16_t>(
                                      kFloat16, {0x7C00, 0xFC00, 0x7E00, 0x8000, 0x0001, 0x7BFF}));
  out.emplace_back("special_bf16", bits_tensor<uint16_t>(kBFloat16, {0x7F80, 0xFF80, 0x7FC0, 0x8000,
                                                                     0x0001, 0x7F7F}));
  Tensor i64 = bits_tensor<int64_t>(
      kInt64, {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -1, 0});
  out.emplace_back("special_i64", i64);
  out.emplace_back("special_i32",
                   bits_tensor<int32_t>(kInt32, {std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::max()}));
  out.emplace_back("special_i16", bits_tensor<int16_t>(kInt16, {-32768, 32767, -1, 0}));
  out.emplace_back("special_i8", bits_tensor<int8_t>(kInt8, {-128, 127, -1, 0}));
  return out;
}

// ---- helpers ---------------------------------------------------------------------------------

std::string golden_path(const std::string& file) {
  return std::string(EMBER_GOLDEN_DIR) + "/" + file;
}
std::string corpus_dir() { return std::string(EMBER_GOLDEN_DIR) + "/../fuzz/safetensors"; }

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

safetensors::File parse(const std::string& bytes, const std::string& what = "<buffer>") {
  return safetensors::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), what);
}

// A tensor's bytes, row-major: compares NaNs and -0.0 exactly.
std::string raw(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

void check_same(const TensorDict& got, const TensorDict& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("tensor " << i << " '" << want[i].first << "'");
    CHECK(got[i].first == want[i].first);
    CHECK(got[i].second.dtype() == want[i].second.dtype());
    CHECK(got[i].second.sizes() == want[i].second.sizes());
    CHECK(got[i].second.is_contiguous());
    CHECK(raw(got[i].second) == raw(want[i].second));
  }
}

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

// A file from a header text and a data buffer (no padding, as a hand-written file might be).
std::string file_of(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

// A fresh directory under /tmp, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ember_safetensors_XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// The message of the ember::Error that f throws ("" if it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- hostile files ---------------------------------------------------------------------------

struct BadCase {
  std::string label;  // also the corpus file name: bad_<label>.safetensors
  std::string bytes;
  std::vector<std::string> expect;  // substrings of the error (besides the file's name)
};

// A valid one-tensor entry for "t": F32 [2] over 8 bytes.
const std::string kT = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string k8(8, '\x01');

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> c;
  auto add = [&](std::string label, std::string bytes, std::vector<std::string> expect) {
    c.push_back({std::move(label), std::move(bytes), std::move(expect)});
  };
  // The length prefix.
  add("empty_file", "", {"0 bytes, too short"});
  add("seven_bytes", std::string(7, '\0'), {"7 bytes, too short"});
  add("length_beyond_file", u64_le(100) + "{}", {"header length 100", "remaining 2 bytes"});
  add("length_above_limit", u64_le(200'000'000) + "{}", {"header length 200000000", "limit"});
  add("length_max_u64", u64_le(~0ull) + "{}", {"limit"});
  add("length_zero", u64_le(0), {"does not start with '{'"});
  // The JSON text.
  add("not_json", file_of("{not json}"), {"not valid JSON"});
  add("not_utf8", file_of("{\"t\xff\":{}}"), {"not valid JSON", "UTF-8"});
  add("array_header", file_of("[1,2]"), {"does not start with '{'"});
  add("leading_space", file_of(" {}"), {"does not start with '{'"});
  add("trailing_garbage", file_of("{}x"), {"not valid JSON"});
  add("nul_then_garbage", file_of(std::string("{}\0x}", 5)), {"NUL byte at offset 2"});
  add("nul_padding", file_of(std::string("{}\0\0\0\0\0\0", 8)), {"NUL byte at offset 2"});
  add("nul_in_string", file_of(std::string("{\"a\0\":{}}", 9)), {"NUL byte at offset 3"});
  add("truncated_json", file_of("{\"t\":{\"dtype\":\"F3"), {"not valid JSON"});
  add("deep_nesting", file_of("{\"t\":{\"shape\":[[[[[[[[1]]]]]]]]}}"),
      {"tensor 't': the header nests deeper"});
  add("duplicate_tensor", file_of("{" + kT + "," + kT + "}", k8 + k8), {"'t' twice"});
  add("duplicate_field",
      file_of(R"({"t":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", k8),
      {"tensor 't': the header has the key 'dtype' twice"});
  // Tensor entries.
  add("entry_not_object", file_of(R"({"t":[1]})"), {"tensor 't'", "must be an object"});
  add("missing_dtype", file_of(R"({"t":{"shape":[2],"data_offsets":[0,8]}})", k8),
      {"tensor 't'", "no \"dtype\""});
  add("missing_shape", file_of(R"({"t":{"dtype":"F32","data_offsets":[0,8]}})", k8),
      {"tensor 't'", "no \"shape\""});
  add("missing_offsets", file_of(R"({"t":{"dtype":"F32","shape":[2]}})", k8),
      {"tensor 't'", "no \"data_offsets\""});
  add("dtype_number", file_of(R"({"t":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", k8),
      {"tensor 't'", "\"dtype\" must be a string"});
  add("dtype_unknown", file_of("{" + entry("t", "Q7", "[2]", "[0,8]") + "}", k8),
      {"tensor 't'", "unknown dtype 'Q7'"});
  add("dtype_lowercase", file_of("{" + entry("t", "f32", "[2]", "[0,8]") + "}", k8),
      {"tensor 't'", "unknown dtype 'f32'"});
  for (const char* code : {"U16", "U32", "F8_E4M3", "C64"})
    add(std::string("dtype_") + code, file_of("{" + entry("t", code, "[2]", "[0,8]") + "}", k8),
        {"tensor 't'", std::string("dtype ") + code + " is not supported"});
  add("shape_not_array", file_of("{" + entry("t", "F32", "2", "[0,8]") + "}", k8),
      {"tensor 't'", "\"shape\" must be an array"});
  add("shape_negative", file_of("{" + entry("t", "F32", "[-2]", "[0,8]") + "}", k8),
      {"tensor 't'", "negative integer -2"});
  add("shape_float", file_of("{" + entry("t", "F32", "[2.0]", "[0,8]") + "}", k8),
      {"tensor 't'", "non-negative integers"});
  add("shape_exponent", file_of("{" + entry("t", "F32", "[2e0]", "[0,8]") + "}", k8),
      {"tensor 't'", "non-negative integers"});
  add("shape_string", file_of("{" + entry("t", "F32", "[\"2\"]", "[0,8]") + "}", k8),
      {"tensor 't'", "non-negative integers"});
  add("shape_beyond_u64",
      file_of("{" + entry("t", "F32", "[99999999999999999999]", "[0,8]") + "}", k8),
      {"tensor 't'", "non-negative integers"});
  add("shape_product_overflow",
      file_of("{" + entry("t", "F32", "[4294967296,4294967296,4294967296]", "[0,8]") + "}", k8),
      {"tensor 't'", "too many elements"});
  add("shape_above_int64",
      file_of("{" + entry("t", "U8", "[9223372036854775808]", "[0,8]") + "}", k8),
      {"tensor 't'", "too many elements"});
  add("shape_bytes_overflow",
      file_of("{" + entry("t", "F64", "[1152921504606846976,2]", "[0,8]") + "}", k8),
      {"tensor 't'", "too many elements"});
  add("shape_zero_times_huge",  // numel 0, but the overflow check must not be fooled
      file_of("{" + entry("t", "F32", "[0,9223372036854775807,9223372036854775807]", "[0,0]") +
              "}"),
      {"tensor 't'", "too many elements"});
  // Data offsets.
  add("offsets_not_array", file_of("{" + entry("t", "F32", "[2]", "8") + "}", k8),
      {"tensor 't'", "[begin, end]"});
  add("offsets_one", file_of("{" + entry("t", "F32", "[2]", "[8]") + "}", k8),
      {"tensor 't'", "[begin, end]"});
  add("offsets_three", file_of("{" + entry("t", "F32", "[2]", "[0,8,8]") + "}", k8),
      {"tensor 't'", "[begin, end]"});
  add("offsets_negative", file_of("{" + entry("t", "F32", "[2]", "[-8,0]") + "}", k8),
      {"tensor 't'", "negative integer"});
  add("offsets_float", file_of("{" + entry("t", "F32", "[2]", "[0,8.0]") + "}", k8),
      {"tensor 't'", "non-negative integers"});
  add("offsets_past_buffer", file_of("{" + entry("t", "F32", "[4]", "[0,16]") + "}", k8),
      {"tensor 't'", "past the end of the data buffer (8 bytes)"});
  add("offsets_huge",
      file_of("{" + entry("t", "F32", "[2]", "[18446744073709551608,18446744073709551615]") + "}",
              k8),
      {"tensor 't'", "past the end"});
  add("offsets_reversed", file_of("{" + entry("t", "F32", "[0]", "[8,0]") + "}", k8),
      {"tensor 't'", "end before they begin"});
  add("offsets_wrong_size", file_of("{" + entry("t", "F32", "[3]", "[0,8]") + "}", k8),
      {"tensor 't'", "hold 8 bytes", "needs 12"});
  add("overlap",
      file_of(
          "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}",
          k8 + "1234"),
      {"tensor 'b'", "overlap"});
  add("duplicate_offsets",
      file_of(
          "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "I32", "[2]", "[0,8]") + "}",
          k8),
      {"tensor 'b'", "overlap"});
  add("hole",
      file_of(
          "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[12,20]") + "}",
          k8 + "1234" + k8),
      {"tensor 'b'", "hole", "[8, 12)"});
  add("leading_hole", file_of("{" + entry("a", "F32", "[2]", "[4,12]") + "}", "1234" + k8),
      {"tensor 'a'", "hole", "[0, 4)"});
  add("trailing_bytes", file_of("{" + kT + "}", k8 + "xyz"),
      {"cover 8 bytes of the 11-byte data buffer"});
  add("no_tensors_but_data", file_of("{}", k8), {"cover 0 bytes of the 8-byte data buffer"});
  add("bool_byte_2",
      file_of("{" + entry("flags", "BOOL", "[3]", "[0,3]") + "}", std::string("\x01\x00\x02", 3)),
      {"tensor 'flags'", "byte 2"});
  // Metadata.
  add("metadata_number", file_of(R"({"__metadata__":{"epoch":3}})"),
      {"\"__metadata__\" value of 'epoch' must be a string"});
  add("metadata_nested", file_of(R"({"__metadata__":{"a":{"b":"c"}}})"),
      {"value of 'a' must be a string"});
  add("metadata_array", file_of(R"({"__metadata__":["a"]})"),
      {"\"__metadata__\" must be an object"});
  add("metadata_duplicate", file_of(R"({"__metadata__":{"k":"1","k":"2"}})"),
      {"\"__metadata__\": the header has the key 'k' twice"});
  return c;
}

}  // namespace

// ---- the golden file -------------------------------------------------------------------------

TEST_CASE("safetensors: PyTorch's file loads with every dtype's values", "[serialize]") {
  const std::string path = golden_path("safetensors_dtypes.safetensors");
  safetensors::File file = safetensors::load_file(path);
  CHECK(file.metadata == kMetadata);
  check_same(file.tensors, golden_tensors());

  // A few values spelled out, so that the shared formula cannot hide a common mistake.
  const auto& g = [&](const char* name) { return safetensors::get(file, name); };
  CHECK(g("f64").data_ptr<double>()[1] == 1.0 / 3.0);
  CHECK(g("f32").data_ptr<float>()[2] == static_cast<float>(-5.0 / 3.0));
  CHECK(static_cast<float>(g("bf16").data_ptr<BFloat16>()[0]) == -1.0f);
  CHECK(static_cast<float>(g("f16").data_ptr<Half>()[6]) == 0.5f);
  CHECK(g("i64").data_ptr<int64_t>()[0] == -9111001497LL);
  CHECK(g("i32_3d").sizes() == Shape{2, 3, 4});
  CHECK(g("i32_3d").data_ptr<int32_t>()[23] == 11 * 98765432);
  CHECK(g("u8").data_ptr<uint8_t>()[7] == 3);  // 259 % 256
  CHECK(g("i16").data_ptr<int16_t>()[4] == 2000);
  CHECK(g("i8").sizes() == Shape{3, 4});
  CHECK(g("i8").data_ptr<int8_t>()[11] == -1);  // 11 * 9 - 100
  CHECK(g("special_i16").data_ptr<int16_t>()[0] == -32768);
  CHECK(g("special_i8").data_ptr<int8_t>()[1] == 127);
  CHECK(g("bool").data_ptr<bool>()[3]);
  CHECK_FALSE(g("bool").data_ptr<bool>()[4]);
  CHECK(g("scalar_f64").dim() == 0);
  CHECK(g("scalar_f64").item<double>() == -2.0);
  CHECK(g("empty_f32").sizes() == Shape{0, 4});
  CHECK(std::isinf(g("special_f32").data_ptr<float>()[0]));
  CHECK(std::isnan(g("special_f32").data_ptr<float>()[2]));
  CHECK(std::signbit(g("special_f32").data_ptr<float>()[3]));
  CHECK(g("special_f32").data_ptr<float>()[4] == std::numeric_limits<float>::denorm_min());
  CHECK(static_cast<float>(g("special_f16").data_ptr<Half>()[5]) == 65504.0f);
  CHECK(g("special_i64").data_ptr<int64_t>()[0] == std::numeric_limits<int64_t>::min());
  CHECK(safetensors::get(file, kUnicodeName).dtype() == kFloat16);

  // The order of the file, even where an empty tensor shares its offset with the next one.
  CHECK(file.tensors[5].first == "empty_f32");
  CHECK(file.tensors[6].first == "i32_3d");
}

TEST_CASE("safetensors: ember writes PyTorch's bytes exactly", "[serialize]") {
  const std::string bytes = read_bytes(golden_path("safetensors_dtypes.safetensors"));
  safetensors::File file = parse(bytes, "golden");
  // The loaded tensors, the same tensors built by ember, and non-contiguous views of them.
  // (Without ember's checksums: Note [safetensors checksums].)
  const auto none = safetensors::Checksums::None;
  CHECK(safetensors::serialize(file.tensors, file.metadata, none) == bytes);
  CHECK(safetensors::serialize(golden_tensors(), kMetadata, none) == bytes);
  CHECK(safetensors::serialize(golden_tensors(/*strided=*/true), kMetadata, none) == bytes);

  // An empty dict: Python writes "{}" padded to 8.
  CHECK(safetensors::serialize({}, {}, none) == u64_le(8) + "{}      ");
  CHECK(parse(safetensors::serialize({})).tensors.empty());

  // The exported file for `gen_safetensors.py --check FILE`.
  if (const char* out = std::getenv("EMBER_SAFETENSORS_EXPORT")) {
    safetensors::save_file(golden_tensors(/*strided=*/true), out, kMetadata);
    WARN("wrote " << out);
  }
}

TEST_CASE("safetensors: dtypes ember lacks name the tensor and the code", "[serialize]") {
  const std::string path = golden_path("safetensors_unsupported.safetensors");
  std::string msg = error_of([&] { safetensors::load_file(path); });
  CHECK_THAT(msg, Contains(path) && Contains("tensor 'u16'") && Contains("dtype U16"));
  // I8 and I16, once refused like U16, are ember's int8 and int16.
  std::string i8 = file_of("{" + entry("i8", "I8", "[4]", "[0,4]") + "}", "ab\xff\x80");
  Tensor t = safetensors::get(parse(i8, "x.st"), "i8");
  CHECK(t.dtype() == kInt8);
  CHECK(testing::values(t) == std::vector<double>{97, 98, -1, -128});
  std::string i16 =
      file_of("{" + entry("i16", "I16", "[2]", "[0,4]") + "}", std::string("\x01\x00\x00\x80", 4));
  CHECK(testing::values(safetensors::get(parse(i16, "x.st"), "i16")) ==
        std::vector<double>{1, -32768});
}

// ---- writing ---------------------------------------------------------------------------------

TEST_CASE("safetensors: save_file and load_file round-trip any layout", "[serialize]") {
  TempDir dir;
  const std::string path = dir.path + "/model.safetensors";
  TensorDict tensors = golden_tensors(/*strided=*/true);
  Tensor base = formula_tensor(kFloat64, {3});
  tensors.emplace_back("expanded", base.expand({2, 3}));  // stride 0
  tensors.emplace_back("permuted", formula_tensor(kInt32, {2, 3, 4}).permute({2, 0, 1}));
  tensors.emplace_back("zero_dim_view", formula_tensor(kFloat32, {5}).select(0, 3));
  tensors.emplace_back("empty_bool", empty({3, 0}, TensorOptions(kBool)));
  safetensors::save_file(tensors, path, {{"epoch", "3"}});
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});

  safetensors::File file = safetensors::load_file(path);
  CHECK(file.metadata == std::map<std::string, std::string>{{"epoch", "3"}});
  check_same(file.tensors, tensors);
  const double* e = safetensors::get(file, "expanded").data_ptr<double>();
  CHECK(e[4] == formula(kFloat64, 1));
  CHECK(safetensors::get(file, "permuted").sizes() == Shape{4, 2, 3});
  CHECK(safetensors::get(file, "zero_dim_view").item<float>() ==
        static_cast<float>(formula(kFloat32, 3)));

  // parse() of the same bytes gives the same tensors; the header is padded to a multiple of 8.
  const std::string bytes = read_bytes(path);
  check_same(parse(bytes).tensors, tensors);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
}

TEST_CASE("safetensors: the header pads to 8 and escapes like json.dumps", "[serialize]") {
  for (size_t len = 1; len <= 16; ++len) {
    std::string bytes = safetensors::serialize({{std::string(len, 'x'), zeros({1})}});
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(n % 8 == 0);
    CHECK(bytes.size() == 8 + n + 4);
    CHECK(parse(bytes).tensors.at(0).first == std::string(len, 'x'));
  }
  // Control characters, DEL and non-ASCII are \u-escaped in lowercase hex; '/' is not escaped.
  const std::string name = std::string("a\x01\x1f\x7f/\t\b\f\r\n", 10) + "\xc3\xa9\xf0\x9f\x98\x80";
  std::string bytes =
      safetensors::serialize({{name, zeros({1})}}, {{"k\"", "v\\"}}, safetensors::Checksums::None);
  CHECK_THAT(bytes, Contains(R"({"__metadata__":{"k\"":"v\\"},)"));
  CHECK_THAT(bytes, Contains(R"("a\u0001\u001f\u007f/\t\b\f\r\n\u00e9\ud83d\ude00":)"));
  safetensors::File file = parse(bytes);
  CHECK(file.tensors.at(0).first == name);
  CHECK(file.metadata.at("k\"") == "v\\");
}

TEST_CASE("safetensors: serialize refuses bad names", "[serialize]") {
  Tensor t = zeros({2});
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"w", t}, {"w", t}});
             }),
             Contains("'w' appears twice"));
  CHECK_THAT(error_of([&] { safetensors::serialize({{"", t}}); }), Contains("empty name"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"__metadata__", t}});
             }),
             Contains("may not be called '__metadata__'"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"u", Tensor()}});
             }),
             Contains("'u' is undefined"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"bad\xff", t}});
             }),
             Contains("tensor name") && Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"overlong\xc0\xaf", t}});
             }),
             Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"surrogate\xed\xa0\x80", t}});
             }),
             Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] {
               safetensors::serialize({{"w", t}}, {{"k", "\xe9"}});
             }),
             Contains("metadata value") && Contains("not valid UTF-8"));
}

TEST_CASE("safetensors: get names the missing tensor and lists the others", "[serialize]") {
  safetensors::File file = parse(safetensors::serialize({{"w", zeros({1})}, {"b", zeros({2})}}));
  CHECK(safetensors::get(file, "b").sizes() == Shape{2});
  CHECK_THAT(error_of([&] { safetensors::get(file, "bias"); }),
             Contains("no tensor 'bias'") && Contains("2 tensors: w, b"));
}

// ---- atomic saves ----------------------------------------------------------------------------

TEST_CASE("safetensors: save_file is atomic and leaves no temporary file", "[serialize]") {
  TempDir dir;
  const std::string path = dir.path + "/model.safetensors";
  const TensorDict first = {{"w", formula_tensor(kFloat32, {2, 3})}};
  safetensors::save_file(first, path);
  const std::string old_bytes = read_bytes(path);
  ::chmod(path.c_str(), 0640);

  SECTION("a failing serialize leaves the old file alone") {
    Tensor t = zeros({1});
    CHECK_THAT(error_of([&] {
                 safetensors::save_file({{"a", t}, {"a", t}}, path);
               }),
               Contains("'a' appears twice"));
    CHECK(read_bytes(path) == old_bytes);
    CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  }
  SECTION("overwriting replaces the content and keeps the permissions") {
    safetensors::save_file({{"v", formula_tensor(kInt64, {4})}}, path);
    CHECK(safetensors::load_file(path).tensors.at(0).first == "v");
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
    CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  }
  SECTION("a directory that does not exist") {
    const std::string bad = dir.path + "/missing/model.safetensors";
    CHECK_THAT(
        error_of([&] { safetensors::save_file(first, bad); }),
        Contains(bad) && Contains("temporary file") && Contains("No such file or directory"));
    CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  }
  SECTION("a parent that is a file") {
    const std::string bad = path + "/x.safetensors";
    CHECK_THAT(error_of([&] { safetensors::save_file(first, bad); }),
               Contains(bad) && Contains("Not a directory"));
    CHECK(read_bytes(path) == old_bytes);
  }
  SECTION("a directory that is not writable") {
    const std::string sub = dir.path + "/readonly";
    REQUIRE(::mkdir(sub.c_str(), 0555) == 0);
    if (::access(sub.c_str(), W_OK) == 0) {
      WARN("running as root: permission bits do not stop writes; skipping this section");
    } else {
      CHECK_THAT(error_of([&] { safetensors::save_file(first, sub + "/m.safetensors"); }),
                 Contains(sub + "/m.safetensors") && Contains("Permission denied"));
      CHECK(fs::is_empty(sub));
    }
    ::chmod(sub.c_str(), 0755);
  }
  SECTION("a target that is a directory: the rename fails, the temporary file goes") {
    const std::string sub = dir.path + "/sub";
    REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
    CHECK_THAT(error_of([&] { safetensors::save_file(first, sub); }),
               Contains(sub) && Contains("renaming") && Contains("Is a directory"));
    CHECK(dir.entries() == std::vector<std::string>{"model.safetensors", "sub"});
  }
  SECTION("a write that fails midway (file size limit) keeps the old file") {
    struct rlimit old_limit;
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old_limit;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string msg = error_of([&] { safetensors::save_file({{"big", zeros({10000})}}, path); });
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    ::signal(SIGXFSZ, old_handler);
    CHECK_THAT(msg, Contains(path) && Contains("writing") && Contains("File too large"));
    CHECK(read_bytes(path) == old_bytes);
    CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  }
}

TEST_CASE("safetensors: load_file reports unreadable paths", "[serialize]") {
  TempDir dir;
  CHECK_THAT(error_of([&] { safetensors::load_file(dir.path + "/none.safetensors"); }),
             Contains("none.safetensors") && Contains("No such file or directory"));
  CHECK_THAT(error_of([&] { safetensors::load_file(dir.path); }),
             Contains(dir.path) && Contains("not a regular file"));
}

// ---- hostile files ---------------------------------------------------------------------------

TEST_CASE("safetensors: every hostile header is an error naming the file and the tensor",
          "[serialize]") {
  TempDir dir;
  const char* corpus_out = std::getenv("EMBER_SAFETENSORS_WRITE_CORPUS");
  for (const BadCase& bad : bad_cases()) {
    INFO("case " << bad.label);
    const std::string what = "bad_" + bad.label + ".safetensors";
    std::string msg = error_of([&] { parse(bad.bytes, what); });
    CHECK_THAT(msg, Contains("safetensors: " + what + ": "));
    for (const std::string& part : bad.expect) CHECK_THAT(msg, Contains(part));
    // load_file reads the same bytes through its own path (pread per tensor) to the same error.
    const std::string path = dir.path + "/" + what;
    write_bytes(path, bad.bytes);
    std::string expected = msg;
    if (expected.find(what) != std::string::npos)
      expected.replace(expected.find(what), what.size(), path);
    CHECK(error_of([&] { safetensors::load_file(path); }) == expected);
    if (corpus_out) write_bytes(std::string(corpus_out) + "/" + what, bad.bytes);
  }
}

TEST_CASE("safetensors: harmless variations are accepted", "[serialize]") {
  // Padding with JSON whitespace, unknown fields, null metadata, fields in any order.
  std::string header =
      R"({"__metadata__":null,"t":{"data_offsets":[0,8],"extra":[1,{"x":2}],"shape":[2],"dtype":"F32"}})";
  safetensors::File file = parse(file_of(header + "  \n\t ", k8));
  CHECK(file.metadata.empty());
  REQUIRE(file.tensors.size() == 1);
  CHECK(file.tensors[0].second.sizes() == Shape{2});
  // Tensors listed out of offset order come back in offset order, empty ones first at a tie.
  file = parse(file_of("{" + entry("b", "U8", "[2]", "[2,4]") + "," +
                           entry("a", "U8", "[2]", "[0,2]") + "," +
                           entry("z", "U8", "[0]", "[2,2]") + "}",
                       "abcd"));
  REQUIRE(file.tensors.size() == 3);
  CHECK(file.tensors[0].first == "a");
  CHECK(file.tensors[1].first == "z");
  CHECK(file.tensors[2].first == "b");
  CHECK(raw(file.tensors[2].second) == "cd");
}

TEST_CASE("safetensors: random mutations of a valid file never crash the reader", "[serialize]") {
  const std::string valid = read_bytes(golden_path("safetensors_dtypes.safetensors"));
  uint64_t header_len;
  std::memcpy(&header_len, valid.data(), 8);
  std::mt19937_64 rng(20240229);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::string json_chars = "0123456789-.,:[]{}\"e \\u";
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string b = valid;
    // Mostly the header, where the parsing is; sometimes anywhere.
    auto pos = [&] { return rng() % 4 ? 8 + pick(header_len) : pick(b.size()); };
    int n_mutations = 1 + static_cast<int>(pick(3));
    for (int m = 0; m < n_mutations && !b.empty(); ++m) {
      switch (pick(7)) {
        case 0:
          b[pos() % b.size()] ^= static_cast<char>(1 << pick(8));
          break;  // flip a bit
        case 1:
          b[pos() % b.size()] = json_chars[pick(json_chars.size())];
          break;  // JSON noise
        case 2:
          b.resize(pick(b.size() + 1));
          break;  // truncate
        case 3:
          b.insert(pos() % (b.size() + 1), 1 + pick(4), static_cast<char>(rng()));
          break;
        case 4:
          b.erase(pos() % b.size(), 1 + pick(4));
          break;
        case 5: {  // a digit changes: shapes and offsets
          size_t p = pos() % b.size();
          if (b[p] >= '0' && b[p] <= '9')
            b[p] = static_cast<char>('0' + pick(10));
          else
            b[p] ^= 1;
          break;
        }
        case 6: {  // the length prefix
          uint64_t n = header_len + static_cast<uint64_t>(pick(17)) - 8;
          if (rng() % 4 == 0) n = rng();
          if (b.size() >= 8) std::memcpy(b.data(), &n, 8);
          break;
        }
      }
    }
    try {
      safetensors::File f = parse(b, "mutant");
      ++ok;
      // Whatever parsed must describe itself consistently.
      for (const auto& kv : f.tensors) REQUIRE(kv.second.is_contiguous());
    } catch (const Error& e) {
      ++errors;
      REQUIRE_THAT(e.what(), Contains("safetensors: mutant: "));
    } catch (const std::exception& e) {
      FAIL("mutation " << iter << " threw a non-ember exception: " << e.what());
    }
  }
  INFO(ok << " mutants parsed, " << errors << " were refused");
  CHECK(ok > 0);  // bit flips in the data buffer are harmless
  CHECK(errors > 1000);
}

TEST_CASE("safetensors: the fuzz corpus parses or fails cleanly", "[serialize]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(corpus_dir())) {
    const std::string name = e.path().filename().string();
    const std::string bytes = read_bytes(e.path().string());
    INFO("corpus file " << name);
    ++files;
    if (name.rfind("ok_", 0) == 0) {
      CHECK_NOTHROW(parse(bytes, name));
    } else {
      CHECK_THAT(error_of([&] { parse(bytes, name); }), Contains("safetensors: " + name + ": "));
    }
  }
  CHECK(files >= 20);
}
