// Module -> ONNX graph (Note [How a module becomes an ONNX graph] in serialize/onnx.h).
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/ops/ops.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/ops/factory.h"
#include "nn/nn.h"
#include "serialize/onnx.h"

namespace ember::onnx {

namespace {

using Attrs = std::vector<Attribute>;

int64_t wrap_dim(int64_t d, int64_t rank, const GraphBuilder& b, const char* what) {
  const int64_t w = d < 0 ? d + rank : d;
  EMBER_CHECK(w >= 0 && w < std::max<int64_t>(rank, 1), "onnx.export: ", b.where(), ": ", what, " ",
              d, " is out of range for an input of ", rank, " dims");
  return w;
}

// A scalar constant of x's dtype (for the element-wise formulas).
std::string scalar(GraphBuilder& b, const Value& x, double v) {
  return b.constant(full({}, v, TensorOptions(x.example.dtype()).device(kCPU)));
}

// An int64 vector constant (Reshape's shape).
std::string int64s(GraphBuilder& b, const Shape& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(kInt64).device(kCPU));
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int64_t>()[i] = v[i];
  return b.constant(t);
}

void require_batched(GraphBuilder& b, const Value& x, int64_t spatial) {
  EMBER_CHECK(x.example.dim() == spatial + 2, "onnx.export: ", b.where(), ": ONNX takes a ",
              spatial + 2, "-dim (batched) input here, the example gives ", x.example.dim(),
              " dims ", x.example.sizes());
}

// ONNX pads: every spatial dim's begin, then every spatial dim's end.
Shape onnx_pads(const Shape& begin, const Shape& end) {
  Shape p = begin;
  p.insert(p.end(), end.begin(), end.end());
  return p;
}

// ---- the built-in exporters -------------------------------------------------------------------

Value export_sequential(GraphBuilder& b, nn::Module& m, const Value& in) {
  Value v = in;
  for (const auto& [name, child] : m.named_children()) v = b.module(*child, name, v);
  return v;
}

Value export_linear(GraphBuilder& b, nn::Linear& m, const Value& x) {
  if (x.example.dim() == 2) {  // Gemm, as PyTorch writes a 2-d Linear
    std::vector<std::string> in{x.name, b.parameter("weight", m.weight)};
    if (m.bias.defined()) in.push_back(b.parameter("bias", m.bias));
    return b.output(b.node("Gemm", in, {Attribute::integer("transB", 1)}), m, x);
  }
  // Any other rank: x @ weight^T (+ bias); MatMul broadcasts over the leading dims.
  std::string y = b.node("MatMul", {x.name, b.constant(m.weight.detach().t().contiguous())});
  if (m.bias.defined()) y = b.node("Add", {y, b.parameter("bias", m.bias)});
  return b.output(y, m, x);
}

Value export_conv(GraphBuilder& b, nn::ConvNd& m, const Value& x) {
  const int64_t dims = static_cast<int64_t>(m.kernel_size.size());
  EMBER_CHECK(m.padding_mode == "zeros", "onnx.export: ", b.where(), ": padding_mode '",
              m.padding_mode, "' is not exported (only \"zeros\")");
  require_batched(b, x, dims);
  Shape begin, end;
  if (m.padding.is_mode()) {
    for (int64_t i = 0; i < dims; ++i) {
      const int64_t total = m.padding.mode() == "same" ? m.dilation[i] * (m.kernel_size[i] - 1) : 0;
      begin.push_back(total / 2);  // an odd total pads the end more, as F::conv2d does
      end.push_back(total - total / 2);
    }
  } else {
    begin = end = nn::IntArg(m.padding.values()).expand(dims, "onnx.export", "padding");
  }
  Attrs a{Attribute::integers("kernel_shape", m.kernel_size),
          Attribute::integers("strides", m.stride),
          Attribute::integers("pads", onnx_pads(begin, end)),
          Attribute::integers("dilations", m.dilation), Attribute::integer("group", m.groups)};
  if (m.transposed) a.push_back(Attribute::integers("output_padding", m.output_padding));
  std::vector<std::string> in{x.name, b.parameter("weight", m.weight)};
  if (m.bias.defined()) in.push_back(b.parameter("bias", m.bias));
  return b.output(b.node(m.transposed ? "ConvTranspose" : "Conv", in, std::move(a)), m, x);
}

Value export_unary(GraphBuilder& b, nn::Module& m, const Value& x, const char* op) {
  return b.output(b.node(op, {x.name}), m, x);
}

Value export_gelu(GraphBuilder& b, nn::GELU& m, const Value& x) {
  std::string y;
  if (m.approximate() == "none") {  // x * 0.5 * (1 + erf(x / sqrt(2))), PyTorch's nodes
    const std::string e = b.node("Erf", {b.node("Div", {x.name, scalar(b, x, std::sqrt(2.0))})});
    y = b.node("Mul",
               {b.node("Mul", {x.name, b.node("Add", {e, scalar(b, x, 1.0)})}), scalar(b, x, 0.5)});
  } else {  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
    const std::string x3 = b.node("Mul", {b.node("Mul", {x.name, x.name}), x.name});
    const std::string inner =
        b.node("Mul", {b.node("Add", {x.name, b.node("Mul", {x3, scalar(b, x, 0.044715)})}),
                       scalar(b, x, std::sqrt(2.0 / M_PI))});
    const std::string t = b.node("Add", {b.node("Tanh", {inner}), scalar(b, x, 1.0)});
    y = b.node("Mul", {b.node("Mul", {x.name, scalar(b, x, 0.5)}), t});
  }
  return b.output(y, m, x);
}

Value export_reshape(GraphBuilder& b, nn::Module& m, const Value& x, const Shape& shape) {
  return b.output(b.node("Reshape", {x.name, int64s(b, shape)}), m, x);
}

// Flatten start..end: Reshape to (leading dims copied with 0, -1, trailing sizes), so that the
// leading dims (the batch) stay dynamic. A dynamic dim after end_dim would be baked in.
Value export_flatten(GraphBuilder& b, nn::Flatten& m, const Value& x) {
  const int64_t rank = x.example.dim();
  if (rank == 0) return export_reshape(b, m, x, {1});
  const int64_t start = wrap_dim(m.start_dim, rank, b, "start_dim");
  const int64_t end = wrap_dim(m.end_dim, rank, b, "end_dim");
  Shape shape(static_cast<size_t>(start), 0);
  shape.push_back(-1);
  for (int64_t d = end + 1; d < rank; ++d) shape.push_back(x.example.size(d));
  return export_reshape(b, m, x, shape);
}

Value export_unflatten(GraphBuilder& b, nn::Unflatten& m, const Value& x) {
  const int64_t rank = x.example.dim();
  const int64_t dim = wrap_dim(m.dim, rank, b, "dim");
  Shape shape(static_cast<size_t>(dim), 0);
  shape.insert(shape.end(), m.unflattened_size.begin(), m.unflattened_size.end());
  for (int64_t d = dim + 1; d < rank; ++d) shape.push_back(x.example.size(d));
  return export_reshape(b, m, x, shape);
}

// The window attributes of MaxPool / AveragePool (stride defaults to the kernel, as in nn).
Attrs pool_window(GraphBuilder& b, const Value& x, const nn::IntArg& kernel,
                  const nn::IntArg& stride, const nn::IntArg& padding, bool ceil_mode) {
  require_batched(b, x, 2);
  const Shape k = kernel.expand(2, "onnx.export", "kernel_size");
  const Shape s = stride.empty() ? k : stride.expand(2, "onnx.export", "stride");
  const Shape p = padding.expand(2, "onnx.export", "padding");
  return {Attribute::integers("kernel_shape", k), Attribute::integers("strides", s),
          Attribute::integers("pads", onnx_pads(p, p)), Attribute::integer("ceil_mode", ceil_mode)};
}

Value export_max_pool(GraphBuilder& b, nn::MaxPool2d& m, const Value& x) {
  EMBER_CHECK(!m.return_indices, "onnx.export: ", b.where(),
              ": return_indices is not exported (the layer returns two tensors)");
  Attrs a = pool_window(b, x, m.kernel_size, m.stride, m.padding, m.ceil_mode);
  a.push_back(Attribute::integers("dilations", m.dilation.expand(2, "onnx.export", "dilation")));
  return b.output(b.node("MaxPool", {x.name}, std::move(a)), m, x);
}

Value export_avg_pool(GraphBuilder& b, nn::AvgPool2d& m, const Value& x) {
  EMBER_CHECK(!m.divisor_override, "onnx.export: ", b.where(),
              ": divisor_override has no ONNX form");
  Attrs a = pool_window(b, x, m.kernel_size, m.stride, m.padding, m.ceil_mode);
  a.push_back(Attribute::integer("count_include_pad", m.count_include_pad));
  return b.output(b.node("AveragePool", {x.name}, std::move(a)), m, x);
}

// (1, 1) is GlobalAveragePool; an output size dividing the input's is an AveragePool with
// kernel = stride = input / output (the example's spatial size, fixed in the file).
Value export_adaptive_avg_pool(GraphBuilder& b, nn::AdaptiveAvgPool2d& m, const Value& x) {
  require_batched(b, x, 2);
  const Shape out = m.output_size.expand(2, "onnx.export", "output_size");
  if (out[0] == 1 && out[1] == 1) return b.output(b.node("GlobalAveragePool", {x.name}), m, x);
  const int64_t h = x.example.size(2), w = x.example.size(3);
  EMBER_CHECK(out[0] > 0 && out[1] > 0 && h % out[0] == 0 && w % out[1] == 0,
              "onnx.export: ", b.where(), ": output size ", out, " does not divide the input's ",
              Shape{h, w}, " (ONNX has no adaptive pooling)");
  const Shape k{h / out[0], w / out[1]};
  return b.output(
      b.node("AveragePool", {x.name},
             {Attribute::integers("kernel_shape", k), Attribute::integers("strides", k)}),
      m, x);
}

// Ones / zeros of `shape` in x's dtype: the scale and bias ONNX needs where a layer has none.
std::string filled(GraphBuilder& b, const Value& x, const Shape& shape, double v) {
  return b.constant(full(shape, v, TensorOptions(x.example.dtype()).device(kCPU)));
}

Value export_batch_norm(GraphBuilder& b, nn::BatchNorm& m, const Value& x) {
  EMBER_CHECK(m.track_running_stats, "onnx.export: ", b.where(),
              ": without running statistics the layer normalises with each batch's, which "
              "ONNX's inference BatchNormalization cannot");
  const Shape c{m.num_features};
  const std::string scale = m.affine ? b.parameter("weight", m.weight) : filled(b, x, c, 1);
  const std::string bias = m.affine ? b.parameter("bias", m.bias) : filled(b, x, c, 0);
  return b.output(b.node("BatchNormalization",
                         {x.name, scale, bias, b.parameter("running_mean", m.running_mean),
                          b.parameter("running_var", m.running_var)},
                         {Attribute::real("epsilon", static_cast<float>(m.eps))}),
                  m, x);
}

Value export_layer_norm(GraphBuilder& b, nn::LayerNorm& m, const Value& x) {
  const std::string scale =
      m.elementwise_affine ? b.parameter("weight", m.weight) : filled(b, x, m.normalized_shape, 1);
  const std::string bias =
      m.elementwise_affine ? b.parameter("bias", m.bias) : filled(b, x, m.normalized_shape, 0);
  return b.output(
      b.node("LayerNormalization", {x.name, scale, bias},
             {Attribute::integer("axis", -static_cast<int64_t>(m.normalized_shape.size())),
              Attribute::real("epsilon", static_cast<float>(m.eps))}),
      m, x);
}

using Registry = std::unordered_map<std::type_index, ModuleExporter>;

template <class M, class F>
void add(Registry& r, F f) {
  r[std::type_index(typeid(M))] = [f](GraphBuilder& b, nn::Module& m, const Value& x) {
    return f(b, static_cast<M&>(m), x);
  };
}

template <class M>
void add_unary(Registry& r, const char* op) {
  r[std::type_index(typeid(M))] = [op](GraphBuilder& b, nn::Module& m, const Value& x) {
    return export_unary(b, m, x, op);
  };
}

Registry builtin_exporters() {
  Registry r;
  r[std::type_index(typeid(nn::Sequential))] = export_sequential;
  add<nn::Identity>(r, [](GraphBuilder&, nn::Identity&, const Value& x) { return x; });
  add<nn::Dropout>(r, [](GraphBuilder&, nn::Dropout&, const Value& x) { return x; });
  add<nn::Dropout2d>(r, [](GraphBuilder&, nn::Dropout2d&, const Value& x) { return x; });
  add<nn::Linear>(r, export_linear);
  add<nn::Conv1d>(r, export_conv);
  add<nn::Conv2d>(r, export_conv);
  add<nn::ConvTranspose2d>(r, export_conv);
  add_unary<nn::ReLU>(r, "Relu");
  add_unary<nn::Tanh>(r, "Tanh");
  add_unary<nn::Sigmoid>(r, "Sigmoid");
  add<nn::LeakyReLU>(r, [](GraphBuilder& b, nn::LeakyReLU& m, const Value& x) {
    return b.output(b.node("LeakyRelu", {x.name},
                           {Attribute::real("alpha", static_cast<float>(m.negative_slope()))}),
                    m, x);
  });
  add<nn::SiLU>(r, [](GraphBuilder& b, nn::SiLU& m, const Value& x) {
    return b.output(b.node("Mul", {x.name, b.node("Sigmoid", {x.name})}), m, x);
  });
  add<nn::GELU>(r, export_gelu);
  add<nn::Softmax>(r, [](GraphBuilder& b, nn::Softmax& m, const Value& x) {
    return b.output(b.node("Softmax", {x.name}, {Attribute::integer("axis", m.dim())}), m, x);
  });
  add<nn::LogSoftmax>(r, [](GraphBuilder& b, nn::LogSoftmax& m, const Value& x) {
    return b.output(b.node("LogSoftmax", {x.name}, {Attribute::integer("axis", m.dim())}), m, x);
  });
  add<nn::Flatten>(r, export_flatten);
  add<nn::Unflatten>(r, export_unflatten);
  add<nn::MaxPool2d>(r, export_max_pool);
  add<nn::AvgPool2d>(r, export_avg_pool);
  add<nn::AdaptiveAvgPool2d>(r, export_adaptive_avg_pool);
  add<nn::BatchNorm1d>(r, export_batch_norm);
  add<nn::BatchNorm2d>(r, export_batch_norm);
  add<nn::LayerNorm>(r, export_layer_norm);
  add<nn::Embedding>(r, [](GraphBuilder& b, nn::Embedding& m, const Value& x) {
    return b.output(b.node("Gather", {b.parameter("weight", m.weight), x.name}), m, x);
  });
  return r;
}

std::mutex registry_mutex;
Registry& registry() {
  static Registry r = builtin_exporters();
  return r;
}

ModuleExporter find_exporter(const nn::Module& m) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(std::type_index(typeid(m)));
  return it == registry().end() ? ModuleExporter() : it->second;
}

