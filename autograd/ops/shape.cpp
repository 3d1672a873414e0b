// Public ops of the shape family (core/ops/shape.h): forward = native::, plus autograd.
//
// Each backward moves the gradient back to where the forward took the values from: cat and
// split undo each other (narrow / zero-padding), repeat and tile sum the copies, flip and roll
// apply their inverse, padding crops (constant) or adds the gradient of every copy of an edge
// element into it (reflect, replicate, circular), and tril/triu keep the same triangle.

#include "autograd/ops/shape.h"

#include "autograd/ops/common.h"

namespace ember {

namespace {

int64_t wrap(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

// Legacy empty tensors (shape [0]) are skipped by cat.
bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

}  // namespace

// d tensors[i] = the slice of g along dim that tensors[i] filled.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Op op("CatBackward", tensors);
  Tensor y = op.run([&] { return native::cat(tensors, dim); });
  op.set_output(y);
  if (op.recording()) {
    const int64_t d = wrap(dim, y.dim());
    Shape lengths;  // each input's extent along d; -1 for a skipped input
    for (const Tensor& t : tensors) lengths.push_back(skipped_by_cat(t) ? -1 : t.size(d));
    op.backward([d, lengths](const Saved&, const Tensors& g) -> Tensors {
      Tensors out;
      int64_t start = 0;
      for (int64_t n : lengths) {
        if (n < 0) {
          out.emplace_back();
          continue;
        }
        out.push_back(narrow(g[0], d, start, n));
        start += n;
      }
      return out;
    });
  }
  return y;
}

// d tensors[i] = g selected at i along the new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  Op op("StackBackward", tensors);
  Tensor y = op.run([&] { return native::stack(tensors, dim); });
  op.set_output(y);
  if (op.recording()) {
    op.backward(
        [d = wrap(dim, y.dim()), n = tensors.size()](const Saved&, const Tensors& g) -> Tensors {
          Tensors out;
          for (size_t i = 0; i < n; ++i) out.push_back(select(g[0], d, static_cast<int64_t>(i)));
          return out;
        });
  }
  return y;
}

namespace {

// The pieces of split / chunk are views of self. Each gets a node of its own, so a piece that is
// never used is simply absent from the graph; its backward pads the piece's gradient with zeros
// to self's extent along dim.
std::vector<Tensor> record_pieces(const char* name, const Tensor& self, int64_t dim,
                                  std::vector<Tensor> pieces) {
  const int64_t d = wrap(dim, self.dim());
  int64_t start = 0;
  for (const Tensor& piece : pieces) {
    Op op(name, self);
    op.set_output(piece);
    const int64_t before = start, after = self.size(d) - start - piece.size(d);
    op.backward([d, before, after](const Saved&, const Tensors& g) -> Tensors {
      Shape pads(static_cast<size_t>(2 * (g[0].dim() - d)), 0);  // pairs from the last dim
      pads[pads.size() - 2] = before;
      pads[pads.size() - 1] = after;
      return {pad(g[0], pads, "constant", 0)};
    });
    if (piece.is_alias_of(self)) autograd::track_view(piece, self);
    start += piece.size(d);
  }
  return pieces;
}

}  // namespace

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  return record_pieces("SplitBackward", self, dim, native::split(self, split_size, dim));
}
std::vector<Tensor> split(const Tensor& self, const Shape& split_sizes, int64_t dim) {
  return record_pieces("SplitWithSizesBackward", self, dim, native::split(self, split_sizes, dim));
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  return record_pieces("ChunkBackward", self, dim, native::chunk(self, chunks, dim));
}

namespace {

// The gradient of repeat: `g` (shape P[d] * repeats[d], P = in_shape with leading 1s up to
// repeats' length) seen as [repeats[0], P[0], repeats[1], P[1], ...]; the copies are summed.
Tensor repeat_backward(const Tensor& g, const Shape& in_shape, const Shape& repeats) {
  const size_t lead = repeats.size() - in_shape.size();
  Shape split_shape, copy_dims;
  for (size_t d = 0; d < repeats.size(); ++d) {
    copy_dims.push_back(static_cast<int64_t>(split_shape.size()));
    split_shape.push_back(repeats[d]);
    split_shape.push_back(d < lead ? 1 : in_shape[d - lead]);
  }
  if (copy_dims.empty()) return g;  // a 0-dim self repeated by {}
  return reshape(sum(reshape(g, split_shape), copy_dims), in_shape);
}

}  // namespace

Tensor repeat(const Tensor& self, const Shape& repeats) {
  Op op("RepeatBackward", self);
  Tensor y = op.run([&] { return native::repeat(self, repeats); });
  op.set_output(y);
  if (op.recording()) {
    op.backward([shape = self.sizes(), repeats](const Saved&, const Tensors& g) -> Tensors {
      return {repeat_backward(g[0], shape, repeats)};
    });
  }
  return y;
}

// tile is repeat with reps padded by leading 1s to self's number of dims.
Tensor tile(const Tensor& self, const Shape& reps) {
  Op op("TileBackward", self);
  Tensor y = op.run([&] { return native::tile(self, reps); });
  op.set_output(y);
  if (op.recording()) {
    Shape repeats = reps;
    if (static_cast<int64_t>(repeats.size()) < self.dim())
      repeats.insert(repeats.begin(), static_cast<size_t>(self.dim()) - repeats.size(), 1);
    op.backward([shape = self.sizes(), repeats](const Saved&, const Tensors& g) -> Tensors {
      return {repeat_backward(g[0], shape, repeats)};
    });
  }
  return y;
}

