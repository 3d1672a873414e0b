#include "serialize/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/atomic_file.h"
#include "core/ops/factory.h"

// The format is little-endian and ember copies bytes straight in and out of tensors.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian machine");

namespace ember::safetensors {
namespace {

using nlohmann::json;

// The reference implementation refuses headers above 100 MB; so does ember.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";
// Note [safetensors checksums] in safetensors.h.
constexpr const char* kChecksumPrefix = "ember.crc32.";
constexpr size_t kChecksumPrefixLength = 12;
constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// ---- dtypes ----------------------------------------------------------------------------------

struct DTypeCode {
  const char* code;
  DType dtype;
};
constexpr DTypeCode kDTypeCodes[] = {
    {"F64", kFloat64}, {"F32", kFloat32}, {"F16", kFloat16}, {"BF16", kBFloat16}, {"I64", kInt64},
    {"I32", kInt32},   {"I16", kInt16},   {"I8", kInt8},     {"U8", kUInt8},      {"BOOL", kBool},
};
// Codes of the format that ember has no dtype for (refused by name, not as "unknown").
constexpr const char* kUnsupportedCodes[] = {"U16",     "U32",     "U64",     "F8_E4M3", "F8_E5M2",
                                             "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",      "C64"};

const char* code_of(DType t) {
  for (const auto& c : kDTypeCodes)
    if (c.dtype == t) return c.code;
  EMBER_ERROR("safetensors: dtype ", dtype_name(t), " has no safetensors code");
}

// ---- errors ----------------------------------------------------------------------------------

template <class... Args>
[[noreturn]] void fail(const std::string& what, const Args&... args) {
  EMBER_ERROR("safetensors: ", what, ": ", args...);
}

template <class... Args>
[[noreturn]] void fail_tensor(const std::string& what, const std::string& name,
                              const Args&... args) {
  EMBER_ERROR("safetensors: ", what, ": tensor '", name, "': ", args...);
}

const char* json_type(const json& j) { return j.type_name(); }

// ---- the header ------------------------------------------------------------------------------

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by data offsets
  std::map<std::string, std::string> metadata;
};

// A non-negative JSON integer, or an error naming the tensor and the field.
uint64_t as_index(const json& j, const std::string& what, const std::string& name,
                  const char* field) {
  if (!j.is_number_unsigned())
    fail_tensor(what, name, field, " must hold non-negative integers, got ",
                j.is_number_integer() ? "a negative integer" : json_type(j), " ", j.dump());
  return j.get<uint64_t>();
}

DType dtype_of_code(const json& j, const std::string& what, const std::string& name) {
  if (!j.is_string()) fail_tensor(what, name, "\"dtype\" must be a string, got ", json_type(j));
  const std::string& code = j.get_ref<const std::string&>();
  for (const auto& c : kDTypeCodes)
    if (code == c.code) return c.dtype;
  for (const char* c : kUnsupportedCodes)
    if (code == c) fail_tensor(what, name, "dtype ", code, " is not supported by ember");
  fail_tensor(what, name, "unknown dtype '", code, "'");
}

Entry parse_entry(const std::string& name, const json& j, uint64_t buffer_size,
                  const std::string& what) {
  if (!j.is_object()) fail_tensor(what, name, "entry must be an object, got ", json_type(j));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!j.contains(field)) fail_tensor(what, name, "entry has no \"", field, "\"");
  Entry e;
  e.name = name;
  e.dtype = dtype_of_code(j["dtype"], what, name);