std::vector<Dim> dims_of(const Tensor& t, const std::map<int64_t, std::string>& dynamic,
                         const char* which) {
  std::vector<Dim> dims;
  for (int64_t d = 0; d < t.dim(); ++d) dims.push_back(Dim{t.size(d), ""});
  for (const auto& [axis, name] : dynamic) {
    const int64_t a = axis < 0 ? axis + t.dim() : axis;
    EMBER_CHECK(a >= 0 && a < t.dim(), "onnx.export: ", which, " dynamic axis ", axis,
                " is out of range for ", t.dim(), " dims ", t.sizes());
    EMBER_CHECK(!name.empty(), "onnx.export: ", which, " dynamic axis ", axis, " needs a name");
    dims[static_cast<size_t>(a)] = Dim{-1, name};
  }
  return dims;
}

// Restores every module's own training flag (train() is recursive, so parents go first).
class ModeRestorer {
 public:
  explicit ModeRestorer(nn::Module& model) {
    for (const auto& [name, m] : model.named_modules()) saved_.emplace_back(m, m->is_training());
  }
  ~ModeRestorer() {
    for (const auto& [m, on] : saved_) m->train(on);
  }
  ModeRestorer(const ModeRestorer&) = delete;
  ModeRestorer& operator=(const ModeRestorer&) = delete;

