#pragma once
// Raw CPU GEMM on strided matrices, for any kernel that needs a matrix product (matmul, conv as
// im2col + GEMM, attention...):
//
//   C = alpha * A @ B + beta * C        A: (m, k)   B: (k, n)   C: (m, n)
//
// Element (i, j) of a matrix X lives at x[i * x_rs + j * x_cs] (strides in elements, any
// values: a transposed operand is just swapped strides, never copied by the caller). With
// beta == 0, C is only written (NaN or garbage in C is ignored, as in BLAS).
//
// float32 runs a packed, cache-blocked GEMM (BLIS's loop structure) whose micro-kernel is picked
// at run time: AVX-512, AVX2+FMA, or Eigen 3.4's product when the CPU has neither. The library
// is compiled for baseline x86-64; only the micro-kernels are compiled for the wider ISAs
// (Note [GEMM micro-kernels] in gemm.cpp). float64 uses Eigen's product on Eigen::Map views.
//
// Threads: gemm() splits C into blocks of rows (or columns) and runs each block's single-threaded
// product through ember::parallel_for, so it uses ember's pool and never starts threads of its
// own (Eigen's OpenMP is not enabled). Called from inside a pool task, it runs on that thread.

#include <cstdint>

namespace ember::kernels::cpu {

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs, int64_t a_cs,
          const float* b, int64_t b_rs, int64_t b_cs, float beta, float* c, int64_t c_rs,
          int64_t c_cs);
void gemm(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t a_rs,
          int64_t a_cs, const double* b, int64_t b_rs, int64_t b_cs, double beta, double* c,
          int64_t c_rs, int64_t c_cs);

// A float32 operand read through pointers to its lines instead of strides, so that a kernel can
// multiply a matrix that exists only implicitly in a larger buffer (convolution reads the
// padded image as its im2col matrix: Note [Implicit im2col] in conv_utils.h). For a (rows x cols)
// operand X:
//   lines_are_rows:  X(r, c) = lines[r][offset + c]   (each row contiguous)
//   otherwise:       X(r, c) = lines[c][offset + r]   (each column contiguous)
struct GemmLines {
  const float* const* lines = nullptr;
  bool lines_are_rows = true;
  int64_t offset = 0;
};

// C = alpha * A @ B + beta * C with A and/or B given by lines (an operand with null lines is
// the strided one, as in gemm()). Runs the packed float32 kernel (a plain loop on CPUs without
// AVX2); splits over the pool like gemm() unless called from a pool task.
struct GemmOperand {
  const float* data = nullptr;  // strided form: X(r, c) = data[r * rs + c * cs]
  int64_t rs = 0, cs = 0;
  GemmLines by_lines;  // used when by_lines.lines is not null
};
void gemm(int64_t m, int64_t n, int64_t k, float alpha, const GemmOperand& a, const GemmOperand& b,
          float beta, float* c, int64_t c_rs, int64_t c_cs);

// The float32 micro-kernel in use: "avx512", "avx2" or "eigen".
const char* gemm_kernel_name();
// Selects a float32 micro-kernel by name (for tests and benchmarks; the default is the widest
// the CPU supports). Returns false, changing nothing, if the CPU cannot run it.
bool set_gemm_kernel(const char* name);

}  // namespace ember::kernels::cpu
