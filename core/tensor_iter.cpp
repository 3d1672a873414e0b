#include "core/tensor_iter.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/checked_math.h"
#include "core/mem_overlap.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"

namespace ember {

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

TensorIterConfig& TensorIterConfig::add_output(const Tensor& t) {
  EMBER_INTERNAL_ASSERT(nin_ == 0, "outputs are added before inputs");
  EMBER_INTERNAL_ASSERT(nout_ + nin_ < TensorIter::kMaxOperands, "too many operands");
  outputs_[nout_++] = t;
  return *this;
}
TensorIterConfig& TensorIterConfig::add_input(const Tensor& t) {
  EMBER_CHECK(t.defined(), op_, ": expected a defined tensor as input ", nin_);
  EMBER_INTERNAL_ASSERT(nout_ + nin_ < TensorIter::kMaxOperands, "too many operands");
  inputs_[nin_++] = t;
  return *this;
}
TensorIterConfig& TensorIterConfig::promote_inputs_to_common_dtype(bool v) {
  promote_ = v;
  return *this;
}
TensorIterConfig& TensorIterConfig::promote_integer_inputs_to_float(bool v) {
  int_to_float_ = v;
  return *this;
}
TensorIterConfig& TensorIterConfig::check_all_same_dtype(bool v) {
  same_dtype_ = v;
  return *this;
}
TensorIterConfig& TensorIterConfig::output_dtype(DType t) {
  output_dtype_ = t;
  return *this;
}
TensorIterConfig& TensorIterConfig::static_shape(const Shape& s) {
  static_shape_ = s;
  return *this;
}
TensorIterConfig& TensorIterConfig::check_all_same_device(bool v) {
  same_device_ = v;
  return *this;
}
TensorIterConfig& TensorIterConfig::check_mem_overlap(bool v) {
  check_overlap_ = v;
  return *this;
}

TensorIterConfig& TensorIterConfig::allow_cpu_scalars(bool v) {
  cpu_scalars_ = v;
  return *this;
}

// Note [Per-op overhead]
// An op on a few elements is all bookkeeping, so build() avoids heap allocations: operands
// live in fixed arrays, per-dim data in DimVectors (inline up to 8 dims), and the common case
// of inputs with equal shapes skips the broadcast computation. What remains is allocating the
// output itself. bench/bench_overhead.cpp measures the result against libtorch.
TensorIter TensorIterConfig::build() {
  TensorIter it;
  it.op_ = op_;

  // 1. Device: every tensor on one device. A wrapped C++ number (a 0-dim CPU tensor) follows.
  bool have_device = false;
  Device device;
  auto take_device = [&](const Tensor& t) {
    if (!t.defined() || t.unsafe_impl()->is_wrapped_number) return;
    if (!have_device) {
      device = t.device();
      have_device = true;
    } else {
      EMBER_CHECK(device == t.device() || !same_device_, op_,
                  ": expected all tensors to be on the same device, but found at least two "
                  "devices, ",
                  device, " and ", t.device());
    }
  };
  for (int i = 0; i < nout_; ++i) take_device(outputs_[i]);
  for (int i = 0; i < nin_; ++i) take_device(inputs_[i]);
  it.device_ = device;

  // Writes over overlapping memory (Note [Writes over overlapping memory] in
  // core/mem_overlap.h): only outputs the caller gave can overlap anything.
  if (check_overlap_) {
    for (int i = 0; i < nout_; ++i) {
      if (!outputs_[i].defined()) continue;
      assert_no_internal_overlap(outputs_[i], op_);
      for (int j = 0; j < nin_; ++j) assert_no_partial_overlap(outputs_[i], inputs_[j], op_);
    }
  }

  // 2. Shape: the broadcast of the inputs (or the static shape).
  Shape shape;
  if (static_shape_) {
    shape = *static_shape_;
    for (int i = 0; i < nin_; ++i) {
      const Tensor& t = inputs_[i];
      EMBER_CHECK(t.sizes() == shape || broadcast_shapes(t.sizes(), shape, op_) == shape, op_,
                  ": input of shape ", shape_str(t.sizes()), " cannot be broadcast to ",
                  shape_str(shape));
    }
  } else if (nin_ > 0) {
    shape = inputs_[0].sizes();
    for (int i = 1; i < nin_; ++i) {
      if (inputs_[i].sizes() != shape) shape = broadcast_shapes(shape, inputs_[i].sizes(), op_);
    }
  }
  for (int i = 0; i < nout_; ++i) {
    const Tensor& t = outputs_[i];
    if (!t.defined()) continue;
    EMBER_CHECK(t.sizes() == shape, op_, ": output with shape ", shape_str(t.sizes()),
                " doesn't match the broadcast shape ", shape_str(shape));
  }

  // 3. Dtype to compute in.
  DType common;
  if (promote_ && nin_ > 0) {
    common = result_type(inputs_, nin_);
  } else if (nin_ > 0) {
    common = inputs_[0].dtype();
  } else if (nout_ > 0 && outputs_[0].defined()) {
    common = outputs_[0].dtype();
  } else {
    common = output_dtype_.value_or(default_dtype());
  }
  if (int_to_float_ && !is_floating(common)) common = default_dtype();
  if (same_dtype_) {
    for (int i = 0; i < nin_; ++i) {
      EMBER_CHECK(inputs_[i].dtype() == common, op_, ": expected all inputs to have dtype ",
                  dtype_name(common), ", got ", dtype_name(inputs_[i].dtype()));
    }
  }
  it.common_dtype_ = common;

  // 4. Operands: outputs (existing, or to be allocated after step 6), then inputs in the
  // computing dtype.
  DType out_dtype = output_dtype_.value_or(common);
  bool allocate_later[TensorIter::kMaxOperands] = {};
  for (int i = 0; i < nout_; ++i) {
    const Tensor& t = outputs_[i];
    TensorIter::Operand& op = it.ops_[i];
    if (!t.defined()) {
      allocate_later[i] = true;
    } else if (t.dtype() != out_dtype && (promote_ || int_to_float_ || output_dtype_)) {
      EMBER_CHECK(can_cast(out_dtype, t.dtype()), op_, ": result type ", dtype_name(out_dtype),
                  " can't be cast to the desired output type ", dtype_name(t.dtype()));
      op.original = t;
      allocate_later[i] = true;
    } else {
      op.tensor = t;
    }
  }
  it.noutputs_ = nout_;
  it.nops_ = nout_ + nin_;
  // Note [CPU scalars on a device]: of two or three inputs, one wrapped number may stay on the
  // CPU (the first; a second one is filled on the device).
  bool keep_cpu_scalar = cpu_scalars_ && same_device_ && (nin_ == 2 || nin_ == 3) &&
                         it.device_.type != DeviceType::CPU;
  for (int i = 0; i < nin_; ++i) {
    const Tensor& t = inputs_[i];
    bool convert = (promote_ || int_to_float_) && t.dtype() != common;
    Tensor in = convert ? native::to(t, common) : t;
    TensorIter::Operand& op = it.ops_[nout_ + i];
    if (in.device() != it.device_ && same_device_) {
      if (keep_cpu_scalar) {
        op.cpu_scalar = true;
        keep_cpu_scalar = false;
      } else {
        // A wrapped number the kernel cannot take as an argument: filled on the device (a
        // launch taking the value as an argument), not copied from pageable host memory, which
        // makes the host wait for the device (Note [Sync debug mode] in core/cuda.h).
        in = full({}, in.item(), TensorOptions(in.dtype()).device(it.device_));
      }
    }
    op.tensor = std::move(in);
  }

  // 5. Byte strides over the broadcast shape (0 where an operand is broadcast).
  const int64_t nd = static_cast<int64_t>(shape.size());
  auto set_strides = [&](TensorIter::Operand& op) {
    const Tensor& t = op.tensor;
    op.byte_strides.assign(nd, 0);
    int64_t offset = nd - t.dim();
    int64_t isz = static_cast<int64_t>(t.element_size());
    const Shape& sizes = t.sizes();
    const Shape& strides = t.strides();
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (sizes[d] != 1) op.byte_strides[d + offset] = strides[d] * isz;
    }
    op.data = static_cast<char*>(t.data_ptr());
  };
  for (int i = 0; i < it.nops_; ++i) {
    if (it.ops_[i].tensor.defined()) set_strides(it.ops_[i]);
  }

