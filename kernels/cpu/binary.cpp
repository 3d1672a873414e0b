// CPU kernels for the binary element-wise ops (and the ternary where / lerp / addcmul /
// addcdiv / masked_fill, and relu's threshold_backward): each applies a kernels/math/binary.h
// functor through cpu_kernel.
// Operand 0 is the output, the inputs follow in argument order.

#include "core/ops/binary.h"

#include <atomic>

#include "kernels/cpu/loops.h"
#include "kernels/math/binary.h"

namespace ember::kernels::cpu {

namespace {

void add_kernel(TensorIter& iter, const Scalar& alpha) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), "add", [&] {
    cpu_kernel(iter, math::AddOp<scalar_t>{alpha.to<opmath_t<scalar_t>>()});
  });
}

void mul_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), "mul",
                     [&] { cpu_kernel(iter, math::MulOp<scalar_t>{}); });
}

void div_true_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), "div",
                          [&] { cpu_kernel(iter, math::TrueDivOp<scalar_t>{}); });
}

// Integer division raises instead of trapping: a read-only pass over the divisor (operand 2)
// looks for zeros before anything is written, so a failed op leaves its output untouched.
template <class T>
void check_no_zero_divisor(const TensorIter& iter) {
  if constexpr (std::is_integral_v<T>) {
    std::atomic<bool> found{false};
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
      const char* p = data[2];
      const int64_t s = strides[2];
      bool zero = false;
      for (int64_t i = 0; i < n; ++i) zero |= *reinterpret_cast<const T*>(p + i * s) == T(0);
      if (zero) found.store(true, std::memory_order_relaxed);
    });
    EMBER_CHECK(!found.load(), iter.op_name(), ": ZeroDivisionError (integer division by zero)");
  } else {
    (void)iter;
  }
}

void div_trunc_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
    check_no_zero_divisor<scalar_t>(iter);
    cpu_kernel(iter, math::DivTruncOp<scalar_t>{});
  });
}

void div_floor_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
    check_no_zero_divisor<scalar_t>(iter);
    cpu_kernel(iter, math::DivFloorOp<scalar_t>{});
  });
}

void remainder_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
    check_no_zero_divisor<scalar_t>(iter);
    cpu_kernel(iter, math::RemainderOp<scalar_t>{});
  });
}

void pow_kernel(TensorIter& iter) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(),
                         [&] { cpu_kernel(iter, math::PowOp<scalar_t>{}); });
}

void maximum_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(),
                     [&] { cpu_kernel(iter, math::MaximumOp<scalar_t>{}); });
}

void minimum_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(),
                     [&] { cpu_kernel(iter, math::MinimumOp<scalar_t>{}); });
}

void atan2_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                          [&] { cpu_kernel(iter, math::Atan2Op<scalar_t>{}); });
}

// Comparisons and logical ops: inputs (operands 1, 2) in the common dtype, a bool output.
template <class Op>
void bool_result_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(), [&] {
    cpu_kernel(iter, [](scalar_t a, scalar_t b) -> bool { return Op{}(a, b); });
  });
}
void eq_kernel(TensorIter& iter) { bool_result_kernel<math::EqOp>(iter); }
void ne_kernel(TensorIter& iter) { bool_result_kernel<math::NeOp>(iter); }
void lt_kernel(TensorIter& iter) { bool_result_kernel<math::LtOp>(iter); }
void le_kernel(TensorIter& iter) { bool_result_kernel<math::LeOp>(iter); }
void gt_kernel(TensorIter& iter) { bool_result_kernel<math::GtOp>(iter); }
void ge_kernel(TensorIter& iter) { bool_result_kernel<math::GeOp>(iter); }
void logical_and_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalAndOp>(iter); }
void logical_or_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalOrOp>(iter); }
void logical_xor_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalXorOp>(iter); }

// Integers and bool only (the op rejects floating inputs with a clear message first).
template <template <class> class Op>
void bitwise_kernel(TensorIter& iter) {
  EMBER_DISPATCH_SWITCH(iter.common_dtype(), iter.op_name(), EMBER_CASES_INTEGRAL([&] {
                          cpu_kernel(iter, Op<scalar_t>{});
                        }) EMBER_CASES_BOOL([&] { cpu_kernel(iter, Op<scalar_t>{}); }));
}
void bitwise_and_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseAndOp>(iter); }
void bitwise_or_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseOrOp>(iter); }
void bitwise_xor_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseXorOp>(iter); }

// (out, cond, a, b): the condition is bool, a, b and out share the output's dtype.
void where_kernel(TensorIter& iter) {
  EMBER_DISPATCH_ALL(iter.dtype(0), "where", [&] { cpu_kernel(iter, math::WhereOp<scalar_t>{}); });
}

