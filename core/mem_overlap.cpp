#include "core/mem_overlap.h"

#include <algorithm>
#include <cstdint>

#include "core/small_vector.h"

namespace ember {

namespace {

// The bytes a non-empty tensor can reach: [begin, end).
struct StrideSize {
  int64_t stride, size;
  bool operator<(const StrideSize& o) const { return stride < o.stride; }
};

struct ByteRange {
  uintptr_t begin = 0, end = 0;
};

ByteRange byte_range(const Tensor& t) {
  const auto item = static_cast<int64_t>(t.element_size());
  int64_t last = 0;  // the largest element offset; strides are never negative in ember
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {begin, begin + static_cast<uintptr_t>((last + 1) * item)};
}

// Whether t's elements fill its byte range exactly, each location once.
bool is_dense(const Tensor& t, const ByteRange& r) {
  return has_internal_overlap(t) == MemOverlap::No &&
         r.end - r.begin == static_cast<uintptr_t>(t.numel()) * t.element_size();
}

bool contains(const ByteRange& r, uintptr_t p) { return p >= r.begin && p < r.end; }

}  // namespace

MemOverlap has_internal_overlap(const Tensor& t) {
  if (t.is_contiguous()) return MemOverlap::No;
  // Dims that take part (size > 1), by stride. A zero stride repeats one location.
  SmallVector<StrideSize, 8> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] < 2) continue;
    if (t.strides()[d] == 0) return MemOverlap::Yes;
    dims.push_back({t.strides()[d], t.sizes()[d]});
  }
  std::sort(dims.begin(), dims.end());
  // Sorted by stride, every stride passing the extent of the dims before it means no two
  // elements meet (a mixed-radix number with no carry). Failing it is not proof of overlap.
  int64_t extent = 0;  // the largest offset the smaller dims reach
  for (const auto& [stride, size] : dims) {
    if (stride <= extent) return MemOverlap::TooHard;
    extent += (size - 1) * stride;
  }
  return MemOverlap::No;
}

MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return MemOverlapStatus::No;
  if (a.device() != b.device()) return MemOverlapStatus::No;
  if (a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
      a.element_size() == b.element_size())
    return MemOverlapStatus::Full;
  const ByteRange ra = byte_range(a), rb = byte_range(b);
  if (ra.end <= rb.begin || rb.end <= ra.begin) return MemOverlapStatus::No;
  // The ranges meet. A tensor that fills its range shares memory with every element of the
  // other that falls in it; the other's first and last elements are the ones to test.
  const uintptr_t a_last = ra.end - a.element_size(), b_last = rb.end - b.element_size();
  if (is_dense(a, ra) && (contains(ra, rb.begin) || contains(ra, b_last)))
    return MemOverlapStatus::Partial;
  if (is_dense(b, rb) && (contains(rb, ra.begin) || contains(rb, a_last)))
    return MemOverlapStatus::Partial;
  return MemOverlapStatus::TooHard;
}

void assert_no_internal_overlap(const Tensor& t, const char* op) {
  EMBER_CHECK(has_internal_overlap(t) != MemOverlap::Yes, op,
              ": unsupported operation: more than one element of the written-to tensor (shape ",
              shape_str(t.sizes()), ", strides ", shape_str(t.strides()),
              ") refers to a single memory location. Please clone() the tensor before "
              "performing the operation.");
}

void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  EMBER_CHECK(get_overlap_status(out, in) != MemOverlapStatus::Partial, op,
              ": unsupported operation: some elements of the input tensor (shape ",
              shape_str(in.sizes()), ", strides ", shape_str(in.strides()),
              ") and the written-to tensor (shape ", shape_str(out.sizes()), ", strides ",
              shape_str(out.strides()),
              ") refer to a single memory location. Please clone() the tensor before performing "
              "the operation.");
}

void assert_no_overlap(const Tensor& out, const Tensor& in, const char* op) {
  const MemOverlapStatus s = get_overlap_status(out, in);
  EMBER_CHECK(s != MemOverlapStatus::Partial && s != MemOverlapStatus::Full, op,
              ": unsupported operation: some elements of the input tensor (shape ",
              shape_str(in.sizes()), ") and the written-to tensor (shape ", shape_str(out.sizes()),
              ") refer to a single memory location. Please clone() the tensor before performing "
              "the operation.");
}

}  // namespace ember