  // 6. Reorder: iteration dim 0 is the fastest-moving dim of the operands (the last dim for
  // contiguous tensors), so that rows walk memory in order. Outputs still to be allocated take
  // no part; they are then laid out in this same order, so `a.t() + 1` keeps a's memory layout
  // (as PyTorch does) and the whole op stays one contiguous run.
  DimVector perm(nd, 0);
  for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {  // d0 currently before d1
    for (int i = 0; i < it.nops_; ++i) {
      const TensorIter::Operand& op = it.ops_[i];
      if (!op.tensor.defined()) continue;
      int64_t s0 = op.byte_strides[d0], s1 = op.byte_strides[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return false;
      if (s0 > s1) return true;
    }
    return false;
  };
  for (int64_t i = 1; i < nd; ++i) {
    for (int64_t j = i; j > 0 && should_swap(perm[j - 1], perm[j]); --j)
      std::swap(perm[j - 1], perm[j]);
  }
  for (int i = 0; i < nout_; ++i) {
    if (!allocate_later[i]) continue;
    Shape strides(nd);
    int64_t st = 1;
    for (int64_t k = 0; k < nd; ++k) {
      strides[perm[k]] = st;
      st *= std::max<int64_t>(shape[perm[k]], 1);
    }
    // The broadcast shape's sizes are non-negative; only the product can overflow.
    int64_t n = 0, nbytes = 0;
    if (EMBER_UNLIKELY(
            !numel_fits(shape, &n) ||
            __builtin_mul_overflow(n, static_cast<int64_t>(itemsize(out_dtype)), &nbytes)))
      storage_nbytes(shape_numel(shape, op_), out_dtype, op_);  // throws, naming the op
    Storage storage = make_storage(static_cast<size_t>(nbytes), it.device_);
    it.ops_[i].tensor =
        make_tensor(std::move(storage), shape, std::move(strides), 0, out_dtype, op_);
    set_strides(it.ops_[i]);
  }
  DimVector new_shape(nd, 0);
  for (int64_t i = 0; i < nd; ++i) new_shape[i] = shape[perm[i]];
  for (int i = 0; i < it.nops_; ++i) {
    TensorIter::Operand& op = it.ops_[i];
    DimVector s(nd, 0);
    for (int64_t k = 0; k < nd; ++k) s[k] = op.byte_strides[perm[k]];
    op.byte_strides = s;
  }

  // 7. Coalesce neighbouring dims that are contiguous for every operand.
  int64_t numel = 1;
  for (int64_t s : new_shape) numel *= s;
  it.numel_ = numel;
  if (nd == 0) {
    new_shape.assign(1, 1);
    for (int i = 0; i < it.nops_; ++i) it.ops_[i].byte_strides.assign(1, 0);
  } else {
    int64_t prev = 0;
    for (int64_t d = 1; d < nd; ++d) {
      bool can = true;
      for (int i = 0; i < it.nops_ && can; ++i) {
        const DimVector& bs = it.ops_[i].byte_strides;
        if (new_shape[prev] == 1 || new_shape[d] == 1) continue;
        if (bs[prev] * new_shape[prev] != bs[d]) can = false;
      }
      if (can) {
        for (int i = 0; i < it.nops_; ++i) {
          DimVector& bs = it.ops_[i].byte_strides;
          if (new_shape[prev] == 1) bs[prev] = bs[d];
        }
        new_shape[prev] *= new_shape[d];
      } else {
        ++prev;
        new_shape[prev] = new_shape[d];
        for (int i = 0; i < it.nops_; ++i) {
          DimVector& bs = it.ops_[i].byte_strides;
          bs[prev] = bs[d];
        }
      }
    }
    new_shape.resize(prev + 1);
    for (int i = 0; i < it.nops_; ++i) it.ops_[i].byte_strides.resize(prev + 1);
  }
  it.shape_ = new_shape;
  return it;
}

bool TensorIter::is_contiguous() const {
  if (shape_.size() != 1) return false;
  for (int i = 0; i < nops_; ++i) {
    if (ops_[i].byte_strides[0] != static_cast<int64_t>(ops_[i].tensor.element_size()))
      return false;
  }
  return true;
}

void TensorIter::serial_for_each(LoopFn loop, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  const int nt = ntensors();
  char* ptrs[kMaxOperands];
  int64_t row_strides[kMaxOperands];
  for (int i = 0; i < nt; ++i) row_strides[i] = ops_[i].byte_strides[0];
  const int nd = ndim();
  if (nd == 1) {
    for (int i = 0; i < nt; ++i) ptrs[i] = ops_[i].data + begin * row_strides[i];
    loop(ptrs, row_strides, end - begin);
    return;
  }
  // Multi-index of `begin`, dim 0 fastest.
  int64_t idx[64];
  EMBER_INTERNAL_ASSERT(nd <= 64, "too many dims");
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  int64_t linear = begin;
  while (linear < end) {
    int64_t n = std::min(shape_[0] - idx[0], end - linear);
    for (int i = 0; i < nt; ++i) {
      char* p = ops_[i].data;
      for (int d = 0; d < nd; ++d) p += idx[d] * ops_[i].byte_strides[d];
      ptrs[i] = p;
    }
    loop(ptrs, row_strides, n);
    linear += n;
    idx[0] = 0;
    for (int d = 1; d < nd; ++d) {
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
    }
  }
}

void TensorIter::for_each(LoopFn loop, int64_t grain) const {
  if (numel_ == 0) return;
  if (numel_ < grain || in_parallel_region() || num_threads() == 1) {
    serial_for_each(loop, 0, numel_);
    return;
  }
  parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_for_each(loop, b, e); });
}

