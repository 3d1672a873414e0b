// CPU kernels for copy_ (with dtype conversion) and fill_.

#include "core/ops/copy.h"

#include "kernels/cpu/loops.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

void copy_kernel(TensorIter& iter, bool /*non_blocking*/) {
  EMBER_DISPATCH_ALL(iter.dtype(0), "copy_", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL(iter.dtype(1), "copy_", [&] {
      using src_t = scalar_t;
      cpu_kernel(iter, [](src_t v) -> dst_t { return math::convert<dst_t>(v); });
    });
  });
}

void fill_kernel(TensorIter& iter, const Scalar& value) {
  EMBER_DISPATCH_ALL(iter.dtype(0), "fill_", [&] {
    const scalar_t v = value.to<scalar_t>();
    cpu_kernel(iter, [v]() -> scalar_t { return v; });
  });
}

}  // namespace

EMBER_REGISTER_DEVICE_PAIR_KERNEL(copy_stub, DeviceType::CPU, DeviceType::CPU, copy_kernel);
EMBER_REGISTER_KERNEL(fill_stub, DeviceType::CPU, fill_kernel);

}  // namespace ember::kernels::cpu
