// Op-table entries for the indexing family (core/ops/index.h).
//
// Integer arguments (dims, k) travel in a sample as 0-dim int64 tensors and lists as 1-D int64
// tensors, so that the float64 references see them too. References are naive loops over
// row-major multi-indices.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "op_table.h"

namespace ember::testing {
namespace {

// Random int64 indices in [lo, hi].
Tensor idx(const Shape& shape, int64_t lo, int64_t hi, uint64_t seed) {
  return random_tensor(shape, kInt64, static_cast<double>(lo), static_cast<double>(hi), seed);
}

// Results of in-place ops that may be `bool`: compare as `!= 0`.
RefTensor as_bool(RefTensor r) {
  for (double& v : r.data) v = v != 0 ? 1.0 : 0.0;
  return r;
}
// An entry for every dtype but bool, plus one for bool whose reference is made `!= 0` (sums and
// products of bools are `or` and `and`).
std::vector<OpInfo> numeric_and_bool(OpInfo info) {
  OpInfo b = info;
  info.dtypes = numeric_dtypes();
  b.dtypes = {kBool};
  auto ref = info.reference;
  b.reference = [ref](const Refs& r) {
    Refs out = ref(r);
    for (auto& o : out) o = as_bool(o);
    return out;
  };
  return {info, b};
}

// ---- index_select / gather / scatter ----------------------------------------------------------

std::vector<Sample> index_select_samples(DType dt) {
  return {
      {{random_tensor({5, 3}, dt), param(0), idx({4}, 0, 4, 1)}, "[5,3] dim 0, duplicates"},
      {{noncontiguous(random_tensor({4, 6}, dt)), param(1), idx({3}, 0, 5, 2).to(kInt32)},
       "non-contiguous [4,6] dim 1, int32 index"},
      {{random_tensor({2, 3, 4}, dt), param(-1), idx({0}, 0, 0, 3)}, "[2,3,4] dim -1, empty index"},
      {{random_tensor({1}, dt), param(0), idx({1}, 0, 0, 4)}, "size 1"},
      {{random_tensor({0, 3}, dt), param(1), idx({2}, 0, 2, 5)}, "[0,3] dim 1"},
      {{random_tensor({6, 40}, dt), param(0), idx({5}, 0, 5, 6)}, "[6,40] rows (memcpy path)"},
      {{random_tensor({3, 4, 16}, dt), param(1), idx({3}, 0, 3, 7)}, "[3,4,16] dim 1"},
      {{random_tensor({3, 5}, dt), param(1), idx({8}, 0, 4, 8).slice(0, 0, std::nullopt, 2)},
       "strided index"},
  };
}

RefTensor ref_index_select(const RefTensor& self, int64_t dim, const RefTensor& index) {
  dim = wrap(dim, self.dim());
  Shape shape = self.shape;
  shape[dim] = index.numel();
  RefTensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape p = unravel(i, shape);
    p[dim] = static_cast<int64_t>(index.data[p[dim]]);
    out.data[i] = self.at(p);
  }
  return out;
}

std::vector<Sample> gather_samples(DType dt) {
  return {
      {{random_tensor({3, 4}, dt), param(1), idx({3, 5}, 0, 3, 1)}, "[3,4] dim 1, index [3,5]"},
      {{noncontiguous(random_tensor({4, 3}, dt)), param(0), idx({2, 3}, 0, 3, 2)},
       "non-contiguous self, dim 0"},
      {{random_tensor({2, 3, 4}, dt), param(-1), idx({2, 2, 0}, 0, 0, 3)}, "empty index"},
      {{random_tensor({5}, dt), param(0), idx({7}, 0, 4, 4)}, "1-D"},
      {{random_tensor({}, dt), param(0), zeros({}, kInt64)}, "0-dim"},
      {{random_tensor({4, 4}, dt), param(1), noncontiguous(idx({3, 4}, 0, 3, 5))},
       "non-contiguous index"},
      {{random_tensor({1, 1}, dt), param(0), idx({1, 1}, 0, 0, 6)}, "size 1"},
  };
}

RefTensor ref_gather(const RefTensor& self, int64_t dim, const RefTensor& index) {
  dim = wrap(dim, std::max<int64_t>(self.dim(), 1));
  RefTensor out(index.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape p = unravel(i, index.shape);
    if (self.dim() == 0) {
      out.data[i] = self.data[0];
      continue;
    }
    p[dim] = static_cast<int64_t>(index.data[i]);
    out.data[i] = self.at(p);
  }
  return out;
}

// self[.. index[p] ..] = combine(old, src[p]) for every p of index, in row-major order.
RefTensor ref_scatter(const RefTensor& self, int64_t dim, const RefTensor& index,
                      const RefTensor& src, const std::function<double(double, double)>& combine) {
  dim = wrap(dim, self.dim());
  RefTensor out = self;
  for (int64_t i = 0; i < index.numel(); ++i) {
    Shape p = unravel(i, index.shape);
    const double v = src.at(p);
    p[dim] = static_cast<int64_t>(index.data[i]);
    out.at(p) = combine(out.at(p), v);
  }
  return out;
}

std::vector<Sample> scatter_samples(DType dt) {
  return {
      {{random_tensor({3, 5}, dt, 0, 3), param(1), idx({3, 2}, 0, 4, 1),
        random_tensor({3, 3}, dt, 0, 3, 2)},
       "[3,5] dim 1, src larger than index"},
      {{noncontiguous(random_tensor({4, 3}, dt, 0, 3)), param(0), idx({2, 3}, 0, 3, 3),
        noncontiguous(random_tensor({2, 3}, dt, 0, 3, 4))},
       "non-contiguous self and src, dim 0"},
      {{random_tensor({2, 3}, dt, 0, 3), param(-1), idx({2, 0}, 0, 0, 5),
        random_tensor({2, 1}, dt)},
       "empty index"},
      {{random_tensor({1}, dt, 0, 3), param(0), idx({1}, 0, 0, 6), random_tensor({1}, dt, 0, 3, 7)},
       "size 1"},
      {{random_tensor({5}, dt, 0, 3), param(0), idx({8}, 0, 4, 8), random_tensor({8}, dt, 0, 3, 9)},
       "1-D, duplicates"},
      {{random_tensor({2, 3, 4}, dt, 0, 3), param(1), idx({2, 4, 3}, 0, 2, 10),
        random_tensor({2, 4, 4}, dt, 0, 3, 11)},
       "3-D dim 1"},
  };
}

// ---- scatter_reduce ---------------------------------------------------------------------------

const char* const kReductions[] = {"sum", "prod", "mean", "amax", "amin"};

// Every reduction (with and without self) of one sample; mean rounds down when `integer`.
Refs ref_scatter_reduce(const Refs& r, bool integer, bool with_mean) {
  const RefTensor& self = r[0];
  const int64_t dim = wrap(ival(r[1]), self.dim());
  const RefTensor& index = r[2];
  const RefTensor& src = r[3];
  // What each element of self receives, in order.
  std::vector<std::vector<double>> received(static_cast<size_t>(self.numel()));
  const Shape st = self.strides();
  for (int64_t i = 0; i < index.numel(); ++i) {
    Shape p = unravel(i, index.shape);
    const double v = src.at(p);
    p[dim] = static_cast<int64_t>(index.data[i]);
    int64_t off = 0;
    for (size_t d = 0; d < p.size(); ++d) off += p[d] * st[d];
    received[off].push_back(v);
  }
  Refs out;
  for (const char* reduce : kReductions) {
    const std::string mode = reduce;
    if (mode == "mean" && !with_mean) continue;
    for (bool include_self : {true, false}) {
      RefTensor o = self;
      for (int64_t e = 0; e < self.numel(); ++e) {
        std::vector<double> vals = received[e];
        if (vals.empty()) continue;
        if (include_self) vals.insert(vals.begin(), self.data[e]);
        double acc;
        if (mode == "sum" || mode == "mean") {
          acc = std::accumulate(vals.begin(), vals.end(), 0.0);
          if (mode == "mean") {
            acc /= static_cast<double>(vals.size());
            if (integer) acc = std::floor(acc);
          }
        } else if (mode == "prod") {
          acc = std::accumulate(vals.begin(), vals.end(), 1.0, std::multiplies<double>());
        } else if (mode == "amax") {
          acc = *std::max_element(vals.begin(), vals.end());
        } else {
          acc = *std::min_element(vals.begin(), vals.end());
        }
        o.data[e] = acc;
      }
      out.push_back(o);
    }
  }
  return out;
}

std::vector<Tensor> run_scatter_reduce(const Sample& s, bool with_mean) {
  std::vector<Tensor> out;
  for (const char* reduce : kReductions) {
    if (std::string(reduce) == "mean" && !with_mean) continue;
    for (bool include_self : {true, false}) {
      out.push_back(
          scatter_reduce(s.args[0], ival(s.args[1]), s.args[2], s.args[3], reduce, include_self));
    }
  }
  return out;
}

std::vector<Sample> scatter_reduce_samples(DType dt) {
  return {
      {{random_tensor({3, 4}, dt, -3, 3, 1), param(1), idx({3, 5}, 0, 3, 2),
        random_tensor({3, 5}, dt, -3, 3, 3)},
       "[3,4] dim 1, duplicates"},
      {{noncontiguous(random_tensor({5, 2}, dt, -3, 3, 4)), param(0), idx({4, 2}, 0, 4, 5),
        noncontiguous(random_tensor({4, 2}, dt, -3, 3, 6))},
       "non-contiguous, dim 0"},
      {{random_tensor({4}, dt, -3, 3, 7), param(-1), idx({0}, 0, 0, 8), random_tensor({0}, dt)},
       "empty index"},
      {{random_tensor({1}, dt, -3, 3, 9), param(0), idx({1}, 0, 0, 10),
        random_tensor({1}, dt, -3, 3, 11)},
       "size 1"},
  };
}

// ---- advanced indexing --------------------------------------------------------------------------

// Index kinds in a sample: 0 = undefined (full slice), 1 = integer tensor, 2 = bool mask.
// Sample layout for index: {self, kinds, index tensors...}.
std::vector<Tensor> index_list(const Sample& s, size_t first) {
  return std::vector<Tensor>(s.args.begin() + static_cast<std::ptrdiff_t>(first), s.args.end());
}

// Where each element of `index(self, indices)` comes from: the result shape and, for every
// result element in row-major order, the row-major offset in self.
struct RefIndex {
  Shape shape;
  std::vector<int64_t> source;
};

RefIndex ref_advanced_index(const Shape& self_shape, const Shape& kinds, const Refs& indices) {
  Shape sshape = self_shape;
  std::vector<RefTensor> per_dim;  // empty data: full slice
  std::vector<bool> defined;
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (kinds[k] == 0) {
      per_dim.emplace_back();
      defined.push_back(false);
    } else if (kinds[k] == 1) {
      per_dim.push_back(indices[k]);
      defined.push_back(true);
    } else {
      const RefTensor& m = indices[k];
      std::vector<Shape> coords;
      for (int64_t i = 0; i < m.numel(); ++i)
        if (m.data[i] != 0) coords.push_back(unravel(i, m.shape));
      for (int64_t j = 0; j < m.dim(); ++j) {
        RefTensor c(Shape{static_cast<int64_t>(coords.size())});
        for (size_t i = 0; i < coords.size(); ++i) c.data[i] = static_cast<double>(coords[i][j]);
        per_dim.push_back(c);
        defined.push_back(true);
      }
    }
  }
  const int64_t nd = static_cast<int64_t>(sshape.size());
  per_dim.resize(static_cast<size_t>(nd));
  defined.resize(static_cast<size_t>(nd), false);
  std::vector<int64_t> dims;
  Shape b;
  for (int64_t d = 0; d < nd; ++d) {
    if (!defined[d]) continue;
    b = dims.empty() ? per_dim[d].shape : broadcast_shapes(b, per_dim[d].shape, "ref");
    dims.push_back(d);
  }
  const bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  // Result dims: each is either ("slice", self dim) or part of B.
  std::vector<int64_t> slice_dims_before, slice_dims_after;
  for (int64_t d = 0; d < nd; ++d) {
    if (defined[d]) continue;
    if (adjacent && d < dims.front()) {
      slice_dims_before.push_back(d);
    } else {
      slice_dims_after.push_back(d);
    }
  }
  RefIndex out;
  for (int64_t d : slice_dims_before) out.shape.push_back(sshape[d]);
  out.shape.insert(out.shape.end(), b.begin(), b.end());
  for (int64_t d : slice_dims_after) out.shape.push_back(sshape[d]);
  const Shape st = contiguous_strides(sshape);
  const int64_t n = shape_numel(out.shape);
  for (int64_t i = 0; i < n; ++i) {
    const Shape p = unravel(i, out.shape);
    Shape src(static_cast<size_t>(nd));
    size_t pos = 0;
    for (int64_t d : slice_dims_before) src[d] = p[pos++];
    const Shape bidx(p.begin() + static_cast<std::ptrdiff_t>(pos),
                     p.begin() + static_cast<std::ptrdiff_t>(pos + b.size()));
    pos += b.size();
    for (int64_t d : slice_dims_after) src[d] = p[pos++];
    for (int64_t d : dims)
      src[d] = wrap(static_cast<int64_t>(broadcast_at(per_dim[d], bidx)), sshape[d]);
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += src[d] * st[d];
    out.source.push_back(off);
  }
  return out;
}

