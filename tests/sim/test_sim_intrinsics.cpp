// The device intrinsics and half/bf16 math the simulator supplies to host-compiled kernels
// (kernels/cuda/sim/intrinsics.h, half_intrinsics.h): values, rounding modes, saturation.

#include <catch2/catch.hpp>
#include <cfloat>
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/sim/intrinsics.h"

TEST_CASE("sim intrinsics: bit reinterpretation", "[cuda][sim][intrinsics]") {
  CHECK(__float_as_int(1.0f) == 0x3F800000);
  CHECK(__float_as_uint(-0.0f) == 0x80000000u);
  CHECK(__int_as_float(0x40490FDB) == 3.14159274101257324f);
  CHECK(__uint_as_float(0x7F800000u) == INFINITY);
  CHECK(__double_as_longlong(1.0) == 0x3FF0000000000000ll);
  CHECK(__longlong_as_double(0x4000000000000000ll) == 2.0);
  CHECK(__double2hiint(1.0) == 0x3FF00000);
  CHECK(__double2loint(__hiloint2double(0x12345678, -1)) == -1);
  CHECK(__hiloint2double(0x3FF00000, 0) == 1.0);
}

TEST_CASE("sim intrinsics: integer bit operations", "[cuda][sim][intrinsics]") {
  CHECK(__popc(0xF0F0F0F0u) == 16);
  CHECK(__popcll(~0ull) == 64);
  CHECK(__clz(0) == 32);
  CHECK(__clz(1) == 31);
  CHECK(__clz(-1) == 0);
  CHECK(__clzll(0) == 64);
  CHECK(__clzll(1ll << 40) == 23);
  CHECK(__ffs(0) == 0);
  CHECK(__ffs(8) == 4);
  CHECK(__ffsll(1ll << 40) == 41);
  CHECK(__brev(1u) == 0x80000000u);
  CHECK(__brev(0x12345678u) == 0x1E6A2C48u);
  CHECK(__brevll(1ull) == 0x8000000000000000ull);
  CHECK(__brevll(0x00000000FFFFFFFFull) == 0xFFFFFFFF00000000ull);
  CHECK(__umulhi(0xFFFFFFFFu, 0xFFFFFFFFu) == 0xFFFFFFFEu);
  CHECK(__mulhi(-2, 0x40000000) == -1);
  CHECK(__umul64hi(~0ull, 2ull) == 1ull);
  CHECK(__mul64hi(-1ll, 5ll) == -1ll);
  // Only the low 24 bits take part; bit 23 is the sign for __mul24.
  CHECK(__mul24(0x7F000003, 5) == 15);
  CHECK(__mul24(0x00FFFFFF, 2) == -2);
  CHECK(__umul24(0x01000003u, 5u) == 15u);
  CHECK(__sad(3, 10, 100u) == 107u);
  CHECK(__usad(10u, 3u, 1u) == 8u);
  CHECK(__rhadd(INT_MAX, INT_MAX) == INT_MAX);
  CHECK(__uhadd(0xFFFFFFFFu, 1u) == 0x80000000u);
  CHECK(__urhadd(1u, 2u) == 2u);
  CHECK(__byte_perm(0x33221100u, 0x77665544u, 0x5410u) == 0x55441100u);
  CHECK(__byte_perm(0x33221100u, 0x77665544u, 0x0123u) == 0x00112233u);
  CHECK(__funnelshift_l(0x80000000u, 0x1u, 1u) == 0x3u);
  CHECK(__funnelshift_l(0x80000000u, 0x1u, 33u) == 0x3u);          // mod 32
  CHECK(__funnelshift_lc(0x80000000u, 0x1u, 40u) == 0x80000000u);  // clamped to 32
  CHECK(__funnelshift_r(0x2u, 0x1u, 1u) == 0x80000001u);
  CHECK(__funnelshift_rc(0x2u, 0x1u, 40u) == 0x1u);
  CHECK(__dp4a(0x01020304, 0x01FF0101, 10) == 10 + 1 - 2 + 3 + 4);
  CHECK(__dp4a(0x01020304u, 0x01FF0101u, 10u) == 10u + 1u + 2u * 255u + 3u + 4u);
}

