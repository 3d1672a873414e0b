// Core tensor behaviour: 16-bit float conversions, type promotion, views and storage sharing,
// version counters, the allocator's statistics, the thread pool, printing and error messages.

#include <ember/ember.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/tensor_iter.h"

using namespace ember;
using Catch::Contains;

namespace {
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// The branching definitions of the 16-bit conversions, case by case: core/half.h computes the
// same bits without branches (Note [Branch-free 16-bit conversions]).
uint16_t reference_float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (a < 0x38800000u) {  // subnormal or zero: value = kept * 2^-24
    if (a < 0x33000000u) return static_cast<uint16_t>(sign);
    const int shift = 126 - static_cast<int>(a >> 23);
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const uint32_t dropped = mant & ((1u << shift) - 1u), half_way = 1u << (shift - 1);
    uint32_t kept = mant >> shift;
    if (dropped > half_way || (dropped == half_way && (kept & 1u))) ++kept;
    return static_cast<uint16_t>(sign | kept);
  }
  a += 0xfffu + ((a >> 13) & 1u);
  a -= (127u - 15u) << 23;
  return static_cast<uint16_t>(sign | (a >> 13));
}

uint32_t reference_half_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return sign | 0x7f800000u | (mant << 13);  // inf / NaN, payload kept
  if (exp == 0) {
    if (mant == 0) return sign;
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // exact
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return sign | b;
  }
  return sign | ((exp + 127u - 15u) << 23) | (mant << 13);
}

uint16_t reference_float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Float bit patterns that exercise the rounding: every value of the bits above `low_bits`, each
// with the low bits at 0, 1, just below, at and just above the tie, and all ones.
std::vector<uint32_t> rounding_patterns(int low_bits) {
  const uint32_t tie = 1u << (low_bits - 1), ones = (1u << low_bits) - 1u;
  const uint32_t lows[] = {0u, 1u, tie - 1u, tie, tie + 1u, ones};
  std::vector<uint32_t> out;
  out.reserve((size_t{1} << (32 - low_bits)) * 6);
  for (uint64_t hi = 0; hi < (uint64_t{1} << (32 - low_bits)); ++hi)
    for (uint32_t lo : lows) out.push_back(static_cast<uint32_t>(hi << low_bits) | lo);
  return out;
}
}  // namespace

TEST_CASE("16-bit conversions match their branching definitions bit for bit", "[core][half]") {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    REQUIRE(bits_of(static_cast<float>(Half::from_bits(h))) == reference_half_to_float_bits(h));
    REQUIRE(bits_of(static_cast<float>(BFloat16::from_bits(h))) == (b << 16));
  }
  // Every float whose half is subnormal or zero (both signs: the adder trick's range).
  for (uint32_t a = 0; a < 0x38800000u + 4096u; a += (a < 0x33000000u ? 4093u : 1u)) {
    for (uint32_t u : {a, a | 0x80000000u}) {
      const float f = from_bits(u);
      REQUIRE(Half(f).x == reference_float_to_half(f));
    }
  }
  for (uint32_t u : rounding_patterns(13)) {
    const float f = from_bits(u);
    REQUIRE(Half(f).x == reference_float_to_half(f));
  }
  for (uint32_t u : rounding_patterns(16)) {
    const float f = from_bits(u);
    REQUIRE(BFloat16(f).x == reference_float_to_bf16(f));
  }
}

