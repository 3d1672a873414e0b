// CUDA kernels for the binary element-wise ops (and where, lerp, addcmul, addcdiv, masked_fill,
// threshold_backward): kernels/elementwise/binary.h's kernels (written once for every device)
// applied through gpu_kernel.

#include "kernels/cuda/loops.cuh"
#include "kernels/elementwise/binary.h"

namespace ember::kernels::cuda {

EMBER_REGISTER_BINARY_KERNELS(DeviceType::CUDA, GpuLoop);

}  // namespace ember::kernels::cuda