 private:
  std::vector<std::pair<nn::Module*, bool>> saved_;
};

// The largest |a - b| beyond atol + rtol * |b|, as a message; empty when they agree.
std::string mismatch(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.sizes() != want.sizes())
    return "the shape " + shape_str(got.sizes()) + " instead of " + shape_str(want.sizes());
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + " instead of " +
           dtype_name(want.dtype());
  if (got.numel() == 0) return "";
  const Tensor g = got.to(kCPU).to(kFloat64), w = want.to(kCPU).to(kFloat64);
  const Tensor excess = (g - w).abs() - (w.abs() * rtol + atol);
  const double worst = excess.max().item<double>();
  if (!(worst > 0) && !g.isnan().any().item<bool>()) return "";
  const double diff = (g - w).abs().max().item<double>();
  return "values that differ by up to " + std::to_string(diff) + " (rtol " + std::to_string(rtol) +
         ", atol " + std::to_string(atol) + ")";
}

void verify(const ModelProto& proto, const std::string& bytes, nn::Module& model,
            const Tensor& example, const ExportOptions& o) {
  const ModelProto reread =
      parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "the exported bytes");
  const Model runner(reread, example.device());
  std::vector<Tensor> inputs{example};
  if (o.input_dynamic_axes.count(0) && example.dim() > 0 && example.size(0) > 0)
    inputs.push_back(
        ember::cat({example, example}, 0));  // a second batch size, for the dynamic dim
  for (const Tensor& x : inputs) {
    const Tensor want = model.forward(x);
    const DType t = want.dtype();
    const double rtol = o.rtol.value_or(t == kFloat64    ? 1e-7
                                        : t == kFloat16  ? 5e-3
                                        : t == kBFloat16 ? 3e-2
                                                         : 1e-4);
    const double atol = o.atol.value_or(t == kFloat64    ? 1e-9
                                        : t == kFloat16  ? 1e-3
                                        : t == kBFloat16 ? 1e-2
                                                         : 1e-5);
    const std::string why = mismatch(runner.run(x), want, rtol, atol);
    EMBER_CHECK(why.empty(), "onnx.export: verification failed: on an input of shape ", x.sizes(),
                " the ONNX graph computes ", why, " than the model's forward (",
                proto.graph.nodes.size(),
                " nodes; Note [Verify what you export] in serialize/onnx.h)");
  }
}

}  // namespace