TEST_CASE("tensor casts to and from 16-bit floats give the scalar conversions' bits",
          "[core][half]") {
  // The casts run as vectorised loops (and strided ones): every lane must agree with the
  // scalar conversion, including NaN payloads, subnormals and ties.
  std::vector<uint32_t> patterns = rounding_patterns(13);
  const auto n = static_cast<int64_t>(patterns.size());
  Tensor f = from_blob(patterns.data(), {n}, kFloat32).clone();
  for (DType half_type : {kFloat16, kBFloat16}) {
    INFO(dtype_name(half_type));
    for (bool strided : {false, true}) {
      Tensor src = strided ? f.view({n / 2, 2}).select(1, 0) : f;  // every other element
      Tensor h = src.to(half_type);
      REQUIRE(h.numel() == src.numel());
      const auto* hb = static_cast<const uint16_t*>(h.data_ptr());
      const auto* fb = static_cast<const uint32_t*>(src.contiguous().data_ptr());
      for (int64_t i = 0; i < h.numel(); ++i) {
        const float v = from_bits(fb[i]);
        REQUIRE(hb[i] ==
                (half_type == kFloat16 ? reference_float_to_half(v) : reference_float_to_bf16(v)));
      }
      Tensor back = h.to(kFloat32);
      const auto* bb = static_cast<const uint32_t*>(back.data_ptr());
      for (int64_t i = 0; i < h.numel(); ++i)
        REQUIRE(bb[i] == (half_type == kFloat16 ? reference_half_to_float_bits(hb[i])
                                                : static_cast<uint32_t>(hb[i]) << 16));
    }
  }
}

TEST_CASE("Half converts with round-to-nearest-even", "[core][half]") {
  CHECK(Half(1.0f).x == 0x3c00);
  CHECK(Half(-2.0f).x == 0xc000);
  CHECK(Half(65504.0f).x == 0x7bff);                          // largest finite
  CHECK(Half(65519.0f).x == 0x7bff);                          // rounds down to max
  CHECK(Half(65520.0f).x == 0x7c00);                          // tie above max -> inf
  CHECK(Half(1.0f + std::ldexp(1.0f, -11)).x == 0x3c00);      // tie -> even (down)
  CHECK(Half(1.0f + 3 * std::ldexp(1.0f, -11)).x == 0x3c02);  // tie -> even (up)
  CHECK(Half(std::ldexp(1.0f, -24)).x == 0x0001);             // smallest subnormal
  CHECK(Half(std::ldexp(1.0f, -25)).x == 0x0000);             // tie -> even zero
  CHECK(Half(std::ldexp(3.0f, -26)).x == 0x0001);             // 0.75 ulp rounds up
  CHECK(Half(std::ldexp(3.0f, -25)).x == 0x0002);             // 1.5 ulp tie -> even 2
  CHECK(Half(std::ldexp(1023.5f, -24)).x == 0x0400);          // subnormal rounds into normal
  CHECK(std::isnan(static_cast<float>(Half(std::nanf("")))));
  CHECK(std::isinf(static_cast<float>(Half(1e9f))));
  // Every finite half survives half -> float -> half exactly.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    REQUIRE(Half(f).x == b);
  }
}

TEST_CASE("BFloat16 converts with round-to-nearest-even", "[core][half]") {
  CHECK(BFloat16(1.0f).x == 0x3f80);
  CHECK(BFloat16(from_bits(0x3f808000u)).x == 0x3f80);  // tie -> even (down)
  CHECK(BFloat16(from_bits(0x3f818000u)).x == 0x3f82);  // tie -> even (up)
  CHECK(BFloat16(from_bits(0x3f808001u)).x == 0x3f81);  // above the tie
  CHECK(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    BFloat16 h = BFloat16::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    REQUIRE(BFloat16(f).x == b);
  }
}

