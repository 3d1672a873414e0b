#pragma once
// Tensor: a view (sizes, strides, storage offset, dtype) onto a Storage.
//
// A Tensor is a cheap handle (a shared pointer to a TensorImpl); copying a Tensor shares the
// same data, as in PyTorch. Views (view, transpose, narrow, ...) make a new TensorImpl on the
// same Storage. `core` knows nothing of autograd: a TensorImpl carries an opaque autograd slot
// (AutogradMetaInterface) that the autograd layer fills.
//
// Ops are free functions in `ember` with the PyTorch names; the methods below forward to them
// so that `a.add(b)` and `ember::add(a, b)` are the same op. The ops autograd differentiates
// (and every in-place op) are declared in autograd/ops/<family>.h and defined, with their
// methods, in autograd/ops/<family>.cpp, on top of the kernel-level `ember::native::` functions
// of core/ops; the rest are declared in core/ops and defined in core. These method declarations
// are the one reference from core to a layer above (Note [Where an op lives] in
// autograd/ops/ops.h): core's own code never calls a method whose definition is in autograd,
// and the link of ember_core fails if it does.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/scalar.h"
#include "core/storage.h"

namespace ember {

class Generator;  // core/generator.h
namespace autograd {
class Node;  // autograd/node.h
}

using Shape = std::vector<int64_t>;

// Options for factories: zeros({2, 3}, kFloat64), ones({4}, Device("cuda")),
// empty({2}, TensorOptions().dtype(kInt64).device(kCPU)).
struct TensorOptions {
  std::optional<DType> dtype_;
  Device device_;

  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(const char* device) : device_(device) {}
  TensorOptions dtype(DType d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  DType dtype_or_default() const { return dtype_ ? *dtype_ : default_dtype(); }
};

// The autograd layer's per-tensor data (requires_grad, grad, grad_fn...). Opaque to core.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;               // in elements
  int64_t storage_offset = 0;  // in elements
  int64_t numel = 0;
  DType dtype = DType::Float32;
  bool is_contiguous = true;
  // A C++ number wrapped into a 0-dim tensor for an op (`t * 2`): it promotes like a Scalar.
  bool is_wrapped_number = false;
  std::shared_ptr<AutogradMetaInterface> autograd_meta;