TEST_CASE("sim intrinsics: min and max resolve as nvcc's overloads", "[cuda][sim][intrinsics]") {
  // Mixed int/unsigned compares as unsigned, as in CUDA.
  CHECK(min(-1, 2u) == 2u);
  static_assert(std::is_same_v<decltype(min(-1, 2u)), unsigned>);
  CHECK(max(3, 4) == 4);
  CHECK(min(1.5f, 2.5) == 1.5);
  static_assert(std::is_same_v<decltype(max(1.5f, 2.5)), double>);
  CHECK(min(2.0f, NAN) == 2.0f);  // fminf semantics
  CHECK(max(-5ll, 3ll) == 3ll);
  CHECK(umin(3u, 2u) == 2u);
  CHECK(ullmax(3ull, ~0ull) == ~0ull);
  CHECK(llmin(-3ll, 2ll) == -3ll);
}

TEST_CASE("sim intrinsics: math functions", "[cuda][sim][intrinsics]") {
  CHECK(rsqrtf(4.0f) == 0.5f);
  CHECK(rsqrt(0.25) == 2.0);
  CHECK(rcbrtf(8.0f) == 0.5f);
  CHECK(sinpif(1.0f) == 0.0f);
  CHECK(sinpif(0.5f) == 1.0f);
  CHECK(cospif(0.5f) == 0.0f);
  CHECK(cospif(1.0f) == -1.0f);
  CHECK(sinpi(-2.0) == 0.0);
  float s = 0, c = 0;
  sincospif(0.25f, &s, &c);
  CHECK(s == Approx(std::sqrt(0.5)).epsilon(1e-7));
  CHECK(c == Approx(std::sqrt(0.5)).epsilon(1e-7));
  for (double y : {-0.999, -0.5, 0.0, 0.3, 0.9, 0.999999}) {
    CHECK(std::erf(erfinv(y)) == Approx(y).epsilon(1e-14).margin(1e-15));
    CHECK(std::erf(static_cast<double>(erfinvf(static_cast<float>(y)))) ==
          Approx(static_cast<float>(y)).epsilon(1e-6).margin(1e-7));
  }
  for (double y : {1e-30, 1e-10, 0.01, 0.5, 1.5, 1.99}) {
    CHECK(std::erfc(erfcinv(y)) == Approx(y).epsilon(1e-12));
  }
  CHECK(std::isinf(erfinvf(1.0f)));
  CHECK(std::isnan(erfinvf(1.5f)));
  CHECK(normcdff(0.0f) == 0.5f);
  CHECK(normcdf(1.959963984540054) == Approx(0.975).epsilon(1e-12));
  CHECK(normcdfinvf(0.975f) == Approx(1.959964f).epsilon(1e-6));
  CHECK(normcdfinv(1e-10) == Approx(-6.361340902404056).epsilon(1e-10));
  CHECK(__saturatef(1.5f) == 1.0f);
  CHECK(__saturatef(-2.0f) == 0.0f);
  CHECK(__saturatef(NAN) == 0.0f);
  CHECK(__saturatef(0.25f) == 0.25f);
  CHECK(__expf(1.0f) == Approx(2.7182817f));
  CHECK(__logf(std::exp(2.0f)) == Approx(2.0f));
  CHECK(__powf(2.0f, 10.0f) == 1024.0f);
  CHECK(__fdividef(1.0f, 4.0f) == 0.25f);
  CHECK(__exp10f(2.0f) == Approx(100.0f));
  float s2 = 0, c2 = 0;
  __sincosf(0.0f, &s2, &c2);
  CHECK((s2 == 0.0f && c2 == 1.0f));
}

