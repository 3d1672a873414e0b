// Op-table entries for the shape family (core/ops/shape.h).
//
// Integer arguments travel in a sample as 0-dim int64 tensors and lists as 1-D int64 tensors,
// so that the float64 references see them too. References rebuild each output element from an
// index map over row-major multi-indices.

#include <algorithm>

#include "op_table.h"

namespace ember::testing {
namespace {

Shape ivals(const Tensor& t) {
  Shape out;
  const Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c[i].item<int64_t>());
  return out;
}

// out[idx] = in[map(idx)] for every index of `shape`.
RefTensor map_ref(const RefTensor& in, const Shape& shape,
                  const std::function<Shape(const Shape&)>& map) {
  RefTensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.data[i] = in.at(map(unravel(i, shape)));
  return out;
}

// The piece [start, start + len) of `in` along dim.
RefTensor ref_narrow(const RefTensor& in, int64_t dim, int64_t start, int64_t len) {
  Shape shape = in.shape;
  shape[dim] = len;
  return map_ref(in, shape, [&](Shape p) {
    p[dim] += start;
    return p;
  });
}

// ---- cat / stack ------------------------------------------------------------------------------

// Sample layout: {dim, tensors...}.
std::vector<Tensor> tensor_list(const Sample& s) {
  return std::vector<Tensor>(s.args.begin() + 1, s.args.end());
}

RefTensor ref_cat(const Refs& parts_in, int64_t dim) {
  Refs parts;
  for (const RefTensor& p : parts_in)
    if (!(p.dim() == 1 && p.shape[0] == 0)) parts.push_back(p);
  if (parts.empty()) return RefTensor(Shape{0});
  dim = wrap(dim, parts[0].dim());
  Shape shape = parts[0].shape;
  shape[dim] = 0;
  for (const RefTensor& p : parts) shape[dim] += p.shape[dim];
  RefTensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape p = unravel(i, shape);
    for (const RefTensor& part : parts) {
      if (p[dim] < part.shape[dim]) {
        out.data[i] = part.at(p);
        break;
      }
      p[dim] -= part.shape[dim];
    }
  }
  return out;
}

std::vector<Sample> cat_samples(DType dt) {
  return {
      {{param(0), random_tensor({2, 3}, dt, -2, 2, 1), random_tensor({4, 3}, dt, -2, 2, 2),
        random_tensor({1, 3}, dt, -2, 2, 3)},
       "dim 0"},
      {{param(1), noncontiguous(random_tensor({2, 3}, dt, -2, 2, 4)),
        random_tensor({2, 1}, dt, -2, 2, 5), random_tensor({2, 0}, dt)},
       "dim 1, non-contiguous and empty inputs"},
      {{param(-1), random_tensor({2, 2, 3}, dt, -2, 2, 6), random_tensor({2, 2, 1}, dt, -2, 2, 7)},
       "dim -1"},
      {{param(0), random_tensor({0}, dt), random_tensor({3, 2}, dt, -2, 2, 8),
        random_tensor({0}, dt), random_tensor({1, 2}, dt, -2, 2, 9)},
       "legacy empty [0] inputs are skipped"},
      {{param(0), random_tensor({2, 2}, dt, 0, 2, 10), random_tensor({2, 2}, kUInt8, 0, 2, 11)},
       "mixed dtypes promote"},
      {{param(0), random_tensor({0}, dt), random_tensor({0}, dt)}, "only legacy empty inputs"},
      {{param(1), random_tensor({1, 1}, dt, -2, 2, 12)}, "one input of size 1"},
      {{param(1), random_tensor({3, 40}, dt, -2, 2, 13), random_tensor({3, 24}, dt, -2, 2, 14)},
       "contiguous rows, dim 1"},
  };
}

