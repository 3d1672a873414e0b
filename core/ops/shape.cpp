#include "core/ops/shape.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/view.h"
#include "core/stream.h"

namespace ember {

namespace {
constexpr const char* kShapeOps[] = {"cat",  "stack", "split", "chunk", "repeat", "tile",
                                     "flip", "roll",  "pad",   "tril",  "triu"};
static_assert(sizeof(kShapeOps) / sizeof(kShapeOps[0]) == 11);
const OpFamilyRegistrar registrar("shape", kShapeOps);

// PyTorch's cat skips these "legacy" empty tensors whatever the other inputs' shapes.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }
}  // namespace

// ---- cat / stack ------------------------------------------------------------------------------

Tensor native::cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const char* op = "cat";
  EMBER_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    EMBER_CHECK(tensors[i].defined(), op, ": tensor ", i, " is undefined");
  const Device device = tensors[0].device();
  DType dtype = tensors[0].dtype();
  int64_t ref = -1;  // the first tensor that is not skipped: the others must match it
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.dim() > 0, op, ": zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    EMBER_CHECK(t.device() == device, op,
                ": expected all tensors to be on the same device, but tensor 0 is on ", device,
                " and tensor ", i, " is on ", t.device());
    dtype = promote_types(dtype, t.dtype());
    if (ref < 0 && !is_legacy_empty(t)) ref = static_cast<int64_t>(i);
  }
  const TensorOptions options = TensorOptions(dtype).device(device);
  if (ref < 0) return empty({0}, options);
  const Tensor& first = tensors[ref];
  dim = wrap_dim(dim, first.dim(), op);

  Shape out_shape = first.sizes();
  out_shape[dim] = 0;
  bool contiguous = true;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (is_legacy_empty(t)) continue;
    EMBER_CHECK(t.dim() == first.dim(), op,
                ": tensors must have the same number of dimensions, but tensor ", ref,
                " has shape ", shape_str(first.sizes()), " and tensor ", i, " has shape ",
                shape_str(t.sizes()));
    for (int64_t d = 0; d < t.dim(); ++d) {
      EMBER_CHECK(d == dim || t.size(d) == first.size(d), op,
                  ": sizes of tensors must match except in dimension ", dim, ", but tensor ", ref,
                  " has shape ", shape_str(first.sizes()), " and tensor ", i, " has shape ",
                  shape_str(t.sizes()), " (they differ in dimension ", d, ")");
    }
    out_shape[dim] = checked_add(out_shape[dim], t.size(dim), op, "the output size");
    contiguous = contiguous && t.is_contiguous() && t.dtype() == dtype;
  }
  Tensor out = empty(out_shape, options);
  if (out.numel() == 0) return out;

  if (contiguous) {
    // Every input is a run of contiguous rows: memcpy them into place.
    int64_t outer = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= out_shape[d];
    const int64_t item = static_cast<int64_t>(itemsize(dtype));
    std::vector<CatInput> inputs;
    for (const Tensor& t : tensors) {
      if (is_legacy_empty(t) || t.numel() == 0) continue;
      inputs.push_back({static_cast<const char*>(t.data_ptr()), t.numel() / outer * item});
    }
    DeviceGuard guard(device);  // the stub sees raw pointers: this is their device
    cat_stub(device.type, static_cast<char*>(out.data_ptr()), outer, out.numel() / outer * item,
             inputs);
    return out;
  }
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    const int64_t n = t.size(dim);
    if (n > 0) native::copy_(native::narrow(out, dim, offset, n), t);  // converts dtype, any layout
    offset += n;
  }
  return out;
}

Tensor native::stack(const std::vector<Tensor>& tensors, int64_t dim) {
  const char* op = "stack";
  EMBER_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), op, ": tensor ", i, " is undefined");
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), op,
                ": expects each tensor to be equal size, but got ", shape_str(tensors[0].sizes()),
                " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
    EMBER_CHECK(tensors[i].device() == tensors[0].device(), op,
                ": expected all tensors to be on the same device, but tensor 0 is on ",
                tensors[0].device(), " and tensor ", i, " is on ", tensors[i].device());
  }
  dim = wrap_dim(dim, tensors[0].dim() + 1, op);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(native::unsqueeze(t, dim));
  return native::cat(parts, dim);
}

