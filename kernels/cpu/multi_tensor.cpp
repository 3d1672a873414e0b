// CPU kernels of the multi-tensor ops (core/ops/multi_tensor.h): the CPU has no launches to
// save, so a multi-tensor step is the per-parameter kernels one after another (the same bits),
// and the total norm sums each tensor's squares in double.

#include "core/ops/multi_tensor.h"

#include <cmath>

#include "core/dtype.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

void multi_sgd_step_kernel(const std::vector<SgdUpdate>& updates) {
  for (const SgdUpdate& u : updates)
    sgd_step_stub(DeviceType::CPU, u.param, u.grad, u.momentum_buffer, u.c);
}

void multi_adam_step_kernel(const std::vector<AdamUpdate>& updates) {
  for (const AdamUpdate& u : updates)
    adam_step_stub(DeviceType::CPU, u.param, u.grad, u.exp_avg, u.exp_avg_sq, u.max_exp_avg_sq,
                   u.c);
}

void multi_norm2_kernel(const Tensor& out, const std::vector<Tensor>& tensors) {
  EMBER_DISPATCH_FLOATING(out.dtype(), "clip_grad_norm_", [&] {
    double sum = 0;
    for (const Tensor& t : tensors) {
      const scalar_t* x = static_cast<const scalar_t*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double v = math::convert<double>(x[i]);
        sum += v * v;
      }
    }
    *static_cast<scalar_t*>(out.data_ptr()) = math::convert<scalar_t>(std::sqrt(sum));
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(multi_sgd_step_stub, DeviceType::CPU, multi_sgd_step_kernel);
EMBER_REGISTER_KERNEL(multi_adam_step_stub, DeviceType::CPU, multi_adam_step_kernel);
EMBER_REGISTER_KERNEL(multi_norm2_stub, DeviceType::CPU, multi_norm2_kernel);

}  // namespace ember::kernels::cpu