std::vector<Sample> stack_samples(DType dt) {
  return {
      {{param(0), random_tensor({2, 3}, dt, -2, 2, 1), random_tensor({2, 3}, dt, -2, 2, 2),
        random_tensor({2, 3}, dt, -2, 2, 3)},
       "dim 0"},
      {{param(-1), noncontiguous(random_tensor({2, 3}, dt, -2, 2, 4)),
        random_tensor({2, 3}, dt, -2, 2, 5)},
       "dim -1, non-contiguous"},
      {{param(1), random_tensor({2, 3}, dt, -2, 2, 6), random_tensor({2, 3}, dt, -2, 2, 7)},
       "dim 1"},
      {{param(0), random_tensor({}, dt, -2, 2, 8), random_tensor({}, dt, -2, 2, 9)},
       "0-dim inputs"},
      {{param(1), random_tensor({0, 2}, dt), random_tensor({0, 2}, dt)}, "empty"},
      {{param(0), random_tensor({0}, dt), random_tensor({0}, dt)}, "[0] inputs are not skipped"},
  };
}

RefTensor ref_stack(const Refs& parts, int64_t dim) {
  dim = wrap(dim, parts[0].dim() + 1);
  Refs unsq;
  for (const RefTensor& p : parts) {
    Shape s = p.shape;
    s.insert(s.begin() + dim, 1);
    unsq.push_back(RefTensor(s, p.data));
  }
  // ref_cat skips shape [0], which an unsqueezed input never has.
  return ref_cat(unsq, dim);
}

// ---- split / chunk ------------------------------------------------------------------------------

// Pieces of the given sizes along dim.
Refs ref_split(const RefTensor& in, int64_t dim, const Shape& sizes) {
  dim = wrap(dim, in.dim());
  Refs out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(ref_narrow(in, dim, start, s));
    start += s;
  }
  return out;
}

Shape sizes_for_split(int64_t n, int64_t split_size) {
  Shape sizes;
  if (n == 0) return {0};
  for (int64_t start = 0; start < n; start += split_size)
    sizes.push_back(std::min(split_size, n - start));
  return sizes;
}

// Every piece must view the input's storage.
std::vector<Tensor> check_views(const Tensor& in, std::vector<Tensor> pieces) {
  for (const Tensor& p : pieces)
    EMBER_CHECK(p.numel() == 0 || p.is_alias_of(in), "split/chunk returned a copy, not a view");
  return pieces;
}

std::vector<Sample> split_samples(DType dt) {
  // {self, split_size, dim, split_sizes}
  return {
      {{random_tensor({7, 2}, dt), param(3), param(0), params({2, 0, 5})}, "[7,2] by 3, dim 0"},
      {{noncontiguous(random_tensor({3, 6}, dt)), param(2), param(-1), params({1, 5})},
       "non-contiguous, dim -1"},
      {{random_tensor({0, 3}, dt), param(2), param(0), params({0})}, "empty dim"},
      {{random_tensor({1}, dt), param(1), param(0), params({1})}, "size 1"},
      {{random_tensor({2, 5}, dt), param(10), param(1), params({5})}, "split size larger than dim"},
  };
}

std::vector<Sample> chunk_samples(DType dt) {
  // {self, chunks, dim}
  return {
      {{random_tensor({7, 2}, dt), param(3), param(0)}, "[7,2] in 3"},
      {{noncontiguous(random_tensor({3, 6}, dt)), param(4), param(-1)}, "non-contiguous, 6 in 4"},
      {{random_tensor({0, 3}, dt), param(2), param(0)}, "empty dim"},
      {{random_tensor({2, 2}, dt), param(5), param(1)}, "more chunks than elements"},
      {{random_tensor({1}, dt), param(1), param(0)}, "size 1"},
  };
}

Shape sizes_for_chunk(int64_t n, int64_t chunks) {
  if (n == 0) return Shape(static_cast<size_t>(chunks), 0);
  return sizes_for_split(n, (n + chunks - 1) / chunks);
}

// ---- repeat / tile / flip / roll ----------------------------------------------------------------

// self repeated `repeats` times (repeats at least as long as self's dims).
RefTensor ref_repeat(const RefTensor& in, const Shape& repeats) {
  const int64_t lead = static_cast<int64_t>(repeats.size()) - in.dim();
  Shape shape(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t size = static_cast<int64_t>(d) < lead ? 1 : in.shape[d - lead];
    shape[d] = size * repeats[d];
  }
  return map_ref(in, shape, [&](const Shape& p) {
    Shape src(static_cast<size_t>(in.dim()));
    for (int64_t d = 0; d < in.dim(); ++d) src[d] = p[d + lead] % in.shape[d];
    return src;
  });
}