// ---- split / chunk ---------------------------------------------------------------------------

std::vector<Tensor> native::split(const Tensor& self, int64_t split_size, int64_t dim) {
  const char* op = "split";
  EMBER_CHECK(self.dim() > 0, op, ": expected a tensor with at least one dimension");
  dim = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.size(dim);
  EMBER_CHECK(split_size > 0 || (split_size == 0 && n == 0), op,
              ": split_size must be positive (or 0 for a dimension of size 0), got ", split_size);
  const int64_t pieces =
      split_size == 0 ? 1 : std::max<int64_t>(1, (n + split_size - 1) / split_size);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t start = p * split_size;
    out.push_back(native::narrow(self, dim, start, std::min(split_size, n - start)));
  }
  return out;
}

std::vector<Tensor> native::split(const Tensor& self, const Shape& split_sizes, int64_t dim) {
  const char* op = "split";
  EMBER_CHECK(self.dim() > 0, op, ": expected a tensor with at least one dimension");
  dim = wrap_dim(dim, self.dim(), op);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, op, ": split sizes must be non-negative, got ", shape_str(split_sizes));
    total += s;
  }
  EMBER_CHECK(total == self.size(dim), op, ": split sizes ", shape_str(split_sizes), " add up to ",
              total, ", not to the size ", self.size(dim), " of dimension ", dim);
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(native::narrow(self, dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> native::chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  const char* op = "chunk";
  EMBER_CHECK(chunks > 0, op, ": number of chunks must be positive, got ", chunks);
  EMBER_CHECK(self.dim() > 0, op, ": expected a tensor with at least one dimension");
  dim = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.size(dim);
  const int64_t split_size = (n + chunks - 1) / chunks;
  // An empty dim still gives `chunks` (empty) pieces, as in PyTorch.
  if (n == 0) return native::split(self, Shape(static_cast<size_t>(chunks), 0), dim);
  return native::split(self, split_size, dim);
}

// ---- repeat / tile / flip / roll -------------------------------------------------------------

Tensor native::repeat(const Tensor& self, const Shape& repeats) {
  const char* op = "repeat";
  const int64_t nd = static_cast<int64_t>(repeats.size());
  EMBER_CHECK(nd >= self.dim(), op, ": number of repeat dims (", nd,
              ") can not be smaller than the number of dimensions of the tensor (", self.dim(),
              ")");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, op, ": repeats must be non-negative, got ", shape_str(repeats));
  // Copy from a view [r0, s0, r1, s1, ...] of self with stride 0 along every r into out seen as
  // the same shape: out[a, i, b, j] = self[i, j].
  const int64_t lead = nd - self.dim();
  Shape out_shape(static_cast<size_t>(nd)), pair_sizes, src_strides;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t size = d < lead ? 1 : self.size(d - lead);
    const int64_t stride = d < lead ? 0 : self.stride(d - lead);
    out_shape[d] = checked_mul(size, repeats[d], op, "the output size");
    pair_sizes.insert(pair_sizes.end(), {repeats[d], size});
    src_strides.insert(src_strides.end(), {0, stride});
  }
  Tensor out = empty(out_shape, self.options());
  if (out.numel() == 0) return out;
  const Tensor src =
      make_tensor(self.storage(), pair_sizes, src_strides, self.storage_offset(), self.dtype());
  const Tensor dst =
      make_tensor(out.storage(), pair_sizes, contiguous_strides(pair_sizes), 0, out.dtype());
  native::copy_(dst, src);
  return out;
}

Tensor native::tile(const Tensor& self, const Shape& reps) {
  for (int64_t r : reps)
    EMBER_CHECK(r >= 0, "tile: reps must be non-negative, got ", shape_str(reps));
  Shape r = reps;
  if (static_cast<int64_t>(r.size()) < self.dim())
    r.insert(r.begin(), static_cast<size_t>(self.dim() - static_cast<int64_t>(r.size())), 1);
  return native::repeat(self, r);
}