std::vector<Sample> index_samples(DType dt) {
  Tensor m45 = random_tensor({4, 5}, kBool, 0, 1, 40);
  return {
      {{random_tensor({5, 4}, dt), params({1}), idx({3}, -5, 4, 1)}, "negative indices"},
      {{noncontiguous(random_tensor({4, 5, 6}, dt)), params({0, 1, 1}), Tensor(),
        idx({2, 3}, -5, 4, 2), idx({3}, 0, 5, 3)},
       "adjacent broadcast indices on dims 1, 2"},
      {{random_tensor({4, 5, 6}, dt), params({1, 0, 1}), idx({2}, 0, 3, 4), Tensor(),
        idx({2}, -6, 5, 5)},
       "non-adjacent dims 0, 2"},
      {{random_tensor({4, 5, 6}, dt), params({2}), m45}, "bool mask [4,5]"},
      {{random_tensor({4, 5, 6}, dt), params({0, 2}), Tensor(),
        random_tensor({5}, kBool, 0, 1, 41)},
       "mask on dim 1"},
      {{random_tensor({3, 4}, dt), params({1}), idx({2, 2}, 0, 2, 6).to(kInt32)}, "int32 [2,2]"},
      {{random_tensor({0, 3}, dt), params({0, 1}), Tensor(), idx({2}, 0, 2, 7)}, "empty self"},
      {{random_tensor({3}, dt), params({1}), idx({0}, 0, 0, 8)}, "empty index"},
      {{random_tensor({3, 4}, dt), params({2}), zeros({3, 4}, kBool)}, "all-false mask"},
      {{random_tensor({4, 5, 6}, dt), params({1, 1, 1}), idx({2}, 0, 3, 9), idx({2}, 0, 4, 10),
        idx({2}, -6, 5, 11)},
       "every dim indexed"},
      {{random_tensor({4, 5, 6}, dt), params({2, 0, 1}), random_tensor({4}, kBool, 0, 1, 42),
        Tensor(), idx({1}, 0, 5, 12)},
       "mask and integer, not adjacent"},
      {{random_tensor({1, 1}, dt), params({1, 1}), idx({1}, 0, 0, 13), idx({1}, -1, -1, 14)},
       "size 1"},
  };
}

