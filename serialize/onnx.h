#pragma once
// ONNX: export a trained model for other runtimes (onnxruntime, TensorRT, OpenVINO), and run an
// ONNX file with ember's own ops -- torch.onnx.export and a small onnxruntime in one header.
//
//   onnx::export_model(*model, example_input, "model.onnx");   // batch dim dynamic by default
//   onnx::Model m = onnx::load("model.onnx");                   // any file ember can run
//   Tensor y = m.run(x);
//
// The file is an ONNX ModelProto (IR version 8, default opset 17: the format of
// https://github.com/onnx/onnx/blob/main/onnx/onnx.proto), written and read with ember's own
// protobuf codec (serialize/protobuf.h), atomically like every ember file.
//
// Note [How a module becomes an ONNX graph]
// torch.onnx.export traces the ops a forward runs. ember exports by module instead: each module
// type has an exporter that writes the ONNX nodes equal to its forward, given the name of its
// input value; Sequential chains its children's. The exporters of the built-in layers are below
// (export_model's list); for a module of your own, register one that composes the nodes (or
// calls b.module() on its children):
//
//   onnx::register_exporter<Residual>([](onnx::GraphBuilder& b, Residual& m, const onnx::Value& x)
//   {
//     onnx::Value y = b.module(*m.body, "body", x);
//     return b.output(b.node("Add", {x.name, y.name}), m, x);   // m.forward(x.example): shape
//   });
//
// Exporting runs the model's forward on the example input along the way (in eval mode, as
// PyTorch exports by default; the mode is restored), so every exporter sees the real input
// shapes, and a layer that cannot be written in ONNX (a padding mode ONNX lacks, AvgPool2d's
// divisor_override, a custom module without an exporter) is an error naming the module's path
// and type, never a file that computes something else. Parameters become initializers named by
// their state_dict keys ("0.weight"), as in PyTorch's files.
//
// Note [Verify what you export]
// A file that loads but computes something else is the classic export failure (a batch size
// baked into a Reshape, a layer exported in training mode). So export_model, by default, reads
// the written bytes back with ember's parser, runs them with onnx::Model on the example input,
// and compares with the module's own output (rtol / atol); with a dynamic batch dim it also runs
// a batch of twice the size. A mismatch is an error with the largest difference, and the file is
// not written. That is what the practitioner's advice "load the file in onnxruntime right away
// and compare" asks for; tests/onnx_check.py additionally runs onnx.checker (strict) and an
// evaluator written apart from ember on the files ember writes.
//
// Note [What onnx::Model runs]
// The graph's nodes in order (ONNX requires a topologically sorted graph), each one ember op
// under no_grad, on the device the model was loaded for. The operators it knows are those the
// exporter writes and the ones PyTorch 1.13's exporter writes for the same layers (see
// supported_ops()); any other operator, or an attribute value it does not implement (Conv's
// auto_pad SAME_LOWER, asymmetric MaxPool padding), is an error when the Model is built, naming
// the node, so nothing is refused half-way through a run. Every graph input must be fed with
// the declared dtype and rank, and with the declared size on each fixed dim.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_dict.h"
#include "nn/module.h"

namespace ember::onnx {

// ---- the file's contents (the parts of ModelProto ember writes and reads) --------------------

// A dim of a graph input or output: a fixed size, or a name (dim_param) for a size chosen when
// the model runs ("batch").
struct Dim {
  int64_t value = -1;  // -1 when symbolic (or unknown: neither set)
  std::string param;
};

struct ValueInfo {
  std::string name;
  DType dtype = kFloat32;
  std::vector<Dim> shape;
};

struct Attribute {
  enum class Type : int { Float = 1, Int = 2, String = 3, Tensor = 4, Floats = 6, Ints = 7 };
  std::string name;
  Type type = Type::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  ember::Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;

