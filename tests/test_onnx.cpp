// ONNX export and the ONNX runner (serialize/onnx.h), against PyTorch 1.13's exporter
// (tests/golden/gen_onnx.py writes tests/golden/onnx/*.onnx and onnx.safetensors).
#include <ember/ember.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "golden.h"
#include "serialize/onnx.h"
#include "test_util.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::check_close;
using ember::testing::golden;
using ember::testing::have_cuda;

namespace {

using M = std::shared_ptr<nn::Module>;

// ember's copy of each model in gen_onnx.py.
std::shared_ptr<nn::Sequential> ember_model(const std::string& name) {
  auto seq = [](std::initializer_list<M> ms) { return std::make_shared<nn::Sequential>(ms); };
  if (name == "mlp")
    return seq({std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 32),
                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(32, 10)});
  if (name == "cnn")
    return seq({std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4),
                std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
                std::make_shared<nn::Conv2d>(4, 6, 3, 2, 1, 1, /*groups=*/2, /*bias=*/false),
                std::make_shared<nn::ReLU>(),
                std::make_shared<nn::AvgPool2d>(2, nn::IntArg(), 0, /*ceil_mode=*/true,
                                                /*count_include_pad=*/false),
                std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Flatten>(),
                std::make_shared<nn::Linear>(24, 16), std::make_shared<nn::LayerNorm>(Shape{16}),
                std::make_shared<nn::GELU>(), std::make_shared<nn::Linear>(16, 5)});
  if (name == "acts")
    return seq({std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::LeakyReLU>(0.2),
                std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::SiLU>(),
                std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Tanh>(),
                std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::GELU>("tanh"),
                std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Sigmoid>(),
                std::make_shared<nn::Linear>(8, 6), std::make_shared<nn::BatchNorm1d>(6),
                std::make_shared<nn::Softmax>(1)});
  if (name == "conv1d")
    return seq({std::make_shared<nn::Conv1d>(2, 3, 3, 1, 2, 2),
                std::make_shared<nn::Unflatten>(2, Shape{2, 5}),
                std::make_shared<nn::ConvTranspose2d>(3, 2, 3, 2, 1, 1),
                std::make_shared<nn::MaxPool2d>(3, 2, 1, 1, false, /*ceil_mode=*/true),
                std::make_shared<nn::AdaptiveAvgPool2d>(1), std::make_shared<nn::Flatten>(),
                std::make_shared<nn::LogSoftmax>(1)});
  if (name == "embed")
    return seq({std::make_shared<nn::Embedding>(10, 4), std::make_shared<nn::LayerNorm>(Shape{4}),
                std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(20, 3)});
  REQUIRE(name == "seq3d");
  return seq({std::make_shared<nn::Linear>(6, 4), std::make_shared<nn::ReLU>(),
              std::make_shared<nn::Linear>(4, 2)});
}

const char* const kModels[] = {"mlp", "cnn", "acts", "conv1d", "embed", "seq3d"};

std::string golden_onnx(const std::string& name) {
  return std::string(EMBER_GOLDEN_DIR) + "/onnx/" + name + ".onnx";
}