std::vector<Sample> index_put_samples(DType dt) {
  // Unique target positions only: without accumulate, which duplicate wins is unspecified.
  return {
      {{random_tensor({5, 4}, dt), params({1}), random_tensor({4}, dt, -2, 2, 1),
        tensor<int64_t>({0, -1, 2})},
       "rows, broadcast values"},
      {{noncontiguous(random_tensor({4, 5, 6}, dt)), params({0, 1, 1}),
        random_tensor({4, 2, 3}, dt, -2, 2, 2), Tensor(),
        tensor(std::vector<int64_t>{1, 3}, {2, 1}), tensor<int64_t>({0, 2, 4})},
       "non-contiguous self, adjacent dims 1, 2"},
      {{random_tensor({4, 5, 6}, dt), params({1, 0, 1}), random_tensor({5}, dt, -2, 2, 3),
        tensor<int64_t>({0, 3}), Tensor(), tensor<int64_t>({1, -1})},
       "non-adjacent dims 0, 2"},
      {{random_tensor({4, 5, 6}, dt), params({2}), random_tensor({}, dt, -2, 2, 4),
        random_tensor({4, 5}, kBool, 0, 1, 5)},
       "mask, 0-dim value"},
      {{random_tensor({3}, dt), params({1}), random_tensor({0}, dt), idx({0}, 0, 0, 6)},
       "empty index"},
  };
}