// ---- GraphBuilder
// --------------------------------------------------------------------------------

std::string GraphBuilder::where() const {
  std::string path;
  for (const auto& [name, m] : stack_) {
    if (name.empty()) continue;
    if (!path.empty()) path += '.';
    path += name;
  }
  const std::string type = stack_.empty() ? "?" : stack_.back().second->type_name();
  return (path.empty() ? "the model" : "module '" + path + "'") + " (" + type + ")";
}

std::string GraphBuilder::fresh(const std::string& hint) {
  return hint + "_" + std::to_string(counter_++);
}

Value GraphBuilder::module(nn::Module& m, const std::string& name, const Value& input) {
  stack_.emplace_back(name, &m);
  const ModuleExporter exporter = find_exporter(m);
  EMBER_CHECK(exporter, "onnx.export: ", where(),
              " has no ONNX exporter; register one with "
              "onnx::register_exporter<",
              m.type_name(),
              ">(...) (Note [How a module becomes an "
              "ONNX graph] in serialize/onnx.h)");
  Value out = exporter(*this, m, input);
  EMBER_CHECK(!out.name.empty() && out.example.defined(), "onnx.export: the exporter of ", where(),
              " returned no value (end it with GraphBuilder::output)");
  stack_.pop_back();
  return out;
}