// ---- 32-bit indexing (Note [32-bit indexing]) -------------------------------------------------

bool TensorIter::fits_index_limit(int64_t max_index) const {
  if (numel_ == 0) return true;
  if (numel_ > max_index) return false;
  for (int i = 0; i < nops_; ++i) {
    int64_t max_offset = 0;
    for (int d = 0; d < ndim(); ++d)
      max_offset += (shape_[d] - 1) * std::abs(ops_[i].byte_strides[d]);
    if (max_offset > max_index) return false;
  }
  return true;
}

bool TensorIter::can_use_32bit_indexing() const {
  return fits_index_limit(std::numeric_limits<int32_t>::max());
}

int TensorIter::dim_to_split() const {
  int best = -1;
  int64_t best_extent = -1, best_size = 0;
  for (int d = 0; d < ndim(); ++d) {
    if (shape_[d] < 2) continue;
    int64_t extent = 0;
    for (int i = 0; i < nops_; ++i)
      extent = std::max(extent, std::abs(ops_[i].byte_strides[d]) * shape_[d]);
    if (extent > best_extent || (extent == best_extent && shape_[d] > best_size)) {
      best = d;
      best_extent = extent;
      best_size = shape_[d];
    }
  }
  return best;
}

const void* TensorIter::cpu_scalar_data(int i) const {
  EMBER_INTERNAL_ASSERT(i >= noutputs_ && i < nops_ && ops_[i].cpu_scalar, op_, ": operand ", i,
                        " is not a CPU scalar");
  return ops_[i].tensor.data_ptr();
}