std::vector<Sample> index_put_accumulate_samples(DType dt) {
  return {
      {{random_tensor({5, 4}, dt, 0, 3), params({1}), random_tensor({7, 4}, dt, 0, 3, 1),
        idx({7}, -5, 4, 2)},
       "duplicate rows"},
      {{noncontiguous(random_tensor({3, 4}, dt, 0, 3)), params({1, 1}),
        random_tensor({6}, dt, 0, 3, 3), idx({6}, 0, 2, 4), idx({6}, 0, 1, 5)},
       "duplicate elements"},
      {{random_tensor({2, 3}, dt, 0, 3), params({0, 1}), random_tensor({}, dt, 0, 3, 6), Tensor(),
        tensor<int64_t>({1, 1, 1})},
       "one column three times"},
  };
}

Refs ref_index_put(const Refs& r, bool accumulate) {
  const RefTensor& self = r[0];
  const Refs indices(r.begin() + 3, r.end());
  const RefIndex ri = ref_advanced_index(self.shape, ivals(r[1]), indices);
  RefTensor out = self;
  for (size_t i = 0; i < ri.source.size(); ++i) {
    const double v = broadcast_at(r[2], unravel(static_cast<int64_t>(i), ri.shape));
    out.data[ri.source[i]] = accumulate ? out.data[ri.source[i]] + v : v;
  }
  return {out};
}