std::vector<Sample> repeat_samples(DType dt) {
  return {
      {{random_tensor({2, 3}, dt), params({2, 1, 2})}, "[2,3] by [2,1,2]"},
      {{noncontiguous(random_tensor({3, 2}, dt)), params({1, 3})}, "non-contiguous"},
      {{random_tensor({}, dt), params({2, 3})}, "0-dim"},
      {{random_tensor({2, 0}, dt), params({2, 2})}, "empty"},
      {{random_tensor({3}, dt), params({0})}, "zero repeats"},
      {{random_tensor({1}, dt), params({1})}, "size 1"},
  };
}

std::vector<Sample> tile_samples(DType dt) {
  return {
      {{random_tensor({2, 3}, dt), params({2})}, "reps shorter than dims"},
      {{random_tensor({3}, dt), params({2, 2})}, "reps longer than dims"},
      {{noncontiguous(random_tensor({2, 2}, dt)), params({1, 3})}, "non-contiguous"},
      {{random_tensor({0, 2}, dt), params({3})}, "empty"},
  };
}

Shape tile_reps(const Shape& reps, int64_t ndim) {
  Shape r = reps;
  if (static_cast<int64_t>(r.size()) < ndim)
    r.insert(r.begin(), static_cast<size_t>(ndim) - r.size(), 1);
  return r;
}

std::vector<Sample> flip_samples(DType dt) {
  return {
      {{random_tensor({3, 4}, dt), params({0})}, "dim 0"},
      {{random_tensor({3, 4}, dt), params({0, 1})}, "all dims"},
      {{random_tensor({3, 4}, dt), params({-1})}, "dim -1"},
      {{noncontiguous(random_tensor({4, 5}, dt)), params({1})}, "non-contiguous"},
      {{random_tensor({2, 3, 4}, dt), params({0, 2})}, "dims 0 and 2"},
      {{random_tensor({0, 3}, dt), params({0})}, "empty"},
      {{random_tensor({}, dt), params({})}, "0-dim"},
      {{random_tensor({1, 5}, dt), params({0})}, "size-1 dim"},
  };
}

RefTensor ref_flip(const RefTensor& in, const Shape& dims_in) {
  std::vector<bool> flipped(static_cast<size_t>(in.dim()), false);
  for (int64_t d : dims_in) flipped[wrap(d, in.dim())] = true;
  return map_ref(in, in.shape, [&](Shape p) {
    for (int64_t d = 0; d < in.dim(); ++d)
      if (flipped[d]) p[d] = in.shape[d] - 1 - p[d];
    return p;
  });
}

std::vector<Sample> roll_samples(DType dt) {
  // {self, shifts, dims}
  return {
      {{random_tensor({5}, dt), params({2}), params({0})}, "[5] by 2"},
      {{random_tensor({3, 4}, dt), params({1, -3}), params({0, 1})}, "two dims, negative shift"},
      {{noncontiguous(random_tensor({3, 4}, dt)), params({5}), params({})},
       "flattened, non-contiguous"},
      {{random_tensor({2, 3}, dt), params({7}), params({-1})}, "shift larger than dim"},
      {{random_tensor({0, 3}, dt), params({1}), params({0})}, "empty"},
      {{random_tensor({3}, dt), params({0}), params({0})}, "no shift"},
      {{random_tensor({}, dt), params({3}), params({})}, "0-dim"},
  };
}

RefTensor ref_roll(const RefTensor& in, const Shape& shifts, const Shape& dims) {
  if (dims.empty()) {
    RefTensor flat({in.numel()}, in.data);
    return RefTensor(in.shape, ref_roll(flat, shifts, {0}).data);
  }
  return map_ref(in, in.shape, [&](Shape p) {
    for (size_t k = 0; k < dims.size(); ++k) {
      const int64_t d = wrap(dims[k], in.dim()), n = in.shape[d];
      p[d] = (((p[d] - shifts[k]) % n) + n) % n;
    }
    return p;
  });
}

// ---- pad / tril / triu --------------------------------------------------------------------------

