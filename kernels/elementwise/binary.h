#pragma once
// The binary element-wise kernels of every device (and the ternary where / lerp / addcmul /
// addcdiv / masked_fill, and relu's threshold_backward), written once over a Loop policy (Note
// [Kernels written once for every device] in kernels/elementwise/loop.h): each applies a
// kernels/math/binary.h functor. Operand 0 is the output, the inputs follow in argument order.

#include "core/ops/binary.h"
#include "kernels/elementwise/loop.h"
#include "kernels/math/binary.h"

namespace ember::kernels {

// A comparison or logical functor Op on two values of T, giving bool.
template <class T, class Op>
struct BoolResultOp {
  EMBER_HOST_DEVICE bool operator()(T a, T b) const { return Op{}(a, b); }
};

template <class Loop>
struct BinaryKernels {
  static void add_kernel(TensorIter& iter, const Scalar& alpha) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), "add", [&] {
      Loop::run(iter, math::AddOp<scalar_t>{alpha.to<opmath_t<scalar_t>>()});
    });
  }

  static void mul_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), "mul",
                       [&] { Loop::run(iter, math::MulOp<scalar_t>{}); });
  }

  static void div_true_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), "div",
                            [&] { Loop::run(iter, math::TrueDivOp<scalar_t>{}); });
  }

  static void div_trunc_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
      Loop::template run_division<scalar_t>(iter, math::DivTruncOp<scalar_t>{});
    });
  }

  static void div_floor_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
      Loop::template run_division<scalar_t>(iter, math::DivFloorOp<scalar_t>{});
    });
  }

  static void remainder_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
      Loop::template run_division<scalar_t>(iter, math::RemainderOp<scalar_t>{});
    });
  }

  static void pow_kernel(TensorIter& iter) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(),
                           [&] { Loop::run(iter, math::PowOp<scalar_t>{}); });
  }

  static void maximum_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(),
                       [&] { Loop::run(iter, math::MaximumOp<scalar_t>{}); });
  }

  static void minimum_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(),
                       [&] { Loop::run(iter, math::MinimumOp<scalar_t>{}); });
  }

  static void atan2_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                            [&] { Loop::run(iter, math::Atan2Op<scalar_t>{}); });
  }

  // Comparisons and logical ops: inputs (operands 1, 2) in the common dtype, a bool output.
  template <class Op>
  static void bool_result_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.common_dtype(), iter.op_name(),
                       [&] { Loop::run(iter, BoolResultOp<scalar_t, Op>{}); });
  }
  static void eq_kernel(TensorIter& iter) { bool_result_kernel<math::EqOp>(iter); }
  static void ne_kernel(TensorIter& iter) { bool_result_kernel<math::NeOp>(iter); }
  static void lt_kernel(TensorIter& iter) { bool_result_kernel<math::LtOp>(iter); }
  static void le_kernel(TensorIter& iter) { bool_result_kernel<math::LeOp>(iter); }
  static void gt_kernel(TensorIter& iter) { bool_result_kernel<math::GtOp>(iter); }
  static void ge_kernel(TensorIter& iter) { bool_result_kernel<math::GeOp>(iter); }
  static void logical_and_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalAndOp>(iter); }
  static void logical_or_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalOrOp>(iter); }
  static void logical_xor_kernel(TensorIter& iter) { bool_result_kernel<math::LogicalXorOp>(iter); }

  // Integers and bool only (the op rejects floating inputs with a clear message first).
  template <template <class> class Op>
  static void bitwise_kernel(TensorIter& iter) {
    EMBER_DISPATCH_SWITCH(iter.common_dtype(), iter.op_name(), EMBER_CASES_INTEGRAL([&] {
                            Loop::run(iter, Op<scalar_t>{});
                          }) EMBER_CASES_BOOL([&] { Loop::run(iter, Op<scalar_t>{}); }));
  }
  static void bitwise_and_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseAndOp>(iter); }
  static void bitwise_or_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseOrOp>(iter); }
  static void bitwise_xor_kernel(TensorIter& iter) { bitwise_kernel<math::BitwiseXorOp>(iter); }

  // (out, cond, a, b): the condition is bool, a, b and out share the output's dtype.
  static void where_kernel(TensorIter& iter) {
    EMBER_DISPATCH_ALL(iter.dtype(0), "where", [&] { Loop::run(iter, math::WhereOp<scalar_t>{}); });
  }

  static void lerp_scalar_kernel(TensorIter& iter, const Scalar& weight) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
      Loop::run(iter, math::LerpScalarOp<scalar_t>{weight.to<opmath_t<scalar_t>>()});
    });
  }

  static void lerp_tensor_kernel(TensorIter& iter) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(),
                            [&] { Loop::run(iter, math::LerpTensorOp<scalar_t>{}); });
  }

  static void addcmul_kernel(TensorIter& iter, const Scalar& value) {
    EMBER_DISPATCH_NUMERIC(iter.common_dtype(), iter.op_name(), [&] {
      Loop::run(iter, math::AddcmulOp<scalar_t>{value.to<opmath_t<scalar_t>>()});
    });
  }

  static void addcdiv_kernel(TensorIter& iter, const Scalar& value) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
      Loop::run(iter, math::AddcdivOp<scalar_t>{value.to<opmath_t<scalar_t>>()});
    });
  }

  // (out, self, mask): self and out in self's dtype, mask bool.
  static void masked_fill_kernel(TensorIter& iter, const Scalar& value) {
    EMBER_DISPATCH_ALL(iter.dtype(0), iter.op_name(), [&] {
      Loop::run(iter, math::MaskedFillOp<scalar_t>{value.to<scalar_t>()});
    });
  }

  static void threshold_backward_kernel(TensorIter& iter, double threshold) {
    EMBER_DISPATCH_FLOATING(iter.common_dtype(), iter.op_name(), [&] {
      using M = opmath_t<scalar_t>;
      // The threshold rounded to the dtype first, as the output values are.
      const M t = static_cast<M>(static_cast<scalar_t>(threshold));
      Loop::run(iter, math::ThresholdBackwardOp<scalar_t>{t});
    });
  }
};

}  // namespace ember::kernels