TensorIter TensorIter::without_operand(int i) const {
  EMBER_INTERNAL_ASSERT(i >= noutputs_ && i < nops_, op_, ": operand ", i,
                        " is not an input of this iterator");
  TensorIter r = *this;
  for (int k = i; k + 1 < nops_; ++k) r.ops_[k] = std::move(r.ops_[k + 1]);
  r.ops_[nops_ - 1] = Operand{};
  --r.nops_;
  return r;
}

TensorIter TensorIter::narrowed(int dim, int64_t start, int64_t size) const {
  TensorIter sub = *this;
  sub.is_sub_ = true;
  for (int i = 0; i < nops_; ++i) sub.ops_[i].data += start * ops_[i].byte_strides[dim];
  sub.shape_[dim] = size;
  sub.numel_ = numel_ / shape_[dim] * size;
  return sub;
}

void TensorIter::split_into(int64_t max_index, std::vector<TensorIter>& out) const {
  if (fits_index_limit(max_index)) {
    out.push_back(*this);
    out.back().is_sub_ = true;
    return;
  }
  const int d = dim_to_split();
  // Every dim of size 1 means every offset is 0 and numel is 1: that always fits.
  EMBER_INTERNAL_ASSERT(d >= 0, op_, ": cannot split the iteration for 32-bit indexing");
  const int64_t half = shape_[d] / 2;
  narrowed(d, 0, half).split_into(max_index, out);
  narrowed(d, half, shape_[d] - half).split_into(max_index, out);
}

