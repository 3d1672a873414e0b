#include "core/ops/factory.h"

#include <cmath>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"

namespace ember {

namespace {
constexpr const char* kFactoryOps[] = {"empty",    "zeros", "ones",   "full",     "arange",
                                       "linspace", "eye",   "tensor", "from_blob"};
static_assert(sizeof(kFactoryOps) / sizeof(kFactoryOps[0]) == 9);
const OpFamilyRegistrar registrar("factory", kFactoryOps);
}  // namespace

Tensor empty(const Shape& sizes, const TensorOptions& options) {
  int64_t n = shape_numel(sizes, "empty");
  DType dt = options.dtype_or_default();
  Storage storage = make_storage(storage_nbytes(n, dt, "empty"), options.device_);  // checks first
  return make_tensor(std::move(storage), sizes, contiguous_strides(sizes), 0, dt, "empty");
}

Tensor full(const Shape& sizes, const Scalar& value, const TensorOptions& options) {
  TensorOptions o = options;
  if (!o.dtype_) o.dtype_ = value.is_floating() ? default_dtype() : value.dtype();
  Tensor t = empty(sizes, o);
  native::fill_(t, value);
  return t;
}

Tensor zeros(const Shape& sizes, const TensorOptions& options) {
  Tensor t = empty(sizes, options);
  native::zero_(t);
  return t;
}

Tensor ones(const Shape& sizes, const TensorOptions& options) {
  return full(sizes, 1, options.dtype(options.dtype_or_default()));
}

namespace {
TensorOptions like(const Tensor& t, const TensorOptions& o) {
  TensorOptions r = o;
  if (!r.dtype_) r.dtype_ = t.dtype();
  if (!o.dtype_ && o.device_ == kCPU) r.device_ = t.device();
  return r;
}
}  // namespace

Tensor empty_like(const Tensor& t, const TensorOptions& o) { return empty(t.sizes(), like(t, o)); }
Tensor zeros_like(const Tensor& t, const TensorOptions& o) { return zeros(t.sizes(), like(t, o)); }
Tensor ones_like(const Tensor& t, const TensorOptions& o) { return ones(t.sizes(), like(t, o)); }
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) {
  return full(t.sizes(), v, like(t, o));
}

Tensor arange(const Scalar& end, const TensorOptions& options) {
  return arange(0, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              const TensorOptions& options) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "arange: step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "arange: start and end must be finite, got ", s,
              " and ", e);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange: upper bound and larger bound ",
              "inconsistent with step sign (start ", s, ", end ", e, ", step ", st, ")");
  bool any_float = start.is_floating() || end.is_floating() || step.is_floating();
  DType dt = options.dtype_ ? *options.dtype_ : (any_float ? default_dtype() : kInt64);
  // The length, computed without overflow (Note [Sizes that overflow] in core/checked_math.h).
  int64_t n = 0;
  if (any_float) {
    const double len = std::ceil((e - s) / st);
    EMBER_CHECK(len < 9.2e18, "arange: the range [", s, ", ", e, ") with step ", st,
                " has more elements than int64 can count");
    n = static_cast<int64_t>(len);
  } else {
    const int64_t is = step.to_int64();
    EMBER_CHECK(is != 0, "arange: step must be nonzero");
    const int64_t span = checked_sub(end.to_int64(), start.to_int64(), "arange", "end - start");
    // ceil(span / is) for span and is of one sign (checked above).
    n = span / is + (span % is != 0 ? 1 : 0);
  }
  Tensor t = empty({n}, TensorOptions(dt).device(options.device_));
  ArangeArgs args;
  args.floating = any_float;
  args.start = s;
  args.step = st;
  if (!any_float) {
    args.int_start = start.to_int64();
    args.int_step = step.to_int64();
  }
  arange_stub(t.device().type, t, args);
  return t;
}

Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options) {
  EMBER_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  DType dt = options.dtype_or_default();
  Tensor t = empty({steps}, TensorOptions(dt).device(options.device_));
  linspace_stub(t.device().type, t, start, end);
  return t;
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, const TensorOptions& options) {
  int64_t m = m_opt.value_or(n);
  EMBER_CHECK(n >= 0 && m >= 0, "eye: sizes must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, options.dtype(options.dtype_or_default()));
  eye_stub(t.device().type, t);
  return t;
}

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& sizes_in, const TensorOptions& options) {
  Shape sizes = sizes_in.empty() && values.size() != 1 ? Shape{static_cast<int64_t>(values.size())}
                                                       : sizes_in;
  int64_t n = shape_numel(sizes, "tensor");
  EMBER_CHECK(n == static_cast<int64_t>(values.size()), "tensor: shape ", shape_str(sizes),
              " holds ", n, " elements but ", values.size(), " values were given");
  Tensor t = empty(sizes, TensorOptions(dtype_of_v<T>));
  std::copy(values.begin(), values.end(), t.data_ptr<T>());
  DType want = options.dtype_ ? *options.dtype_ : dtype_of_v<T>;
  if (want != t.dtype()) t = native::to(t, t.device(), want);
  return options.device_.is_cpu() ? t : native::to(t, options.device_, t.dtype());
}