// mode: "constant" (value 1), "reflect", "replicate", "circular".
RefTensor ref_pad(const RefTensor& in, const Shape& pad, const std::string& mode) {
  Shape shape = in.shape;
  const int64_t npairs = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t i = 0; i < npairs; ++i) shape[in.dim() - 1 - i] += pad[2 * i] + pad[2 * i + 1];
  RefTensor out(shape);
  for (int64_t e = 0; e < out.numel(); ++e) {
    Shape p = unravel(e, shape);
    bool outside = false;
    for (int64_t i = 0; i < npairs; ++i) {
      const int64_t d = in.dim() - 1 - i, n = in.shape[d];
      int64_t q = p[d] - pad[2 * i];
      if (mode == "constant") {
        outside = outside || q < 0 || q >= n;
      } else if (mode == "reflect") {
        q = q < 0 ? -q : (q >= n ? 2 * (n - 1) - q : q);
      } else if (mode == "replicate") {
        q = std::clamp<int64_t>(q, 0, n - 1);
      } else {
        q = ((q % n) + n) % n;
      }
      p[d] = q;
    }
    out.data[e] = outside ? 1.0 : in.at(p);
  }
  return out;
}

const char* const kPadModes[] = {"constant", "reflect", "replicate", "circular"};

std::vector<Sample> pad_samples(DType dt) {
  return {
      {{random_tensor({3, 4}, dt), params({1, 2})}, "[3,4] last dim (1, 2)"},
      {{random_tensor({3, 4}, dt), params({1, 1, 2, 0})}, "two dims"},
      {{noncontiguous(random_tensor({4, 5}, dt)), params({3, 0, 1, 2})}, "non-contiguous"},
      {{random_tensor({2, 3, 4}, dt), params({2, 2})}, "3-D"},
      {{random_tensor({2, 3}, dt), params({})}, "no padding"},
      {{random_tensor({1, 3}, dt), params({0, 0, 0, 0})}, "zero padding, size 1"},
  };
}

std::vector<Sample> pad_crop_samples(DType dt) {
  return {
      {{random_tensor({3, 5}, dt), params({-1, 2, 1, -2})}, "crop and pad"},
      {{random_tensor({4}, dt), params({-4, 0})}, "crop everything"},
      {{random_tensor({0, 2}, dt), params({1, 1, 1, 1})}, "pad an empty tensor"},
  };
}

std::vector<Sample> trilu_samples(DType dt) {
  return {
      {{random_tensor({4, 5}, dt), param(0)}, "[4,5]"},
      {{random_tensor({4, 5}, dt), param(1)}, "diagonal 1"},
      {{random_tensor({5, 4}, dt), param(-2)}, "diagonal -2"},
      {{noncontiguous(random_tensor({2, 3, 4}, dt)), param(0)}, "batched, non-contiguous"},
      {{random_tensor({0, 3}, dt), param(0)}, "empty"},
      {{random_tensor({3, 1}, dt), param(0)}, "one column"},
      {{random_tensor({3, 3}, dt), param(10)}, "diagonal beyond the matrix"},
      {{random_tensor({3, 3}, dt), param(-10)}, "diagonal before the matrix"},
  };
}

RefTensor ref_trilu(const RefTensor& in, int64_t diagonal, bool upper) {
  RefTensor out = in;
  for (int64_t e = 0; e < in.numel(); ++e) {
    const Shape p = unravel(e, in.shape);
    const int64_t delta = p[p.size() - 1] - p[p.size() - 2];
    const bool keep = upper ? delta >= diagonal : delta <= diagonal;
    if (!keep) out.data[e] = 0;
  }
  return out;
}