TEST_CASE("type promotion follows PyTorch", "[core][promotion]") {
  CHECK(promote_types(kInt32, kFloat16) == kFloat16);
  CHECK(promote_types(kBFloat16, kFloat16) == kFloat32);
  CHECK(promote_types(kUInt8, kBool) == kUInt8);
  CHECK(promote_types(kInt64, kFloat32) == kFloat32);
  CHECK(promote_types(kInt32, kUInt8) == kInt32);
  Tensor i32 = ones({2}, kInt32);
  CHECK((i32 * 2.5).dtype() == kFloat32);  // an int tensor times a double is float32
  CHECK((i32 * 2).dtype() == kInt32);      // an int Scalar does not widen the tensor
  CHECK((i32 + ones({2}, kInt64)).dtype() == kInt64);
  CHECK(result_type({ones({2}, kFloat16), scalar_tensor(1.5, kFloat64)}) == kFloat16);
  CHECK(result_type({i32, scalar_tensor(1.5, kFloat64)}) == kFloat64);
  CHECK(result_type({ones({2}, kUInt8), wrapped_scalar_tensor(true)}) == kUInt8);
  CHECK((ones({2}, kBool) + ones({2}, kBool)).dtype() == kBool);
  CHECK(result_type(ones({2}, kBool), Scalar(3)) == kInt64);
  set_default_dtype(kFloat64);
  CHECK((i32 * 2.5).dtype() == kFloat64);
  set_default_dtype(kFloat32);
  CHECK_THROWS_WITH(set_default_dtype(kInt32), Contains("set_default_dtype"));
}

TEST_CASE("views share storage and see each other's writes", "[core][views]") {
  Tensor a = arange(12, kFloat32).view({3, 4});
  Tensor t = a.t();
  CHECK(t.is_alias_of(a));
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.strides() == Shape{1, 4});
  t.select(0, 1).fill_(-1);  // column 1 of a
  CHECK(a[0][1].item<float>() == -1);
  CHECK(a[2][1].item<float>() == -1);
  CHECK(a[2][2].item<float>() == 10);
  Tensor s = a.slice(1, 1, std::nullopt, 2);  // columns 1 and 3
  CHECK(s.sizes() == Shape{3, 2});
  CHECK(s.is_alias_of(a));
  CHECK(a.narrow(0, 1, 2).storage_offset() == 4);
  CHECK(a.unsqueeze(0).expand({5, 3, 4}).strides() == Shape{0, 4, 1});
  CHECK(a.diagonal().sizes() == Shape{3});
  CHECK(a.diagonal().strides() == Shape{5});
  CHECK(a.unfold(1, 2, 2).sizes() == Shape{3, 2, 2});
  CHECK(a.flatten().is_alias_of(a));
}

TEST_CASE("reshape copies only when it must", "[core][views]") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  CHECK(a.reshape({3, 2}).is_alias_of(a));
  Tensor t = a.t();
  Tensor r = t.reshape({6});
  CHECK_FALSE(r.is_alias_of(a));
  CHECK(r[1].item<float>() == 3);
  CHECK_THROWS_WITH(t.view({6}), Contains("view") && Contains("use reshape"));
  CHECK(t.contiguous().view({6})[1].item<float>() == 3);
  CHECK_THROWS_WITH(a.view({4, -1}), Contains("[4, -1] is invalid for input of size 6"));
  CHECK_THROWS_WITH(a.view({-1, -1}), Contains("only one dimension can be inferred"));
}

TEST_CASE("in-place ops bump the storage's version counter", "[core][version]") {
  Tensor a = zeros({4});
  Tensor v = a.view({2, 2});
  uint32_t v0 = a.version();
  a.fill_(1);
  CHECK(a.version() == v0 + 1);
  v.add_(1);
  CHECK(a.version() == v0 + 2);  // a view's write is seen by the base
  a.zero_();
  a.copy_(ones({4}));
  a.mul_(ones({4}));
  CHECK(v.version() == v0 + 5);
  Tensor c = a.clone();
  CHECK(c.version() == 1);  // a fresh storage; only the clone's own copy_ counted
  (void)(a + 1);            // out-of-place ops do not bump
  CHECK(a.version() == v0 + 5);
}

