#include "core/ops/view.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"

namespace ember {

namespace {
constexpr const char* kViewOps[] = {
    "view",    "reshape",   "permute", "transpose", "t",      "squeeze", "unsqueeze", "expand",
    "flatten", "unflatten", "narrow",  "slice",     "select", "unfold",  "diagonal",  "as_strided"};
static_assert(sizeof(kViewOps) / sizeof(kViewOps[0]) == 16);
const OpFamilyRegistrar registrar("view", kViewOps);

Tensor alias_with(const Tensor& t, Shape sizes, Shape strides, int64_t offset,
                  const char* op = "view") {
  return make_tensor(t.storage(), std::move(sizes), std::move(strides), offset, t.dtype(), op);
}
}  // namespace

Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  int64_t infer = -1;
  bool overflow = false, has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, op, ": only one dimension can be inferred in shape ",
                  shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, op, ": invalid shape dimension ", shape[i], " in ",
                  shape_str(shape));
      has_zero = has_zero || shape[i] == 0;
      overflow = overflow || __builtin_mul_overflow(known, shape[i], &known);
    }
  }
  // As shape_numel: a 0 size means no elements, however large the others.
  if (has_zero) known = 0;
  EMBER_CHECK(!overflow || has_zero, op, ": shape ", shape_str(shape),
              " has more elements than int64 can count");
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(shape),
                " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, op, ": shape ", shape_str(shape), " is invalid for input of size ",
                numel);
  }
  return out;
}

std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& shape) {
  Shape new_strides(shape.size());
  if (old_sizes.empty()) {
    std::fill(new_strides.begin(), new_strides.end(), 1);
    return new_strides;
  }
  if (shape_numel(old_sizes) == 0) return contiguous_strides(shape);
  // Walk the old dims from the back in "chunks" that are contiguous among themselves; each
  // chunk must be split exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

Tensor native::view(const Tensor& t, const Shape& shape_in) {
  Shape shape = infer_size(shape_in, t.numel(), "view");
  auto strides = view_strides(t.sizes(), t.strides(), shape);
  EMBER_CHECK(strides.has_value(), "view: size ", shape_str(shape_in),
              " is not compatible with input tensor's size ", shape_str(t.sizes()), " and stride ",
              shape_str(t.strides()),
              " (at least one dimension spans across two contiguous subspaces); use reshape "
              "instead");
  return alias_with(t, shape, *strides, t.storage_offset());
}

Tensor native::reshape(const Tensor& t, const Shape& shape_in) {
  Shape shape = infer_size(shape_in, t.numel(), "reshape");
  if (auto strides = view_strides(t.sizes(), t.strides(), shape)) {
    return alias_with(t, shape, *strides, t.storage_offset());
  }
  return native::view(native::contiguous(t), shape);
}

Tensor native::permute(const Tensor& t, const Shape& dims) {
  const int64_t n = t.dim();
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == n, "permute: number of dims ", dims.size(),
              " doesn't match the tensor's ", n, " dims (", shape_str(dims), ")");
  Shape sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    EMBER_CHECK(!seen[d], "permute: dim ", d, " repeats in ", shape_str(dims));
    seen[d] = true;
    sizes[i] = t.sizes()[d];
    strides[i] = t.strides()[d];
  }
  return alias_with(t, sizes, strides, t.storage_offset());
}

Tensor native::transpose(const Tensor& t, int64_t d0, int64_t d1) {
  if (t.dim() == 0) return alias_with(t, {}, {}, t.storage_offset());
  d0 = wrap_dim(d0, t.dim(), "transpose");
  d1 = wrap_dim(d1, t.dim(), "transpose");
  Shape sizes = t.sizes(), strides = t.strides();
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return alias_with(t, sizes, strides, t.storage_offset());
}

Tensor native::squeeze(const Tensor& t) {
  Shape sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] != 1) {
      sizes.push_back(t.sizes()[d]);
      strides.push_back(t.strides()[d]);
    }
  }
  return alias_with(t, sizes, strides, t.storage_offset());
}

