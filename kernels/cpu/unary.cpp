// CPU kernels for the unary element-wise ops: kernels/elementwise/unary.h's kernels (written once
// for every device) applied through cpu_kernel.

#include "kernels/elementwise/unary.h"

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

EMBER_REGISTER_UNARY_KERNELS(DeviceType::CPU, CpuLoop);

}  // namespace ember::kernels::cpu
