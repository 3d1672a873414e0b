#pragma once
// The protocol-buffers wire format, as much of it as ONNX files use (serialize/onnx.h): a
// message is a sequence of fields, each a key (field number << 3 | wire type, a varint) and a
// value whose encoding the wire type gives
// (https://protobuf.dev/programming-guides/encoding/):
//
//   0 varint   integers and enums, 7 bits a byte, low bits first, high bit = "more follows"
//   1 i64      8 bytes little-endian (double, fixed64)
//   2 len      a varint byte count, then the bytes: strings, bytes, nested messages and
//              "packed" repeated scalars (the values back to back)
//   5 i32      4 bytes little-endian (float, fixed32)
//
// A reader must skip fields it does not know (newer writers add them) and accept a repeated
// scalar both packed and one key per value (proto2 writers emit the latter unless [packed]).
//
//   pb::Writer w;  w.varint(1, 8);  w.string(2, "ember");  w.message(7, graph_writer);
//   pb::Reader r(bytes, "model.onnx");
//   while (r.next()) switch (r.field()) { case 1: v = r.as_int64(); break; ... default: r.skip(); }
//
// The reader never trusts its input: a varint longer than 10 bytes, a length beyond the end, a
// wire type 3/4/6/7 (groups, unused by ONNX) or a nesting deeper than 64 messages is an
// ember::Error "<what>: malformed protobuf at byte <offset>: <problem>".

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::pb {

class Writer {
 public:
  void varint(int field, uint64_t v);  // also int64 (two's complement, 10 bytes if negative)
  void float32(int field, float v);
  void bytes(int field, const void* data, size_t n);
  void string(int field, const std::string& s) { bytes(field, s.data(), s.size()); }
  void message(int field, const Writer& nested) { string(field, nested.out_); }
  void packed_int64(int field, const std::vector<int64_t>& v);
  void packed_float(int field, const std::vector<float>& v);
  const std::string& data() const { return out_; }

 private:
  void key(int field, int wire_type);
  void raw_varint(uint64_t v);
  std::string out_;
};

class Reader {
 public:
  // Reads [data, data + size); offsets in errors count from `base` (the enclosing file's start).
  Reader(const uint8_t* data, size_t size, std::string what, size_t base = 0, int depth = 0);

  // Moves to the next field; false at the end of the message.
  bool next();
  int field() const { return field_; }
  int wire_type() const { return wire_type_; }

  // The current field's value, as the schema says it is (a wrong wire type is an error).
  uint64_t as_uint64();
  int64_t as_int64() { return static_cast<int64_t>(as_uint64()); }
  float as_float();
  std::string as_string();
  // The bytes of a len field, unparsed (they stay in the caller's buffer).
  std::pair<const uint8_t*, size_t> as_bytes();
  // A nested message.
  Reader as_message();
  // A repeated scalar: appends this field's value(s), packed or not.
  void append_int64s(std::vector<int64_t>& out);
  void append_floats(std::vector<float>& out);
  void skip();

  // Throws "<what>: malformed protobuf at byte <offset>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;
  const std::string& what() const { return what_; }

 private:
  uint64_t read_varint();
  void need(size_t n) const;
  void expect(int wire_type, const char* kind) const;
  const uint8_t* p_;
  const uint8_t* begin_;
  const uint8_t* end_;
  std::string what_;
  size_t base_;
  int depth_;
  int field_ = 0, wire_type_ = 0;
  bool consumed_ = true;
};

}  // namespace ember::pb