// The model with PyTorch's weights, in eval mode.
std::shared_ptr<nn::Sequential> loaded_model(const std::string& name) {
  auto m = ember_model(name);
  const auto& g = golden("onnx");
  nn::StateDict sd = ember::testing::entries_under(g, name + ".", [](const std::string& k) {
    return k != "input" && k != "input2" && k != "output" && k != "output2";
  });
  m->load_state_dict(sd);
  m->eval();
  return m;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

onnx::ModelProto parse_bytes(const std::string& bytes) {
  return onnx::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ember_onnx_XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    for (const char* f : {"m.onnx", "bad.onnx"}) ::unlink((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

}  // namespace

TEST_CASE("onnx runs PyTorch's exported files and matches PyTorch's outputs", "[onnx]") {
  const auto& g = golden("onnx");
  for (const std::string name : kModels) {
    INFO(name);
    const onnx::Model m = onnx::load(golden_onnx(name));
    check_close(m.run(g[name + ".input"]), g[name + ".output"], 1e-5, 1e-4, name + " batch 3");
    // The batch dim is dynamic in the file: another batch size runs too.
    check_close(m.run(g[name + ".input2"]), g[name + ".output2"], 1e-5, 1e-4, name + " batch 5");
  }
}

TEST_CASE("onnx export of PyTorch's weights computes PyTorch's outputs, in ember and reread",
          "[onnx]") {
  const auto& g = golden("onnx");
  TempDir dir;
  for (const std::string name : kModels) {
    INFO(name);
    auto model = loaded_model(name);
    const Tensor x = g[name + ".input"], x2 = g[name + ".input2"];
    check_close(model->forward(x), g[name + ".output"], 1e-5, 1e-4, name + " ember forward");
    onnx::export_model(*model, x, dir.file("m.onnx"));  // verified against the forward
    const onnx::Model m = onnx::load(dir.file("m.onnx"));
    check_close(m.run(x), g[name + ".output"], 1e-5, 1e-4, name + " ember's file");
    check_close(m.run(x2), g[name + ".output2"], 1e-5, 1e-4, name + " ember's file, batch 5");
    // Parameters are initializers named by their state_dict keys, as in PyTorch's files.
    const onnx::Graph& graph = m.proto().graph;
    for (const auto& [key, t] : model->named_parameters()) {
      bool found = false;
      for (const auto& [init, v] : graph.initializers)
        found = found || (init == key && v.sizes() == t.sizes());
      CHECK((found || name == "seq3d"));  // seq3d's weights are stored transposed for MatMul
    }
    REQUIRE(graph.inputs.size() == 1);
    CHECK(graph.inputs[0].name == "input");
    CHECK(graph.inputs[0].shape.at(0).param == "batch");
    CHECK(graph.inputs[0].dtype == x.dtype());
    CHECK(graph.outputs.at(0).name == "output");
    CHECK(m.proto().opset == 17);
  }
}

TEST_CASE("onnx export writes the nodes of each layer and keeps the training mode", "[onnx]") {
  auto model = loaded_model("cnn");
  model->train();
  model->children()[1]->eval();  // one module in its own mode: restored as it was
  const Tensor x = golden("onnx")["cnn.input"];
  const onnx::ModelProto p = onnx::to_proto(*model, x);
  std::vector<std::string> ops;
  for (const onnx::Node& n : p.graph.nodes) ops.push_back(n.op_type);
  // Dropout writes nothing (eval mode); BatchNorm is a node of its own (PyTorch folds it into the
  // convolution); GELU is PyTorch's erf formula.
  const std::vector<std::string> want{
      "Conv", "BatchNormalization", "Relu", "MaxPool", "Conv", "Relu", "AveragePool", "Reshape",
      "Gemm", "LayerNormalization", "Div",  "Erf",     "Add",  "Mul",  "Mul",         "Gemm"};
  CHECK(ops == want);
  CHECK(p.graph.nodes.back().outputs.at(0) == "output");
  CHECK(model->is_training());
  CHECK_FALSE(model->children()[1]->is_training());
  CHECK(model->children()[0]->is_training());
  // A proto survives its own bytes.
  const onnx::ModelProto q = parse_bytes(onnx::serialize(p));
  REQUIRE(q.graph.nodes.size() == p.graph.nodes.size());
  for (size_t i = 0; i < q.graph.nodes.size(); ++i) {
    CHECK(q.graph.nodes[i].op_type == p.graph.nodes[i].op_type);
    CHECK(q.graph.nodes[i].inputs == p.graph.nodes[i].inputs);
    CHECK(q.graph.nodes[i].attributes.size() == p.graph.nodes[i].attributes.size());
  }
  REQUIRE(q.graph.initializers.size() == p.graph.initializers.size());
  for (size_t i = 0; i < q.graph.initializers.size(); ++i) {
    CHECK(q.graph.initializers[i].first == p.graph.initializers[i].first);
    CHECK(ember::testing::max_difference(q.graph.initializers[i].second,
                                         p.graph.initializers[i].second) == 0);
  }
  CHECK(onnx::serialize(q) == onnx::serialize(p));
}

TEST_CASE("onnx export of other layer settings round-trips through ember's runner", "[onnx]") {
  manual_seed(7);
  TempDir dir;
  struct Case {
    const char* what;
    M model;
    Tensor input;
  };
  const std::vector<Case> cases{
      {"same padding, odd total", std::make_shared<nn::Conv2d>(2, 3, Shape{2, 3}, 1, "same"),
       randn({2, 2, 6, 5})},
      {"valid padding, dilation", std::make_shared<nn::Conv2d>(2, 2, 3, 1, "valid", 2),
       randn({2, 2, 9, 9})},
      {"layer norm without affine, 2 dims",
       std::make_shared<nn::LayerNorm>(Shape{3, 4}, 1e-3, false), randn({2, 5, 3, 4})},
      {"batch norm without affine", std::make_shared<nn::BatchNorm2d>(3, 1e-5, 0.1, false),
       randn({2, 3, 4, 4})},
      {"flatten 1..2 of 4 dims", std::make_shared<nn::Flatten>(1, 2), randn({2, 3, 4, 5})},
      {"flatten everything", std::make_shared<nn::Flatten>(0, -1), randn({2, 3, 4})},
      {"adaptive pool dividing", std::make_shared<nn::AdaptiveAvgPool2d>(Shape{2, 3}),
       randn({2, 1, 4, 6})},
      {"avg pool with padding", std::make_shared<nn::AvgPool2d>(3, 2, 1), randn({2, 2, 7, 7})},
      {"identity", std::make_shared<nn::Identity>(), randn({3, 2})},
      {"linear on a vector", std::make_shared<nn::Linear>(4, 3), randn({4})},
      {"linear without bias", std::make_shared<nn::Linear>(4, 3, false), randn({2, 4})},
      {"float64 model", nullptr, randn({2, 4}, TensorOptions(kFloat64))},
      {"float16 model", nullptr, randn({2, 4}).to(kFloat16)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    M model = c.model;
    if (!model) {
      model = std::make_shared<nn::Sequential>(std::initializer_list<M>{
          std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::GELU>()});
      model->to(c.input.dtype());
    }
    model->eval();
    onnx::ExportOptions o;
    if (c.input.dim() < 2) o.input_dynamic_axes.clear(), o.output_dynamic_axes.clear();
    onnx::export_model(*model, c.input, dir.file("m.onnx"), o);
    const Tensor want = model->forward(c.input);
    const Tensor got = onnx::load(dir.file("m.onnx")).run(c.input);
    CHECK(got.dtype() == want.dtype());
    const bool half = c.input.dtype() == kFloat16;
    check_close(got, want, half ? 1e-3 : 1e-6, half ? 1e-3 : 1e-5, c.what);
  }
}

TEST_CASE("onnx export refuses what ONNX cannot express, naming the module", "[onnx]") {
  struct Custom : nn::Module {
    Custom() : Module("Custom") {}
    Tensor forward(const Tensor& x) override { return x * 2; }
  };
  auto model = std::make_shared<nn::Sequential>(
      std::initializer_list<M>{std::make_shared<nn::Linear>(3, 3), std::make_shared<Custom>()});
  const Tensor x = randn({2, 3});
  const std::string e = error_of([&] { onnx::to_proto(*model, x); });
  CHECK_THAT(e, Contains("module '1' (Custom) has no ONNX exporter") &&
                    Contains("register_exporter<Custom>"));

  auto reflect = std::make_shared<nn::Conv2d>(1, 1, 3, 1, 1, 1, 1, true, "reflect");
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*reflect, randn({1, 1, 4, 4}));
             }),
             Contains("the model (Conv2d): padding_mode 'reflect'"));
  auto divisor = std::make_shared<nn::AvgPool2d>(2, 2, 0, false, true, 3);
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*divisor, randn({1, 1, 4, 4}));
             }),
             Contains("divisor_override"));
  auto adaptive = std::make_shared<nn::AdaptiveAvgPool2d>(3);
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*adaptive, randn({1, 1, 4, 4}));
             }),
             Contains("does not divide"));
  auto no_stats = std::make_shared<nn::BatchNorm1d>(3, 1e-5, 0.1, true, false);
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*no_stats, randn({2, 3}));
             }),
             Contains("running statistics"));
  auto conv = std::make_shared<nn::Conv2d>(1, 1, 3);
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*conv, randn({1, 5, 5}));
             }),
             Contains("4-dim (batched) input"));
  onnx::ExportOptions bad_axis;
  bad_axis.input_dynamic_axes = {{3, "w"}};
  CHECK_THAT(error_of([&] { onnx::to_proto(*model->children()[0], x, bad_axis); }),
             Contains("input dynamic axis 3 is out of range"));
  onnx::ExportOptions old;
  old.opset = 11;
  CHECK_THAT(error_of([&] {
               onnx::to_proto(*conv, randn({1, 1, 5, 5}), old);
             }),
             Contains("opset 11 is not supported"));
}

