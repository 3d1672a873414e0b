#pragma once
// Storage: one block of device memory shared by a tensor and all of its views.
//
// Note [Version counter]
// The storage carries a version counter. Every in-place op bumps it (Tensor::bump_version()).
// Autograd records the version of each tensor it saves for backward and compares it when
// backward unpacks the tensor, so an in-place change in between is reported instead of silently
// producing a wrong gradient. Views share the storage, hence the counter, as they must: writing
// through a view changes the base's data too.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/allocator.h"
#include "core/grad_mode.h"
#include "core/macros.h"
#include "core/record_function.h"

namespace ember {

struct StorageImpl {
  DataPtr data_ptr;
  size_t nbytes = 0;
  uint32_t version = 0;  // Note [Version counter]
  // Made under InferenceMode: tensors on it can never join an autograd graph
  // (autograd/grad_mode.h).
  bool is_inference = detail::inference_mode_enabled;
  // Page-locked host memory from the pinned allocator (Note [Pinned host memory]).
  bool is_pinned = false;

  // Its allocation was shown to a profiler recording memory, which is then told of its free.
  bool profiled = false;

  StorageImpl(DataPtr p, size_t n) : data_ptr(std::move(p)), nbytes(n) {
    if (EMBER_UNLIKELY(profiler::memory_enabled())) note_allocation();
  }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    if (EMBER_UNLIKELY(profiled))
      profiler::detail::record_memory(-static_cast<int64_t>(nbytes), device());
  }
  void* data() const { return data_ptr.get(); }
  Device device() const { return data_ptr.device(); }

 private:
  void note_allocation() {
    profiled = true;
    profiler::detail::record_memory(static_cast<int64_t>(nbytes), device());
  }
};

using Storage = std::shared_ptr<StorageImpl>;

// A fresh storage of nbytes from the device's allocator.
Storage make_storage(size_t nbytes, Device device);

}  // namespace ember