// ---- masked_select / take / nonzero / embedding ----------------------------------------------

std::vector<Sample> masked_select_samples(DType dt) {
  return {
      {{random_tensor({3, 4}, dt), random_tensor({3, 4}, kBool, 0, 1, 1)}, "same shape"},
      {{random_tensor({3, 4}, dt), random_tensor({4}, kBool, 0, 1, 2)}, "mask broadcast"},
      {{noncontiguous(random_tensor({3, 4}, dt)), random_tensor({2, 1, 4}, kBool, 0, 1, 3)},
       "both broadcast, non-contiguous self"},
      {{random_tensor({}, dt), random_tensor({3}, kBool, 0, 1, 4)}, "0-dim self"},
      {{random_tensor({0, 4}, dt), random_tensor({4}, kBool, 0, 1, 5)}, "empty"},
      {{random_tensor({}, dt), ones({}, kBool)}, "0-dim both"},
  };
}

std::vector<Sample> take_samples(DType dt) {
  return {
      {{noncontiguous(random_tensor({3, 4}, dt)), idx({2, 3}, -12, 11, 1)},
       "non-contiguous self, negative indices"},
      {{random_tensor({5}, dt), idx({0}, 0, 0, 2)}, "empty index"},
      {{random_tensor({}, dt), idx({2}, -1, 0, 3)}, "0-dim self"},
      {{random_tensor({2, 3}, dt), scalar_tensor(4, kInt64)}, "0-dim index"},
  };
}

std::vector<Sample> nonzero_samples(DType dt) {
  auto ternary = [dt](const Shape& shape, uint64_t seed) {
    return random_tensor(shape, kInt64, -1, 1, seed).to(dt);
  };
  return {
      {{ternary({3, 4}, 1)}, "[3,4]"},
      {{ternary({5}, 2)}, "[5]"},
      {{noncontiguous(ternary({2, 3, 2}, 3))}, "non-contiguous [2,3,2]"},
      {{ternary({0, 3}, 4)}, "empty"},
      {{ternary({}, 5)}, "0-dim"},
      {{zeros({2, 2}, dt)}, "all zero"},
      {{ternary({1}, 6)}, "size 1"},
  };
}

std::vector<Sample> embedding_samples(DType dt) {
  return {
      {{random_tensor({6, 3}, dt), idx({2, 4}, 0, 5, 1)}, "[6,3] by [2,4]"},
      {{noncontiguous(random_tensor({5, 4}, dt)), idx({3}, 0, 4, 2).to(kInt32)},
       "non-contiguous weight, int32 indices"},
      {{random_tensor({4, 2}, dt), scalar_tensor(3, kInt64)}, "0-dim index"},
      {{random_tensor({4, 2}, dt), idx({0}, 0, 0, 3)}, "no indices"},
      {{random_tensor({7, 40}, dt), idx({3, 2}, 0, 6, 4)}, "rows (memcpy path)"},
      {{random_tensor({1, 1}, dt), idx({2}, 0, 0, 5)}, "size 1"},
  };
}

// ---- sort / topk -------------------------------------------------------------------------------

// Stable sort of every slice along dim: {values, indices}.
Refs ref_sort(const RefTensor& self, int64_t dim, bool descending, int64_t k = -1) {
  if (self.dim() == 0) return {self, RefTensor(Shape{}, 0.0)};
  dim = wrap(dim, self.dim());
  const int64_t n = self.shape[dim];
  if (k < 0) k = n;
  Shape shape = self.shape;
  shape[dim] = k;
  RefTensor values(shape), indices(shape);
  Shape outer = self.shape;
  outer[dim] = 1;
  for (int64_t o = 0; o < shape_numel(outer); ++o) {
    Shape p = unravel(o, outer);
    std::vector<std::pair<double, int64_t>> slice;
    for (int64_t i = 0; i < n; ++i) {
      p[dim] = i;
      slice.push_back({self.at(p), i});
    }
    std::stable_sort(slice.begin(), slice.end(), [descending](const auto& a, const auto& b) {
      return descending ? a.first > b.first : a.first < b.first;
    });
    for (int64_t i = 0; i < k; ++i) {
      p[dim] = i;
      values.at(p) = slice[i].first;
      indices.at(p) = static_cast<double>(slice[i].second);
    }
  }
  return {values, indices};
}