  // Recompute numel and is_contiguous after sizes/strides change; a shape whose element count
  // overflows int64 is an error naming `op` (Note [Sizes that overflow] in core/checked_math.h).
  void refresh(const char* op = "tensor");
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& strides() const { return impl().strides; }
  const Shape& shape() const { return impl().sizes; }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return impl().numel; }
  DType dtype() const { return impl().dtype; }
  DType scalar_type() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_floating_point() const { return ember::is_floating(dtype()); }
  int64_t storage_offset() const { return impl().storage_offset; }
  bool is_contiguous() const { return impl().is_contiguous; }
  size_t element_size() const { return itemsize(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Storage& storage() const { return impl().storage; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  // Whether both tensors view the same storage.
  bool is_alias_of(const Tensor& o) const { return storage() == o.storage(); }

  // Pointer to the first element (storage data + offset). data_ptr<T>() checks the dtype.
  void* data_ptr() const;
  template <class T>
  T* data_ptr() const {
    EMBER_CHECK(dtype_of_v<T> == dtype(), "data_ptr: tensor has dtype ", dtype_name(dtype()),
                " but ", dtype_name(dtype_of_v<T>), " was requested");
    return static_cast<T*>(data_ptr());
  }

  // Note [Version counter] in core/storage.h.
  uint32_t version() const { return impl().storage->version; }
  void bump_version() const { ++impl().storage->version; }

  // The one value of a one-element tensor (any shape), converted to T.
  template <class T>
  T item() const;
  Scalar item() const;

  TensorImpl& impl() const {
    EMBER_CHECK(impl_ != nullptr, "operation on an undefined tensor");
    return *impl_;
  }
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  std::string to_string() const;

  // ---- autograd (autograd/variable.cpp; see autograd/autograd.h for the whole story) --------
  // A leaf that requires grad accumulates its gradient into grad() on backward(). A tensor made
  // by ops from such tensors requires grad too and remembers its grad_fn (a node of the graph).
  bool requires_grad() const;
  // Marks a leaf (a tensor with no grad_fn) as requiring grad. Floating dtypes only.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  bool is_leaf() const;  // no grad_fn: made by the user, or made without grad
  // The gradient accumulated so far (undefined before the first backward). On a non-leaf that
  // did not call retain_grad() this is an error that says so.
  Tensor grad() const;
  // Replaces (or, with an undefined tensor, drops: "set to none") the accumulated gradient.
  void set_grad(const Tensor& grad) const;
  // The node that computes this tensor's gradient inputs (null for leaves).
  std::shared_ptr<autograd::Node> grad_fn() const;
  uint32_t output_nr() const;  // which output of grad_fn this tensor is
  void retain_grad() const;    // keep .grad on a non-leaf too
  bool retains_grad() const;
  Tensor detach() const;  // same data, no history, requires_grad false
  const Tensor& detach_() const;
  // Backpropagates from this tensor. `gradient` may be omitted for a one-element tensor.
  // retain_graph defaults to create_graph. With `inputs`, only their gradients accumulate.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, const std::vector<Tensor>& inputs = {}) const;
  // A hook sees this tensor's gradient when backward computes it and may return a replacement
  // (or an undefined tensor to keep it). Returns a handle for remove_hook.
  using GradHook = std::function<Tensor(const Tensor&)>;
  int64_t register_hook(GradHook hook) const;
  void remove_hook(int64_t handle) const;
  // Leaves only: runs after the gradient has been accumulated into grad().
  int64_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  // A display name for autograd::to_dot and error messages.
  const Tensor& set_name(const std::string& name) const;
  std::string name() const;
  // Made under InferenceMode (can never join an autograd graph).
  bool is_inference() const { return impl().storage->is_inference; }

  // ---- views (core/ops/view.h) -----------------------------------------------------------
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor expand(const Shape& shape) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t d, const Shape& sizes) const;
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  Tensor slice(int64_t d, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select(int64_t d, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor unfold(int64_t d, int64_t size, int64_t step) const;
  Tensor diagonal(int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1) const;
  Tensor as_strided(const Shape& sizes, const Shape& strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;

  // ---- copies and conversion (core/ops/copy.h) ---------------------------------------------
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  Tensor to(Device device, DType dtype) const;
  // non_blocking: Note on native::copy_ in core/ops/copy.h (a pinned host tensor to a device, or
  // back into pinned memory, returns before the copy finished).
  Tensor to(Device device, DType dtype, bool non_blocking) const;
  // to(Device::cuda(index)); index -1 is the current cuda device.
  Tensor cuda(int index = -1) const;
  Tensor cpu() const;         // to(kCPU)
  Tensor pin_memory() const;  // ember::pin_memory (core/ops/copy.h)
  bool is_pinned() const;
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;

  // ---- unary element-wise (core/ops/unary.h) ---------------------------------------------
#define EMBER_UNARY_METHOD(name) \
  Tensor name() const;           \
  const Tensor& name##_() const;
  EMBER_UNARY_METHOD(neg)
  EMBER_UNARY_METHOD(abs)
  EMBER_UNARY_METHOD(sign)
  EMBER_UNARY_METHOD(exp)
  EMBER_UNARY_METHOD(exp2)
  EMBER_UNARY_METHOD(expm1)
  EMBER_UNARY_METHOD(log)
  EMBER_UNARY_METHOD(log2)
  EMBER_UNARY_METHOD(log1p)
  EMBER_UNARY_METHOD(sqrt)
  EMBER_UNARY_METHOD(rsqrt)
  EMBER_UNARY_METHOD(reciprocal)
  EMBER_UNARY_METHOD(sin)
  EMBER_UNARY_METHOD(cos)
  EMBER_UNARY_METHOD(tan)
  EMBER_UNARY_METHOD(tanh)
  EMBER_UNARY_METHOD(sigmoid)
  EMBER_UNARY_METHOD(relu)
  EMBER_UNARY_METHOD(silu)
  EMBER_UNARY_METHOD(erf)
  EMBER_UNARY_METHOD(floor)
  EMBER_UNARY_METHOD(ceil)
  EMBER_UNARY_METHOD(round)
  EMBER_UNARY_METHOD(trunc)
  EMBER_UNARY_METHOD(logical_not)
  EMBER_UNARY_METHOD(bitwise_not)
#undef EMBER_UNARY_METHOD
  // Rounded to `decimals` decimal places (negative: to tens, hundreds...); floating only.
  Tensor round(int64_t decimals) const;
  const Tensor& round_(int64_t decimals) const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor softplus(const Scalar& beta = 1, const Scalar& threshold = 20) const;
  Tensor pow(const Scalar& exponent) const;
  const Tensor& pow_(const Scalar& exponent) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  const Tensor& clamp_min_(const Scalar& min) const;
  const Tensor& clamp_max_(const Scalar& max) const;
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  const Tensor& nan_to_num_(std::optional<double> nan = 0.0,
                            std::optional<double> posinf = std::nullopt,
                            std::optional<double> neginf = std::nullopt) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;

  // ---- binary element-wise (core/ops/binary.h) ---------------------------------------------
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(const Scalar& other) const;
  // rounding_mode: "" (true division), "trunc" or "floor".
  Tensor div(const Tensor& other, const std::string& rounding_mode = "") const;
  Tensor div(const Scalar& other, const std::string& rounding_mode = "") const;
  const Tensor& div_(const Tensor& other, const std::string& rounding_mode = "") const;
  const Tensor& div_(const Scalar& other, const std::string& rounding_mode = "") const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor atan2(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  const Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  const Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  const Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  const Tensor& lerp_(const Tensor& end, const Tensor& weight) const;
  const Tensor& maximum_(const Tensor& other) const;
  const Tensor& minimum_(const Tensor& other) const;
  const Tensor& remainder_(const Tensor& other) const;
  const Tensor& remainder_(const Scalar& other) const;
  const Tensor& pow_(const Tensor& exponent) const;
  const Tensor& atan2_(const Tensor& other) const;
  const Tensor& logical_and_(const Tensor& other) const;
  const Tensor& logical_or_(const Tensor& other) const;
  const Tensor& logical_xor_(const Tensor& other) const;
  const Tensor& bitwise_and_(const Tensor& other) const;
  const Tensor& bitwise_or_(const Tensor& other) const;
  const Tensor& bitwise_xor_(const Tensor& other) const;
  Tensor where(const Tensor& condition, const Tensor& other) const;  // where(cond, *this, other)
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // ---- reductions (core/ops/reduce.h). An empty dims list means every dim. ------------------
  Tensor sum(const Shape& dims = {}, bool keepdim = false,
             std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(const Shape& dims = {}, bool keepdim = false) const;
  Tensor prod(const Shape& dims = {}, bool keepdim = false) const;
  Tensor var(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor amax(const Shape& dims = {}, bool keepdim = false) const;
  Tensor amin(const Shape& dims = {}, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> max(int64_t d, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t d, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> d = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> d = std::nullopt, bool keepdim = false) const;
  Tensor logsumexp(const Shape& dims, bool keepdim = false) const;
  // p = 1, 2 or INFINITY.
  Tensor norm(double p = 2, const Shape& dims = {}, bool keepdim = false) const;
  Tensor all(const Shape& dims = {}, bool keepdim = false) const;
  Tensor any(const Shape& dims = {}, bool keepdim = false) const;
  Tensor cumsum(int64_t d) const;
  Tensor cumprod(int64_t d) const;
  Tensor softmax(int64_t d) const;
  Tensor log_softmax(int64_t d) const;

  // ---- linear algebra (core/ops/linalg.h) ------------------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;

  // ---- indexing (core/ops/index.h) -------------------------------------------------------
  Tensor index_select(int64_t d, const Tensor& index) const;
  Tensor gather(int64_t d, const Tensor& index) const;
  Tensor scatter(int64_t d, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t d, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t d, const Tensor& index, const Tensor& src) const;
  // reduce: "sum", "prod", "mean", "amax", "amin".
  Tensor scatter_reduce(int64_t d, const Tensor& index, const Tensor& src,
                        const std::string& reduce, bool include_self = true) const;
  Tensor index_add(int64_t d, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1) const;
  const Tensor& scatter_(int64_t d, const Tensor& index, const Tensor& src) const;
  const Tensor& scatter_(int64_t d, const Tensor& index, const Scalar& value) const;
  const Tensor& scatter_add_(int64_t d, const Tensor& index, const Tensor& src) const;
  const Tensor& scatter_reduce_(int64_t d, const Tensor& index, const Tensor& src,
                                const std::string& reduce, bool include_self = true) const;
  const Tensor& index_add_(int64_t d, const Tensor& index, const Tensor& source,
                           const Scalar& alpha = 1) const;
  // Advanced indexing: one int64 index tensor or bool mask per leading dim (undefined = `:`).
  Tensor index(const std::vector<Tensor>& indices) const;
  const Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                           bool accumulate = false) const;
  Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor take(const Tensor& index) const;
  Tensor nonzero() const;
  std::tuple<Tensor, Tensor> sort(int64_t d = -1, bool descending = false) const;
  Tensor argsort(int64_t d = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t d = -1, bool largest = true,
                                  bool sorted = true) const;

  // ---- shape ops (core/ops/shape.h) -------------------------------------------------------
  std::vector<Tensor> split(int64_t split_size, int64_t d = 0) const;
  std::vector<Tensor> split(const Shape& split_sizes, int64_t d = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t d = 0) const;
  Tensor repeat(const Shape& repeats) const;
  Tensor tile(const Shape& reps) const;
  Tensor flip(const Shape& dims) const;
  Tensor roll(const Shape& shifts, const Shape& dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  // ---- random, in place (core/ops/random.h). gen = nullptr: the device's default generator.
  const Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr) const;
  const Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr) const;
  const Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
// Shapes print as [2, 3].
std::string shape_str(const Shape& s);

// ---- operators -----------------------------------------------------------------------------
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
const Tensor& operator+=(const Tensor& a, const Tensor& b);
const Tensor& operator+=(const Tensor& a, const Scalar& b);
const Tensor& operator-=(const Tensor& a, const Tensor& b);
const Tensor& operator-=(const Tensor& a, const Scalar& b);
const Tensor& operator*=(const Tensor& a, const Tensor& b);
const Tensor& operator*=(const Tensor& a, const Scalar& b);
const Tensor& operator/=(const Tensor& a, const Tensor& b);
const Tensor& operator/=(const Tensor& a, const Scalar& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);

// ---- helpers used across core -------------------------------------------------------------
// Wrap a possibly negative dim into [0, ndim); throws naming the op when out of range.
int64_t wrap_dim(int64_t d, int64_t ndim, const char* op);
// Row-major (C-contiguous) strides for a shape.
Shape contiguous_strides(const Shape& sizes);
// Product of sizes; throws naming the op on a negative size or a product that overflows int64
// (Note [Sizes that overflow] in core/checked_math.h).
int64_t shape_numel(const Shape& sizes, const char* op = "shape");
// The byte count of numel elements of dtype; throws naming the op when it overflows int64.
size_t storage_nbytes(int64_t numel, DType dtype, const char* op);
// The broadcast shape of two shapes (NumPy rules); throws naming the op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Make a tensor over an existing storage (no checks beyond bounds and the element count; `op`
// names the op in that error).
Tensor make_tensor(Storage storage, Shape sizes, Shape strides, int64_t storage_offset, DType dtype,
                   const char* op = "make_tensor");
// A C++ number as a 0-dim tensor that promotes like a Scalar (is_wrapped_number).
Tensor wrapped_scalar_tensor(const Scalar& s, Device device = kCPU);
// The same for an operand of an op on `like`: next to a floating tensor the number is stored in
// that tensor's dtype, which is then the result dtype, so it is rounded once, straight to the
// computing dtype (a float64 tensor sees 0.1, not 0.1f), and no conversion is needed later.
Tensor wrapped_scalar_tensor(const Scalar& s, const Tensor& like);
// A 0-dim tensor holding s as dtype (not a wrapped number).
Tensor scalar_tensor(const Scalar& s, const TensorOptions& options = {});

// PyTorch's result_type: the dtype an op on these operands computes in.
DType result_type(const std::vector<Tensor>& operands);
DType result_type(const Tensor* operands, int n);
DType result_type(const Tensor& a, const Scalar& b);

}  // namespace ember
