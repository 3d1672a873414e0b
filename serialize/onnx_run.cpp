// onnx::Model: an ONNX graph run with ember's ops (Note [What onnx::Model runs]).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/ops/ops.h"
#include "core/error.h"
#include "nn/nn.h"
#include "serialize/onnx.h"

namespace ember::onnx {

namespace F = nn::functional;

namespace {

using Tensors = std::vector<Tensor>;

[[noreturn]] void node_error(const Node& n, const std::string& problem) {
  EMBER_ERROR("onnx: node '", n.name, "' (", n.op_type, "): ", problem);
}

const Attribute* typed(const Node& n, const char* name, Attribute::Type type, const char* kind) {
  const Attribute* a = n.find(name);
  if (a && a->type != type)
    node_error(n, std::string("attribute '") + name + "' should be " + kind);
  return a;
}
int64_t attr_int(const Node& n, const char* name, int64_t def) {
  const Attribute* a = typed(n, name, Attribute::Type::Int, "an int");
  return a ? a->i : def;
}
float attr_float(const Node& n, const char* name, float def) {
  const Attribute* a = typed(n, name, Attribute::Type::Float, "a float");
  return a ? a->f : def;
}
Shape attr_ints(const Node& n, const char* name, const Shape& def) {
  const Attribute* a = typed(n, name, Attribute::Type::Ints, "a list of ints");
  return a ? a->ints : def;
}
std::string attr_string(const Node& n, const char* name, const std::string& def) {
  const Attribute* a = typed(n, name, Attribute::Type::String, "a string");
  return a ? a->s : def;
}

// The int64 values of a small shape-like tensor (Reshape's shape, Unsqueeze's axes).
Shape values_of(const Node& n, const Tensor& t, const char* what) {
  if (t.dtype() != kInt64 || t.dim() > 1)
    node_error(n, std::string(what) + " must be a 1-d int64 tensor, got " + dtype_name(t.dtype()) +
                      " " + shape_str(t.sizes()));
  const Tensor c = t.to(kCPU).contiguous();
  return Shape(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

int64_t wrap(const Node& n, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    node_error(n, "axis " + std::to_string(axis) + " is out of range for " + std::to_string(rank) +
                      " dims");
  return a;
}

// The spatial pads of Conv / pooling, split into begin and end halves.
std::pair<Shape, Shape> split_pads(const Node& n, size_t spatial) {
  const Shape pads = attr_ints(n, "pads", Shape(2 * spatial, 0));
  if (pads.size() != 2 * spatial)
    node_error(n, "pads has " + std::to_string(pads.size()) + " values for " +
                      std::to_string(spatial) + " spatial dims");
  for (int64_t p : pads)
    if (p < 0) node_error(n, "negative pads are not supported");
  return {Shape(pads.begin(), pads.begin() + static_cast<int64_t>(spatial)),
          Shape(pads.begin() + static_cast<int64_t>(spatial), pads.end())};
}

void check_auto_pad(const Node& n) {
  const std::string ap = attr_string(n, "auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID")
    node_error(n, "auto_pad " + ap + " is not supported (NOTSET with explicit pads, or VALID)");
}

// Conv / pooling inputs: (N, C, *spatial) with 1 or 2 spatial dims.
size_t spatial_dims(const Node& n, const Tensor& x) {
  if (x.dim() != 3 && x.dim() != 4)
    node_error(n, "the input must be (N, C, L) or (N, C, H, W), got " + shape_str(x.sizes()));
  return static_cast<size_t>(x.dim() - 2);
}

// ---- the operators ------------------------------------------------------------------------------

struct OpDef {
  size_t min_inputs, max_inputs;
  void (*check)(const Node&);  // attributes, when the Model is built
  Tensors (*run)(const Node&, const Tensors&);
};

void no_check(const Node&) {}

Tensors run_conv(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const size_t s = spatial_dims(n, x);
  const auto [begin, end] = attr_string(n, "auto_pad", "NOTSET") == "VALID"
                                ? std::make_pair(Shape(s, 0), Shape(s, 0))
                                : split_pads(n, s);
  const Shape strides = attr_ints(n, "strides", Shape(s, 1));
  const Shape dilations = attr_ints(n, "dilations", Shape(s, 1));
  const int64_t group = attr_int(n, "group", 1);
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  Tensor input = x;
  Shape pads = begin;
  if (begin != end) {  // asymmetric: pad first (ember::pad takes the last dim first)
    Shape p;
    for (size_t i = s; i-- > 0;) p.insert(p.end(), {begin[i], end[i]});
    input = ember::pad(x, p);
    pads.assign(s, 0);
  }
  if (n.op_type == "ConvTranspose") {
    if (s != 2) node_error(n, "ConvTranspose runs on 2 spatial dims only");
    const Shape op = attr_ints(n, "output_padding", Shape(s, 0));
    return {F::conv_transpose2d(input, in[1], bias, strides, pads, op, group, dilations)};
  }
  if (s == 1)
    return {F::conv1d(input, in[1], bias, strides, nn::ConvPadding(pads), dilations, group)};
  return {F::conv2d(input, in[1], bias, strides, nn::ConvPadding(pads), dilations, group)};
}

void check_conv(const Node& n) {
  check_auto_pad(n);
  if (n.find("output_shape")) node_error(n, "output_shape is not supported (use output_padding)");
  if (n.op_type == "ConvTranspose") {
    const Shape pads = attr_ints(n, "pads", {});
    if (pads.size() == 4 && (pads[0] != pads[2] || pads[1] != pads[3]))
      node_error(n, "asymmetric pads are not supported");
  }
}

Tensors run_pool(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  if (spatial_dims(n, x) != 2) node_error(n, "pooling runs on (N, C, H, W) inputs only");
  const Shape k = attr_ints(n, "kernel_shape", {});
  const Shape strides = attr_ints(n, "strides", Shape(2, 1));
  const auto [begin, end] = attr_string(n, "auto_pad", "NOTSET") == "VALID"
                                ? std::make_pair(Shape(2, 0), Shape(2, 0))
                                : split_pads(n, 2);
  const bool ceil = attr_int(n, "ceil_mode", 0) != 0;
  if (n.op_type == "MaxPool")
    return {ember::max_pool2d(x, k, strides, begin, attr_ints(n, "dilations", Shape(2, 1)), ceil)};
  return {ember::avg_pool2d(x, k, strides, begin, ceil, attr_int(n, "count_include_pad", 0) != 0)};
}

void check_pool(const Node& n) {
  check_auto_pad(n);
  const Shape k = attr_ints(n, "kernel_shape", {});
  if (k.size() != 2) node_error(n, "kernel_shape must have 2 values (2-d pooling)");
  const Shape pads = attr_ints(n, "pads", {});
  if (pads.size() == 4 && (pads[0] != pads[2] || pads[1] != pads[3]))
    node_error(n, "asymmetric pads are not supported");
  if (attr_int(n, "storage_order", 0) != 0) node_error(n, "storage_order 1 is not supported");
}

Tensors run_gemm(const Node& n, const Tensors& in) {
  if (in[0].dim() != 2 || in[1].dim() != 2)
    node_error(n, "A and B must be 2-d, got " + shape_str(in[0].sizes()) + " and " +
                      shape_str(in[1].sizes()));
  const Tensor a = attr_int(n, "transA", 0) ? in[0].t() : in[0];
  const Tensor b = attr_int(n, "transB", 0) ? in[1].t() : in[1];
  const double alpha = attr_float(n, "alpha", 1), beta = attr_float(n, "beta", 1);
  Tensor y = ember::matmul(a, b);
  if (alpha != 1) y = y * alpha;
  if (in.size() > 2 && in[2].defined()) y = y + (beta == 1 ? in[2] : in[2] * beta);
  return {y};
}

Tensors run_flatten(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const int64_t rank = x.dim();
  int64_t axis = attr_int(n, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) node_error(n, "axis out of range for " + shape_str(x.sizes()));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  return {ember::reshape(x, {outer, -1})};
}

Tensors run_reshape(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  Shape shape = values_of(n, in[1], "the shape");
  const bool allowzero = attr_int(n, "allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 0 || allowzero) continue;
    if (static_cast<int64_t>(i) >= x.dim())
      node_error(n, "shape " + shape_str(shape) + " copies dim " + std::to_string(i) +
                        " of an input with " + std::to_string(x.dim()) + " dims");
    shape[i] = x.size(static_cast<int64_t>(i));
  }
  return {ember::reshape(x, shape)};
}

Tensors run_gather(const Node& n, const Tensors& in) {
  const Tensor& data = in[0];
  const int64_t axis = wrap(n, attr_int(n, "axis", 0), data.dim());
  Tensor idx = in[1].to(kInt64);
  idx = ember::where(idx < 0, idx + data.size(axis), idx);  // ONNX counts negatives from the end
  Shape out = Shape(data.sizes().begin(), data.sizes().begin() + axis);
  out.insert(out.end(), idx.sizes().begin(), idx.sizes().end());
  out.insert(out.end(), data.sizes().begin() + axis + 1, data.sizes().end());
  return {ember::reshape(ember::index_select(data, axis, ember::reshape(idx, {-1})), out)};
}

Tensors run_batch_norm(const Node& n, const Tensors& in) {
  return {F::batch_norm(in[0], in[3], in[4], in[1], in[2], /*training=*/false, 0.0,
                        attr_float(n, "epsilon", 1e-5f))};
}

void check_batch_norm(const Node& n) {
  if (attr_int(n, "training_mode", 0) != 0) node_error(n, "training_mode 1 is not supported");
}

Tensors run_layer_norm(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const int64_t axis = wrap(n, attr_int(n, "axis", -1), x.dim());
  const Shape normalized(x.sizes().begin() + axis, x.sizes().end());
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  return {F::layer_norm(x, normalized, in[1], bias, attr_float(n, "epsilon", 1e-5f))};
}

void check_single_output(const Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) node_error(n, "only the first output is supported");
}

Tensors run_constant(const Node& n, const Tensors&) {
  if (const Attribute* a = n.find("value")) return {a->t};
  if (const Attribute* a = n.find("value_float"))
    return {full({}, a->f, TensorOptions(kFloat32).device(kCPU))};
  if (const Attribute* a = n.find("value_int"))
    return {full({}, a->i, TensorOptions(kInt64).device(kCPU))};
  if (const Attribute* a = n.find("value_ints")) {
    Tensor t = empty({static_cast<int64_t>(a->ints.size())}, TensorOptions(kInt64).device(kCPU));
    std::copy(a->ints.begin(), a->ints.end(), t.data_ptr<int64_t>());
    return {t};
  }
  const Attribute* a = n.find("value_floats");
  Tensor t = empty({static_cast<int64_t>(a->floats.size())}, TensorOptions(kFloat32).device(kCPU));
  std::copy(a->floats.begin(), a->floats.end(), t.data_ptr<float>());
  return {t};
}

void check_constant(const Node& n) {
  typed(n, "value", Attribute::Type::Tensor, "a tensor");
  typed(n, "value_float", Attribute::Type::Float, "a float");
  typed(n, "value_int", Attribute::Type::Int, "an int");
  typed(n, "value_ints", Attribute::Type::Ints, "a list of ints");
  typed(n, "value_floats", Attribute::Type::Floats, "a list of floats");
  if (n.attributes.size() != 1 ||
      !(n.find("value") || n.find("value_float") || n.find("value_int") || n.find("value_ints") ||
        n.find("value_floats")))
    node_error(n, "needs exactly one of value, value_float(s), value_int(s)");
}

Tensors run_unsqueeze(const Node& n, const Tensors& in) {
  Shape axes = values_of(n, in[1], "axes");
  const int64_t rank = in[0].dim() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) a = wrap(n, a, rank);
  std::sort(axes.begin(), axes.end());
  Tensor y = in[0];
  for (int64_t a : axes) y = ember::unsqueeze(y, a);
  return {y};
}

Tensors run_squeeze(const Node& n, const Tensors& in) {
  if (in.size() < 2 || !in[1].defined()) return {ember::squeeze(in[0])};
  Shape axes = values_of(n, in[1], "axes");
  for (int64_t& a : axes) a = wrap(n, a, in[0].dim());
  std::sort(axes.rbegin(), axes.rend());
  Tensor y = in[0];
  for (int64_t a : axes) {
    if (y.size(a) != 1)
      node_error(n,
                 "dim " + std::to_string(a) + " has size " + std::to_string(y.size(a)) + ", not 1");
    y = ember::squeeze(y, a);
  }
  return {y};
}

Tensors run_concat(const Node& n, const Tensors& in) {
  return {ember::cat(in, wrap(n, attr_int(n, "axis", 0), in[0].dim()))};
}

Tensors run_shape(const Node& n, const Tensors& in) {
  const int64_t rank = in[0].dim();
  int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  Tensor t = empty({end - start}, TensorOptions(kInt64).device(kCPU));
  for (int64_t d = start; d < end; ++d) t.data_ptr<int64_t>()[d - start] = in[0].size(d);
  return {t};
}

Tensors run_transpose(const Node& n, const Tensors& in) {
  Shape perm = attr_ints(n, "perm", {});
  if (perm.empty())
    for (int64_t d = in[0].dim(); d-- > 0;) perm.push_back(d);
  return {ember::permute(in[0], perm)};
}

// Cast's `to` (TensorProto.DataType codes) for the types ember has.
DType cast_target(const Node& n) {
  static const std::map<int64_t, DType> types{
      {1, kFloat32}, {2, kUInt8}, {3, kInt8},     {5, kInt16},    {6, kInt32},
      {7, kInt64},   {9, kBool},  {10, kFloat16}, {11, kFloat64}, {16, kBFloat16}};
  const int64_t to = attr_int(n, "to", 0);
  auto it = types.find(to);
  if (it == types.end()) node_error(n, "cast to element type " + std::to_string(to));
  return it->second;
}

#define UNARY(fn)                                                                  \
  {                                                                                \
    1, 1, no_check, [](const Node&, const Tensors& in) -> Tensors { return {fn}; } \
  }
#define BINARY(expr)                                                                 \
  {                                                                                  \
    2, 2, no_check, [](const Node&, const Tensors& in) -> Tensors { return {expr}; } \
  }

const std::map<std::string, OpDef>& ops() {
  static const std::map<std::string, OpDef> table{
      {"Abs", UNARY(in[0].abs())},
      {"Add", BINARY(in[0] + in[1])},
      {"AveragePool", {1, 1, check_pool, run_pool}},
      {"BatchNormalization", {5, 5, check_batch_norm, run_batch_norm}},
      {"Cast",
       {1, 1, [](const Node& n) { cast_target(n); },
        [](const Node& n, const Tensors& in) -> Tensors { return {in[0].to(cast_target(n))}; }}},
      {"Concat", {1, SIZE_MAX, no_check, run_concat}},
      {"Constant", {0, 0, check_constant, run_constant}},
      {"Conv", {2, 3, check_conv, run_conv}},
      {"ConvTranspose", {2, 3, check_conv, run_conv}},
      {"Div", BINARY(in[0] / in[1])},
      {"Dropout",
       {1, 3, no_check, [](const Node&, const Tensors& in) -> Tensors { return {in[0]}; }}},
      {"Erf", UNARY(ember::erf(in[0]))},
      {"Exp", UNARY(in[0].exp())},
      {"Flatten", {1, 1, no_check, run_flatten}},
      {"Gather", {2, 2, no_check, run_gather}},
      {"Gemm", {2, 3, no_check, run_gemm}},
      {"GlobalAveragePool",
       {1, 1, no_check,
        [](const Node& n, const Tensors& in) -> Tensors {
          spatial_dims(n, in[0]);
          Shape dims;
          for (int64_t d = 2; d < in[0].dim(); ++d) dims.push_back(d);
          return {ember::mean(in[0], dims, /*keepdim=*/true)};
        }}},
      {"Identity", UNARY(in[0])},
      {"LayerNormalization", {2, 3, no_check, run_layer_norm}},
      {"LeakyRelu",
       {1, 1, no_check,
        [](const Node& n, const Tensors& in) -> Tensors {
          return {F::leaky_relu(in[0], attr_float(n, "alpha", 0.01f))};
        }}},
      {"Log", UNARY(in[0].log())},
      {"LogSoftmax",
       {1, 1, no_check,
        [](const Node& n, const Tensors& in) -> Tensors {
          return {F::log_softmax(in[0], wrap(n, attr_int(n, "axis", -1), in[0].dim()))};
        }}},
      {"MatMul", BINARY(ember::matmul(in[0], in[1]))},
      {"MaxPool", {1, 1, check_pool, run_pool}},
      {"Mul", BINARY(in[0] * in[1])},
      {"Neg", UNARY(-in[0])},
      {"Pow", BINARY(ember::pow(in[0], in[1].to(in[0].dtype())))},
      {"Reciprocal", UNARY(ember::reciprocal(in[0]))},
      {"Relu", UNARY(ember::relu(in[0]))},
      {"Reshape", {2, 2, no_check, run_reshape}},
      {"Shape", {1, 1, no_check, run_shape}},
      {"Sigmoid", UNARY(ember::sigmoid(in[0]))},
      {"Softmax",
       {1, 1, no_check,
        [](const Node& n, const Tensors& in) -> Tensors {
          return {F::softmax(in[0], wrap(n, attr_int(n, "axis", -1), in[0].dim()))};
        }}},
      {"Sqrt", UNARY(in[0].sqrt())},
      {"Squeeze", {1, 2, no_check, run_squeeze}},
      {"Sub", BINARY(in[0] - in[1])},
      {"Tanh", UNARY(ember::tanh(in[0]))},
      {"Transpose", {1, 1, no_check, run_transpose}},
      {"Unsqueeze", {2, 2, no_check, run_unsqueeze}},
  };
  return table;
}
#undef UNARY
#undef BINARY

// The types of the attributes the operators share, checked on every node when the Model is
// built (so that a wrong type is not found half-way through a run).
void check_attribute_types(const Node& n) {
  using T = Attribute::Type;
  static const std::map<std::string, T> types{{"alpha", T::Float},
                                              {"beta", T::Float},
                                              {"epsilon", T::Float},
                                              {"momentum", T::Float},
                                              {"transA", T::Int},
                                              {"transB", T::Int},
                                              {"axis", T::Int},
                                              {"group", T::Int},
                                              {"ceil_mode", T::Int},
                                              {"count_include_pad", T::Int},
                                              {"allowzero", T::Int},
                                              {"start", T::Int},
                                              {"end", T::Int},
                                              {"to", T::Int},
                                              {"training_mode", T::Int},
                                              {"storage_order", T::Int},
                                              {"kernel_shape", T::Ints},
                                              {"strides", T::Ints},
                                              {"pads", T::Ints},
                                              {"dilations", T::Ints},
                                              {"output_padding", T::Ints},
                                              {"perm", T::Ints},
                                              {"auto_pad", T::String}};
  static const char* const kinds[] = {"",         "a float", "an int",           "a string",
                                      "a tensor", "",        "a list of floats", "a list of ints"};
  for (const Attribute& a : n.attributes) {
    auto it = types.find(a.name);
    if (it != types.end() && a.type != it->second)
      node_error(n, "attribute '" + a.name + "' should be " + kinds[static_cast<int>(it->second)]);
  }
}

const OpDef& op_of(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx")
    node_error(n, "domain '" + n.domain + "' is not supported (only the default ONNX domain)");
  auto it = ops().find(n.op_type);
  if (it == ops().end()) {
    std::string known;
    for (const auto& [name, def] : ops()) known += (known.empty() ? "" : ", ") + name;
    node_error(n, "operator " + n.op_type + " is not supported (onnx::Model runs " + known + ")");
  }
  return it->second;
}

}  // namespace

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops()) names.push_back(name);
  return names;
}