// Note [flip through a reversed view]
// flip copies from a view of self whose flipped dims start at their last element and have
// negated strides, as PyTorch's flip does: the copy kernel walks any strides, negative ones
// included, and every element it reads lies inside self. The reversed view never leaves this
// function (ember's public views all have non-negative strides).
Tensor native::flip(const Tensor& self, const Shape& dims) {
  const char* op = "flip";
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, self.dim(), op);
    EMBER_CHECK(!flipped[w], op, ": dim ", w, " appears multiple times in the list of dims");
    flipped[w] = true;
  }
  Tensor out = empty(self.sizes(), self.options());
  if (out.numel() == 0) return out;
  Shape strides = self.strides();
  int64_t offset = self.storage_offset();
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!flipped[d]) continue;
    offset += (self.size(d) - 1) * strides[d];
    strides[d] = -strides[d];
  }
  native::copy_(out, make_tensor(self.storage(), self.sizes(), strides, offset, self.dtype()));
  return out;
}

Tensor native::roll(const Tensor& self, const Shape& shifts, const Shape& dims) {
  const char* op = "roll";
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, op, ": with no dims, shifts must hold exactly one value, got ",
                shape_str(shifts));
    return native::view(native::roll(native::reshape(self, {-1}), shifts, {0}), self.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), op, ": shifts ", shape_str(shifts), " and dims ",
              shape_str(dims), " must have the same length");
  for (int64_t d : dims) wrap_dim(d, self.dim(), op);
  if (self.dim() == 0) return native::clone(self);
  // One dim at a time: out[s:] = in[:n-s] and out[:s] = in[n-s:].
  Tensor cur = self;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim(dims[k], self.dim(), op);
    const int64_t n = cur.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    Tensor out = empty(cur.sizes(), cur.options());
    native::copy_(native::narrow(out, d, 0, s), native::narrow(cur, d, n - s, s));
    native::copy_(native::narrow(out, d, s, n - s), native::narrow(cur, d, 0, n - s));
    cur = out;
  }
  return cur.is_same(self) ? native::clone(self) : cur;
}

// ---- pad --------------------------------------------------------------------------------------

namespace {
Tensor pad_constant(const Tensor& self, const Shape& pad, const Scalar& value) {
  const char* op = "pad";
  const int64_t npairs = static_cast<int64_t>(pad.size()) / 2;
  Shape out_shape = self.sizes();
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t size = checked_add(checked_add(self.size(d), pad[2 * i], op, "the padded size"),
                                     pad[2 * i + 1], op, "the padded size");
    EMBER_CHECK(size >= 0, op, ": the input size ", self.size(d), " in dimension ", d,
                " with padding (", pad[2 * i], ", ", pad[2 * i + 1],
                ") gives a negative output size ", size);
    out_shape[d] = size;
  }
  Tensor out = full(out_shape, value, self.options());
  // The part of self that survives cropping (negative pads) goes after the positive pads.
  Tensor src = self, dst = out;
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t left = pad[2 * i], right = pad[2 * i + 1];
    const int64_t len = self.size(d) - std::max<int64_t>(0, -left) - std::max<int64_t>(0, -right);
    if (len <= 0) return out;
    src = native::narrow(src, d, std::max<int64_t>(0, -left), len);
    dst = native::narrow(dst, d, std::max<int64_t>(0, left), len);
  }
  if (dst.numel() > 0) native::copy_(dst, src);
  return out;
}
}  // namespace