TEST_CASE("the CPU allocator keeps statistics", "[core][allocator]") {
  MemoryStats before = memory_stats();
  reset_peak_memory_stats();
  {
    Tensor a = empty({1000}, kFloat64);
    MemoryStats mid = memory_stats();
    CHECK(mid.allocated_bytes == before.allocated_bytes + 8000);
    CHECK(mid.num_allocations == before.num_allocations + 1);
    CHECK(reinterpret_cast<uintptr_t>(a.data_ptr()) % 64 == 0);
    Tensor b = empty({500}, kFloat32);
    CHECK(memory_stats().peak_allocated_bytes >= before.allocated_bytes + 10000);
  }
  MemoryStats after = memory_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + 10000);
  CHECK(after.total_allocations >= before.total_allocations + 2);
  reset_peak_memory_stats();
  CHECK(memory_stats().peak_allocated_bytes == after.allocated_bytes);
}

TEST_CASE("the CPU allocator reuses freed blocks", "[core][allocator]") {
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
  void* first;
  {
    Tensor big = empty({1 << 20}, kFloat32);  // 4 MiB: a large block
    first = big.data_ptr();
  }
  CHECK(memory_stats().cached_bytes >= 4 << 20);
  {
    Tensor again = empty({1 << 20}, kFloat32);
    CHECK(again.data_ptr() == first);  // the cached block, no fresh pages to fault in
    CHECK(memory_stats().cached_bytes == 0);
  }
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
  // Small blocks come back from the per-thread free lists.
  void* small;
  { small = empty({10}).data_ptr(); }
  CHECK(empty({12}).data_ptr() == small);  // same 64-byte size class
}

TEST_CASE("from_blob borrows memory and calls the deleter once", "[core][factory]") {
  std::vector<float> data = {1, 2, 3, 4};
  int deleted = 0;
  {
    Tensor t = from_blob(data.data(), {2, 2}, kFloat32, [&](void* p) {
      CHECK(p == data.data());
      ++deleted;
    });
    Tensor v = t.t();
    t.fill_(7);
    CHECK(data[3] == 7);
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
}

TEST_CASE("factories", "[core][factory]") {
  CHECK(arange(5).dtype() == kInt64);
  CHECK(arange(0.0, 1.0, 0.25).sizes() == Shape{4});
  CHECK(arange(0.0, 1.0, 0.25).dtype() == kFloat32);
  CHECK(full({2}, 3).dtype() == kInt64);
  CHECK(full({2}, 3.5).dtype() == kFloat32);
  CHECK(full({2}, true).dtype() == kBool);
  CHECK(zeros_like(ones({3}, kInt32)).dtype() == kInt32);
  CHECK(linspace(0, 1, 11)[10].item<float>() == 1.0f);
  Tensor e = eye(3, 4);
  CHECK(e.sizes() == Shape{3, 4});
  CHECK(e[2][2].item<float>() == 1);
  CHECK(e[2][3].item<float>() == 0);
  CHECK_THROWS_WITH(zeros({2, -1}), Contains("negative size -1"));
  CHECK_THROWS_WITH(arange(0, 5, 0), Contains("step must be nonzero"));
  CHECK_THROWS_WITH(tensor(std::vector<float>{1, 2, 3}, {2, 2}),
                    Contains("holds 4 elements but 3"));
}

TEST_CASE("the thread pool covers each index once and propagates errors", "[core][parallel]") {
  int saved = num_threads();
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    CHECK(num_threads() == n);
    std::vector<std::atomic<int>> hits(100000);
    parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    bool once = true;
    for (auto& h : hits) once = once && h.load() == 1;
    CHECK(once);
    CHECK_THROWS_WITH(parallel_for(0, 100000, 10,
                                   [&](int64_t b, int64_t) {
                                     if (b > 0) EMBER_ERROR("boom from a worker");
                                     if (n == 1) EMBER_ERROR("boom from a worker");
                                   }),
                      Contains("boom"));
    // Nested calls run inline instead of deadlocking or oversubscribing.
    std::atomic<int64_t> total{0};
    parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        parallel_for(0, 1000, 10, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    });
    CHECK(total.load() == 4000);
  }
  set_num_threads(saved);
  CHECK_THROWS_WITH(set_num_threads(0), Contains("at least 1"));
}

