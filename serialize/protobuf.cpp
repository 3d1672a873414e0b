#include "serialize/protobuf.h"

#include <cstring>
#include <utility>

#include "core/error.h"

namespace ember::pb {

namespace {
constexpr int kVarint = 0, kI64 = 1, kLen = 2, kI32 = 5;
constexpr int kMaxDepth = 64;
}  // namespace

// ---- Writer ---------------------------------------------------------------------------------

void Writer::raw_varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void Writer::key(int field, int wire_type) {
  raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

void Writer::varint(int field, uint64_t v) {
  key(field, kVarint);
  raw_varint(v);
}

void Writer::float32(int field, float v) {
  key(field, kI32);
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian hosts only (x86-64, as the rest of ember's files)
  out_.append(b, 4);
}

void Writer::bytes(int field, const void* data, size_t n) {
  key(field, kLen);
  raw_varint(n);
  if (n) out_.append(static_cast<const char*>(data), n);
}

void Writer::packed_int64(int field, const std::vector<int64_t>& v) {
  if (v.empty()) return;
  Writer body;
  for (int64_t x : v) body.raw_varint(static_cast<uint64_t>(x));
  message(field, body);
}

void Writer::packed_float(int field, const std::vector<float>& v) {
  if (v.empty()) return;
  bytes(field, v.data(), v.size() * sizeof(float));
}

// ---- Reader ---------------------------------------------------------------------------------

Reader::Reader(const uint8_t* data, size_t size, std::string what, size_t base, int depth)
    : p_(data),
      begin_(data),
      end_(data + size),
      what_(std::move(what)),
      base_(base),
      depth_(depth) {
  if (depth_ > kMaxDepth) fail("messages nested deeper than 64");
}

void Reader::fail(const std::string& problem) const {
  EMBER_ERROR(what_, ": malformed protobuf at byte ", base_ + static_cast<size_t>(p_ - begin_),
              ": ", problem);
}

void Reader::need(size_t n) const {
  if (static_cast<size_t>(end_ - p_) < n)
    fail("a field needs " + std::to_string(n) + " bytes, " +
         std::to_string(static_cast<size_t>(end_ - p_)) + " are left");
}

uint64_t Reader::read_varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p_ == end_) fail("a varint runs past the end");
    const uint8_t b = *p_++;
    if (shift == 63 && b > 1) fail("a varint overflows 64 bits");
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("a varint is longer than 10 bytes");
}

bool Reader::next() {
  if (!consumed_) skip();
  if (p_ == end_) return false;
  const uint64_t k = read_varint();
  wire_type_ = static_cast<int>(k & 7);
  const uint64_t field = k >> 3;
  if (field == 0 || field > (1u << 29)) fail("field number " + std::to_string(field));
  field_ = static_cast<int>(field);
  if (wire_type_ != kVarint && wire_type_ != kI64 && wire_type_ != kLen && wire_type_ != kI32)
    fail("wire type " + std::to_string(wire_type_) + " (field " + std::to_string(field_) + ")");
  consumed_ = false;
  return true;
}

void Reader::expect(int wire_type, const char* kind) const {
  if (wire_type_ != wire_type)
    fail("field " + std::to_string(field_) + " should be " + kind + ", its wire type is " +
         std::to_string(wire_type_));
}

uint64_t Reader::as_uint64() {
  expect(kVarint, "a varint");
  consumed_ = true;
  return read_varint();
}

float Reader::as_float() {
  expect(kI32, "a 32-bit float");
  need(4);
  float v;
  std::memcpy(&v, p_, 4);
  p_ += 4;
  consumed_ = true;
  return v;
}

std::pair<const uint8_t*, size_t> Reader::as_bytes() {
  expect(kLen, "length-delimited");
  const uint64_t n = read_varint();
  if (n > static_cast<uint64_t>(end_ - p_))
    fail("a length of " + std::to_string(n) + " runs past the end (" +
         std::to_string(static_cast<size_t>(end_ - p_)) + " bytes left)");
  const uint8_t* at = p_;
  p_ += n;
  consumed_ = true;
  return {at, static_cast<size_t>(n)};
}

std::string Reader::as_string() {
  auto [at, n] = as_bytes();
  return std::string(reinterpret_cast<const char*>(at), n);
}

Reader Reader::as_message() {
  auto [at, n] = as_bytes();
  return Reader(at, n, what_, base_ + static_cast<size_t>(at - begin_), depth_ + 1);
}

void Reader::append_int64s(std::vector<int64_t>& out) {
  if (wire_type_ == kLen) {
    Reader packed = as_message();
    while (packed.p_ != packed.end_) out.push_back(static_cast<int64_t>(packed.read_varint()));
    return;
  }
  out.push_back(as_int64());
}

void Reader::append_floats(std::vector<float>& out) {
  if (wire_type_ == kLen) {
    auto [at, n] = as_bytes();
    if (n % 4) fail("packed floats of " + std::to_string(n) + " bytes");
    const size_t old = out.size();
    out.resize(old + n / 4);
    if (n) std::memcpy(out.data() + old, at, n);
    return;
  }
  out.push_back(as_float());
}

void Reader::skip() {
  consumed_ = true;
  switch (wire_type_) {
    case kVarint:
      read_varint();
      return;
    case kI64:
      need(8);
      p_ += 8;
      return;
    case kI32:
      need(4);
      p_ += 4;
      return;
    default:
      as_bytes();
      return;  // kLen (next() refused the other types)
  }
}

}  // namespace ember::pb
