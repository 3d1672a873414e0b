// TensorIter's 32-bit index splitting (Note [32-bit indexing] in core/tensor_iter.h). The huge
// iterations view a few bytes through from_blob / expand with strides that make their byte
// offsets exceed 2^31; nothing is ever read or written through them. The iteration machinery
// (serial_for_each over each sub-iterator) reports every row it would run, and the rows are
// checked to cover every element exactly once.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "core/ops/binary.h"
#include "core/tensor_iter.h"
#include "test_util.h"

using namespace ember;
using ember::testing::values;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A huge float32 "tensor" over a few real bytes, never dereferenced: element (i, j) sits at
// element offset i * row_stride + j * col_stride.
Tensor fake_huge(float* base, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return from_blob(base, {rows, cols}, kFloat32, nullptr, {row_stride, col_stride});
}

// Checks that the rows the sub-iterators run visit every element of a (rows, cols) operand 0
// with element strides (row_stride, 1) exactly once: rows run along the column index, so each
// is an interval of columns in one matrix row; the intervals of one matrix row must be disjoint
// and in bounds, and their lengths must add up to the element count.
bool covers_exactly_once(const std::vector<TensorIter>& subs, const char* base, int64_t rows,
                         int64_t cols, int64_t row_stride) {
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> intervals;  // row -> [begin, end)
  int64_t visited = 0;
  bool ok = true;
  for (const TensorIter& sub : subs) {
    sub.serial_for_each(
        [&](char** data, const int64_t* strides, int64_t n) {
          const int64_t off = (data[0] - base) / 4;
          if (strides[0] != 4 && n > 1) ok = false;  // rows must walk the column index
          const int64_t i = off / row_stride, j = off % row_stride;
          intervals[i].push_back({j, j + n});
          visited += n;
        },
        0, sub.numel());
  }
  if (!ok || visited != rows * cols) return false;
  for (auto& [i, v] : intervals) {
    if (i < 0 || i >= rows) return false;
    std::sort(v.begin(), v.end());
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k].first < 0 || v[k].second > cols) return false;
      if (k > 0 && v[k].first < v[k - 1].second) return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("small iterations use 32-bit indexing as they are", "[core][tensor_iter][32bit]") {
  Tensor a = ones({100, 30});
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, "neg");
  CHECK(it.can_use_32bit_indexing());
  std::vector<TensorIter> subs = it.with_32bit_indexing();
  REQUIRE(subs.size() == 1);
  CHECK(subs[0].numel() == 3000);
  CHECK(subs[0].data(0) == it.data(0));

  Tensor none = empty({0, 5});
  TensorIter e = TensorIter::unary_op(none, empty({0, 5}), "neg");
  CHECK(e.can_use_32bit_indexing());
}

TEST_CASE("a byte extent over 2^31 splits into sub-iterators that each fit",
          "[core][tensor_iter][32bit]") {
  float storage[4] = {};
  // (3, 2^29 + 7) contiguous float32: numel fits in int32, but byte offsets reach 6.4e9. The
  // input is a single float expanded to that shape (byte stride 0).
  const int64_t rows = 3, cols = (int64_t{1} << 29) + 7;
  Tensor out = fake_huge(storage, rows, cols, cols, 1);
  Tensor in = from_blob(storage + 1, {1}, kFloat32).expand({rows, cols});
  // The operands alias one small buffer on purpose (only the geometry is looked at; no kernel
  // runs), so the overlap check is off.
  TensorIter it =
      TensorIterConfig("copy_").add_output(out).add_input(in).check_mem_overlap(false).build();
  CHECK(it.numel() == rows * cols);
  CHECK(it.numel() <= kInt32Max);
  CHECK_FALSE(it.can_use_32bit_indexing());

  std::vector<TensorIter> subs = it.with_32bit_indexing();
  CHECK(subs.size() >= 3);  // 6.4e9 bytes in pieces of at most 2^31
  for (const TensorIter& sub : subs) {
    CHECK(sub.can_use_32bit_indexing());
    CHECK(sub.is_sub_iterator());
    for (int64_t s : sub.strides(1)) CHECK(s == 0);  // the expanded input stays expanded
  }
  // The dims coalesce, so this is one line of rows * cols elements.
  CHECK(covers_exactly_once(subs, reinterpret_cast<char*>(storage), 1, rows * cols, rows * cols));
}