// flip is its own inverse.
Tensor flip(const Tensor& self, const Shape& dims) {
  Op op("FlipBackward", self);
  Tensor y = op.run([&] { return native::flip(self, dims); });
  op.set_output(y);
  if (op.recording()) {
    op.backward([dims](const Saved&, const Tensors& g) -> Tensors { return {flip(g[0], dims)}; });
  }
  return y;
}

// d self = g rolled back by the opposite shifts.
Tensor roll(const Tensor& self, const Shape& shifts, const Shape& dims) {
  Op op("RollBackward", self);
  Tensor y = op.run([&] { return native::roll(self, shifts, dims); });
  op.set_output(y);
  if (op.recording()) {
    Shape back = shifts;
    for (int64_t& s : back) s = -s;
    op.backward([back, dims](const Saved&, const Tensors& g) -> Tensors {
      return {roll(g[0], back, dims)};
    });
  }
  return y;
}

namespace {

// For a dim of size n padded by (before, after) in a non-constant mode: the input position each
// of the n + before + after output positions reads (see core/ops/shape.h for the modes).
Tensor pad_source(int64_t n, int64_t before, int64_t after, const std::string& mode,
                  Device device) {
  std::vector<int64_t> source;
  for (int64_t j = 0; j < n + before + after; ++j) {
    int64_t q = j - before;
    if (mode == "reflect") {
      q = q < 0 ? -q : (q >= n ? 2 * (n - 1) - q : q);
    } else if (mode == "replicate") {
      q = q < 0 ? 0 : (q >= n ? n - 1 : q);
    } else {  // circular
      q = ((q % n) + n) % n;
    }
    source.push_back(q);
  }
  const int64_t len = static_cast<int64_t>(source.size());
  return tensor(source, {len}, TensorOptions(kInt64).device(device));
}

}  // namespace

// constant: d self = g cropped back (pad by the negated amounts; crops become zero padding).
// reflect / replicate / circular: each padded dim is an index_select of self by pad_source, so
// the gradient is index_add'ed back dim by dim (copies of an edge element accumulate into it).
Tensor pad(const Tensor& self, const Shape& pad, const std::string& mode, const Scalar& value) {
  Op op("PadBackward", self);
  Tensor y = op.run([&] { return native::pad(self, pad, mode, value); });
  op.set_output(y);
  if (op.recording()) {
    op.backward(
        [shape = self.sizes(), pads = pad, mode](const Saved&, const Tensors& g) -> Tensors {
          if (mode == "constant") {
            Shape crop = pads;
            for (int64_t& p : crop) p = -p;
            return {ember::pad(g[0], crop, "constant", 0)};
          }
          Tensor grad = g[0];
          const int64_t ndim = static_cast<int64_t>(shape.size());
          for (size_t i = 0; 2 * i + 1 < pads.size(); ++i) {
            const int64_t before = pads[2 * i], after = pads[2 * i + 1];
            if (before == 0 && after == 0) continue;
            const int64_t d = ndim - 1 - static_cast<int64_t>(i);
            Shape in_shape = grad.sizes();
            in_shape[static_cast<size_t>(d)] = shape[static_cast<size_t>(d)];
            Tensor source =
                pad_source(shape[static_cast<size_t>(d)], before, after, mode, grad.device());
            grad = index_add(zeros(in_shape, grad.options()), d, source, grad);
          }
          return {grad};
        });
  }
  return y;
}

// The same triangle of the gradient.
Tensor tril(const Tensor& self, int64_t diagonal) {
  Op op("TrilBackward", self);
  Tensor y = op.run([&] { return native::tril(self, diagonal); });
  op.set_output(y);
  if (op.recording()) {
    op.backward(
        [diagonal](const Saved&, const Tensors& g) -> Tensors { return {tril(g[0], diagonal)}; });
  }
  return y;
}
Tensor triu(const Tensor& self, int64_t diagonal) {
  Op op("TriuBackward", self);
  Tensor y = op.run([&] { return native::triu(self, diagonal); });
  op.set_output(y);
  if (op.recording()) {
    op.backward(
        [diagonal](const Saved&, const Tensors& g) -> Tensors { return {triu(g[0], diagonal)}; });
  }
  return y;
}

// ---- Tensor methods and operators (declared in core/tensor.h) ----------------------------
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  return ember::split(*this, split_size, d);
}
std::vector<Tensor> Tensor::split(const Shape& split_sizes, int64_t d) const {
  return ember::split(*this, split_sizes, d);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  return ember::chunk(*this, chunks, d);
}
Tensor Tensor::repeat(const Shape& repeats) const { return ember::repeat(*this, repeats); }
Tensor Tensor::tile(const Shape& reps) const { return ember::tile(*this, reps); }
Tensor Tensor::flip(const Shape& dims) const { return ember::flip(*this, dims); }
Tensor Tensor::roll(const Shape& shifts, const Shape& dims) const {
  return ember::roll(*this, shifts, dims);
}
Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }

}  // namespace ember