template <>
Tensor tensor<bool>(const std::vector<bool>& values, const Shape& sizes_in,
                    const TensorOptions& options) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  Tensor t =
      tensor(bytes, sizes_in.empty() ? Shape{static_cast<int64_t>(values.size())} : sizes_in);
  return native::to(t, options.device_, options.dtype_ ? *options.dtype_ : kBool);
}

template Tensor tensor<uint8_t>(const std::vector<uint8_t>&, const Shape&, const TensorOptions&);
template Tensor tensor<int8_t>(const std::vector<int8_t>&, const Shape&, const TensorOptions&);
template Tensor tensor<int16_t>(const std::vector<int16_t>&, const Shape&, const TensorOptions&);
template Tensor tensor<int32_t>(const std::vector<int32_t>&, const Shape&, const TensorOptions&);
template Tensor tensor<int64_t>(const std::vector<int64_t>&, const Shape&, const TensorOptions&);
template Tensor tensor<float>(const std::vector<float>&, const Shape&, const TensorOptions&);
template Tensor tensor<double>(const std::vector<double>&, const Shape&, const TensorOptions&);
template Tensor tensor<Half>(const std::vector<Half>&, const Shape&, const TensorOptions&);
template Tensor tensor<BFloat16>(const std::vector<BFloat16>&, const Shape&, const TensorOptions&);

Tensor from_blob(void* data, const Shape& sizes, DType dtype, std::function<void(void*)> deleter,
                 const Shape& strides_in) {
  int64_t n = shape_numel(sizes, "from_blob");
  Shape strides = strides_in.empty() ? contiguous_strides(sizes) : strides_in;
  EMBER_CHECK(strides.size() == sizes.size(), "from_blob: ", sizes.size(), " sizes but ",
              strides.size(), " strides");
  int64_t extent = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(strides[i] >= 0, "from_blob: negative stride ", strides[i]);
    if (sizes[i] > 0) extent += (sizes[i] - 1) * strides[i];
  }
  size_t nbytes = n == 0 ? 0 : static_cast<size_t>(extent + 1) * itemsize(dtype);
  DataPtr ptr;
  if (deleter) {
    auto* ctx = new std::function<void(void*)>(std::move(deleter));
    ptr = DataPtr(
        data, ctx,
        [](void* c, void* d) {
          auto* f = static_cast<std::function<void(void*)>*>(c);
          (*f)(d);
          delete f;
        },
        kCPU);
  } else {
    ptr = DataPtr(data, nullptr, nullptr, kCPU);
  }
  return make_tensor(std::make_shared<StorageImpl>(std::move(ptr), nbytes), sizes, strides, 0,
                     dtype);
}

}  // namespace ember
