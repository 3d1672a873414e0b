#pragma once
// safetensors: the tensor file format of the Hugging Face ecosystem, read and written
// byte-compatibly (https://github.com/huggingface/safetensors, "Format"):
//
//   [8 bytes]  N, the header's length, unsigned little-endian
//   [N bytes]  a JSON object, UTF-8: for each tensor
//                "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//              and optionally "__metadata__": {"key": "value", ...} (strings only).
//              It may be padded at the end with spaces (0x20).
//   [rest]     the data buffer: each tensor's bytes, row-major, little-endian, at
//              [begin, end) relative to the buffer's start. The tensors cover the buffer
//              exactly, without overlaps or holes.
//
// dtype codes ember reads and writes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL. The format's other
// codes (U16, U32, U64, F8_E4M3, F8_E5M2, ...) have no ember dtype: a file holding one is
// refused with an error naming the tensor and the code. A BOOL byte other than 0 or 1 is refused.
//
//   safetensors::save_file({{"w", w}, {"b", b}}, "model.safetensors", {{"epoch", "3"}});
//   auto file = safetensors::load_file("model.safetensors");   // file.tensors, file.metadata
//
// Reading never trusts the file: a short file, a header length beyond the file or above 100 MB,
// bad JSON (invalid UTF-8, NUL bytes, trailing garbage, nesting the format does not use), an
// unknown dtype, negative or non-integer sizes, a shape whose size overflows, offsets outside
// the buffer, overlapping or leaving holes or trailing bytes, a byte count that does not match
// the shape, duplicate keys, non-string metadata... each raise an ember::Error
// "safetensors: <file>: tensor '<name>': <problem>", and never read out of bounds.
// Unknown fields in a tensor entry are ignored, and "__metadata__": null means no metadata.
//
// Writing produces the bytes of the reference writer (tests/golden/safetensors_io.py, i.e.
// Python's json.dumps with separators (",", ":") and ensure_ascii): "__metadata__" first when
// non-empty (keys in std::map order), then the tensors in the given order, the header padded
// with spaces to a multiple of 8. Writing is atomic: a temporary file in the same directory,
// fsync, rename over the target (keeping its permissions), fsync of the directory; a crash
// mid-write leaves the previous file intact, and on any error the temporary file is removed.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_dict.h"

namespace ember {

namespace safetensors {

struct File {
  TensorDict tensors;                           // in the order of their data offsets
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

// Parses a whole file held in memory. `what` names it in errors (a path, "<buffer>").
// The tensors are CPU, contiguous, and own their memory (copied out of `data`); File::tensors is
// in the order of the data offsets (an empty tensor before a non-empty one at the same offset).
File parse(const uint8_t* data, size_t size, const std::string& what = "<buffer>");
// The file's bytes for `tensors` (any device, dtype, layout; written row-major). Tensors are
// laid out in the order given. Names must be unique, non-empty, valid UTF-8 and not
// "__metadata__"; metadata must be valid UTF-8. Throws ember::Error otherwise.
std::string serialize(const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// load_file reads the header, then each tensor straight into its storage (no second copy of
// the file in memory); errors name `path` and the strerror of a failing system call.
File load_file(const std::string& path);
void save_file(const TensorDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});

// The tensor called `name`, or an error listing the names the file has.
const Tensor& get(const File& file, const std::string& name);

}  // namespace safetensors
}  // namespace ember