TEST_CASE("sim intrinsics: rounding modes", "[cuda][sim][intrinsics]") {
  const float tiny = std::ldexp(1.0f, -30);
  CHECK(__fadd_rn(1.0f, tiny) == 1.0f);
  CHECK(__fadd_rz(1.0f, tiny) == 1.0f);
  CHECK(__fadd_rd(1.0f, tiny) == 1.0f);
  CHECK(__fadd_ru(1.0f, tiny) == std::nextafter(1.0f, 2.0f));
  CHECK(__fsub_rd(1.0f, tiny) == std::nextafter(1.0f, 0.0f));
  CHECK(__fsub_rz(-1.0f, tiny) == -1.0f);
  CHECK(__fsub_rd(-1.0f, tiny) == std::nextafter(-1.0f, -2.0f));
  CHECK(__fdiv_ru(1.0f, 3.0f) == std::nextafter(__fdiv_rd(1.0f, 3.0f), 1.0f));
  CHECK(__fdiv_rz(-1.0f, 3.0f) == -__fdiv_rd(1.0f, 3.0f));
  CHECK(__frcp_ru(3.0f) == __fdiv_ru(1.0f, 3.0f));
  CHECK(__fsqrt_rd(2.0f) < __fsqrt_ru(2.0f));
  CHECK(__fsqrt_rn(4.0f) == 2.0f);
  CHECK(__fmul_ru(1.0f + std::ldexp(1.0f, -23), 1.0f + std::ldexp(1.0f, -23)) ==
        1.0f + std::ldexp(1.0f, -22) + std::ldexp(1.0f, -23));
  CHECK(__fmul_rd(1.0f + std::ldexp(1.0f, -23), 1.0f + std::ldexp(1.0f, -23)) ==
        1.0f + std::ldexp(1.0f, -22));
  // fma rounds once: (1 + 2^-23)^2 - 1 keeps the 2^-46 term.
  const float e = 1.0f + std::ldexp(1.0f, -23);
  CHECK(__fmaf_rn(e, e, -1.0f) == std::ldexp(1.0f, -22) + std::ldexp(1.0f, -46));
  CHECK(__fmaf_rz(1.0f, 1.0f, tiny) == 1.0f);
  CHECK(__fmaf_ru(1.0f, 1.0f, tiny) == std::nextafter(1.0f, 2.0f));
  CHECK(__fma_rd(1.0, 1.0, -1e-30) == std::nextafter(1.0, 0.0));
  CHECK(__dadd_ru(1.0, 1e-30) == std::nextafter(1.0, 2.0));
  CHECK(__ddiv_rz(2.0, 3.0) < __ddiv_ru(2.0, 3.0));
  CHECK(__double2float_rz(1.0 + 1e-12) == 1.0f);
  CHECK(__double2float_ru(1.0 + 1e-12) == std::nextafter(1.0f, 2.0f));
  CHECK(__int2float_rz(16777217) == 16777216.0f);
  CHECK(__int2float_ru(16777217) == 16777218.0f);
  CHECK(__ull2float_rd(~0ull) == std::nextafter(18446744073709551616.0f, 0.0f));
  CHECK(__ll2double_ru((1ll << 53) + 1) == 9007199254740994.0);
  // The rounding mode is restored after each one.
  CHECK(std::fegetround() == FE_TONEAREST);
  CHECK(__frsqrt_rn(0.25f) == 2.0f);
  // _rn never contracts into an fma: the product is rounded before the add.
  volatile float a = e;
  CHECK(__fadd_rn(__fmul_rn(a, a), -1.0f) == std::ldexp(1.0f, -22));
}

TEST_CASE("sim intrinsics: float to integer conversions saturate", "[cuda][sim][intrinsics]") {
  CHECK(__float2int_rn(2.5f) == 2);
  CHECK(__float2int_rn(3.5f) == 4);
  CHECK(__float2int_rz(-2.7f) == -2);
  CHECK(__float2int_ru(2.1f) == 3);
  CHECK(__float2int_rd(-2.1f) == -3);
  CHECK(__float2int_rn(1e10f) == INT_MAX);
  CHECK(__float2int_rn(-1e10f) == INT_MIN);
  CHECK(__float2int_rn(NAN) == 0);
  CHECK(__float2uint_rn(-3.0f) == 0u);
  CHECK(__float2uint_rn(5e9f) == UINT_MAX);
  CHECK(__float2ll_rd(-0.5f) == -1);
  CHECK(__float2ull_ru(INFINITY) == ~0ull);
  CHECK(__double2int_rn(-2147483648.4) == INT_MIN);
  CHECK(__double2int_rn(2147483647.4) == INT_MAX);
  CHECK(__double2ll_rz(1e300) == LLONG_MAX);
  CHECK(__double2uint_rz(4294967295.9) == UINT_MAX);
}