Model::Model(ModelProto proto, Device device) : proto_(std::move(proto)), device_(device) {
  const Graph& g = proto_.graph;
  EMBER_CHECK(proto_.opset >= 13, "onnx: the model uses opset ", proto_.opset,
              "; onnx::Model runs opset 13 and later (the operators' current forms)");
  std::set<std::string> defined;
  for (const auto& [name, t] : g.initializers) {
    EMBER_CHECK(defined.insert(name).second, "onnx: initializer '", name, "' is defined twice");
    initializers_.emplace_back(name, t.to(device_));
  }
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  EMBER_CHECK(!g.outputs.empty(), "onnx: the graph has no outputs");
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = proto_.graph.nodes[i];
    if (n.name.empty()) n.name = "#" + std::to_string(i);
    const OpDef& def = op_of(n);
    size_t given = n.inputs.size();
    while (given > 0 && n.inputs[given - 1].empty()) --given;  // trailing optional inputs
    if (given < def.min_inputs || given > def.max_inputs)
      node_error(n, "takes " + std::to_string(def.min_inputs) +
                        (def.max_inputs == def.min_inputs ? std::string()
                         : def.max_inputs == SIZE_MAX     ? " or more"
                                                      : " to " + std::to_string(def.max_inputs)) +
                        " inputs, it has " + std::to_string(given));
    for (size_t j = 0; j < given; ++j)
      if (n.inputs[j].empty())  // none of the operators here has an optional middle input
        node_error(n, "input " + std::to_string(j) + " is left out");
      else if (!defined.count(n.inputs[j]))
        node_error(
            n, "input '" + n.inputs[j] + "' is not defined before it (the graph must be sorted)");
    if (n.outputs.empty() || n.outputs[0].empty()) node_error(n, "has no output");
    check_single_output(n);  // each operator here computes one (Dropout's mask, ... are not)
    check_attribute_types(n);
    def.check(n);
    for (const std::string& o : n.outputs)
      if (!o.empty()) defined.insert(o);
  }
  for (const ValueInfo& v : g.outputs)
    EMBER_CHECK(defined.count(v.name), "onnx: graph output '", v.name, "' is never computed");
}

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = proto_.graph;
  std::unordered_map<std::string, Tensor> values;
  for (const auto& [name, t] : initializers_) values[name] = t;
  // Graph inputs that are also initializers (older files) have a default and may be left out.
  std::vector<const ValueInfo*> fed;
  for (const ValueInfo& v : g.inputs)
    if (!values.count(v.name)) fed.push_back(&v);
  EMBER_CHECK(inputs.size() == fed.size(), "onnx: the model takes ", fed.size(), " inputs, got ",
              inputs.size());
  for (size_t i = 0; i < fed.size(); ++i) {
    const ValueInfo& v = *fed[i];
    const Tensor& x = inputs[i];
    EMBER_CHECK(x.defined(), "onnx: input '", v.name, "' is undefined");
    EMBER_CHECK(x.device() == device_, "onnx: input '", v.name, "' is on ", x.device().str(),
                ", the model on ", device_.str());
    EMBER_CHECK(x.dtype() == v.dtype, "onnx: input '", v.name, "' must be ", dtype_name(v.dtype),
                ", got ", dtype_name(x.dtype()));
    if (!v.shape.empty() || x.dim() == 0) {
      bool ok = x.dim() == static_cast<int64_t>(v.shape.size());
      for (size_t d = 0; ok && d < v.shape.size(); ++d)
        ok = v.shape[d].value < 0 || v.shape[d].value == x.size(static_cast<int64_t>(d));
      std::string want;
      for (const Dim& d : v.shape)
        want += (want.empty() ? "" : ", ") + (d.value >= 0      ? std::to_string(d.value)
                                              : d.param.empty() ? "?"
                                                                : d.param);
      EMBER_CHECK(ok, "onnx: input '", v.name, "' must have shape [", want, "], got ", x.sizes());
    }
    values[v.name] = x;
  }
  NoGradGuard no_grad;
  for (const Node& n : g.nodes) {
    const OpDef& def = ops().at(n.op_type);
    Tensors in;
    for (const std::string& name : n.inputs)
      in.push_back(name.empty() ? Tensor() : values.at(name));
    while (!in.empty() && !in.back().defined()) in.pop_back();
    Tensors out = def.run(n, in);
    // Constants and shapes are made on the CPU; the next op sees them on the model's device.
    for (Tensor& t : out)
      if (t.device() != device_) t = t.to(device_);
    for (size_t i = 0; i < out.size() && i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) values[n.outputs[i]] = out[i];
  }
  std::vector<Tensor> results;
  for (const ValueInfo& v : g.outputs) results.push_back(values.at(v.name));
  return results;
}

Tensor Model::run(const Tensor& input) const { return run(std::vector<Tensor>{input}).at(0); }

Model load(const std::string& path, Device device) { return Model(load_proto(path), device); }

}  // namespace ember::onnx