TEST_CASE("onnx register_exporter exports a custom module, and a wrong one fails verification",
          "[onnx]") {
  struct Residual : nn::Module {
    Residual() : Module("Residual") {
      body = register_module("body", std::make_shared<nn::Linear>(4, 4));
    }
    Tensor forward(const Tensor& x) override { return x + body->forward(x); }
    std::shared_ptr<nn::Linear> body;
  };
  onnx::register_exporter<Residual>([](onnx::GraphBuilder& b, Residual& m, const onnx::Value& x) {
    onnx::Value y = b.module(*m.body, "body", x);
    return b.output(b.node("Add", {x.name, y.name}), m, x);
  });
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<M>{
      std::make_shared<Residual>(), std::make_shared<nn::ReLU>(), std::make_shared<Residual>()});
  TempDir dir;
  const Tensor x = randn({3, 4});
  onnx::export_model(*model, x, dir.file("m.onnx"));
  const onnx::Model m = onnx::load(dir.file("m.onnx"));
  check_close(m.run(x), model->forward(x), 1e-6, 1e-5, "residual");
  bool named = false;
  for (const auto& [name, t] : m.proto().graph.initializers)
    named = named || name == "2.body.weight";
  CHECK(named);

  // An exporter that writes the wrong graph: the verification catches it, and no file is left.
  onnx::register_exporter<Residual>([](onnx::GraphBuilder& b, Residual& m, const onnx::Value& x) {
    onnx::Value y = b.module(*m.body, "body", x);
    return b.output(b.node("Sub", {x.name, y.name}), m, x);
  });
  const std::string path = dir.file("bad.onnx");
  const std::string e = error_of([&] { onnx::export_model(*model, x, path); });
  CHECK_THAT(e, Contains("verification failed") && Contains("[3, 4]") && Contains("differ by"));
  struct stat st;
  CHECK(::stat(path.c_str(), &st) != 0);
  onnx::ExportOptions unverified;
  unverified.verify = false;
  onnx::export_model(*model, x, path, unverified);  // written as asked
  CHECK(::stat(path.c_str(), &st) == 0);
}