TEST_CASE("TensorIter coalesces and broadcasts", "[core][iter]") {
  Tensor out;
  Tensor a = ones({2, 3, 4});
  TensorIter it = TensorIter::binary_op(out, a, ones({4}), "add");
  CHECK(it.numel() == 24);
  CHECK(out.sizes() == Shape{2, 3, 4});
  CHECK(it.ndim() == 2);  // [4] broadcast over [2*3]
  Tensor out2;
  TensorIter it2 = TensorIter::binary_op(out2, a, a, "add");
  CHECK(it2.ndim() == 1);
  CHECK(it2.is_contiguous());
  Tensor out3;
  TensorIter it3 = TensorIter::binary_op(out3, a.transpose(0, 2), a.transpose(0, 2), "add");
  CHECK(it3.ndim() == 1);  // both transposed the same way: still one contiguous run
  Tensor bad = zeros({3});
  CHECK_THROWS_WITH(TensorIter::binary_op(bad, a, a, "add_"),
                    Contains("output with shape [3] doesn't match the broadcast shape [2, 3, 4]"));
}

TEST_CASE("printing looks like PyTorch", "[core][print]") {
  CHECK(arange(6, kFloat32).view({2, 3}).to_string() ==
        "tensor([[0., 1., 2.],\n        [3., 4., 5.]])");
  CHECK(tensor<double>({1.0, 2.5}).view({1, 2}).to_string() ==
        "tensor([[1.0000, 2.5000]], dtype=float64)");
  CHECK(tensor<int64_t>({1, 2, 3}).to_string() == "tensor([1, 2, 3])");
  CHECK(tensor<int32_t>({-1, 20}).to_string() == "tensor([-1, 20], dtype=int32)");
  CHECK(tensor({true, false}).to_string() == "tensor([ True, False])");
  CHECK(scalar_tensor(3.5).to_string() == "tensor(3.5000)");
  CHECK(zeros({0, 3}).to_string() == "tensor([], size=[0, 3])");
  CHECK(tensor<float>({1e-5f, 1e3f}).to_string() == "tensor([1.0000e-05, 1.0000e+03])");
  CHECK(arange(2000).to_string() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  CHECK(shape_str({2, 3}) == "[2, 3]");
}

TEST_CASE("bad input raises ember::Error naming the op", "[core][errors]") {
  Tensor a = zeros({2, 3});
  CHECK_THROWS_AS(a.select(0, 5), Error);
  CHECK_THROWS_WITH(a.select(0, 5), Contains("select: index 5 out of range"));
  CHECK_THROWS_WITH(a.transpose(0, 2), Contains("transpose: dimension 2 out of range"));
  CHECK_THROWS_WITH(a.permute({0, 0}), Contains("permute: dim 0 repeats"));
  CHECK_THROWS_WITH(a.expand({4, 3}), Contains("expand"));
  CHECK_THROWS_WITH(a.item<float>(), Contains("item: a tensor with 6 elements"));
  CHECK_THROWS_WITH(a.narrow(1, 2, 2), Contains("narrow"));
  CHECK_THROWS_WITH(a.data_ptr<double>(), Contains("data_ptr: tensor has dtype float32"));
  CHECK_THROWS_WITH(a.as_strided({3, 3}, {3, 1}), Contains("as_strided"));
  CHECK_THROWS_WITH(Device("gpu"), Contains("cannot parse device string 'gpu'"));
  CHECK_THROWS_WITH(a + zeros({4}), Contains("add: shapes [2, 3] and [4] cannot be broadcast"));
  CHECK_THROWS_WITH(Tensor().dim(), Contains("undefined tensor"));
  if (!cuda_is_built()) {
    CHECK_THROWS_WITH(zeros({2}, Device("cuda")), Contains("built without CUDA"));
    CHECK_THROWS_WITH(a.to(Device("cuda:0")), Contains("built without CUDA"));
  }
  CHECK_THROWS_WITH(ones({2}, kInt32).add_(ones({2}, kFloat32)),
                    Contains("result type float32 can't be cast to the desired output type int32"));
}
