// CPU kernel for the batched matrix product behind matmul / mm / bmm / addmm / linear / dot /
// outer (core/ops/linalg.h). float32 and float64 call the raw GEMM of kernels/cpu/gemm.h on each
// batch's strided matrices; float16 / bfloat16 go through float32; integers use exact loops.

#include "core/ops/linalg.h"

#include <algorithm>

#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/parallel.h"
#include "kernels/cpu/gemm.h"

namespace ember::kernels::cpu {

namespace {

// Strided geometry of the batched product: out (*, m, n) = a (*, m, k) @ b (*, k, n).
struct BatchGeometry {
  int64_t m, n, k, batches;
  Shape batch_sizes, a_batch_strides, b_batch_strides, c_batch_strides;
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;

  BatchGeometry(const Tensor& out, const Tensor& a, const Tensor& b) {
    const int64_t nd = out.dim();
    m = out.size(-2);
    n = out.size(-1);
    k = a.size(-1);
    for (int64_t d = 0; d < nd - 2; ++d) {
      batch_sizes.push_back(out.size(d));
      a_batch_strides.push_back(a.stride(d));
      b_batch_strides.push_back(b.stride(d));
      c_batch_strides.push_back(out.stride(d));
    }
    batches = shape_numel(batch_sizes);
    a_rs = a.stride(-2), a_cs = a.stride(-1);
    b_rs = b.stride(-2), b_cs = b.stride(-1);
    c_rs = out.stride(-2), c_cs = out.stride(-1);
  }

  // Element offsets of batch i in a, b and out.
  void offsets(int64_t i, int64_t& a_off, int64_t& b_off, int64_t& c_off) const {
    a_off = b_off = c_off = 0;
    for (int64_t d = static_cast<int64_t>(batch_sizes.size()) - 1; d >= 0; --d) {
      const int64_t idx = i % batch_sizes[d];
      i /= batch_sizes[d];
      a_off += idx * a_batch_strides[d];
      b_off += idx * b_batch_strides[d];
      c_off += idx * c_batch_strides[d];
    }
  }

  // Runs fn(batch) for every batch: in parallel over batches when each product is small (each
  // GEMM then runs on its own thread), else one after another with each GEMM split over the pool.
  template <class F>
  void for_each_batch(F fn) const {
    constexpr int64_t kSmallProduct = int64_t{1} << 18;  // m * n * k
    const int64_t work = std::max<int64_t>(1, m * n * std::max<int64_t>(k, 1));
    if (batches > 1 && work < kSmallProduct) {
      parallel_for(0, batches, std::max<int64_t>(1, kSmallProduct / work),
                   [&](int64_t s, int64_t e) {
                     for (int64_t i = s; i < e; ++i) fn(i);
                   });
    } else {
      for (int64_t i = 0; i < batches; ++i) fn(i);
    }
  }
};

template <class T>
void gemm_batches(const Tensor& out, const Tensor& a, const Tensor& b, T alpha, T beta) {
  const BatchGeometry g(out, a, b);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  g.for_each_batch([&](int64_t i) {
    int64_t ao, bo, co;
    g.offsets(i, ao, bo, co);
    gemm(g.m, g.n, g.k, alpha, pa + ao, g.a_rs, g.a_cs, pb + bo, g.b_rs, g.b_cs, beta, pc + co,
         g.c_rs, g.c_cs);
  });
}

// Integers: exact int64 dot products, wrapped to the dtype on store (uint8 wraps like PyTorch).
template <class T>
void integer_batches(const Tensor& out, const Tensor& a, const Tensor& b, int64_t alpha,
                     int64_t beta) {
  const BatchGeometry g(out, a, b);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  const int64_t rows = g.batches * g.m;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, g.n * g.k));
  parallel_for(0, rows, grain, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      int64_t ao, bo, co;
      g.offsets(r / g.m, ao, bo, co);
      const int64_t i = r % g.m;
      for (int64_t j = 0; j < g.n; ++j) {
        int64_t acc = 0;
        for (int64_t p = 0; p < g.k; ++p)
          acc += static_cast<int64_t>(pa[ao + i * g.a_rs + p * g.a_cs]) *
                 static_cast<int64_t>(pb[bo + p * g.b_rs + j * g.b_cs]);
        T* dst = pc + co + i * g.c_rs + j * g.c_cs;
        int64_t v = alpha * acc + (beta == 0 ? 0 : beta * static_cast<int64_t>(*dst));
        *dst = static_cast<T>(v);
      }
    }
  });
}

void batched_gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                         const Scalar& beta) {
  switch (out.dtype()) {
    case kFloat32:
      gemm_batches<float>(out, a, b, alpha.to<float>(), beta.to<float>());
      return;
    case kFloat64:
      gemm_batches<double>(out, a, b, alpha.to<double>(), beta.to<double>());
      return;
    case kFloat16:
    case kBFloat16: {
      // Compute in float32: convert the operands (an expanded batch dim is materialised), run
      // the float GEMM, round the result back.
      Tensor out32 = beta.to_double() == 0.0 ? empty(out.sizes(), TensorOptions(kFloat32))
                                             : native::to(out, kFloat32);
      gemm_batches<float>(out32, native::to(a, kFloat32), native::to(b, kFloat32),
                          alpha.to<float>(), beta.to<float>());
      native::copy_(out, out32);
      return;
    }
    default:
      EMBER_DISPATCH_INTEGRAL(out.dtype(), "matmul", [&] {
        integer_batches<scalar_t>(out, a, b, alpha.to_int64(), beta.to_int64());
      });
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(batched_gemm_stub, DeviceType::CPU, batched_gemm_kernel);

}  // namespace ember::kernels::cpu
