// The ModelProto subset of serialize/onnx.h to bytes and back (field numbers from onnx.proto).
#include <cstring>
#include <set>

#include "core/atomic_file.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/ops/factory.h"
#include "serialize/onnx.h"
#include "serialize/protobuf.h"

namespace ember::onnx {

namespace {

// TensorProto.DataType <-> ember dtypes (ONNX types ember lacks: -1 / refused).
int onnx_type(DType t) {
  switch (t) {
    case kFloat32:
      return 1;
    case kUInt8:
      return 2;
    case kInt8:
      return 3;
    case kInt16:
      return 5;
    case kInt32:
      return 6;
    case kInt64:
      return 7;
    case kBool:
      return 9;
    case kFloat16:
      return 10;
    case kFloat64:
      return 11;
    case kBFloat16:
      return 16;
  }
  return -1;
}

DType ember_type(int64_t t, const pb::Reader& r, const std::string& whose) {
  switch (t) {
    case 1:
      return kFloat32;
    case 2:
      return kUInt8;
    case 3:
      return kInt8;
    case 5:
      return kInt16;
    case 6:
      return kInt32;
    case 7:
      return kInt64;
    case 9:
      return kBool;
    case 10:
      return kFloat16;
    case 11:
      return kFloat64;
    case 16:
      return kBFloat16;
    default:
      r.fail(whose + ": element type " + std::to_string(t) +
             " has no ember dtype (ember reads float32/16/64, bfloat16, int8/16/32/64, uint8, "
             "bool)");
  }
}

// ---- writing ----------------------------------------------------------------------------------

pb::Writer tensor_proto(const std::string& name, const Tensor& t) {
  const Tensor c = t.detach().to(kCPU).contiguous();
  pb::Writer w;
  for (int64_t d : c.sizes()) w.varint(1, static_cast<uint64_t>(d));
  w.varint(2, static_cast<uint64_t>(onnx_type(c.dtype())));
  w.string(8, name);
  w.bytes(9, c.numel() ? c.data_ptr() : nullptr, c.nbytes());
  return w;
}

pb::Writer attribute_proto(const Attribute& a) {
  pb::Writer w;
  w.string(1, a.name);
  w.varint(20, static_cast<uint64_t>(a.type));
  switch (a.type) {
    case Attribute::Type::Float:
      w.float32(2, a.f);
      break;
    case Attribute::Type::Int:
      w.varint(3, static_cast<uint64_t>(a.i));
      break;
    case Attribute::Type::String:
      w.string(4, a.s);
      break;
    case Attribute::Type::Tensor:
      w.message(5, tensor_proto("", a.t));
      break;
    case Attribute::Type::Floats:
      for (float f : a.floats) w.float32(7, f);
      break;
    case Attribute::Type::Ints:
      for (int64_t i : a.ints) w.varint(8, static_cast<uint64_t>(i));
      break;
  }
  return w;
}

pb::Writer value_info_proto(const ValueInfo& v) {
  pb::Writer shape;
  for (const Dim& d : v.shape) {
    pb::Writer dim;
    if (d.param.empty())
      dim.varint(1, static_cast<uint64_t>(d.value));
    else
      dim.string(2, d.param);
    shape.message(1, dim);
  }
  pb::Writer tensor;
  tensor.varint(1, static_cast<uint64_t>(onnx_type(v.dtype)));
  tensor.message(2, shape);
  pb::Writer type;
  type.message(1, tensor);
  pb::Writer w;
  w.string(1, v.name);
  w.message(2, type);
  return w;
}

pb::Writer graph_proto(const Graph& g) {
  pb::Writer w;
  for (const Node& n : g.nodes) {
    pb::Writer node;
    for (const std::string& i : n.inputs) node.string(1, i);
    for (const std::string& o : n.outputs) node.string(2, o);
    if (!n.name.empty()) node.string(3, n.name);
    node.string(4, n.op_type);
    for (const Attribute& a : n.attributes) node.message(5, attribute_proto(a));
    if (!n.domain.empty()) node.string(7, n.domain);
    w.message(1, node);
  }
  w.string(2, g.name);
  for (const auto& [name, t] : g.initializers) w.message(5, tensor_proto(name, t));
  for (const ValueInfo& v : g.inputs) w.message(11, value_info_proto(v));
  for (const ValueInfo& v : g.outputs) w.message(12, value_info_proto(v));
  return w;
}

// ---- reading ----------------------------------------------------------------------------------

Tensor read_tensor(pb::Reader r, std::string* name) {
  Shape dims;
  int64_t type = 0;
  std::pair<const uint8_t*, size_t> raw{nullptr, 0};
  bool has_raw = false;
  std::vector<float> floats;
  std::vector<int64_t> int64s, int32s;
  std::vector<double> doubles;
  std::string tname;
  while (r.next()) {
    switch (r.field()) {
      case 1:
        r.append_int64s(dims);
        break;
      case 2:
        type = r.as_int64();
        break;
      case 4:
        r.append_floats(floats);
        break;
      case 5:
        r.append_int64s(int32s);
        break;  // int32_data: also holds bool / int8 / half
      case 7:
        r.append_int64s(int64s);
        break;
      case 8:
        tname = r.as_string();
        break;
      case 9:
        raw = r.as_bytes();
        has_raw = true;
        break;
      case 14:
        if (r.as_int64() != 0) r.fail("tensor '" + tname + "': external data is not supported");
        break;
      default:
        r.skip();
    }
  }
  const std::string whose = "tensor '" + tname + "'";
  int64_t numel = 0;
  if (!numel_fits(dims, &numel)) r.fail(whose + ": dims that are negative or overflow int64");
  const DType dtype = ember_type(type, r, whose);
  const size_t n = static_cast<size_t>(numel);
  size_t bytes = 0;
  if (__builtin_mul_overflow(n, itemsize(dtype), &bytes)) r.fail(whose + ": too many elements");
  // The data's size is checked against the dims before anything is allocated.
  const size_t got = has_raw             ? raw.second
                     : dtype == kFloat32 ? floats.size() * 4
                     : dtype == kInt64   ? int64s.size() * 8
                     : dtype == kInt32   ? int32s.size() * 4
                                         : 0;
  if (got != bytes) {
    const char* field = has_raw             ? "raw_data"
                        : dtype == kFloat32 ? "float_data"
                        : dtype == kInt64   ? "int64_data"
                        : dtype == kInt32   ? "int32_data"
                                            : "the tensor's data";
    r.fail(whose + ": " + field + " holds " + std::to_string(got) + " bytes, its " +
           std::to_string(n) + " " + dtype_name(dtype) + " elements need " + std::to_string(bytes));
  }
  Tensor t = empty(dims, TensorOptions(dtype).device(kCPU));
  if (n && has_raw) {
    std::memcpy(t.data_ptr(), raw.first, bytes);
  } else if (n && dtype == kFloat32) {
    std::memcpy(t.data_ptr(), floats.data(), bytes);
  } else if (n && dtype == kInt64) {
    std::memcpy(t.data_ptr(), int64s.data(), bytes);
  } else if (n && dtype == kInt32) {
    auto* p = t.data_ptr<int32_t>();
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(int32s[i]);
  }
  if (name) *name = tname;
  return t;
}

Attribute read_attribute(pb::Reader r) {
  Attribute a;
  int64_t type = 0;
  while (r.next()) {
    switch (r.field()) {
      case 1:
        a.name = r.as_string();
        break;
      case 2:
        a.f = r.as_float();
        break;
      case 3:
        a.i = r.as_int64();
        break;
      case 4:
        a.s = r.as_string();
        break;
      case 5:
        a.t = read_tensor(r.as_message(), nullptr);
        break;
      case 7:
        r.append_floats(a.floats);
        break;
      case 8:
        r.append_int64s(a.ints);
        break;
      case 20:
        type = r.as_int64();
        break;
      default:
        r.skip();
    }
  }
  if (type != 1 && type != 2 && type != 3 && type != 4 && type != 6 && type != 7)
    r.fail("attribute '" + a.name + "': type " + std::to_string(type) + " is not supported");
  a.type = static_cast<Attribute::Type>(type);
  if (a.type == Attribute::Type::Tensor && !a.t.defined())
    r.fail("attribute '" + a.name + "' is a tensor attribute without a tensor");
  return a;
}

ValueInfo read_value_info(pb::Reader r) {
  ValueInfo v;
  bool typed = false;
  while (r.next()) {
    if (r.field() == 1) {
      v.name = r.as_string();
    } else if (r.field() == 2) {
      pb::Reader type = r.as_message();
      while (type.next()) {
        if (type.field() != 1) continue;  // sequence / map types: left unread, refused below
        typed = true;
        pb::Reader tensor = type.as_message();
        while (tensor.next()) {
          if (tensor.field() == 1) {
            v.dtype = ember_type(tensor.as_int64(), tensor, "value '" + v.name + "'");
          } else if (tensor.field() == 2) {
            pb::Reader shape = tensor.as_message();
            while (shape.next()) {
              if (shape.field() != 1) continue;
              pb::Reader dim = shape.as_message();
              Dim d;
              while (dim.next()) {
                if (dim.field() == 1)
                  d.value = dim.as_int64();
                else if (dim.field() == 2)
                  d.param = dim.as_string();
              }
              v.shape.push_back(d);
            }
          }
        }
      }
    }
  }
  if (!typed) r.fail("value '" + v.name + "' is not a tensor");
  return v;
}

Node read_node(pb::Reader r) {
  Node n;
  while (r.next()) {
    switch (r.field()) {
      case 1:
        n.inputs.push_back(r.as_string());
        break;
      case 2:
        n.outputs.push_back(r.as_string());
        break;
      case 3:
        n.name = r.as_string();
        break;
      case 4:
        n.op_type = r.as_string();
        break;
      case 5:
        n.attributes.push_back(read_attribute(r.as_message()));
        break;
      case 7:
        n.domain = r.as_string();
        break;
      default:
        r.skip();
    }
  }
  return n;
}

Graph read_graph(pb::Reader r) {
  Graph g;
  while (r.next()) {
    switch (r.field()) {
      case 1:
        g.nodes.push_back(read_node(r.as_message()));
        break;
      case 2:
        g.name = r.as_string();
        break;
      case 5: {
        std::string name;
        Tensor t = read_tensor(r.as_message(), &name);
        g.initializers.emplace_back(name, t);
        break;
      }
      case 11:
        g.inputs.push_back(read_value_info(r.as_message()));
        break;
      case 12:
        g.outputs.push_back(read_value_info(r.as_message()));
        break;
      default:
        r.skip();
    }
  }
  return g;
}

}  // namespace

namespace {
Attribute make_attribute(std::string name, Attribute::Type type) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  return a;
}
}  // namespace