std::string GraphBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                               std::vector<Attribute> attributes, size_t num_outputs) {
  Node n;
  n.op_type = op_type;
  n.name = fresh(op_type);
  n.inputs = inputs;
  for (size_t i = 0; i < num_outputs; ++i) n.outputs.push_back(fresh(op_type + "_out"));
  n.attributes = std::move(attributes);
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back().outputs.at(0);
}

std::string GraphBuilder::parameter(const std::string& local_name, const Tensor& t) {
  std::string name;
  for (const auto& [part, m] : stack_) {
    if (part.empty()) continue;
    name += part + ".";
  }
  name += local_name;
  EMBER_CHECK(t.defined(), "onnx.export: ", where(), ": '", name, "' is undefined");
  for (const auto& [existing, tensor] : graph_.initializers)
    if (existing == name) return name;  // a parameter used twice (a shared layer)
  graph_.initializers.emplace_back(name, t.detach().to(kCPU).contiguous());
  return name;
}

std::string GraphBuilder::constant(const Tensor& t) {
  std::string name = fresh("const");
  graph_.initializers.emplace_back(name, t.detach().to(kCPU).contiguous());
  return name;
}

Value GraphBuilder::output(const std::string& name, nn::Module& m, const Value& input) {
  return Value{name, m.forward(input.example)};
}