TEST_CASE("sim intrinsics: __ldg and cache-hinted accesses", "[cuda][sim][intrinsics]") {
  const float4 v = make_float4(1, 2, 3, 4);
  const float4 r = __ldg(&v);
  CHECK((r.x == 1 && r.y == 2 && r.z == 3 && r.w == 4));
  const __half h = __float2half(1.5f);
  CHECK(__half2float(__ldg(&h)) == 1.5f);
  const int2 i2 = make_int2(7, 8);
  CHECK(__ldcs(&i2).y == 8);
  double d = 0;
  __stcs(&d, 2.5);
  CHECK(__ldcg(&d) == 2.5);
}

namespace {

template <class H>
float f(H h) {
  return ember::sim::detail::to_float(h);
}

template <class H>
H h(float x) {
  return ember::sim::detail::from_float<H>(x);
}

}  // namespace

TEMPLATE_TEST_CASE("sim intrinsics: half and bfloat16 gaps", "[cuda][sim][intrinsics]", __half,
                   __nv_bfloat16) {
  using H = TestType;
  const float eps = std::is_same_v<H, __half> ? 1.0f / 1024 : 1.0f / 128;
  CHECK(f(__hfma(h<H>(2), h<H>(3), h<H>(1))) == 7.0f);
  CHECK(f(__hfma_sat(h<H>(2), h<H>(3), h<H>(1))) == 1.0f);
  CHECK(f(__hfma_sat(h<H>(-2), h<H>(3), h<H>(1))) == 0.0f);
  CHECK(f(__hfma_relu(h<H>(-2), h<H>(3), h<H>(1))) == 0.0f);
  CHECK(f(__hfma_relu(h<H>(2), h<H>(3), h<H>(1))) == 7.0f);
  CHECK(std::isnan(f(__hfma_relu(h<H>(NAN), h<H>(1), h<H>(0)))));
  CHECK(f(hexp(h<H>(1))) == Approx(2.718281828f).epsilon(eps));
  CHECK(f(hexp2(h<H>(3))) == 8.0f);
  CHECK(f(hexp10(h<H>(2))) == 100.0f);
  CHECK(f(hlog(h<H>(1))) == 0.0f);
  CHECK(f(hlog2(h<H>(8))) == 3.0f);
  CHECK(f(hlog10(h<H>(100))) == 2.0f);
  CHECK(f(hsqrt(h<H>(16))) == 4.0f);
  CHECK(f(hrsqrt(h<H>(4))) == 0.5f);
  CHECK(f(hrcp(h<H>(4))) == 0.25f);
  CHECK(f(hsin(h<H>(0.5f))) == Approx(std::sin(0.5f)).epsilon(eps));
  CHECK(f(hcos(h<H>(0.5f))) == Approx(std::cos(0.5f)).epsilon(eps));
  CHECK(f(htanh(h<H>(0.5f))) == Approx(std::tanh(0.5f)).epsilon(eps));
  CHECK(f(hfloor(h<H>(-1.5f))) == -2.0f);
  CHECK(f(hceil(h<H>(-1.5f))) == -1.0f);
  CHECK(f(htrunc(h<H>(-1.5f))) == -1.0f);
  CHECK(f(hrint(h<H>(2.5f))) == 2.0f);
  CHECK(f(hrint(h<H>(3.5f))) == 4.0f);
}