Attribute Attribute::integer(std::string name, int64_t v) {
  Attribute a = make_attribute(std::move(name), Type::Int);
  a.i = v;
  return a;
}
Attribute Attribute::real(std::string name, float v) {
  Attribute a = make_attribute(std::move(name), Type::Float);
  a.f = v;
  return a;
}
Attribute Attribute::integers(std::string name, std::vector<int64_t> v) {
  Attribute a = make_attribute(std::move(name), Type::Ints);
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::string(std::string name, std::string v) {
  Attribute a = make_attribute(std::move(name), Type::String);
  a.s = std::move(v);
  return a;
}
Attribute Attribute::tensor(std::string name, ember::Tensor v) {
  Attribute a = make_attribute(std::move(name), Type::Tensor);
  a.t = std::move(v);
  return a;
}

const Attribute* Node::find(const std::string& name) const {
  for (const Attribute& a : attributes)
    if (a.name == name) return &a;
  return nullptr;
}

std::string serialize(const ModelProto& model) {
  for (const ValueInfo& v : model.graph.inputs)
    EMBER_CHECK(onnx_type(v.dtype) > 0, "onnx: input '", v.name, "' has dtype ",
                dtype_name(v.dtype));
  pb::Writer w;
  w.varint(1, static_cast<uint64_t>(model.ir_version));
  w.string(2, model.producer_name);
  if (!model.producer_version.empty()) w.string(3, model.producer_version);
  w.message(7, graph_proto(model.graph));
  pb::Writer opset;
  opset.string(1, "");
  opset.varint(2, static_cast<uint64_t>(model.opset));
  w.message(8, opset);
  return w.data();
}

ModelProto parse(const uint8_t* data, size_t size, const std::string& what) {
  pb::Reader r(data, size, "onnx: " + what);
  ModelProto m;
  m.producer_name.clear();
  bool has_graph = false, has_opset = false;
  while (r.next()) {
    switch (r.field()) {
      case 1:
        m.ir_version = r.as_int64();
        break;
      case 2:
        m.producer_name = r.as_string();
        break;
      case 3:
        m.producer_version = r.as_string();
        break;
      case 7:
        m.graph = read_graph(r.as_message());
        has_graph = true;
        break;
      case 8: {
        pb::Reader o = r.as_message();
        std::string domain;
        int64_t version = 0;
        while (o.next()) {
          if (o.field() == 1)
            domain = o.as_string();
          else if (o.field() == 2)
            version = o.as_int64();
        }
        if (domain.empty() || domain == "ai.onnx") {
          m.opset = version;
          has_opset = true;
        }
        break;
      }
      default:
        r.skip();
    }
  }
  if (!has_graph) r.fail("the model has no graph");
  if (!has_opset) r.fail("the model imports no version of the default operator set");
  return m;
}

ModelProto load_proto(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EMBER_CHECK(f, "onnx: cannot open '", path, "': ", std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  EMBER_CHECK(!failed, "onnx: reading '", path, "' failed");
  return parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

void save_proto(const ModelProto& model, const std::string& path) {
  write_file_atomic("onnx", path, serialize(model));
}

}  // namespace ember::onnx
