#pragma once
// cuBLAS as the GEMM reference (Note [GEMM backends] in core/cuda_gemm.h): real builds only.

#include "core/scalar.h"
#include "core/tensor.h"

namespace ember::kernels::cuda {

// Whether this build has cuBLAS (EMBER_CUDA=real).
bool cublas_is_built();

// out = alpha * a @ b + beta * out through cublasGemmStridedBatchedEx on the current stream, for
// float32/float64/float16/bfloat16 (the 16-bit floats with float32 accumulation). Returns false,
// doing nothing, when cuBLAS cannot express the operands (an integer dtype, a matrix with no
// unit stride, more than one batch dim, sizes past int). Shapes as batched_gemm_stub's.
bool cublas_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                 const Scalar& beta);

}  // namespace ember::kernels::cuda