std::vector<TensorIter> TensorIter::split_to_index_limit(int64_t max_index) const {
  EMBER_CHECK(max_index >= 1, op_, ": index limit must be positive, got ", max_index);
  std::vector<TensorIter> out;
  if (fits_index_limit(max_index)) {
    out.push_back(*this);
    return out;
  }
  split_into(max_index, out);
  return out;
}

std::vector<TensorIter> TensorIter::with_32bit_indexing() const {
  return split_to_index_limit(std::numeric_limits<int32_t>::max());
}

void TensorIter::cast_outputs() {
  EMBER_INTERNAL_ASSERT(!is_sub_, op_,
                        ": cast_outputs() on a sub-iterator (Note [32-bit indexing])");
  for (int i = 0; i < noutputs_; ++i) {
    if (ops_[i].original.defined()) native::copy_(ops_[i].original, ops_[i].tensor);
  }
}

TensorIter TensorIter::unary_op(Tensor& out, const Tensor& a, const char* op) {
  TensorIter it = TensorIterConfig(op).add_output(out).add_input(a).build();
  if (!out.defined()) out = it.output();
  return it;
}

TensorIter TensorIter::unary_float_op(Tensor& out, const Tensor& a, const char* op) {
  TensorIter it = TensorIterConfig(op)
                      .add_output(out)
                      .add_input(a)
                      .promote_inputs_to_common_dtype()
                      .promote_integer_inputs_to_float()
                      .build();
  if (!out.defined()) out = it.output();
  return it;
}

TensorIter TensorIter::binary_op(Tensor& out, const Tensor& a, const Tensor& b, const char* op) {
  TensorIter it = TensorIterConfig(op)
                      .add_output(out)
                      .add_input(a)
                      .add_input(b)
                      .allow_cpu_scalars()
                      .promote_inputs_to_common_dtype()
                      .build();
  if (!out.defined()) out = it.output();
  return it;
}

TensorIter TensorIter::binary_float_op(Tensor& out, const Tensor& a, const Tensor& b,
                                       const char* op) {
  TensorIter it = TensorIterConfig(op)
                      .add_output(out)
                      .add_input(a)
                      .add_input(b)
                      .allow_cpu_scalars()
                      .promote_inputs_to_common_dtype()
                      .promote_integer_inputs_to_float()
                      .build();
  if (!out.defined()) out = it.output();
  return it;
}

TensorIter TensorIter::comparison_op(Tensor& out, const Tensor& a, const Tensor& b,
                                     const char* op) {
  TensorIter it = TensorIterConfig(op)
                      .add_output(out)
                      .add_input(a)
                      .add_input(b)
                      .allow_cpu_scalars()
                      .promote_inputs_to_common_dtype()
                      .output_dtype(kBool)
                      .build();
  if (!out.defined()) out = it.output();
  return it;
}

TensorIter TensorIter::nullary_op(Tensor& out, const char* op) {
  EMBER_CHECK(out.defined(), op, ": expected a defined output");
  return TensorIterConfig(op).add_output(out).static_shape(out.sizes()).build();
}

}  // namespace ember