  const json& shape = j["shape"];
  if (!shape.is_array())
    fail_tensor(what, name, "\"shape\" must be an array, got ", json_type(shape));
  // The product of the non-zero sizes must fit int64 even when a zero makes the tensor empty:
  // ember's strides multiply them.
  uint64_t reach = 1;
  bool has_zero = false;
  for (const json& d : shape) {
    uint64_t size = as_index(d, what, name, "\"shape\"");
    if (size == 0) has_zero = true;
    if (size > kMaxInt64 || (size > 0 && __builtin_mul_overflow(reach, size, &reach)) ||
        reach > kMaxInt64)
      fail_tensor(what, name, "shape ", shape.dump(), " has too many elements");
    e.shape.push_back(static_cast<int64_t>(size));
  }
  const uint64_t numel = has_zero ? 0 : reach;
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(itemsize(e.dtype)), &nbytes))
    fail_tensor(what, name, "shape ", shape.dump(), " has too many elements");

  const json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail_tensor(what, name, "\"data_offsets\" must be an array [begin, end], got ", offsets.dump());
  e.begin = as_index(offsets[0], what, name, "\"data_offsets\"");
  e.end = as_index(offsets[1], what, name, "\"data_offsets\"");
  if (e.end < e.begin)
    fail_tensor(what, name, "data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  if (e.end > buffer_size)
    fail_tensor(what, name, "data_offsets [", e.begin, ", ", e.end,
                "] reach past the end of the data buffer (", buffer_size, " bytes)");
  if (e.end - e.begin != nbytes)
    fail_tensor(what, name, "data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
                " bytes, but shape ", e.shape, " of ", code_of(e.dtype), " needs ", nbytes);
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& j, const std::string& what) {
  std::map<std::string, std::string> out;
  if (j.is_null()) return out;  // the reference reads `null` as "no metadata"
  if (!j.is_object()) fail(what, "\"__metadata__\" must be an object, got ", json_type(j));
  for (const auto& kv : j.items()) {
    if (!kv.value().is_string())
      fail(what, "\"__metadata__\" value of '", kv.key(), "' must be a string, got ",
           json_type(kv.value()));
    out.emplace(kv.key(), kv.value().get<std::string>());
  }
  return out;
}

// Parses and checks the JSON header `text` (n bytes) for a data buffer of buffer_size bytes.
Header parse_header(const char* text, size_t n, uint64_t buffer_size, const std::string& what) {
  if (n == 0 || text[0] != '{') fail(what, "the header does not start with '{'");
  // nlohmann stops at a NUL as at the end of the text, so "{...}\0garbage" would pass; JSON
  // allows no NUL anywhere (inside strings it must be escaped), and neither does the reference.
  if (const void* nul = std::memchr(text, 0, n))
    fail(what, "the header has a NUL byte at offset ", static_cast<const char*>(nul) - text);

  // nlohmann keeps the last of duplicate keys silently and its objects forget the key order, so
  // a callback records both: the order of the tensors' names, and any name seen twice. It also
  // refuses nesting deeper than the format needs, so no hostile header builds a deep tree.
  std::vector<std::string> order;
  std::vector<std::set<std::string>> seen;  // one key set per open object
  // Errors inside an entry name its tensor (or the metadata).
  auto where = [&]() -> std::string {
    if (order.empty() || seen.size() < 2) return "";
    return order.back() == kMetadataKey ? "\"__metadata__\": " : "tensor '" + order.back() + "': ";
  };
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth > 3) fail(what, where(), "the header nests deeper than the format allows");
        if (event == json::parse_event_t::object_start) seen.emplace_back();
        break;
      case json::parse_event_t::object_end:
        seen.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!seen.back().insert(key).second)
          fail(what, where(), "the header has the key '", key, "' twice");
        if (depth == 1) order.push_back(key);
        break;
      }
      default:
        break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text, text + n, callback);
  } catch (const json::exception& e) {
    fail(what, "the header is not valid JSON: ", e.what());
  }
  if (!root.is_object()) fail(what, "the header must be a JSON object, got ", json_type(root));

  Header h;
  for (const std::string& name : order) {
    const json& value = root[name];
    if (name == kMetadataKey)
      h.metadata = parse_metadata(value, what);
    else
      h.entries.push_back(parse_entry(name, value, buffer_size, what));
  }

  // The tensors must tile the buffer: no overlaps, no holes, no trailing bytes.
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t cursor = 0;
  for (const Entry& e : h.entries) {
    if (e.begin < cursor)
      fail_tensor(what, e.name, "data_offsets [", e.begin, ", ", e.end,
                  "] overlap another tensor's bytes (which end at ", cursor, ")");
    if (e.begin > cursor)
      fail_tensor(what, e.name, "data_offsets [", e.begin, ", ", e.end,
                  "] leave a hole: no tensor covers bytes [", cursor, ", ", e.begin, ")");
    cursor = e.end;
  }
  if (cursor != buffer_size)
    fail(what, "the tensors cover ", cursor, " bytes of the ", buffer_size,
         "-byte data buffer; the rest belongs to no tensor");
  return h;
}

// A CPU tensor for `e`, its bytes not yet filled.
Tensor empty_for(const Entry& e) { return empty(e.shape, TensorOptions(e.dtype).device(kCPU)); }