TEST_CASE("sim intrinsics: half2 and bfloat162 gaps", "[cuda][sim][intrinsics]") {
  const __half2 a = __floats2half2_rn(2, 3), b = __floats2half2_rn(4, 5),
                c = __floats2half2_rn(1, -100);
  const float2 r = __half22float2(__hfma2(a, b, c));
  CHECK((r.x == 9.0f && r.y == -85.0f));
  const float2 relu = __half22float2(__hfma2_relu(a, b, c));
  CHECK((relu.x == 9.0f && relu.y == 0.0f));
  const float2 sat = __half22float2(__hfma2_sat(a, b, c));
  CHECK((sat.x == 1.0f && sat.y == 0.0f));
  const float2 e = __half22float2(h2exp2(__floats2half2_rn(1, 4)));
  CHECK((e.x == 2.0f && e.y == 16.0f));
  const float2 q = __half22float2(h2sqrt(__floats2half2_rn(9, 25)));
  CHECK((q.x == 3.0f && q.y == 5.0f));
  // (2 + 3i)(4 + 5i) + (1 - 100i) = (8 - 15 + 1) + (10 + 12 - 100)i
  const float2 z = __half22float2(__hcmadd(a, b, c));
  CHECK((z.x == -6.0f && z.y == -78.0f));

  const __nv_bfloat162 ba = __floats2bfloat162_rn(2, 3), bb = __floats2bfloat162_rn(4, 5),
                       bc = __floats2bfloat162_rn(1, -100);
  const float2 br = __bfloat1622float2(__hfma2(ba, bb, bc));
  CHECK((br.x == 9.0f && br.y == -85.0f));
  const float2 bl = __bfloat1622float2(h2log2(__floats2bfloat162_rn(8, 0.5f)));
  CHECK((bl.x == 3.0f && bl.y == -1.0f));
  const float2 bz = __bfloat1622float2(__hcmadd(ba, bb, bc));
  CHECK((bz.x == -6.0f && bz.y == -78.0f));
}

TEST_CASE("sim intrinsics: half and bfloat16 conversions", "[cuda][sim][intrinsics]") {
  CHECK(__half2int_rn(__float2half(2.5f)) == 2);
  CHECK(__half2int_ru(__float2half(2.25f)) == 3);
  CHECK(__half2int_rd(__float2half(-2.25f)) == -3);
  CHECK(__half2uint_rn(__float2half(-4.0f)) == 0u);
  CHECK(__half2short_rn(__float2half(60000.0f)) == SHRT_MAX);
  CHECK(__half2ushort_ru(__float2half(1.5f)) == 2);
  CHECK(__half2ll_rn(__float2half(-65504.0f)) == -65504);
  CHECK(__half2ull_rd(__float2half(7.9f)) == 7ull);
  CHECK(__half2int_rn(__float2half(INFINITY)) == INT_MAX);
  CHECK(__half2int_rn(__float2half(NAN)) == 0);
  CHECK(__bfloat162int_rn(__float2bfloat16(3.5f)) == 4);
  CHECK(__bfloat162int_rd(__float2bfloat16(-1.5f)) == -2);
  CHECK(__bfloat162short_rn(__float2bfloat16(1e6f)) == SHRT_MAX);
  CHECK(__bfloat162uint_ru(__float2bfloat16(0.5f)) == 1u);
  CHECK(__bfloat162ll_ru(__float2bfloat16(-0.5f)) == 0);
  CHECK(__bfloat162ull_rn(__float2bfloat16(1e30f)) == ~0ull);
  CHECK(__bfloat162ushort_rd(__float2bfloat16(2.5f)) == 2);
  // bfloat16 has 8 significant bits: 257 lies between 256 and 258.
  CHECK(__bfloat162float(__int2bfloat16_rz(257)) == 256.0f);
  CHECK(__bfloat162float(__int2bfloat16_ru(257)) == 258.0f);
  CHECK(__bfloat162float(__int2bfloat16_rd(-257)) == -258.0f);
  CHECK(__bfloat162float(__uint2bfloat16_ru(257u)) == 258.0f);
  CHECK(__bfloat162float(__short2bfloat16_rz(static_cast<short>(-257))) == -256.0f);
  CHECK(__bfloat162float(__ushort2bfloat16_rd(static_cast<unsigned short>(259))) == 258.0f);
  CHECK(__bfloat162float(__ll2bfloat16_ru((1ll << 40) + 1)) ==
        std::ldexp(1.0f, 40) + std::ldexp(1.0f, 33));
  CHECK(__bfloat162float(__ull2bfloat16_rz((1ull << 40) + (1ull << 33) - 1)) ==
        std::ldexp(1.0f, 40));
}
