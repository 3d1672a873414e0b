#pragma once
// Factories: new tensors from sizes, values or borrowed memory. Random factories (rand, randn,
// randint, randperm) are in core/ops/random.h.

#include <functional>
#include <initializer_list>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ember {

// Uninitialised memory of the given shape.
Tensor empty(const Shape& sizes, const TensorOptions& options = {});
Tensor zeros(const Shape& sizes, const TensorOptions& options = {});
Tensor ones(const Shape& sizes, const TensorOptions& options = {});
Tensor full(const Shape& sizes, const Scalar& value, const TensorOptions& options = {});
Tensor empty_like(const Tensor& t, const TensorOptions& options = {});
Tensor zeros_like(const Tensor& t, const TensorOptions& options = {});
Tensor ones_like(const Tensor& t, const TensorOptions& options = {});
Tensor full_like(const Tensor& t, const Scalar& value, const TensorOptions& options = {});
// [start, end) in steps of step. Integer arguments give int64 unless options name a dtype, as in
// PyTorch; any floating argument gives the default float dtype.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              const TensorOptions& options = {});
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, const TensorOptions& options = {});

// Copies of C++ values. The dtype is the values' type unless options name one.
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& sizes = {},
              const TensorOptions& options = {});
template <class T>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& options = {}) {
  return tensor(std::vector<T>(values), {static_cast<int64_t>(values.size())}, options);
}
// A 1-D tensor from a vector: from_vector({1.f, 2.f}).
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& sizes = {},
                   const TensorOptions& options = {}) {
  return tensor(values, sizes, options);
}

// Wraps memory the caller owns, without copying. If deleter is given it is called with `data`
// when the last tensor viewing it dies; otherwise the caller keeps the memory alive.
Tensor from_blob(void* data, const Shape& sizes, DType dtype,
                 std::function<void(void*)> deleter = nullptr, const Shape& strides = {});

// Kernels of the filling factories (full is fill_stub, core/ops/copy.h). `out` is contiguous
// and may be empty.
// arange: out[i] = start + i * step, in double when `floating` (a floating start, end or step),
// else in int64 (int_start + i * int_step); kernels/math/factory.h.
struct ArangeArgs {
  bool floating = false;
  double start = 0.0, step = 0.0;
  int64_t int_start = 0, int_step = 0;
};
using arange_fn = void (*)(const Tensor& out, const ArangeArgs& args);
// linspace: out (1-D, n >= 0 values) from start to end, filled from both ends.
using linspace_fn = void (*)(const Tensor& out, double start, double end);
// eye: out is a zeroed [n, m] matrix (n, m >= 0); sets out[i, i] = 1 for i < min(n, m).
using eye_fn = void (*)(const Tensor& out);
EMBER_DECLARE_DISPATCH(arange_fn, arange_stub);
EMBER_DECLARE_DISPATCH(linspace_fn, linspace_stub);
EMBER_DECLARE_DISPATCH(eye_fn, eye_stub);

}  // namespace ember