// A bool byte other than 0 or 1 is not a value C++ (or PyTorch) can hold.
void check_bools(const Tensor& t, const Entry& e, const std::string& what) {
  if (e.dtype != kBool) return;
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] > 1)
      fail_tensor(what, e.name, "BOOL element ", i, " is the byte ", static_cast<int>(p[i]),
                  " (must be 0 or 1)");
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Checks the 8-byte length prefix against the file size and returns the header length.
uint64_t header_length(const uint8_t* prefix, uint64_t file_size, const std::string& what) {
  if (file_size < 8)
    fail(what, "the file is ", file_size, " bytes, too short for the 8-byte header length");
  uint64_t n = read_u64_le(prefix);
  if (n > kMaxHeaderSize)
    fail(what, "the header length ", n, " is above the ", kMaxHeaderSize, "-byte limit");
  if (n > file_size - 8)
    fail(what, "the header length ", n, " is beyond the file's remaining ", file_size - 8,
         " bytes");
  return n;
}

// ---- writing JSON the way Python's json.dumps does (ensure_ascii, no spaces) ----------------

// Decodes one UTF-8 code point at s[i], advancing i; returns -1 on malformed input (overlong
// forms, surrogates and values above U+10FFFF included).
int32_t next_code_point(const std::string& s, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return -1;
  int32_t cp = len == 1 ? b0 : b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    uint8_t b = byte(i + k);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  i += len;
  return cp;
}

void append_json_string(std::string& out, const std::string& s, const char* role) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto u_escape = [&](uint32_t unit) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
  };
  out += '"';
  for (size_t i = 0; i < s.size();) {
    int32_t cp = next_code_point(s, i);
    EMBER_CHECK(cp >= 0, "safetensors: ", role, " '", s, "' is not valid UTF-8");
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp >= 0x20 && cp <= 0x7E) {
          out += static_cast<char>(cp);
        } else if (cp < 0x10000) {
          u_escape(static_cast<uint32_t>(cp));
        } else {  // a UTF-16 surrogate pair, as Python writes it
          uint32_t v = static_cast<uint32_t>(cp) - 0x10000;
          u_escape(0xD800 + (v >> 10));
          u_escape(0xDC00 + (v & 0x3FF));
        }
    }
  }
  out += '"';
}

// The metadata object as the writer encodes it: {"key":"value",...} in key order.
std::string encode_metadata(const std::map<std::string, std::string>& metadata) {
  std::string out = "{";
  for (const auto& kv : metadata) {
    if (out.size() > 1) out += ',';
    append_json_string(out, kv.first, "metadata key");
    out += ':';
    append_json_string(out, kv.second, "metadata value");
  }
  return out + '}';
}

// ---- checksums (Note [safetensors checksums]) ------------------------------------------------

bool is_checksum_key(const std::string& key) {
  return key.compare(0, kChecksumPrefixLength, kChecksumPrefix) == 0;
}

uint32_t crc32_of(const void* data, size_t n) {
  const uLong start = ::crc32_z(0, nullptr, 0);
  return static_cast<uint32_t>(::crc32_z(start, static_cast<const Bytef*>(data), n));
}
uint32_t crc32_of(const std::string& s) { return crc32_of(s.data(), s.size()); }
uint32_t crc32_of(const Tensor& contiguous_cpu) {
  return contiguous_cpu.numel() == 0 ? crc32_of(nullptr, 0)
                                     : crc32_of(contiguous_cpu.data_ptr(), contiguous_cpu.nbytes());
}

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// 8 lowercase hex digits (as hex8 writes them: a flipped case bit is damage too), or false.
bool parse_hex8(const std::string& s, uint32_t& v) {
  if (s.size() != 8) return false;
  v = 0;
  for (char ch : s) {
    const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint32_t>(d);
  }
  return true;
}

// The checksums a header declares, taken out of its metadata and checked against the header:
// the metadata's own is verified here, the tensors' by verify() once their bytes are read.
struct Declared {
  bool present = false;
  std::map<std::string, uint32_t> tensors;
};

