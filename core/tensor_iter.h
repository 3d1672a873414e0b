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
// on the CPU. The CUDA launcher (kernels/cuda) consumes the same description, split where it
// needs 32-bit offsets (Note [32-bit indexing]).
//
// Note [32-bit indexing]
// GPU kernels index with 32-bit integers (a 64-bit division per element costs several times a
// 32-bit one), so they need every element count and byte offset of an iteration to fit in
// int32. That limit is handled here, once, as PyTorch's TensorIterator does:
// can_use_32bit_indexing() says whether the whole iteration fits, and with_32bit_indexing()
// splits it into sub-iterators that each fit and that together visit every element exactly
// once. A split halves the dim with the largest byte extent (size * |stride| over the operands;
// the largest size when every stride is 0) and recurses on both halves; a sub-iterator has the
// same dims and byte strides, a smaller size along the split dim and data pointers moved to the
// start of its part. The launcher writes
//
//   if (iter.can_use_32bit_indexing()) launch(iter);
//   else for (const TensorIter& sub : iter.with_32bit_indexing()) launch(sub);
//
// A sub-iterator describes only its part through shape(), strides(), data() and numel();
// tensor(i) and output(i) are still the whole operands, and cast_outputs() belongs to the parent
// (a sub-iterator refuses it). The CPU loops need none of this (they index in int64).
//
// Note [Computing dtype and output casts]
// Inputs are converted to the common dtype before iteration (a copy only when they differ, and
// a wrapped C++ number is a 0-dim tensor, so that costs nothing for `t * 2`). An existing output
// whose dtype differs from the computing dtype (float16 `out.add_(float32_tensor)`) gets a
// temporary output in the computing dtype; the op calls cast_outputs() to copy it back. A
// result type that cannot be cast to the output (float into an integer output, PyTorch's
// can_cast rule) is an error.
//
// Note [CPU scalars on a device]
// `x * 2` on a cuda x: the 2 is a wrapped number, a 0-dim CPU tensor. Copying it to the device
// would cost an allocation and a fill launch per op, and a 0-dim operand (stride 0) sends the op
// down the strided path. So an iterator built with allow_cpu_scalars() (the binary ops, the
// comparisons, where) keeps one wrapped number among its two or three inputs on the CPU, in the
// computing dtype, and marks it: is_cpu_scalar(i). Its value travels into the kernel as an
// argument -- gpu_kernel binds it into the functor and launches over the iterator
// without_operand(i), so `x * 2` on a contiguous x is one vectorised launch, and the
// `where(c, g, 0.0)` of backward formulas two operands instead of three (PyTorch's
// TensorIterator does the same with is_cpu_scalar). A second wrapped number (`where(c, 1.0,
// 0.0)`) is filled on the device, and so is every wrapped number of an iterator built without
// allow_cpu_scalars(): only ops whose device kernels all go through gpu_kernel opt in. On the
// CPU nothing changes: the number is already where the kernel runs.

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

// clang-tidy 14 reports the loop variable of the implicit copy constructor's array-member copy
// (__i0) as a reserved identifier of ours; none is.
// NOLINTNEXTLINE(bugprone-reserved-identifier)
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
  static TensorIter binary_float_op(Tensor& out, const Tensor& a, const Tensor& b, const char* op);
  // out (bool) = f(a, b) with a and b promoted to their common dtype (eq, lt...).
  static TensorIter comparison_op(Tensor& out, const Tensor& a, const Tensor& b, const char* op);
  // out = f() (fill, random).
  static TensorIter nullary_op(Tensor& out, const char* op);

  int ntensors() const { return nops_; }
  int noutputs() const { return noutputs_; }
  int ninputs() const { return ntensors() - noutputs_; }
  const Tensor& output(int i = 0) const {
    return ops_[i].original.defined() ? ops_[i].original : ops_[i].tensor;
  }
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

  // Whether numel() and every operand's largest byte offset fit in int32 (Note [32-bit
  // indexing]).
  bool can_use_32bit_indexing() const;
  // Sub-iterators that each can_use_32bit_indexing() and together cover this iteration exactly
  // once, in order; just a copy of this iterator when it fits already.
  std::vector<TensorIter> with_32bit_indexing() const;
  // The general forms behind the two above, for any limit (tests use a small one).
  bool fits_index_limit(int64_t max_index) const;
  std::vector<TensorIter> split_to_index_limit(int64_t max_index) const;
  // Whether this iterator is part of a split one (Note [32-bit indexing]).
  bool is_sub_iterator() const { return is_sub_; }

  // Operand i is a wrapped number left on the CPU for a kernel argument (Note [CPU scalars on a
  // device]); its value, in dtype(i), is at cpu_scalar_data(i).
  bool is_cpu_scalar(int i) const { return ops_[i].cpu_scalar; }
  const void* cpu_scalar_data(int i) const;
  // This iterator without operand i (an input): what a kernel launches over once it passes
  // that operand's value as an argument.
  TensorIter without_operand(int i) const;

 private:
  friend class TensorIterConfig;
  struct Operand {
    Tensor tensor;    // what the kernel reads or writes
    Tensor original;  // the user's output when `tensor` is a temporary in the computing dtype
    char* data = nullptr;
    DimVector byte_strides;
    bool cpu_scalar = false;  // Note [CPU scalars on a device]
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
  bool is_sub_ = false;

  // The dim to halve next and the two halves (Note [32-bit indexing]).
  int dim_to_split() const;
  TensorIter narrowed(int dim, int64_t start, int64_t size) const;
  void split_into(int64_t max_index, std::vector<TensorIter>& out) const;
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
  // With false, operands may live on different devices (a copy between devices; the kernel of
  // the device pair knows how to reach both). The iterator's device() is then output 0's.
  TensorIterConfig& check_all_same_device(bool v = true);
  // With true (the default), build() refuses an output that overlaps itself or partly overlaps
  // an input (Note [Writes over overlapping memory] in core/mem_overlap.h). Only kernels that
  // write through a deliberately restrided view (scatter's self with stride 0 along the
  // scattered dim) turn it off, after checking the user's tensors themselves.
  TensorIterConfig& check_mem_overlap(bool v = true);
  // One wrapped number among two or three inputs of an iteration on a cuda device stays on the
  // CPU for the kernel to take as an argument (Note [CPU scalars on a device]). Only for ops
  // whose every device kernel goes through gpu_kernel, which handles it.
  TensorIterConfig& allow_cpu_scalars(bool v = true);

  TensorIter build();

 private:
  const char* op_;
  Tensor outputs_[TensorIter::kMaxOperands], inputs_[TensorIter::kMaxOperands];
  int nout_ = 0, nin_ = 0;
  bool promote_ = false, int_to_float_ = false, same_dtype_ = false, same_device_ = true;
  bool check_overlap_ = true, cpu_scalars_ = false;
  std::optional<DType> output_dtype_;
  std::optional<Shape> static_shape_;
};

}  // namespace ember
