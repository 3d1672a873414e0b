#include "core/tensor.h"

#include <cstring>
#include <sstream>

#include "core/checked_math.h"
#include "core/ops/copy.h"

namespace ember {

void TensorImpl::refresh(const char* op) {
  // The common case inline: non-negative sizes whose product fits (one pass, no call).
  if (!numel_fits(sizes, &numel)) numel = shape_numel(sizes, op);  // throws, naming the op
  // Contiguous means the strides are the row-major ones, ignoring dims of size 1 (their stride
  // is never used) -- the same rule as PyTorch.
  is_contiguous = true;
  int64_t expected = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) {
      is_contiguous = numel == 0;
      break;
    }
    expected *= sizes[i];
  }
}

Storage make_storage(size_t nbytes, Device device) {
  Allocator* a = get_allocator(device.type);
  // A device allocation names its device and stream: the current stream of device (Note
  // [Allocations and streams] in core/allocator.h). The CPU needs neither.
  if (device.is_cpu()) return std::make_shared<StorageImpl>(a->allocate(nbytes), nbytes);
  return std::make_shared<StorageImpl>(a->allocate(nbytes, current_stream(device)), nbytes);
}

int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  int64_t n = ndim == 0 ? 1 : ndim;  // a 0-dim tensor accepts dim 0 and -1, like PyTorch
  EMBER_CHECK(d >= -n && d < n, op, ": dimension ", d, " out of range for a tensor of ", ndim,
              " dims (expected in [", -n, ", ", n - 1, "])");
  return d < 0 ? d + n : d;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    // Only an empty tensor's sizes can multiply past int64 here (a non-empty one's numel was
    // checked), and its strides are never used: wrap without undefined behaviour.
    (void)__builtin_mul_overflow(s, sizes[i] > 0 ? sizes[i] : 1, &s);
  }
  return strides;
}

int64_t shape_numel(const Shape& sizes, const char* op) {
  // Note [Sizes that overflow] in core/checked_math.h.
  for (int64_t s : sizes)
    EMBER_CHECK(s >= 0, op, ": negative size ", s, " in shape ", shape_str(sizes));
  int64_t n = 0;
  EMBER_CHECK(numel_fits(sizes, &n), op, ": shape ", shape_str(sizes),
              " has more elements than int64 can count");
  return n;
}

size_t storage_nbytes(int64_t numel, DType dtype, const char* op) {
  int64_t n = 0;
  EMBER_CHECK(!__builtin_mul_overflow(numel, static_cast<int64_t>(itemsize(dtype)), &n), op, ": ",
              numel, " elements of ", dtype_name(dtype), " need more bytes than int64 can count");
  return static_cast<size_t>(n);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ",
                shape_str(b), " cannot be broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  detail::append_one(os, s);
  return os.str();
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

void* Tensor::data_ptr() const {
  const TensorImpl& t = impl();
  char* base = static_cast<char*>(t.storage->data());
  return base ? base + t.storage_offset * static_cast<int64_t>(itemsize(t.dtype)) : nullptr;
}

Tensor make_tensor(Storage storage, Shape sizes, Shape strides, int64_t storage_offset, DType dtype,
                   const char* op) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->storage_offset = storage_offset;
  impl->dtype = dtype;
  impl->refresh(op);
  return Tensor(std::move(impl));
}

namespace {
template <class T>
T read_one(const Tensor& t) {
  Tensor c = t.is_cpu() ? t : native::to(t, kCPU);
  return EMBER_DISPATCH_ALL(c.dtype(), "item", [&]() -> T {
    const auto v = static_cast<opmath_t<scalar_t>>(*static_cast<scalar_t*>(c.data_ptr()));
    check_fits(Scalar(v), dtype_of_v<T>, "item");  // Note [Scalars that overflow]
    return static_cast<T>(v);
  });
}
}  // namespace

template <class T>
T Tensor::item() const {
  EMBER_CHECK(numel() == 1, "item: a tensor with ", numel(),
              " elements cannot be converted to a scalar (shape ", shape_str(sizes()), ")");
  return read_one<T>(*this);
}