std::vector<Sample> sort_samples(DType dt) {
  return {
      {{random_tensor({7}, dt), param(0)}, "[7]"},
      {{random_tensor({3, 5}, dt), param(1)}, "[3,5] dim 1"},
      {{noncontiguous(random_tensor({6, 4}, dt)), param(0)}, "non-contiguous, dim 0"},
      {{random_tensor({2, 3, 4}, dt), param(-2)}, "dim -2"},
      {{random_tensor({0, 3}, dt), param(1)}, "empty"},
      {{random_tensor({3, 0}, dt), param(1)}, "empty sorted dim"},
      {{random_tensor({1}, dt), param(0)}, "size 1"},
      {{random_tensor({}, dt), param(0)}, "0-dim"},
      {{random_tensor({40}, dt, -3, 3)}, "many ties (integer dtypes)"},
  };
}

std::vector<Sample> topk_samples(DType dt) {
  return {
      {{random_tensor({7}, dt), param(3), param(0)}, "[7] k 3"},
      {{random_tensor({3, 5}, dt), param(2), param(1)}, "[3,5] k 2 dim 1"},
      {{noncontiguous(random_tensor({6, 4}, dt)), param(4), param(0)}, "non-contiguous, dim 0"},
      {{random_tensor({3, 4}, dt), param(0), param(-1)}, "k 0"},
      {{random_tensor({2, 3}, dt), param(3), param(-1)}, "k == size"},
      {{random_tensor({1}, dt), param(1), param(0)}, "size 1"},
      {{random_tensor({30}, dt, -3, 3), param(10), param(0)}, "ties"},
  };
}

int64_t sort_dim(const Sample& s) { return s.args.size() > 1 ? ival(s.args[1]) : 0; }
int64_t sort_dim(const Refs& r) { return r.size() > 1 ? ival(r[1]) : 0; }

