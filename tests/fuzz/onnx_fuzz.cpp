// libFuzzer target for the ONNX reader and runner (not part of the CMake build).
//
// Build (clang; instruments the protobuf codec, the ONNX reader and runner, links the rest of
// ember from a normal build):
//   cmake -S . -B build-st -G Ninja && ninja -C build-st ember
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/onnx_fuzz.cpp serialize/protobuf.cpp serialize/onnx_proto.cpp \
//     serialize/onnx_run.cpp -Lbuild-st -lember -Wl,-rpath,$PWD/build-st -o build-st/onnx_fuzz
// Run, seeded with PyTorch's files (new finds go to the first directory):
//   mkdir -p /tmp/onnx_corpus && build-st/onnx_fuzz /tmp/onnx_corpus tests/golden/onnx \
//     -max_len=8192 -max_total_time=300
//
// The contract: parse() returns or throws ember::Error; so do building an onnx::Model from what
// parsed and running it on an input of the declared dtype and shape. Anything else (another
// exception, a crash, a sanitizer report) is a bug. A file that parses serializes to bytes that
// parse to the same number of nodes and initializers.

#include <cstdint>
#include <cstdlib>

#include "core/ops/factory.h"
#include "serialize/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  onnx::ModelProto proto;
  try {
    proto = onnx::parse(data, size, "fuzz");
  } catch (const Error&) {
    return 0;
  }
  const std::string again = onnx::serialize(proto);
  const onnx::ModelProto back =
      onnx::parse(reinterpret_cast<const uint8_t*>(again.data()), again.size(), "reserialized");
  if (back.graph.nodes.size() != proto.graph.nodes.size() ||
      back.graph.initializers.size() != proto.graph.initializers.size())
    std::abort();
  try {
    const onnx::Model model(proto);
    std::vector<Tensor> inputs;
    for (const onnx::ValueInfo& v : proto.graph.inputs) {
      Shape shape;
      int64_t numel = 1;
      for (const onnx::Dim& d : v.shape) {
        shape.push_back(d.value >= 0 ? d.value : 2);
        numel *= std::max<int64_t>(shape.back(), 1);
        if (numel > (1 << 16)) return 0;  // keep the runs small
      }
      inputs.push_back(zeros(shape, TensorOptions(v.dtype)));
    }
    (void)model.run(inputs);
  } catch (const Error&) {
  }
  return 0;
}