TEST_CASE("onnx verification catches a batch size baked into the graph", "[onnx]") {
  // A custom exporter that reshapes to the example's batch size: right for the example, wrong
  // for any other batch. The second verification run (twice the batch) must catch it.
  struct Flat : nn::Module {
    Flat() : Module("Flat") {}
    Tensor forward(const Tensor& x) override { return x.reshape({x.size(0), -1}); }
  };
  onnx::register_exporter<Flat>([](onnx::GraphBuilder& b, Flat& m, const onnx::Value& x) {
    Tensor shape = tensor({x.example.size(0), int64_t{-1}});
    return b.output(b.node("Reshape", {x.name, b.constant(shape)}), m, x);
  });
  Flat model;
  TempDir dir;
  const std::string e = error_of([&] {
    onnx::export_model(model, randn({2, 3, 4}), dir.file("m.onnx"));
  });
  CHECK_THAT(e, Contains("verification failed") && Contains("[4, 3, 4]") && Contains("shape"));
  onnx::ExportOptions fixed;  // with a fixed batch the file is right
  fixed.input_dynamic_axes.clear();
  fixed.output_dynamic_axes.clear();
  onnx::export_model(model, randn({2, 3, 4}), dir.file("m.onnx"), fixed);
  const onnx::Model m = onnx::load(dir.file("m.onnx"));
  CHECK_THAT(error_of([&] {
               m.run(randn({4, 3, 4}));
             }),
             Contains("input 'input' must have shape [2, 3, 4], got [4, 3, 4]"));
}