std::vector<OpInfo> entries() {
  std::vector<OpInfo> e = {
      OpInfo{
          "index_select", all_dtypes(), index_select_samples,
          [](const Sample& s) { return one(index_select(s.args[0], ival(s.args[1]), s.args[2])); },
          [](const Refs& r) { return Refs{ref_index_select(r[0], ival(r[1]), r[2])}; }},
      OpInfo{"gather", all_dtypes(), gather_samples,
             [](const Sample& s) { return one(s.args[0].gather(ival(s.args[1]), s.args[2])); },
             [](const Refs& r) { return Refs{ref_gather(r[0], ival(r[1]), r[2])}; }},
      OpInfo{"scatter", all_dtypes(), scatter_samples,
             [](const Sample& s) {
               const int64_t dim = ival(s.args[1]);
               Tensor inplace = noncontiguous(s.args[0].clone());
               inplace.scatter_(dim, s.args[2], s.args[3]);
               return std::vector<Tensor>{scatter(s.args[0], dim, s.args[2], s.args[3]),
                                          s.args[0].scatter(dim, s.args[2], Scalar(1)), inplace};
             },
             [](const Refs& r) {
               const int64_t dim = ival(r[1]);
               auto assign = [](double, double v) { return v; };
               return Refs{ref_scatter(r[0], dim, r[2], r[3], assign),
                           ref_scatter(r[0], dim, r[2], RefTensor(r[2].shape, 1.0), assign),
                           ref_scatter(r[0], dim, r[2], r[3], assign)};
             }},
      // Integer mean rounds down: separate entries for floating and integer dtypes.
      OpInfo{"scatter_reduce", floating_dtypes(), scatter_reduce_samples,
             [](const Sample& s) { return run_scatter_reduce(s, true); },
             [](const Refs& r) { return ref_scatter_reduce(r, false, true); }, 8.0},
      OpInfo{"scatter_reduce", integral_dtypes(), scatter_reduce_samples,
             [](const Sample& s) { return run_scatter_reduce(s, true); },
             [](const Refs& r) { return ref_scatter_reduce(r, true, true); }},
      OpInfo{"scatter_reduce",
             {kBool},
             scatter_reduce_samples,
             [](const Sample& s) { return run_scatter_reduce(s, false); },
             [](const Refs& r) {
               Refs out = ref_scatter_reduce(r, true, false);
               for (auto& o : out) o = as_bool(o);
               return out;
             }},
      OpInfo{"index", all_dtypes(), index_samples,
             [](const Sample& s) { return one(s.args[0].index(index_list(s, 2))); },
             [](const Refs& r) {
               const RefIndex ri =
                   ref_advanced_index(r[0].shape, ivals(r[1]), Refs(r.begin() + 2, r.end()));
               RefTensor out(ri.shape);
               for (size_t i = 0; i < ri.source.size(); ++i) out.data[i] = r[0].data[ri.source[i]];
               return Refs{out};
             }},
      OpInfo{"index_put_", all_dtypes(), index_put_samples,
             [](const Sample& s) {
               Tensor c = noncontiguous(s.args[0].clone());
               c.index_put_(index_list(s, 3), s.args[2]);
               return std::vector<Tensor>{c, index_put(s.args[0], index_list(s, 3), s.args[2])};
             },
             [](const Refs& r) {
               Refs a = ref_index_put(r, false);
               return Refs{a[0], a[0]};
             }},
      OpInfo{"masked_select", all_dtypes(), masked_select_samples,
             [](const Sample& s) { return one(s.args[0].masked_select(s.args[1])); },
             [](const Refs& r) {
               const Shape shape = broadcast_shapes(r[0].shape, r[1].shape, "ref");
               std::vector<double> vals;
               for (int64_t i = 0; i < shape_numel(shape); ++i) {
                 const Shape p = unravel(i, shape);
                 if (broadcast_at(r[1], p) != 0) vals.push_back(broadcast_at(r[0], p));
               }
               const int64_t n = static_cast<int64_t>(vals.size());
               return Refs{RefTensor({n}, vals)};
             }},
      OpInfo{"take", all_dtypes(), take_samples,
             [](const Sample& s) { return one(take(s.args[0], s.args[1])); },
             [](const Refs& r) {
               RefTensor out(r[1].shape);
               for (int64_t i = 0; i < out.numel(); ++i)
                 out.data[i] = r[0].data[wrap(static_cast<int64_t>(r[1].data[i]), r[0].numel())];
               return Refs{out};
             }},
      OpInfo{"nonzero", all_dtypes(), nonzero_samples,
             [](const Sample& s) { return one(s.args[0].nonzero()); },
             [](const Refs& r) {
               std::vector<double> coords;
               int64_t n = 0;
               for (int64_t i = 0; i < r[0].numel(); ++i) {
                 if (r[0].data[i] == 0) continue;
                 ++n;
                 for (int64_t c : unravel(i, r[0].shape)) coords.push_back(static_cast<double>(c));
               }
               return Refs{RefTensor({n, r[0].dim()}, coords)};
             },
             4.0, [](DType) { return kInt64; }},
      // Row 0 of weight as padding_idx gets no gradient by design (it is not the derivative),
      // so the second output zeroes the rows that read it: its values then do not depend on
      // row 0 either, and gradcheck checks the other rows. The first output checks every row.
      OpInfo{"embedding", all_dtypes(), embedding_samples,
             [](const Sample& s) {
               Tensor padded = embedding(s.args[0], s.args[1], 0);
               Tensor reads_padding = eq(s.args[1], 0).unsqueeze(-1);
               return std::vector<Tensor>{embedding(s.args[0], s.args[1]),
                                          masked_fill(padded, reads_padding, 0)};
             },
             [](const Refs& r) {
               const int64_t d = r[0].shape[1];
               Shape shape = r[1].shape;
               shape.push_back(d);
               RefTensor out(shape), padded(shape);
               for (int64_t i = 0; i < r[1].numel(); ++i) {
                 const int64_t row = static_cast<int64_t>(r[1].data[i]);
                 for (int64_t j = 0; j < d; ++j) {
                   out.data[i * d + j] = r[0].at({row, j});
                   padded.data[i * d + j] = row == 0 ? 0.0 : out.data[i * d + j];
                 }
               }
               return Refs{out, padded};
             }},
      OpInfo{"sort", all_dtypes(), sort_samples,
             [](const Sample& s) {
               auto [v, i] = sort(s.args[0], sort_dim(s));
               auto [vd, id] = s.args[0].sort(sort_dim(s), true);
               return std::vector<Tensor>{v, i, vd, id};
             },
             [](const Refs& r) {
               Refs a = ref_sort(r[0], sort_dim(r), false), d = ref_sort(r[0], sort_dim(r), true);
               return Refs{a[0], a[1], d[0], d[1]};
             }},
      OpInfo{"argsort", all_dtypes(), sort_samples,
             [](const Sample& s) {
               return std::vector<Tensor>{argsort(s.args[0], sort_dim(s)),
                                          s.args[0].argsort(sort_dim(s), true)};
             },
             [](const Refs& r) {
               return Refs{ref_sort(r[0], sort_dim(r), false)[1],
                           ref_sort(r[0], sort_dim(r), true)[1]};
             },
             4.0, [](DType) { return kInt64; }},
      OpInfo{"topk", all_dtypes(), topk_samples,
             [](const Sample& s) {
               const int64_t k = ival(s.args[1]), dim = ival(s.args[2]);
               auto [v, i] = s.args[0].topk(k, dim);
               auto [vs, is] = topk(s.args[0], k, dim, false);
               return std::vector<Tensor>{v, i, vs, is};
             },
             [](const Refs& r) {
               const int64_t k = ival(r[1]), dim = ival(r[2]);
               Refs l = ref_sort(r[0], dim, true, k), s = ref_sort(r[0], dim, false, k);
               return Refs{l[0], l[1], s[0], s[1]};
             }},
  };
  auto add = [&](std::vector<OpInfo> more) { e.insert(e.end(), more.begin(), more.end()); };
  add(numeric_and_bool(OpInfo{
      "scatter_add",
      {},
      scatter_samples,
      [](const Sample& s) {
        const int64_t dim = ival(s.args[1]);
        Tensor inplace = noncontiguous(s.args[0].clone());
        inplace.scatter_add_(dim, s.args[2], s.args[3]);
        return std::vector<Tensor>{s.args[0].scatter_add(dim, s.args[2], s.args[3]), inplace};
      },
      [](const Refs& r) {
        auto add = [](double a, double b) { return a + b; };
        RefTensor o = ref_scatter(r[0], ival(r[1]), r[2], r[3], add);
        return Refs{o, o};
      }}));
  add(numeric_and_bool(OpInfo{
      "index_add",
      {},
      [](DType dt) {
        return std::vector<Sample>{
            {{random_tensor({5, 3}, dt, 0, 3), param(0), idx({4}, 0, 4, 1),
              random_tensor({4, 3}, dt, 0, 3, 2)},
             "[5,3] dim 0, duplicates"},
            {{noncontiguous(random_tensor({3, 6}, dt, 0, 3)), param(1),
              idx({3}, 0, 5, 3).to(kInt32), noncontiguous(random_tensor({3, 3}, dt, 0, 3, 4))},
             "non-contiguous, dim 1, int32 index"},
            {{random_tensor({2, 3}, dt, 0, 3), param(-1), idx({0}, 0, 0, 5),
              random_tensor({2, 0}, dt)},
             "empty index"},
            {{random_tensor({1}, dt, 0, 3), param(0), idx({2}, 0, 0, 6),
              random_tensor({2}, dt, 0, 3, 7)},
             "size 1, same index twice"},
        };
      },
      [](const Sample& s) {
        const int64_t dim = ival(s.args[1]);
        Tensor inplace = noncontiguous(s.args[0].clone());
        inplace.index_add_(dim, s.args[2], s.args[3], 2);
        return std::vector<Tensor>{index_add(s.args[0], dim, s.args[2], s.args[3], 2), inplace};
      },
      [](const Refs& r) {
        const RefTensor& self = r[0];
        const int64_t dim = wrap(ival(r[1]), self.dim());
        RefTensor out = self;
        for (int64_t i = 0; i < r[3].numel(); ++i) {
          Shape p = unravel(i, r[3].shape);
          const double v = r[3].data[i];
          p[dim] = static_cast<int64_t>(r[2].data[p[dim]]);
          out.at(p) += 2 * v;
        }
        return Refs{out, out};
      }}));
  add(numeric_and_bool(OpInfo{"index_put_",
                              {},
                              index_put_accumulate_samples,
                              [](const Sample& s) {
                                Tensor c = noncontiguous(s.args[0].clone());
                                c.index_put_(index_list(s, 3), s.args[2], true);
                                return one(c);
                              },
                              [](const Refs& r) { return ref_index_put(r, true); }}));
  return e;
}

const OpTableRegistrar reg(entries());

}  // namespace
}  // namespace ember::testing
