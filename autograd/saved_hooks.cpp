#include "autograd/saved_hooks.h"

#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"

namespace ember::autograd {

namespace {

thread_local std::vector<std::shared_ptr<const SavedTensorHooks>> hook_stack;

const SavedTensorHooks* push(std::shared_ptr<const SavedTensorHooks> hooks) {
  EMBER_CHECK(hooks != nullptr && hooks->pack && hooks->unpack,
              "saved_tensors_hooks: both a pack and an unpack hook are needed");
  hook_stack.push_back(std::move(hooks));
  ++detail::saved_hooks_depth;
  return hook_stack.back().get();
}

struct OnCpu {
  Device device;
  Tensor data;
};

}  // namespace

std::shared_ptr<const SavedTensorHooks> current_saved_tensor_hooks() {
  return hook_stack.empty() ? nullptr : hook_stack.back();
}

SavedTensorsHooksGuard::SavedTensorsHooksGuard(PackHook pack, UnpackHook unpack)
    : SavedTensorsHooksGuard(std::make_shared<const SavedTensorHooks>(
          SavedTensorHooks{std::move(pack), std::move(unpack)})) {}

SavedTensorsHooksGuard::SavedTensorsHooksGuard(std::shared_ptr<const SavedTensorHooks> hooks)
    : hooks_(push(std::move(hooks))) {}

SavedTensorsHooksGuard::~SavedTensorsHooksGuard() {
  // Scoped guards end innermost first; anything else is a bug in the caller's code, and a
  // destructor cannot throw, so the stack is unwound to this guard either way.
  while (!hook_stack.empty()) {
    const bool mine = hook_stack.back().get() == hooks_;
    hook_stack.pop_back();
    --detail::saved_hooks_depth;
    if (mine) break;
  }
}

SaveOnCpu::SaveOnCpu(bool pin_memory)
    : guard_(
          [pin_memory](const Tensor& t) -> std::any {
            if (t.device().is_cpu()) return OnCpu{t.device(), t};
            NoGradGuard no_grad;
            if (!pin_memory) return OnCpu{t.device(), t.cpu()};
            // Queued on the device's stream: the copy back in unpack queues behind it, and the
            // host never reads the pinned buffer.
            Tensor host = ember::pin_memory(ember::empty(t.sizes(), t.dtype()));
            native::copy_(host, t, /*non_blocking=*/true);
            return OnCpu{t.device(), host};
          },
          [pin_memory](const std::any& packed) {
            const auto& p = std::any_cast<const OnCpu&>(packed);
            if (p.device.is_cpu()) return p.data;
            NoGradGuard no_grad;
            return p.data.to(p.device, p.data.dtype(), /*non_blocking=*/pin_memory);
          }) {}

}  // namespace ember::autograd
