// CPU kernels for the binary element-wise ops (and where, lerp, addcmul, addcdiv, masked_fill,
// threshold_backward): kernels/elementwise/binary.h's kernels (written once for every device)
// applied through cpu_kernel.

#include "kernels/elementwise/binary.h"

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

EMBER_REGISTER_BINARY_KERNELS(DeviceType::CPU, CpuLoop);

}  // namespace ember::kernels::cpu