Tensor native::squeeze(const Tensor& t, int64_t d) {
  if (t.dim() == 0) return alias_with(t, {}, {}, t.storage_offset());
  d = wrap_dim(d, t.dim(), "squeeze");
  if (t.sizes()[d] != 1) return alias_with(t, t.sizes(), t.strides(), t.storage_offset());
  Shape sizes = t.sizes(), strides = t.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return alias_with(t, sizes, strides, t.storage_offset());
}

Tensor native::unsqueeze(const Tensor& t, int64_t d) {
  d = wrap_dim(d, t.dim() + 1, "unsqueeze");
  Shape sizes = t.sizes(), strides = t.strides();
  int64_t st = d < t.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return alias_with(t, sizes, strides, t.storage_offset());
}

Tensor native::expand(const Tensor& t, const Shape& shape) {
  const int64_t n = static_cast<int64_t>(shape.size());
  EMBER_CHECK(n >= t.dim(), "expand: the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", t.dim(),
              ")");
  Shape sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t od = i - (n - t.dim());
    int64_t want = shape[i];
    if (od >= 0) {
      int64_t have = t.sizes()[od];
      if (want == -1) want = have;
      EMBER_CHECK(have == want || have == 1, "expand: the expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", shape_str(shape), ".  Tensor sizes: ", shape_str(t.sizes()));
      sizes[i] = want;
      strides[i] = have == want ? t.strides()[od] : 0;
    } else {
      EMBER_CHECK(want >= 0, "expand: the expanded size ", want,
                  " is not allowed in a leading, non-existing dimension ", i);
      sizes[i] = want;
      strides[i] = 0;
    }
  }
  return alias_with(t, sizes, strides, t.storage_offset(), "expand");
}

Tensor native::flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  if (t.dim() == 0) return native::reshape(t, {1});
  start_dim = wrap_dim(start_dim, t.dim(), "flatten");
  end_dim = wrap_dim(end_dim, t.dim(), "flatten");
  EMBER_CHECK(start_dim <= end_dim, "flatten: start_dim (", start_dim,
              ") cannot come after end_dim (", end_dim, ")");
  Shape shape;
  for (int64_t d = 0; d < start_dim; ++d) shape.push_back(t.sizes()[d]);
  int64_t prod = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) prod *= t.sizes()[d];
  shape.push_back(prod);
  for (int64_t d = end_dim + 1; d < t.dim(); ++d) shape.push_back(t.sizes()[d]);
  return native::reshape(t, shape);
}

Tensor native::unflatten(const Tensor& t, int64_t d, const Shape& sizes) {
  d = wrap_dim(d, t.dim(), "unflatten");
  Shape inferred = infer_size(sizes, t.sizes()[d], "unflatten");
  Shape shape(t.sizes().begin(), t.sizes().begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), t.sizes().begin() + d + 1, t.sizes().end());
  return native::view(t, shape);
}

Tensor native::slice(const Tensor& t, int64_t d, std::optional<int64_t> start_opt,
                     std::optional<int64_t> end_opt, int64_t step) {
  EMBER_CHECK(t.dim() > 0, "slice: cannot slice a 0-dim tensor");
  d = wrap_dim(d, t.dim(), "slice");
  EMBER_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t size = t.sizes()[d];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
  // Python semantics: negative counts from the end, out-of-range clamps.
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape sizes = t.sizes(), strides = t.strides();
  sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;  // ceil, without overflow
  // A step past the end leaves one element, whose stride is never used: keep it in range.
  strides[d] = sizes[d] > 1 ? checked_mul(strides[d], step, "slice", "the stride") : strides[d];
  return alias_with(t, sizes, strides, t.storage_offset() + start * t.strides()[d]);
}