Tensor native::pad(const Tensor& self, const Shape& pad, const std::string& mode,
                   const Scalar& value) {
  const char* op = "pad";
  EMBER_CHECK(pad.size() % 2 == 0, op, ": padding length must be divisible by 2, got ", pad.size());
  const int64_t npairs = static_cast<int64_t>(pad.size()) / 2;
  EMBER_CHECK(npairs <= self.dim(), op, ": padding length ", pad.size(),
              " is too large for a tensor of ", self.dim(),
              " dimensions (two values per padded dimension)");
  if (mode == "constant") return pad_constant(self, pad, value);
  const bool reflect = mode == "reflect", replicate = mode == "replicate",
             circular = mode == "circular";
  EMBER_CHECK(reflect || replicate || circular, op,
              ": mode must be 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'");
  // The output's size is checked before any index is built (Note [Sizes that overflow]).
  Shape out_shape = self.sizes();
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = self.dim() - 1 - i;
    out_shape[d] = checked_add(checked_add(self.size(d), pad[2 * i], op, "the padded size"),
                               pad[2 * i + 1], op, "the padded size");
  }
  if (std::all_of(pad.begin(), pad.end(), [](int64_t v) { return v >= 0; }))
    storage_nbytes(shape_numel(out_shape, op), self.dtype(), op);
  // For each padded dim, the source position of every output position along it.
  const int64_t nd = self.dim();
  int64_t first = nd;  // the first dim with any padding
  std::vector<std::vector<int64_t>> sources(static_cast<size_t>(nd));
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = nd - 1 - i;
    const int64_t left = pad[2 * i], right = pad[2 * i + 1], n = self.size(d);
    EMBER_CHECK(left >= 0 && right >= 0, op, ": negative padding (", left, ", ", right,
                ") in dimension ", d, " is only supported in constant mode, not ", mode);
    if (left == 0 && right == 0) continue;
    EMBER_CHECK(!reflect || (left < n && right < n), op, ": padding (", left, ", ", right,
                ") in dimension ", d, " must be less than the input size ", n, " for reflect mode");
    EMBER_CHECK(!replicate || n > 0, op, ": cannot replicate-pad dimension ", d, " of size 0");
    EMBER_CHECK(!circular || (left <= n && right <= n), op, ": padding (", left, ", ", right,
                ") in dimension ", d, " must be at most the input size ", n, " for circular mode");
    first = d;
    std::vector<int64_t>& source = sources[d];
    for (int64_t j = 0; j < n + left + right; ++j) {
      int64_t p = j - left;  // position in the input, maybe outside it
      if (reflect) {
        p = p < 0 ? -p : (p >= n ? 2 * (n - 1) - p : p);
      } else if (replicate) {
        p = std::clamp<int64_t>(p, 0, n - 1);
      } else {
        p = ((p % n) + n) % n;
      }
      source.push_back(p);
    }
  }
  if (first == nd) return native::clone(self);
  // One gather over the output: advanced indexing with one index per dim from `first` on,
  // shaped to broadcast into the padded sizes ([n0', 1], [1, n1'] for two dims).
  std::vector<Tensor> indices(static_cast<size_t>(first));  // full slices before `first`
  for (int64_t d = first; d < nd; ++d) {
    std::vector<int64_t>& source = sources[d];
    if (source.empty()) {  // an unpadded dim between padded ones: every position as it is
      for (int64_t j = 0; j < self.size(d); ++j) source.push_back(j);
    }
    Shape shape(static_cast<size_t>(nd - first), 1);
    shape[d - first] = static_cast<int64_t>(source.size());
    indices.push_back(tensor(source, shape, TensorOptions(kInt64).device(self.device())));
  }
  return native::index(self, indices);
}

// ---- tril / triu ------------------------------------------------------------------------------

namespace {
Tensor trilu(const Tensor& self, int64_t diagonal, bool upper, const char* op) {
  EMBER_CHECK(self.defined() && self.dim() >= 2, op,
              ": input tensor must have at least 2 dimensions, got shape ",
              shape_str(self.defined() ? self.sizes() : Shape{}));
  const Tensor src = native::contiguous(self);
  Tensor out = empty(self.sizes(), self.options());
  if (out.numel() == 0) return out;
  const int64_t rows = self.size(-2), cols = self.size(-1);
  DeviceGuard guard(self.device());  // the stub sees raw pointers: this is their device
  trilu_stub(self.device().type, static_cast<char*>(out.data_ptr()),
             static_cast<const char*>(src.data_ptr()), out.numel() / (rows * cols), rows, cols,
             static_cast<int64_t>(self.element_size()), diagonal, upper);
  return out;
}
}  // namespace

Tensor native::tril(const Tensor& self, int64_t diagonal) {
  return trilu(self, diagonal, false, "tril");
}
Tensor native::triu(const Tensor& self, int64_t diagonal) {
  return trilu(self, diagonal, true, "triu");
}

}  // namespace ember