const OpTableRegistrar reg({
    OpInfo{"cat", all_dtypes(), cat_samples,
           [](const Sample& s) { return one(cat(tensor_list(s), ival(s.args[0]))); },
           [](const Refs& r) { return Refs{ref_cat(Refs(r.begin() + 1, r.end()), ival(r[0]))}; }},
    OpInfo{"stack", all_dtypes(), stack_samples,
           [](const Sample& s) { return one(stack(tensor_list(s), ival(s.args[0]))); },
           [](const Refs& r) { return Refs{ref_stack(Refs(r.begin() + 1, r.end()), ival(r[0]))}; }},
    OpInfo{"split", all_dtypes(), split_samples,
           [](const Sample& s) {
             std::vector<Tensor> out =
                 check_views(s.args[0], s.args[0].split(ival(s.args[1]), ival(s.args[2])));
             std::vector<Tensor> more =
                 check_views(s.args[0], split(s.args[0], ivals(s.args[3]), ival(s.args[2])));
             out.insert(out.end(), more.begin(), more.end());
             return out;
           },
           [](const Refs& r) {
             const int64_t dim = wrap(ival(r[2]), r[0].dim());
             Refs out = ref_split(r[0], dim, sizes_for_split(r[0].shape[dim], ival(r[1])));
             Refs more = ref_split(r[0], dim, ivals(r[3]));
             out.insert(out.end(), more.begin(), more.end());
             return out;
           }},
    OpInfo{"chunk", all_dtypes(), chunk_samples,
           [](const Sample& s) {
             return check_views(s.args[0], s.args[0].chunk(ival(s.args[1]), ival(s.args[2])));
           },
           [](const Refs& r) {
             const int64_t dim = wrap(ival(r[2]), r[0].dim());
             return ref_split(r[0], dim, sizes_for_chunk(r[0].shape[dim], ival(r[1])));
           }},
    OpInfo{"repeat", all_dtypes(), repeat_samples,
           [](const Sample& s) { return one(s.args[0].repeat(ivals(s.args[1]))); },
           [](const Refs& r) { return Refs{ref_repeat(r[0], ivals(r[1]))}; }},
    OpInfo{
        "tile", all_dtypes(), tile_samples,
        [](const Sample& s) { return one(tile(s.args[0], ivals(s.args[1]))); },
        [](const Refs& r) { return Refs{ref_repeat(r[0], tile_reps(ivals(r[1]), r[0].dim()))}; }},
    OpInfo{"flip", all_dtypes(), flip_samples,
           [](const Sample& s) { return one(s.args[0].flip(ivals(s.args[1]))); },
           [](const Refs& r) { return Refs{ref_flip(r[0], ivals(r[1]))}; }},
    OpInfo{"roll", all_dtypes(), roll_samples,
           [](const Sample& s) { return one(s.args[0].roll(ivals(s.args[1]), ivals(s.args[2]))); },
           [](const Refs& r) { return Refs{ref_roll(r[0], ivals(r[1]), ivals(r[2]))}; }},
    OpInfo{"pad", all_dtypes(), pad_samples,
           [](const Sample& s) {
             std::vector<Tensor> out;
             for (const char* mode : kPadModes)
               out.push_back(pad(s.args[0], ivals(s.args[1]), mode, 1));
             return out;
           },
           [](const Refs& r) {
             Refs out;
             for (const char* mode : kPadModes) out.push_back(ref_pad(r[0], ivals(r[1]), mode));
             return out;
           }},
    OpInfo{"pad", all_dtypes(), pad_crop_samples,
           [](const Sample& s) { return one(pad(s.args[0], ivals(s.args[1]), "constant", 1)); },
           [](const Refs& r) {
             // Cropping: the reference pads with the absolute values, then narrows.
             const RefTensor& in = r[0];
             const Shape p = ivals(r[1]);
             Shape shape = in.shape;
             for (size_t i = 0; i < p.size() / 2; ++i)
               shape[in.dim() - 1 - i] += p[2 * i] + p[2 * i + 1];
             RefTensor out(shape);
             for (int64_t e = 0; e < out.numel(); ++e) {
               Shape q = unravel(e, shape);
               bool outside = false;
               for (size_t i = 0; i < p.size() / 2; ++i) {
                 const int64_t d = in.dim() - 1 - static_cast<int64_t>(i);
                 q[d] -= p[2 * i];
                 outside = outside || q[d] < 0 || q[d] >= in.shape[d];
               }
               out.data[e] = outside ? 1.0 : in.at(q);
             }
             return Refs{out};
           }},
    OpInfo{"tril", all_dtypes(), trilu_samples,
           [](const Sample& s) { return one(s.args[0].tril(ival(s.args[1]))); },
           [](const Refs& r) { return Refs{ref_trilu(r[0], ival(r[1]), false)}; }},
    OpInfo{"triu", all_dtypes(), trilu_samples,
           [](const Sample& s) { return one(triu(s.args[0], ival(s.args[1]))); },
           [](const Refs& r) { return Refs{ref_trilu(r[0], ival(r[1]), true)}; }},
});

}  // namespace
}  // namespace ember::testing