Tensor native::narrow(const Tensor& t, int64_t d, int64_t start, int64_t length) {
  EMBER_CHECK(t.dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  d = wrap_dim(d, t.dim(), "narrow");
  int64_t size = t.sizes()[d];
  if (start < 0) start += size;
  EMBER_CHECK(start >= 0 && start <= size, "narrow: start ", start, " out of range for dim ", d,
              " of size ", size);
  EMBER_CHECK(length >= 0 && start + length <= size, "narrow: start (", start, ") + length (",
              length, ") exceeds dimension size (", size, ")");
  return native::slice(t, d, start, start + length, 1);
}

Tensor native::select(const Tensor& t, int64_t d, int64_t index) {
  EMBER_CHECK(t.dim() > 0, "select: cannot select on a 0-dim tensor");
  d = wrap_dim(d, t.dim(), "select");
  int64_t size = t.sizes()[d];
  EMBER_CHECK(index >= -size && index < size, "select: index ", index,
              " out of range for tensor of size ", shape_str(t.sizes()), " at dimension ", d);
  if (index < 0) index += size;
  Shape sizes = t.sizes(), strides = t.strides();
  int64_t offset = t.storage_offset() + index * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return alias_with(t, sizes, strides, offset);
}

Tensor native::unfold(const Tensor& t, int64_t d, int64_t size, int64_t step) {
  d = wrap_dim(d, t.dim(), "unfold");
  int64_t dsize = t.dim() == 0 ? 1 : t.sizes()[d];
  EMBER_CHECK(size >= 0 && size <= dsize, "unfold: maximum size for tensor at dimension ", d,
              " is ", dsize, " but size is ", size);
  EMBER_CHECK(step > 0, "unfold: step is ", step, " but must be > 0");
  Shape sizes = t.sizes(), strides = t.strides();
  if (t.dim() == 0) {
    return alias_with(t, {size}, {1}, t.storage_offset());
  }
  sizes[d] = (dsize - size) / step + 1;
  int64_t st = strides[d];
  strides[d] = sizes[d] > 1 ? checked_mul(st, step, "unfold", "the stride") : st;
  sizes.push_back(size);
  strides.push_back(st);
  return alias_with(t, sizes, strides, t.storage_offset(), "unfold");
}

Tensor native::diagonal(const Tensor& t, int64_t offset, int64_t d1, int64_t d2) {
  EMBER_CHECK(t.dim() >= 2, "diagonal: expected a tensor with at least 2 dims, got shape ",
              shape_str(t.sizes()));
  d1 = wrap_dim(d1, t.dim(), "diagonal");
  d2 = wrap_dim(d2, t.dim(), "diagonal");
  EMBER_CHECK(d1 != d2, "diagonal: dimensions cannot be identical ", d1, ", ", d2);
  int64_t storage_offset = t.storage_offset();
  int64_t len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(t.sizes()[d1], t.sizes()[d2] - offset), 0);
    if (len > 0) storage_offset += offset * t.strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(t.sizes()[d1] + offset, t.sizes()[d2]), 0);
    if (len > 0) storage_offset -= offset * t.strides()[d1];
  }
  Shape sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  sizes.push_back(len);
  strides.push_back(t.strides()[d1] + t.strides()[d2]);
  return alias_with(t, sizes, strides, storage_offset);
}

Tensor native::as_strided(const Tensor& t, const Shape& sizes, const Shape& strides,
                          std::optional<int64_t> storage_offset) {
  EMBER_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ",
              strides.size(), " strides");
  int64_t offset = storage_offset.value_or(t.storage_offset());
  EMBER_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
  // Bounds: the largest element reached must lie inside the storage.
  int64_t max_index = offset;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0, "as_strided: negative size ", sizes[i]);
    EMBER_CHECK(strides[i] >= 0, "as_strided: negative stride ", strides[i]);
    if (sizes[i] == 0)
      empty = true;
    else
      max_index = checked_add(
          max_index, checked_mul(sizes[i] - 1, strides[i], "as_strided", "the largest offset"),
          "as_strided", "the largest offset");
  }
  int64_t capacity = static_cast<int64_t>(t.storage()->nbytes / t.element_size());
  EMBER_CHECK(empty || max_index < capacity, "as_strided: setStorage: sizes ", shape_str(sizes),
              ", strides ", shape_str(strides), " and storage offset ", offset,
              " need a storage of ", max_index + 1, " elements but it holds only ", capacity);
  return alias_with(t, sizes, strides, offset, "as_strided");
}

}  // namespace ember