// Registers every binary kernel of BinaryKernels<LOOP> for DEVICE.
#define EMBER_REGISTER_BINARY_KERNELS(DEVICE, LOOP)                                                \
  EMBER_REGISTER_KERNEL_OF(add_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, add_kernel);   \
  EMBER_REGISTER_KERNEL_OF(mul_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, mul_kernel);   \
  EMBER_REGISTER_KERNEL_OF(div_true_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,           \
                           div_true_kernel);                                                       \
  EMBER_REGISTER_KERNEL_OF(div_trunc_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,          \
                           div_trunc_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(div_floor_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,          \
                           div_floor_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(remainder_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,          \
                           remainder_kernel);                                                      \
  EMBER_REGISTER_KERNEL_OF(pow_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, pow_kernel);   \
  EMBER_REGISTER_KERNEL_OF(maximum_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,            \
                           maximum_kernel);                                                        \
  EMBER_REGISTER_KERNEL_OF(minimum_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,            \
                           minimum_kernel);                                                        \
  EMBER_REGISTER_KERNEL_OF(atan2_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,              \
                           atan2_kernel);                                                          \
  EMBER_REGISTER_KERNEL_OF(eq_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, eq_kernel);     \
  EMBER_REGISTER_KERNEL_OF(ne_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, ne_kernel);     \
  EMBER_REGISTER_KERNEL_OF(lt_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, lt_kernel);     \
  EMBER_REGISTER_KERNEL_OF(le_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, le_kernel);     \
  EMBER_REGISTER_KERNEL_OF(gt_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, gt_kernel);     \
  EMBER_REGISTER_KERNEL_OF(ge_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, ge_kernel);     \
  EMBER_REGISTER_KERNEL_OF(logical_and_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           logical_and_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(logical_or_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,         \
                           logical_or_kernel);                                                     \
  EMBER_REGISTER_KERNEL_OF(logical_xor_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           logical_xor_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(bitwise_and_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           bitwise_and_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(bitwise_or_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,         \
                           bitwise_or_kernel);                                                     \
  EMBER_REGISTER_KERNEL_OF(bitwise_xor_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           bitwise_xor_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(where_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,              \
                           where_kernel);                                                          \
  EMBER_REGISTER_KERNEL_OF(lerp_scalar_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           lerp_scalar_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(lerp_tensor_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           lerp_tensor_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(addcmul_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,            \
                           addcmul_kernel);                                                        \
  EMBER_REGISTER_KERNEL_OF(addcdiv_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,            \
                           addcdiv_kernel);                                                        \
  EMBER_REGISTER_KERNEL_OF(masked_fill_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>,        \
                           masked_fill_kernel);                                                    \
  EMBER_REGISTER_KERNEL_OF(threshold_backward_stub, DEVICE, ::ember::kernels::BinaryKernels<LOOP>, \
                           threshold_backward_kernel)