  static Attribute integer(std::string name, int64_t v);
  static Attribute real(std::string name, float v);
  static Attribute integers(std::string name, std::vector<int64_t> v);
  static Attribute string(std::string name, std::string v);
  static Attribute tensor(std::string name, ember::Tensor v);
};

struct Node {
  std::string op_type, name, domain;         // domain "" is the default ONNX operator set
  std::vector<std::string> inputs, outputs;  // "" for an optional input left out
  std::vector<Attribute> attributes;
  // The attribute called `name`, or nullptr.
  const Attribute* find(const std::string& name) const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  TensorDict initializers;  // CPU tensors, by name
  std::vector<ValueInfo> inputs, outputs;
};

struct ModelProto {
  int64_t ir_version = 8;
  int64_t opset = 17;  // of the default domain
  std::string producer_name = "ember", producer_version;
  Graph graph;
};

// The bytes of a .onnx file, and back. parse() never trusts its input (serialize/protobuf.h
// plus: tensor data whose size does not match its dims, an element type ember has no dtype for,
// a model without a default-domain opset): errors "onnx: <what>: ...".
std::string serialize(const ModelProto& model);
ModelProto parse(const uint8_t* data, size_t size, const std::string& what = "<buffer>");
ModelProto load_proto(const std::string& path);
void save_proto(const ModelProto& model, const std::string& path);  // atomic

// ---- export ---------------------------------------------------------------------------------

struct ExportOptions {
  std::string input_name = "input", output_name = "output";
  // Dims that stay symbolic in the file (PyTorch's dynamic_axes): dim -> its name. By default
  // the batch dim, so one file serves any batch size; clear both for fixed shapes.
  std::map<int64_t, std::string> input_dynamic_axes{{0, "batch"}};
  std::map<int64_t, std::string> output_dynamic_axes{{0, "batch"}};
  int64_t opset = 17;  // 17 and up (LayerNormalization is opset 17)
  bool verify = true;  // Note [Verify what you export]
  // The verification's tolerances; by default by the output's dtype: float64 1e-7 / 1e-9,
  // float32 1e-4 / 1e-5, float16 5e-3 / 1e-3, bfloat16 3e-2 / 1e-2 (a graph that spells out a
  // fused layer, as GELU's five nodes, rounds after each node in 16-bit types).
  std::optional<double> rtol, atol;
};

// A value of the graph being built: its name and what it holds for the example input.
struct Value {
  std::string name;
  Tensor example;
};

class GraphBuilder;
using ModuleExporter = std::function<Value(GraphBuilder&, nn::Module&, const Value& input)>;

// Registers the exporter of modules whose dynamic type is exactly `type` (a subclass needs its
// own: its forward may differ). Replaces an earlier one, so a built-in layer's can be overridden.
void register_exporter(std::type_index type, ModuleExporter exporter);
template <class M, class F>
void register_exporter(F exporter) {
  register_exporter(std::type_index(typeid(M)),
                    [f = std::move(exporter)](GraphBuilder& b, nn::Module& m, const Value& in) {
                      return f(b, static_cast<M&>(m), in);
                    });
}

// What an exporter writes with.
class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset) : opset_(opset) {}
  int64_t opset() const { return opset_; }

  // Exports child `m` (registered in the current module as `name`) on `input`: its
  // initializers are named "<path>.<name>.<param>".
  Value module(nn::Module& m, const std::string& name, const Value& input);
  // A node of op_type on `inputs`; returns its (first) output's name, fresh.
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs,
                   std::vector<Attribute> attributes = {}, size_t num_outputs = 1);
  // An initializer named "<path>.<local_name>" holding `t` (a parameter or buffer).
  std::string parameter(const std::string& local_name, const Tensor& t);
  // An initializer with a fresh name holding `t` (a constant the exporter needs).
  std::string constant(const Tensor& t);
  // {name, m.forward(input.example)}: the usual end of an exporter.
  Value output(const std::string& name, nn::Module& m, const Value& input);
  // "<path> (<type>)" of the module being exported, for error messages.
  std::string where() const;

  Graph& graph() { return graph_; }

 private:
  std::string fresh(const std::string& hint);
  int64_t opset_;
  Graph graph_;
  std::vector<std::pair<std::string, const nn::Module*>> stack_;  // the module path
  int64_t counter_ = 0;
};

// The ModelProto for `model` on inputs like `example` (ExportOptions::verify is not applied).
ModelProto to_proto(nn::Module& model, const Tensor& example, const ExportOptions& options = {});

// Exports `model` to `path` (Note [How a module becomes an ONNX graph]), verified (Note [Verify
// what you export]). Built-in exporters: Sequential, Identity, Linear, Conv1d, Conv2d,
// ConvTranspose2d (padding mode "zeros"), ReLU, LeakyReLU, GELU, SiLU, Tanh, Sigmoid, Softmax,
// LogSoftmax, Dropout / Dropout2d (nothing: eval mode), Flatten, Unflatten, MaxPool2d,
// AvgPool2d, AdaptiveAvgPool2d (output 1 or dividing the input), BatchNorm1d / 2d (with running
// statistics), LayerNorm, Embedding.
void export_model(nn::Module& model, const Tensor& example, const std::string& path,
                  const ExportOptions& options = {});

// ---- running ---------------------------------------------------------------------------------

class Model {
 public:
  // Checks the whole graph first (Note [What onnx::Model runs]); the initializers are copied to
  // `device`.
  explicit Model(ModelProto proto, Device device = kCPU);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  Tensor run(const Tensor& input) const;  // one input, first output
  const ModelProto& proto() const { return proto_; }
  Device device() const { return device_; }

 private:
  ModelProto proto_;
  Device device_;
  TensorDict initializers_;  // on device_
};

Model load(const std::string& path, Device device = kCPU);

// The operators onnx::Model runs, sorted.
std::vector<std::string> supported_ops();

}  // namespace ember::onnx