template bool Tensor::item<bool>() const;
template uint8_t Tensor::item<uint8_t>() const;
template int8_t Tensor::item<int8_t>() const;
template int16_t Tensor::item<int16_t>() const;
template int32_t Tensor::item<int32_t>() const;
template int64_t Tensor::item<int64_t>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;

template <>
Half Tensor::item<Half>() const {
  return Half(item<float>());
}
template <>
BFloat16 Tensor::item<BFloat16>() const {
  return BFloat16(item<float>());
}

Scalar Tensor::item() const {
  if (is_floating_point()) return Scalar(item<double>());
  if (dtype() == kBool) return Scalar(item<bool>());
  return Scalar(item<int64_t>());
}

Tensor scalar_tensor(const Scalar& s, const TensorOptions& options) {
  DType dt = options.dtype_ ? *options.dtype_ : s.dtype();
  Tensor t = make_tensor(make_storage(itemsize(dt), kCPU), {}, {}, 0, dt);
  EMBER_DISPATCH_ALL(dt, "scalar_tensor", [&] { *t.data_ptr<scalar_t>() = s.to<scalar_t>(); });
  return options.device_.is_cpu() ? t : native::to(t, options.device_);
}

Tensor wrapped_scalar_tensor(const Scalar& s, Device device) {
  // Floating numbers keep their full double value (PyTorch stores wrapped numbers as double);
  // result_type still promotes them as the default dtype.
  DType dt = s.is_floating() ? kFloat64 : s.dtype();
  Tensor t = scalar_tensor(s, TensorOptions(dt).device(device));
  t.impl().is_wrapped_number = true;
  return t;
}

Tensor wrapped_scalar_tensor(const Scalar& s, const Tensor& like) {
  DType dt = is_floating(like.dtype()) ? like.dtype() : s.dtype();
  Tensor t = scalar_tensor(s, TensorOptions(dt));
  t.impl().is_wrapped_number = true;
  return t;
}

// ---- type promotion ------------------------------------------------------------------------
// PyTorch's result_type (aten/src/ATen/native/TypeProperties.cpp): operands fall in three
// priority groups -- tensors with dims, 0-dim tensors, wrapped numbers -- and a lower group only
// changes the result when it belongs to a higher category (bool < integer < floating).
namespace {
struct ResultTypeState {
  std::optional<DType> dim_result, zero_result, wrapped_result;
};

void promote_into(std::optional<DType>& slot, DType t) {
  slot = slot ? promote_types(*slot, t) : t;
}

std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}

void update(ResultTypeState& st, const Tensor& t) {
  if (!t.defined()) return;
  if (t.unsafe_impl()->is_wrapped_number) {
    // A wrapped float number counts as the default dtype, whatever double it came from.
    DType d = t.dtype();
    if (is_floating(d)) d = default_dtype();
    promote_into(st.wrapped_result, d);
  } else if (t.dim() == 0) {
    promote_into(st.zero_result, t.dtype());
  } else {
    promote_into(st.dim_result, t.dtype());
  }
}
}  // namespace

DType result_type(const std::vector<Tensor>& operands) {
  return result_type(operands.data(), static_cast<int>(operands.size()));
}

DType result_type(const Tensor* operands, int n) {
  ResultTypeState st;
  for (int i = 0; i < n; ++i) update(st, operands[i]);
  auto r = combine_categories(st.dim_result, combine_categories(st.zero_result, st.wrapped_result));
  EMBER_CHECK(r.has_value(), "result_type: no operands");
  return *r;
}

DType result_type(const Tensor& a, const Scalar& b) {
  return result_type({a, wrapped_scalar_tensor(b)});
}

void check_fits(const Scalar& s, DType dtype, const char* op) {
  const bool ok = EMBER_DISPATCH_ALL(dtype, op, [&] { return s.fits<scalar_t>(); });
  EMBER_CHECK(ok, op, ": value ", s, " cannot be converted to dtype ", dtype_name(dtype),
              " without overflow");
}

DType Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return kBool;
    case Kind::Integral:
      return kInt64;
    default:
      return default_dtype();
  }
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_floating()) return os << s.to_double();
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  return os << s.to_int64();
}

}  // namespace ember
