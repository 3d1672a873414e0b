#pragma once
// TensorIter: broadcasting, type promotion and strided iteration, computed once per op.
//
// An element-wise op describes its operands (outputs first, then inputs) and TensorIter works
// out the broadcast shape, the dtype to compute in, allocates missing outputs, and reduces the
// iteration to as few dims as possible: dims are ordered by the output's strides (fastest
// first) and neighbouring dims that are contiguous for every operand are merged. A kernel then
// only ever sees a "row" loop:
//
//   loop(char** data, const int64_t* strides, int64_t n)
//     data[i]    -- pointer to the first element of operand i for this row
//     strides[i] -- byte stride of operand i along the row (0 for a broadcast operand)
//
// for_each() runs rows over the thread pool once the op is large enough (kGrainSize). Empty
// tensors run no row at all; every size and offset is int64, so there is no 32-bit index limit
// on the CPU. The CUDA launcher (kernels/cuda) consumes the same description.
//
// Note [Computing dtype and output casts]
// Inputs are converted to the common dtype before iteration (a copy only when they differ, and
// a wrapped C++ number is a 0-dim tensor, so that costs nothing for `t * 2`). An existing output
// whose dtype differs from the computing dtype (float16 `out.add_(float32_tensor)`) gets a
// temporary output in the computing dtype; the op calls cast_outputs() to copy it back. A
// result type that cannot be cast to the output (float into an integer output, PyTorch's
// can_cast rule) is an error.

#include <optional>
#include <vector>

#include "core/function_ref.h"
#include "core/parallel.h"
#include "core/small_vector.h"
#include "core/tensor.h"

namespace ember {

using LoopFn = FunctionRef<void(char** data, const int64_t* strides, int64_t n)>;

// PyTorch's can_cast: no float -> integer, no non-bool -> bool.
bool can_cast(DType from, DType to);

class TensorIterConfig;

class TensorIter {
 public:
  static constexpr int kMaxOperands = 8;

  // out = f(a): the output has a's dtype (neg, abs, relu...).
  static TensorIter unary_op(Tensor& out, const Tensor& a, const char* op);
  // out = f(a) computed in floating point: integer inputs promote to the default dtype (exp...).
  static TensorIter unary_float_op(Tensor& out, const Tensor& a, const char* op);
  // out = f(a, b) in the promoted dtype of a and b (add, mul...).
  static TensorIter binary_op(Tensor& out, const Tensor& a, const Tensor& b, const char* op);
  // Like binary_op, integers promote to the default float dtype (true division, atan2).
  static TensorIter binary_float_op(Tensor& out, const Tensor& a, const Tensor& b,
                                    const char* op);
  // out (bool) = f(a, b) with a and b promoted to their common dtype (eq, lt...).
  static TensorIter comparison_op(Tensor& out, const Tensor& a, const Tensor& b, const char* op);
  // out = f() (fill, random).
  static TensorIter nullary_op(Tensor& out, const char* op);

  int ntensors() const { return nops_; }
  int noutputs() const { return noutputs_; }
  int ninputs() const { return ntensors() - noutputs_; }
  const Tensor& output(int i = 0) const { return ops_[i].original.defined() ? ops_[i].original : ops_[i].tensor; }
  const Tensor& tensor(int i) const { return ops_[i].tensor; }
  DType dtype(int i = 0) const { return ops_[i].tensor.dtype(); }
  DType common_dtype() const { return common_dtype_; }
  Device device() const { return device_; }
  const char* op_name() const { return op_; }

  // The iteration shape after reordering and coalescing; shape()[0] is the fastest dim.
  const DimVector& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  // Byte strides of operand i over the iteration dims.
  const DimVector& strides(int i) const { return ops_[i].byte_strides; }
  char* data(int i) const { return ops_[i].data; }
  // Whether every operand is contiguous over the whole (coalesced) iteration space.
  bool is_contiguous() const;

  // Runs loop over all rows, in parallel once numel() >= grain.
  void for_each(LoopFn loop, int64_t grain = kGrainSize) const;
  // Runs loop over the linear element range [begin, end) on this thread.
  void serial_for_each(LoopFn loop, int64_t begin, int64_t end) const;

  // Copies temporary outputs back into the user's outputs (Note [Computing dtype and output
  // casts]). Every op built on TensorIter calls this after its kernel ran.
  void cast_outputs();

 private:
  friend class TensorIterConfig;
  struct Operand {
    Tensor tensor;    // what the kernel reads or writes
    Tensor original;  // the user's output when `tensor` is a temporary in the computing dtype
    char* data = nullptr;
    DimVector byte_strides;
  };

  // Fixed arrays, not vectors: building an iterator for a small op allocates nothing but its
  // outputs (Note [Per-op overhead] in core/tensor_iter.cpp).
  Operand ops_[kMaxOperands];
  int nops_ = 0;
  int noutputs_ = 0;
  DimVector shape_;
  int64_t numel_ = 0;
  DType common_dtype_ = DType::Float32;
  Device device_;
  const char* op_ = "op";
};

// The general builder behind the shortcuts above.
class TensorIterConfig {
 public:
  explicit TensorIterConfig(const char* op) : op_(op) {}

  // Outputs first; an undefined output is allocated with the broadcast shape.
  TensorIterConfig& add_output(const Tensor& t);
  TensorIterConfig& add_input(const Tensor& t);
  // Compute in the promoted dtype of the inputs, converting the inputs to it.
  TensorIterConfig& promote_inputs_to_common_dtype(bool v = true);
  // Integer and bool inputs promote to the default float dtype.
  TensorIterConfig& promote_integer_inputs_to_float(bool v = true);
  // All operands must already have one dtype (index kernels, copies do their own casts).
  TensorIterConfig& check_all_same_dtype(bool v = true);
  // Outputs that need allocating get this dtype instead of the common one (bool for eq).
  TensorIterConfig& output_dtype(DType t);
  // Iterate over this shape; inputs must broadcast to it (fill, random, expand copies).
  TensorIterConfig& static_shape(const Shape& s);

  TensorIter build();

 private:
  const char* op_;
  Tensor outputs_[TensorIter::kMaxOperands], inputs_[TensorIter::kMaxOperands];
  int nout_ = 0, nin_ = 0;
  bool promote_ = false, int_to_float_ = false, same_dtype_ = false;
  std::optional<DType> output_dtype_;
  std::optional<Shape> static_shape_;
};

}  // namespace ember
