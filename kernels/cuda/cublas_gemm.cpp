// cuBLAS as the GEMM reference (kernels/cuda/cublas_gemm.h).
//
// Note [Row-major GEMM through cuBLAS]
// cuBLAS multiplies column-major matrices: C (M x N, element (i, j) at i + j * ldc) =
// op(X) op(Y). A strided matrix is column-major with ld = its column stride when its row
// stride is 1, and the transpose of one (op T, ld = its row stride) when its column stride is
// 1. ember's out usually has unit column stride (row-major), so the product is computed
// transposed: out^T (n x m) = b^T a^T, with every operand's strides swapped.

#include "kernels/cuda/cublas_gemm.h"

#include "core/error.h"

#if defined(EMBER_CUDA_REAL)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>

#include "core/stream.h"
#include "kernels/cuda/library_handles.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::kernels::cuda {

#if defined(EMBER_CUDA_REAL)

namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  EMBER_CHECK(status == CUBLAS_STATUS_SUCCESS, "matmul (EMBER_GEMM=cublas): ", call,
              " failed: ", cublasGetStatusString(status));
}

// cuBLAS for thread_handle (Note [Library handles per thread and stream]).
struct Cublas {
  using Handle = cublasHandle_t;
  static Handle create(NativeStream s) {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    const cublasStatus_t bound = cublasSetStream(h, static_cast<cudaStream_t>(s));
    if (bound != CUBLAS_STATUS_SUCCESS) cublasDestroy(h);
    check_cublas(bound, "cublasSetStream");
    return h;
  }
  static void destroy(Handle h) noexcept { cublasDestroy(h); }
};

// A rows x cols matrix with strides (rs, cs) as a cuBLAS operand (Note [Row-major GEMM through
// cuBLAS]); false when it is neither column-major nor its transpose.
bool as_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, cublasOperation_t& op,
                int64_t& ld) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  // A size-1 dim's stride is free: choose the one that makes the matrix valid.
  const int64_t n_rs = rows == 1 ? 1 : rs, n_cs = cols == 1 ? r1 : cs;
  if (n_rs == 1 && n_cs >= r1) {
    op = CUBLAS_OP_N;
    ld = n_cs;
    return ld <= INT_MAX;
  }
  const int64_t t_cs = cols == 1 ? 1 : cs, t_rs = rows == 1 ? c1 : rs;
  if (t_cs == 1 && t_rs >= c1) {
    op = CUBLAS_OP_T;
    ld = t_rs;
    return ld <= INT_MAX;
  }
  return false;
}

}  // namespace

bool cublas_is_built() { return true; }

bool cublas_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                 const Scalar& beta) {
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (out.dtype()) {
    case kFloat32:
      type = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F;
      break;
    case kFloat64:
      type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F;
      break;
    case kFloat16:
      type = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F;
      break;
    case kBFloat16:
      type = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F;
      break;
    default:
      return false;
  }
  const int64_t nd = out.dim();
  if (nd > 3) return false;
  int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const int64_t batches = nd == 3 ? out.size(0) : 1;
  int64_t sa = nd == 3 ? a.stride(0) : 0, sb = nd == 3 ? b.stride(0) : 0,
          sc = nd == 3 ? out.stride(0) : 0;
  // X: the left operand (rows x k), Y: the right one (k x cols), C: rows x cols.
  const void *px = a.data_ptr(), *py = b.data_ptr();
  int64_t x_rs = a.stride(-2), x_cs = a.stride(-1), y_rs = b.stride(-2), y_cs = b.stride(-1);
  int64_t c_rs = out.stride(-2), c_cs = out.stride(-1);
  cublasOperation_t op_c;
  int64_t ldc;
  if (!as_operand(m, n, c_rs, c_cs, op_c, ldc)) return false;
  if (op_c == CUBLAS_OP_T) {  // out^T = b^T a^T
    std::swap(m, n);
    std::swap(px, py);
    std::swap(sa, sb);
    const int64_t xr = x_rs, xc = x_cs;
    x_rs = y_cs, x_cs = y_rs;
    y_rs = xc, y_cs = xr;
    std::swap(c_rs, c_cs);
  }
  cublasOperation_t op_x, op_y;
  int64_t ldx, ldy;
  if (!as_operand(m, k, x_rs, x_cs, op_x, ldx) || !as_operand(k, n, y_rs, y_cs, op_y, ldy))
    return false;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batches > INT_MAX) return false;
  DeviceGuard guard(out.device());
  cublasHandle_t handle = thread_handle<Cublas>(out.device(), current_stream(out.device()));
  const float alpha_f = alpha.to<float>(), beta_f = beta.to<float>();
  const double alpha_d = alpha.to<double>(), beta_d = beta.to<double>();
  const bool is_double = out.dtype() == kFloat64;
  const void* alpha_p = is_double ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta_p = is_double ? static_cast<const void*>(&beta_d) : &beta_f;
  check_cublas(cublasGemmStridedBatchedEx(
                   handle, op_x, op_y, static_cast<int>(m), static_cast<int>(n),
                   static_cast<int>(k), alpha_p, px, type, static_cast<int>(ldx), sa, py, type,
                   static_cast<int>(ldy), sb, beta_p, out.data_ptr(), type, static_cast<int>(ldc),
                   sc, static_cast<int>(batches), compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  return true;
}

#else

bool cublas_is_built() { return false; }

bool cublas_gemm(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&) {
  EMBER_ERROR("matmul: EMBER_GEMM=cublas needs a real CUDA build (EMBER_CUDA=real); this is ",
              "the CUDA simulator, which has no cuBLAS: use EMBER_GEMM=ember or auto");
}

#endif

}  // namespace ember::kernels::cuda