TEST_CASE("onnx Model checks its inputs and the graph before running", "[onnx]") {
  const onnx::Model m = onnx::load(golden_onnx("mlp"));
  CHECK_THAT(error_of([&] {
               m.run(randn({2, 1, 28, 27}));
             }),
             Contains("input 'input' must have shape [batch, 1, 28, 28], got [2, 1, 28, 27]"));
  CHECK_THAT(error_of([&] {
               m.run(randn({2, 1, 28, 28}, TensorOptions(kFloat64)));
             }),
             Contains("must be float32, got float64"));
  CHECK_THAT(error_of([&] { m.run(std::vector<Tensor>{}); }), Contains("takes 1 inputs, got 0"));

  onnx::ModelProto p = onnx::load_proto(golden_onnx("mlp"));
  onnx::ModelProto unknown = p;
  unknown.graph.nodes[1].op_type = "Einsum";
  CHECK_THAT(error_of([&] { onnx::Model{unknown}; }),
             Contains("(Einsum): operator Einsum is not supported") && Contains("Gemm"));
  onnx::ModelProto unsorted = p;
  std::swap(unsorted.graph.nodes[0], unsorted.graph.nodes[1]);
  CHECK_THAT(error_of([&] { onnx::Model{unsorted}; }), Contains("is not defined before it"));
  onnx::ModelProto arity = p;
  arity.graph.nodes[1].inputs.resize(1);
  CHECK_THAT(error_of([&] { onnx::Model{arity}; }), Contains("takes 2 to 3 inputs, it has 1"));
  onnx::ModelProto bad_attr = p;
  for (onnx::Attribute& a : bad_attr.graph.nodes[1].attributes)
    if (a.name == "transB") a = onnx::Attribute::real("transB", 1);
  CHECK_THAT(error_of([&] { onnx::Model{bad_attr}; }),
             Contains("(Gemm): attribute 'transB' should be an int"));
  // Found by tests/fuzz/onnx_fuzz.cpp: a second output no operator here computes, a left-out
  // middle input, a tensor attribute without a tensor.
  onnx::ModelProto outputs = p;
  outputs.graph.nodes[2].outputs.push_back("extra");
  CHECK_THAT(error_of([&] { onnx::Model{outputs}; }), Contains("only the first output"));
  onnx::ModelProto middle = p;
  middle.graph.nodes[1].inputs[1].clear();
  CHECK_THAT(error_of([&] { onnx::Model{middle}; }), Contains("(Gemm): input 1 is left out"));
  onnx::ModelProto constant = p;
  onnx::Node c;
  c.op_type = "Constant";
  c.outputs = {"c"};
  c.attributes.push_back(onnx::Attribute::tensor("value", ember::ones({2})));
  constant.graph.nodes.insert(constant.graph.nodes.begin(), c);
  std::string bytes = onnx::serialize(constant);
  const onnx::Model with_constant(parse_bytes(bytes));  // a valid Constant node parses
  // The attribute: name "value" (field 1), type 4 (field 20), then t (field 5, key 0x2a).
  const size_t at = bytes.find(std::string("\x0a\x05value\xa0\x01\x04\x2a", 11));
  REQUIRE(at != std::string::npos);
  bytes[at + 10] = '\x7a';  // t becomes unknown field 15 (skipped): no tensor left
  CHECK_THAT(error_of([&] { parse_bytes(bytes); }),
             Contains("attribute 'value' is a tensor attribute without a tensor"));
  onnx::ModelProto pads = onnx::to_proto(*std::make_shared<nn::MaxPool2d>(2), randn({1, 1, 4, 4}));
  pads.graph.nodes[0].attributes.push_back(onnx::Attribute::integers("pads", {0, 0, 1, 1}));
  pads.graph.nodes[0].attributes.erase(pads.graph.nodes[0].attributes.begin() + 2);
  CHECK_THAT(error_of([&] { onnx::Model{pads}; }), Contains("asymmetric pads"));
  const std::vector<std::string> ops = onnx::supported_ops();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  for (const char* op : {"Conv", "Gemm", "LayerNormalization", "Reshape", "Shape"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
}

TEST_CASE("onnx parse refuses damaged files with an error, never a crash", "[onnx]") {
  const std::string bytes = read_bytes(golden_onnx("cnn"));
  REQUIRE(bytes.size() > 1000);
  const onnx::Model whole(parse_bytes(bytes));
  // Every truncation: an error, or (cut at a field boundary) a graph that fails its checks.
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); n += (n < 200 ? 1 : 37)) {
    const std::string cut = bytes.substr(0, n);
    const std::string e = error_of([&] { onnx::Model{parse_bytes(cut)}; });
    refused += !e.empty();
    if (!e.empty()) CHECK_THAT(e, Contains("onnx"));
  }
  CHECK(refused > 0);
  // Flipped bytes: each parses to an error or to some model; none crashes (ASan builds check it).
  for (size_t i = 0; i < bytes.size(); i += 11) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    try {
      onnx::Model m{parse_bytes(flipped)};
      (void)m.run(golden("onnx")["cnn.input"]);
    } catch (const Error&) {
    }
  }
  // Specific damage, specific messages.
  CHECK_THAT(error_of([&] { parse_bytes(std::string("\x3a\xff\xff\xff\x0f", 5)); }),
             Contains("malformed protobuf at byte") && Contains("runs past the end"));
  CHECK_THAT(error_of([&] { parse_bytes(std::string(12, '\xff')); }), Contains("varint"));
  CHECK_THAT(error_of([&] { parse_bytes(std::string("\x0b", 1)); }), Contains("wire type 3"));
  CHECK_THAT(error_of([&] { parse_bytes(std::string("\x08\x08", 2)); }), Contains("no graph"));
  // A tensor whose raw data does not match its dims.
  onnx::ModelProto p = parse_bytes(bytes);
  std::string s = onnx::serialize(p);
  p.graph.initializers[0].second = ember::zeros({2});
  std::string two = onnx::serialize(p);
  // Rewrite the dims of the first initializer: find "dims 2" (08 02) right before its data type.
  const size_t at = two.find(std::string("\x08\x02\x10\x01", 4));
  REQUIRE(at != std::string::npos);
  two[at + 1] = '\x03';
  CHECK_THAT(error_of([&] { parse_bytes(two); }),
             Contains("raw_data holds 8 bytes, its 3 float32 elements need 12"));
  // Load errors name the path.
  CHECK_THAT(error_of([] { onnx::load("/nonexistent/m.onnx"); }),
             Contains("onnx: cannot open '/nonexistent/m.onnx'"));
}

