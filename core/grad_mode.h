#pragma once
// The thread-local autograd switches that the op layer reads on every call.
//
// Note [Grad mode in core]
// Like c10/core/GradMode.h in PyTorch, the raw flags live in core: core itself only reads
// `inference_mode_enabled` (a storage made under InferenceMode is marked as an inference
// storage, see StorageImpl::is_inference). Everything else -- the guards users write
// (NoGradGuard, EnableGradGuard, InferenceMode) and what the flags mean for the graph -- is
// in autograd/grad_mode.h.

namespace ember::detail {

inline thread_local bool grad_mode_enabled = true;
inline thread_local bool inference_mode_enabled = false;

}  // namespace ember::detail