Declared take_checksums(Header& h, const std::string& what) {
  Declared d;
  bool has_metadata_crc = false;
  uint32_t metadata_crc = 0;
  for (auto it = h.metadata.begin(); it != h.metadata.end();) {
    if (!is_checksum_key(it->first)) {
      ++it;
      continue;
    }
    d.present = true;
    uint32_t v = 0;
    if (!parse_hex8(it->second, v))
      fail(what, "\"__metadata__\": the checksum '", it->first,
           "' should be 8 lowercase hex digits, got '", it->second, "' (the header is damaged)");
    const std::string name = it->first.substr(kChecksumPrefixLength);
    if (name == kMetadataKey) {
      has_metadata_crc = true;
      metadata_crc = v;
    } else {
      d.tensors[name] = v;
    }
    it = h.metadata.erase(it);
  }
  if (!d.present) return d;
  if (!has_metadata_crc)
    fail(what, "\"__metadata__\": the file has ember checksums but no '", kChecksumPrefix,
         kMetadataKey, "' (the header is damaged)");
  const uint32_t got = crc32_of(encode_metadata(h.metadata));
  if (got != metadata_crc)
    fail(what, "\"__metadata__\": the metadata is corrupt (crc32 mismatch: the header says ",
         hex8(metadata_crc), ", its entries give ", hex8(got), ")");
  std::set<std::string> names;
  for (const Entry& e : h.entries) {
    names.insert(e.name);
    if (!d.tensors.count(e.name))
      fail_tensor(what, e.name, "has no checksum '", kChecksumPrefix, e.name,
                  "', though the file has ember checksums (the header is damaged)");
  }
  for (const auto& kv : d.tensors)
    if (!names.count(kv.first))
      fail(what, "\"__metadata__\": the checksum '", kChecksumPrefix, kv.first,
           "' names no tensor of the file (the header is damaged)");
  return d;
}

// Checks a tensor's bytes, just read, against its declared checksum.
void verify(const Declared& d, const Entry& e, const Tensor& t, const std::string& what) {
  if (!d.present) return;
  const uint32_t want = d.tensors.at(e.name);
  const uint32_t got = crc32_of(t);
  if (got != want)
    fail_tensor(what, e.name, "the data is corrupt (crc32 mismatch: the header says ", hex8(want),
                ", the bytes give ", hex8(got), ")");
}

// ---- files -----------------------------------------------------------------------------------

std::string errno_str(int err) { return std::strerror(err); }

// Reads exactly n bytes at offset; false at a premature end of file; throws on I/O errors.
bool pread_all(int fd, void* dst, size_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read: ", errno_str(errno));
    }
    if (got == 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// Closes a descriptor on scope exit.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void truncated(const std::string& path) {
  fail(path, "the file ended while reading (was it modified?)");
}