void lerp_scalar_kernel(TensorIter& iter, const Scalar& weight) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
    cpu_kernel(iter, math::LerpScalarOp<scalar_t>{weight.to<opmath_t<scalar_t>>()});
  });
}

void lerp_tensor_kernel(TensorIter& iter) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                          [&] { cpu_kernel(iter, math::LerpTensorOp<scalar_t>{}); });
}

void addcmul_kernel(TensorIter& iter, const Scalar& value) {
  EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
    cpu_kernel(iter, math::AddcmulOp<scalar_t>{value.to<opmath_t<scalar_t>>()});
  });
}

void addcdiv_kernel(TensorIter& iter, const Scalar& value) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
    cpu_kernel(iter, math::AddcdivOp<scalar_t>{value.to<opmath_t<scalar_t>>()});
  });
}

// (out, self, mask): self and out in self's dtype, mask bool.
void masked_fill_kernel(TensorIter& iter, const Scalar& value) {
  EMBER_DISPATCH_ALL(iter.dtype(0), iter.op_name(),
                     [&] { cpu_kernel(iter, math::MaskedFillOp<scalar_t>{value.to<scalar_t>()}); });
}

void threshold_backward_kernel(TensorIter& iter, double threshold) {
  EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
    using M = opmath_t<scalar_t>;
    // The threshold rounded to the dtype first, as the output values are.
    const M t = static_cast<M>(static_cast<scalar_t>(threshold));
    cpu_kernel(iter, math::ThresholdBackwardOp<scalar_t>{t});
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(add_stub, DeviceType::CPU, add_kernel);
EMBER_REGISTER_KERNEL(mul_stub, DeviceType::CPU, mul_kernel);
EMBER_REGISTER_KERNEL(div_true_stub, DeviceType::CPU, div_true_kernel);
EMBER_REGISTER_KERNEL(div_trunc_stub, DeviceType::CPU, div_trunc_kernel);
EMBER_REGISTER_KERNEL(div_floor_stub, DeviceType::CPU, div_floor_kernel);
EMBER_REGISTER_KERNEL(remainder_stub, DeviceType::CPU, remainder_kernel);
EMBER_REGISTER_KERNEL(pow_stub, DeviceType::CPU, pow_kernel);
EMBER_REGISTER_KERNEL(maximum_stub, DeviceType::CPU, maximum_kernel);
EMBER_REGISTER_KERNEL(minimum_stub, DeviceType::CPU, minimum_kernel);
EMBER_REGISTER_KERNEL(atan2_stub, DeviceType::CPU, atan2_kernel);
EMBER_REGISTER_KERNEL(eq_stub, DeviceType::CPU, eq_kernel);
EMBER_REGISTER_KERNEL(ne_stub, DeviceType::CPU, ne_kernel);
EMBER_REGISTER_KERNEL(lt_stub, DeviceType::CPU, lt_kernel);
EMBER_REGISTER_KERNEL(le_stub, DeviceType::CPU, le_kernel);
EMBER_REGISTER_KERNEL(gt_stub, DeviceType::CPU, gt_kernel);
EMBER_REGISTER_KERNEL(ge_stub, DeviceType::CPU, ge_kernel);
EMBER_REGISTER_KERNEL(logical_and_stub, DeviceType::CPU, logical_and_kernel);
EMBER_REGISTER_KERNEL(logical_or_stub, DeviceType::CPU, logical_or_kernel);
EMBER_REGISTER_KERNEL(logical_xor_stub, DeviceType::CPU, logical_xor_kernel);
EMBER_REGISTER_KERNEL(bitwise_and_stub, DeviceType::CPU, bitwise_and_kernel);
EMBER_REGISTER_KERNEL(bitwise_or_stub, DeviceType::CPU, bitwise_or_kernel);
EMBER_REGISTER_KERNEL(bitwise_xor_stub, DeviceType::CPU, bitwise_xor_kernel);
EMBER_REGISTER_KERNEL(where_stub, DeviceType::CPU, where_kernel);
EMBER_REGISTER_KERNEL(lerp_scalar_stub, DeviceType::CPU, lerp_scalar_kernel);
EMBER_REGISTER_KERNEL(lerp_tensor_stub, DeviceType::CPU, lerp_tensor_kernel);
EMBER_REGISTER_KERNEL(addcmul_stub, DeviceType::CPU, addcmul_kernel);
EMBER_REGISTER_KERNEL(addcdiv_stub, DeviceType::CPU, addcdiv_kernel);
EMBER_REGISTER_KERNEL(masked_fill_stub, DeviceType::CPU, masked_fill_kernel);
EMBER_REGISTER_KERNEL(threshold_backward_stub, DeviceType::CPU, threshold_backward_kernel);

}  // namespace ember::kernels::cpu
