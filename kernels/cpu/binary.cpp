// CPU kernels for the binary element-wise ops: each applies a kernels/math functor through
// cpu_kernel.

#include "core/ops/binary.h"
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

}  // namespace

EMBER_REGISTER_KERNEL(add_stub, DeviceType::CPU, add_kernel);
EMBER_REGISTER_KERNEL(mul_stub, DeviceType::CPU, mul_kernel);

}  // namespace ember::kernels::cpu