TEST_CASE("onnx export of a model on a cuda device, run on the device", "[onnx][cuda]") {
  if (!have_cuda()) return;
  auto model = loaded_model("cnn");
  model->to(Device::cuda(0));
  const Tensor x = golden("onnx")["cnn.input"].to(Device::cuda(0));
  TempDir dir;
  onnx::export_model(*model, x, dir.file("m.onnx"));
  const onnx::Model m = onnx::load(dir.file("m.onnx"), Device::cuda(0));
  const Tensor y = m.run(x);
  CHECK(y.device() == x.device());
  check_close(y, golden("onnx")["cnn.output"], 1e-5, 1e-4, "cnn on cuda");
  CHECK_THAT(error_of([&] { m.run(x.to(kCPU)); }), Contains("is on cpu, the model on cuda:0"));
}

#ifdef EMBER_ONNX_CHECK_PYTHON
// Files ember writes, checked by tools written apart from ember: onnx.checker with strict shape
// inference, and a NumPy evaluation of the graph (tests/onnx_check.py). CMake compiles this test
// when a python3 with the onnx package (Debian's python3-onnx) is found.
// Runs tests/onnx_check.py on `dir`: its exit status and output.
std::pair<int, std::string> run_onnx_check(const std::string& dir) {
  const std::string cmd = std::string("timeout 300 ") + EMBER_ONNX_CHECK_PYTHON + " " +
                          EMBER_SOURCE_DIR + "/tests/onnx_check.py " + dir + " 2>&1";
  std::string output;
  int status = -1;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    status = ::pclose(p);
  }
  return {status, output};
}