TEST_CASE("more than 2^31 elements over padded rows and a transposed operand",
          "[core][tensor_iter][32bit]") {
  float storage[4] = {};
  // (2^14, 2^17 + 3) with 5 floats of padding per row: two dims that never coalesce, 2^31 +
  // 49152 elements (numel itself exceeds int32), byte offsets past 8.6e9. A second operand
  // walks the same shape column-major, a third is a scalar broadcast.
  const int64_t rows = int64_t{1} << 14, cols = (int64_t{1} << 17) + 3, row_stride = cols + 5;
  Tensor out = fake_huge(storage, rows, cols, row_stride, 1);
  Tensor tr = fake_huge(storage + 1, rows, cols, 1, rows);
  Tensor scalar = from_blob(storage + 2, {}, kFloat32);
  TensorIter it = TensorIterConfig("fake")  // aliasing fakes: no overlap check, as above
                      .add_output(out)
                      .add_input(tr)
                      .add_input(scalar)
                      .check_mem_overlap(false)
                      .build();
  REQUIRE(it.ndim() == 2);
  CHECK(it.numel() > kInt32Max);
  CHECK_FALSE(it.can_use_32bit_indexing());

  std::vector<TensorIter> subs = it.with_32bit_indexing();
  int64_t total = 0;
  for (const TensorIter& sub : subs) {
    CHECK(sub.can_use_32bit_indexing());
    total += sub.numel();
  }
  CHECK(total == it.numel());
  CHECK(covers_exactly_once(subs, reinterpret_cast<char*>(storage), rows, cols, row_stride));

  SECTION("the detector catches a wrong split") {
    REQUIRE(subs.size() >= 2);
    std::vector<TensorIter> missing(subs.begin(), subs.end() - 1);
    CHECK_FALSE(
        covers_exactly_once(missing, reinterpret_cast<char*>(storage), rows, cols, row_stride));
    std::vector<TensorIter> duplicated = subs;
    duplicated.back() = duplicated.front();  // right count of pieces, one part twice
    CHECK_FALSE(
        covers_exactly_once(duplicated, reinterpret_cast<char*>(storage), rows, cols, row_stride));
    // A piece that fits but sits past the end (as a split with a wrong data offset would).
    // Half a row further on: never dereferenced, so the address is made as an integer.
    auto* shifted_base = reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(storage) +
                                                  static_cast<uintptr_t>(cols / 2 * 4));
    Tensor out_shifted = fake_huge(shifted_base, rows, cols, row_stride, 1);
    TensorIter it_shifted = TensorIterConfig("fake")
                                .add_output(out_shifted)
                                .add_input(tr)
                                .add_input(scalar)
                                .check_mem_overlap(false)
                                .build();
    std::vector<TensorIter> shifted = subs;
    shifted.back() = it_shifted.with_32bit_indexing().back();
    CHECK_FALSE(
        covers_exactly_once(shifted, reinterpret_cast<char*>(storage), rows, cols, row_stride));
  }
}

TEST_CASE("running a kernel on each sub-iterator gives the unsplit result",
          "[core][tensor_iter][32bit]") {
  // A small limit makes ordinary tensors split, so the real kernel checks every piece: a
  // broadcast operand, a transposed one, and odd sizes so halves are unequal.
  Tensor a = arange(0, 37 * 53, 1, TensorOptions(kFloat32)).reshape({37, 53});
  Tensor b = arange(0, 53 * 37, 1, TensorOptions(kFloat32)).reshape({53, 37}).t();
  Tensor c = arange(1, 54, 1, TensorOptions(kFloat32));
  for (int64_t limit : {int64_t{1000}, int64_t{4096}, int64_t{200}}) {
    Tensor out = full({37, 53}, -1.0);
    TensorIter it = TensorIterConfig("mul").add_output(out).add_input(a).add_input(b).build();
    std::vector<TensorIter> subs = it.split_to_index_limit(limit);
    CHECK(subs.size() > 1);
    for (TensorIter& sub : subs) {
      CHECK(sub.fits_index_limit(limit));
      mul_stub(DeviceType::CPU, sub);
    }
    CHECK(values(out) == values(a * b));

    Tensor out2 = full({37, 53}, -1.0);
    TensorIter it2 = TensorIterConfig("mul").add_output(out2).add_input(a).add_input(c).build();
    for (TensorIter& sub : it2.split_to_index_limit(limit)) mul_stub(DeviceType::CPU, sub);
    CHECK(values(out2) == values(a * c));
  }
  Tensor neg_out;
  CHECK_THROWS_WITH(TensorIter::unary_op(neg_out, a, "neg").split_to_index_limit(0),
                    Catch::Matchers::Contains("index limit"));
}
