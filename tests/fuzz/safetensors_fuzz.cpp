// libFuzzer target for the safetensors reader (not part of the CMake build).
//
// Build (clang; instruments the reader, links the rest of ember from a normal build):
//   cmake -S . -B build-st -G Ninja && ninja -C build-st ember
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/safetensors_fuzz.cpp serialize/safetensors.cpp \
//     -Lbuild-st -lember -Wl,-rpath,$PWD/build-st -o build-st/safetensors_fuzz
// Run, seeded with the corpus (new finds go to the first directory):
//   mkdir -p /tmp/st_corpus && build-st/safetensors_fuzz /tmp/st_corpus tests/fuzz/safetensors \
//     -max_len=4096 -max_total_time=300
//
// The contract: parse() returns or throws ember::Error; anything else (another exception, a
// crash, a sanitizer report) is a bug. A file that parses must serialize back to a file that
// parses to the same tensors
// (unless a name is empty: the reader accepts those, the writer refuses them).

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "serialize/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::safetensors::File file;
  try {
    file = ember::safetensors::parse(data, size, "fuzz");
  } catch (const ember::Error&) {
    return 0;
  }
  for (const auto& kv : file.tensors)
    if (kv.first.empty()) return 0;  // readable, but the writer refuses empty names
  const std::string bytes = ember::safetensors::serialize(file.tensors, file.metadata);
  ember::safetensors::File again = ember::safetensors::parse(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "fuzz round trip");
  if (again.tensors.size() != file.tensors.size() || again.metadata != file.metadata) std::abort();
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const ember::Tensor& a = file.tensors[i].second;
    const ember::Tensor& b = again.tensors[i].second;
    if (again.tensors[i].first != file.tensors[i].first || a.sizes() != b.sizes() ||
        a.dtype() != b.dtype() ||
        (a.nbytes() > 0 && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) != 0))
      std::abort();
  }
  return 0;
}
