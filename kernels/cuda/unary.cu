// CUDA kernels for the unary element-wise ops: kernels/elementwise/unary.h's kernels (written
// once for every device) applied through gpu_kernel.

#include "kernels/cuda/loops.cuh"
#include "kernels/elementwise/unary.h"

namespace ember::kernels::cuda {

EMBER_REGISTER_UNARY_KERNELS(DeviceType::CUDA, GpuLoop);

}  // namespace ember::kernels::cuda