TEST_CASE("onnx files ember writes pass onnx.checker and a NumPy evaluation", "[onnx]") {
  const auto& g = golden("onnx");
  char tmpl[] = "/tmp/ember_onnx_check_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  std::vector<std::string> written;
  auto add = [&](const std::string& name, nn::Module& model, const Tensor& x) {
    onnx::export_model(model, x, dir + "/" + name + ".onnx");
    model.eval();
    safetensors::save_file({{"input", x}, {"output", model.forward(x)}},
                           dir + "/" + name + ".safetensors");
    written.push_back(name + ".onnx");
    written.push_back(name + ".safetensors");
  };
  for (const std::string name : kModels) add(name, *loaded_model(name), g[name + ".input"]);
  manual_seed(3);
  nn::Conv2d same(2, 3, Shape{2, 3}, 1, "same");
  add("conv_same", same, randn({2, 2, 6, 5}));
  nn::LayerNorm ln(Shape{3, 4}, 1e-3, false);
  add("layer_norm_plain", ln, randn({2, 5, 3, 4}));
  nn::AvgPool2d avg(3, 2, 1);
  add("avg_pool_pad", avg, randn({2, 2, 7, 7}));
  nn::Flatten flat(1, 2);
  add("flatten_middle", flat, randn({2, 3, 4, 5}));
  nn::Sequential half({std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::GELU>()});
  half.to(kFloat16);
  add("half", half, randn({2, 4}).to(kFloat16));

  const auto [status, output] = run_onnx_check(dir);
  for (const std::string& f : written) ::unlink((dir + "/" + f).c_str());
  ::rmdir(dir.c_str());
  INFO(output);
  CHECK(status == 0);
  CHECK_THAT(output, Contains("conv1d.onnx: valid, and NumPy's evaluation matches"));
}

TEST_CASE("onnx_check.py catches an invalid file and a wrong graph", "[onnx]") {
  char tmpl[] = "/tmp/ember_onnx_check_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  manual_seed(5);
  nn::Linear lin(4, 3);
  const Tensor x = randn({2, 4});
  safetensors::save_file({{"input", x}, {"output", lin.forward(x)}}, dir + "/m.safetensors");
  // 1. The declared output shape contradicts the graph: strict shape inference must refuse it.
  onnx::ModelProto p = onnx::to_proto(lin, x);
  p.graph.outputs[0].shape[1].value = 5;
  onnx::save_proto(p, dir + "/m.onnx");
  const auto [invalid_status, invalid] = run_onnx_check(dir);
  CHECK(invalid_status != 0);
  CHECK_THAT(invalid, Contains("m.onnx: onnx.checker"));
  // 2. A valid graph that computes something else (no bias): the NumPy evaluation must differ.
  p = onnx::to_proto(lin, x);
  p.graph.nodes[0].inputs.resize(2);
  onnx::save_proto(p, dir + "/m.onnx");
  const auto [wrong_status, wrong] = run_onnx_check(dir);
  CHECK(wrong_status != 0);
  CHECK_THAT(wrong, Contains("NumPy's evaluation differs from ember's output"));
  for (const char* f : {"/m.onnx", "/m.safetensors"}) ::unlink((dir + f).c_str());
  ::rmdir(dir.c_str());
}
#endif