void register_exporter(std::type_index type, ModuleExporter exporter) {
  EMBER_CHECK(exporter, "onnx::register_exporter: the exporter is empty");
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[type] = std::move(exporter);
}

ModelProto to_proto(nn::Module& model, const Tensor& example, const ExportOptions& o) {
  EMBER_CHECK(example.defined(), "onnx.export: the example input is undefined");
  EMBER_CHECK(o.opset >= 17 && o.opset <= 21, "onnx.export: opset ", o.opset,
              " is not supported (17 to 21: LayerNormalization needs 17)");
  EMBER_CHECK(!o.input_name.empty() && !o.output_name.empty() && o.input_name != o.output_name,
              "onnx.export: the input and output names must be non-empty and differ (got '",
              o.input_name, "' and '", o.output_name, "')");
  ModeRestorer restore(model);
  model.eval();
  NoGradGuard no_grad;

  GraphBuilder b(o.opset);
  const Value out = b.module(model, "", Value{o.input_name, example.detach()});
  Graph& g = b.graph();
  // The result gets the output's name: renamed where it was produced, or copied by an Identity
  // when it is the input itself or an initializer.
  bool renamed = false;
  for (Node& n : g.nodes) {
    for (std::string& s : n.outputs)
      if (s == out.name) s = o.output_name, renamed = true;
    for (std::string& s : n.inputs)
      if (s == out.name && renamed) s = o.output_name;
  }
  if (!renamed) {
    Node id;
    id.op_type = "Identity";
    id.name = "Identity_output";
    id.inputs = {out.name};
    id.outputs = {o.output_name};
    g.nodes.push_back(id);
  }
  g.name = model.type_name();
  g.inputs.push_back(
      ValueInfo{o.input_name, example.dtype(), dims_of(example, o.input_dynamic_axes, "input")});
  g.outputs.push_back(ValueInfo{o.output_name, out.example.dtype(),
                                dims_of(out.example, o.output_dynamic_axes, "output")});
  ModelProto proto;
  proto.opset = o.opset;
  proto.producer_version = "0.1";
  proto.graph = std::move(g);
  return proto;
}

void export_model(nn::Module& model, const Tensor& example, const std::string& path,
                  const ExportOptions& o) {
  const ModelProto proto = to_proto(model, example, o);
  const std::string bytes = serialize(proto);
  if (o.verify) {
    ModeRestorer restore(model);
    model.eval();
    NoGradGuard no_grad;
    verify(proto, bytes, model, example, o);
  }
  write_file_atomic("onnx", path, bytes);
}

}  // namespace ember::onnx