// Opens `path` into fd and reads and checks its header; n is set to the header's length.
Header read_header(const std::string& path, FdGuard& fd, uint64_t& n) {
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd.fd < 0) fail(path, "cannot open: ", errno_str(errno));
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) fail(path, "cannot stat: ", errno_str(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  uint8_t prefix[8] = {};
  if (file_size >= 8 && !pread_all(fd.fd, prefix, 8, 0, path)) truncated(path);
  n = header_length(prefix, file_size, path);
  std::string text(n, '\0');
  if (!pread_all(fd.fd, text.data(), n, 8, path)) truncated(path);
  return parse_header(text.data(), n, file_size - 8 - n, path);
}

// ---- writing -------------------------------------------------------------------------------

// The 8-byte length and the padded JSON header, and the tensors (contiguous, on the CPU) whose
// bytes follow in that order. Checks names and dtypes, so it throws before any file is touched.
struct Prepared {
  std::string head;
  std::vector<Tensor> rows;
  uint64_t data_size = 0;
};

Prepared prepare(const TensorDict& tensors, const std::map<std::string, std::string>& metadata,
                 Checksums checksums) {
  std::set<std::string> names;
  std::vector<std::string> json_names;  // each name as a JSON string
  std::vector<Tensor> rows;             // each tensor contiguous on the CPU
  json_names.reserve(tensors.size());
  rows.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(!name.empty(), "safetensors: a tensor has an empty name");
    EMBER_CHECK(name != kMetadataKey, "safetensors: a tensor may not be called '", kMetadataKey,
                "'");
    EMBER_CHECK(names.insert(name).second, "safetensors: the tensor name '", name,
                "' appears twice");
    EMBER_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    append_json_string(json_names.emplace_back(), name, "tensor name");
    rows.push_back(t.detach().to(kCPU).contiguous());
  }

  std::map<std::string, std::string> all = metadata;
  if (checksums == Checksums::CRC32) {
    for (const auto& kv : metadata)
      EMBER_CHECK(!is_checksum_key(kv.first), "safetensors: the metadata key '", kv.first,
                  "' is reserved for ember's checksums (Note [safetensors checksums])");
    all[kChecksumPrefix + std::string(kMetadataKey)] = hex8(crc32_of(encode_metadata(metadata)));
    for (size_t i = 0; i < rows.size(); ++i)
      all[kChecksumPrefix + tensors[i].first] = hex8(crc32_of(rows[i]));
  }
  std::string header = "{";
  if (!all.empty()) header += "\"__metadata__\":" + encode_metadata(all);

  uint64_t offset = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& c = rows[i];
    if (header.size() > 1) header += ',';
    header += json_names[i];
    header += ":{\"dtype\":\"";
    header += code_of(c.dtype());
    header += "\",\"shape\":[";
    for (size_t d = 0; d < c.sizes().size(); ++d) {
      if (d) header += ',';
      header += std::to_string(c.sizes()[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + ',';
    offset += c.nbytes();
    header += std::to_string(offset) + "]}";
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned
  EMBER_CHECK(header.size() <= kMaxHeaderSize, "safetensors: the header would be ", header.size(),
              " bytes, above the ", kMaxHeaderSize, "-byte limit readers accept");

  Prepared p;
  uint64_t n = header.size();
  p.head.append(reinterpret_cast<const char*>(&n), 8);
  p.head += header;
  p.rows = std::move(rows);
  p.data_size = offset;
  return p;
}

}  // namespace

// ---- public API ------------------------------------------------------------------------------

File parse(const uint8_t* data, size_t size, const std::string& what) {
  if (size > 0) EMBER_CHECK(data != nullptr, "safetensors: ", what, ": null data");
  uint64_t n = header_length(data, size, what);
  const uint8_t* buffer = data + 8 + n;
  uint64_t buffer_size = size - 8 - n;
  Header h = parse_header(reinterpret_cast<const char*>(data + 8), n, buffer_size, what);
  const Declared sums = take_checksums(h, what);
  File file;
  file.metadata = std::move(h.metadata);
  file.checksummed = sums.present;
  for (const Entry& e : h.entries) {
    Tensor t = empty_for(e);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), buffer + e.begin, e.end - e.begin);
    verify(sums, e, t, what);
    check_bools(t, e, what);
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

std::string serialize(const TensorDict& tensors, const std::map<std::string, std::string>& metadata,
                      Checksums checksums) {
  Prepared p = prepare(tensors, metadata, checksums);
  std::string out;
  out.reserve(p.head.size() + p.data_size);
  out += p.head;
  for (const Tensor& c : p.rows)
    if (c.numel() > 0) out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  return out;
}

File load_file(const std::string& path) {
  FdGuard fd;
  uint64_t n = 0;
  Header h = read_header(path, fd, n);
  const Declared sums = take_checksums(h, path);

  // Each tensor is read straight into its own storage: no second copy of the file in memory.
  File file;
  file.metadata = std::move(h.metadata);
  file.checksummed = sums.present;
  for (const Entry& e : h.entries) {
    Tensor t = empty_for(e);
    if (e.end > e.begin && !pread_all(fd.fd, t.data_ptr(), e.end - e.begin, 8 + n + e.begin, path))
      truncated(path);
    verify(sums, e, t, path);
    check_bools(t, e, path);
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  FdGuard fd;
  uint64_t n = 0;
  Header h = read_header(path, fd, n);
  take_checksums(h, path);
  return std::move(h.metadata);
}

void save_file(const TensorDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata, Checksums checksums) {
  EMBER_CHECK(!path.empty(), "safetensors: save_file: empty path");
  // Everything that can fail on the tensors fails here, before the file system is touched.
  const Prepared p = prepare(tensors, metadata, checksums);

  // Written atomically (core/atomic_file.h); the tensors' bytes go straight from their storage
  // to the file: no copy of the whole file.
  AtomicFile file("safetensors", path);
  file.write(p.head.data(), p.head.size());
  for (const Tensor& row : p.rows)
    if (row.numel() > 0) file.write(row.data_ptr(), row.nbytes());
  file.commit();
}

const Tensor& get(const File& file, const std::string& name) {
  for (const auto& kv : file.tensors)
    if (kv.first == name) return kv.second;
  std::string names;
  size_t shown = 0;
  for (const auto& kv : file.tensors) {
    if (shown == 30) {
      names += ", ... (" + std::to_string(file.tensors.size() - shown) + " more)";
      break;
    }
    names += (shown++ ? ", " : "") + kv.first;
  }
  EMBER_ERROR("safetensors: no tensor '", name, "'; the file has ", file.tensors.size(),
              " tensors: ", names);
}

}  // namespace ember::safetensors
