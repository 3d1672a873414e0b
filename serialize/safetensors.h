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
// with spaces to a multiple of 8 -- exactly those bytes with Checksums::None; by default the
// metadata also carries ember's checksums (Note [safetensors checksums]). Writing is atomic: a
// temporary file in the same directory, fsync, rename over the target (keeping its permissions),
// fsync of the directory; a crash mid-write leaves the previous file intact, and on any error the
// temporary file is removed.

//
// Note [safetensors checksums]
// A bit flipped on disk in a weight would load silently and train into NaN, so every file ember
// writes carries a checksum of each tensor's bytes in its "__metadata__" (strings, so any
// safetensors reader still opens the file and sees them as ordinary metadata):
//   "ember.crc32.<tensor name>"   zlib's crc32 of the tensor's data bytes (row-major, as
//                                 stored), 8 lowercase hex digits: "ember.crc32.w": "0a1b2c3d"
//   "ember.crc32.__metadata__"    crc32 of the other metadata entries as the writer encodes
//                                 them: the JSON object {"key":"value",...} in key order
//                                 (json.dumps, ensure_ascii, no spaces), "{}" when there are none
// (Python: zlib.crc32(tensor.numpy().tobytes()) -- tests/golden/gen_safetensors.py --check
// verifies ember's file so). A file with any "ember.crc32." key is verified on load: every
// tensor must have its checksum and match it ("tensor 'w': the data is corrupt (crc32
// mismatch: ...)"), the metadata must match its checksum, and a checksum may name no missing
// tensor; so a flipped byte anywhere is refused, whether in a tensor's bytes (its checksum), in
// the metadata (its checksum) or in the header's structure (the parser). Files without these
// keys (written by PyTorch or the Hugging Face library) load as before, unverified.
// File::metadata never holds the checksum keys (File::checksummed says whether there were
// some), and they are reserved: the writer refuses user metadata under "ember.crc32." unless it
// writes no checksums itself (Checksums::None, e.g. a test forging a damaged file).

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
  std::map<std::string, std::string> metadata;  // "__metadata__", less ember's checksums
  bool checksummed = false;                     // the file had ember's checksums (all verified)
};

// Whether a writer adds ember's checksums (Note [safetensors checksums]).
enum class Checksums : uint8_t { CRC32, None };

// Parses a whole file held in memory. `what` names it in errors (a path, "<buffer>").
// The tensors are CPU, contiguous, and own their memory (copied out of `data`); File::tensors is
// in the order of the data offsets (an empty tensor before a non-empty one at the same offset).
File parse(const uint8_t* data, size_t size, const std::string& what = "<buffer>");
// The file's bytes for `tensors` (any device, dtype, layout; written row-major). Tensors are
// laid out in the order given. Names must be unique, non-empty, valid UTF-8 and not
// "__metadata__"; metadata must be valid UTF-8. Throws ember::Error otherwise.
std::string serialize(const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      Checksums checksums = Checksums::CRC32);

// load_file reads the header, then each tensor straight into its storage (no second copy of
// the file in memory); errors name `path` and the strerror of a failing system call.
File load_file(const std::string& path);
void save_file(const TensorDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {},
               Checksums checksums = Checksums::CRC32);
// The metadata alone (less the checksums; its own checksum verified when the file has one),
// read from the header without the tensors' bytes: cheap, for a look at a large file.
std::map<std::string, std::string> load_metadata(const std::string& path);

// The tensor called `name`, or an error listing the names the file has.
const Tensor& get(const File& file, const std::string& name);

}  // namespace safetensors
}  // namespace ember
