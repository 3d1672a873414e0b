// Autocast regions and the casts the ops ask for (autograd/autocast.h).

#include "autograd/autocast.h"

#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/ops/copy.h"
#include "core/error.h"

namespace ember::autocast {

namespace {

struct DeviceState {
  bool enabled = false;
  DType dtype;
};

struct ThreadState {
  DeviceState device[kNumDeviceTypes] = {{false, kBFloat16}, {false, kFloat16}};  // cpu, cuda
  bool cache = true;
};

thread_local ThreadState t_state;

struct CacheEntry {
  Tensor source;  // keeps the key's TensorImpl alive, so the address is never reused
  Tensor cast;
  uint32_t version;
};
thread_local std::unordered_map<const TensorImpl*, CacheEntry> t_cache;

DeviceState& state(DeviceType d) { return t_state.device[static_cast<int>(d)]; }

// Floating, not float64, of another dtype than `to`, on a device type with autocast on.
bool eligible(const Tensor& t, DType to) {
  if (!t.defined() || !t.is_floating_point() || t.dtype() == kFloat64 || t.dtype() == to)
    return false;
  return state(t.device().type).enabled;
}

}  // namespace

bool is_enabled(DeviceType device) { return state(device).enabled; }
DType get_dtype(DeviceType device) { return state(device).dtype; }

AutocastGuard::AutocastGuard(DeviceType device, std::optional<DType> dtype, bool enabled,
                             bool cache)
    : device_(device),
      prev_enabled_(state(device).enabled),
      prev_dtype_(state(device).dtype),
      prev_cache_(t_state.cache) {
  const DType want = dtype.value_or(device == DeviceType::CUDA ? kFloat16 : kBFloat16);
  EMBER_CHECK(want == kFloat16 || want == kBFloat16,
              "autocast: the lower-precision dtype must be float16 or bfloat16, got ",
              dtype_name(want));
  state(device) = {enabled, want};
  t_state.cache = cache;
  ++detail::active_regions;
}

AutocastGuard::~AutocastGuard() {
  state(device_) = {prev_enabled_, prev_dtype_};
  t_state.cache = prev_cache_;
  if (--detail::active_regions == 0) t_cache.clear();
}

void clear_cache() { t_cache.clear(); }
size_t cache_size() { return t_cache.size(); }

Tensor cast_lower(const Tensor& t) {
  if (!any_enabled()) return t;
  const DType to = state(t.defined() ? t.device().type : DeviceType::CPU).dtype;
  if (!eligible(t, to)) return t;
  // Note [Autocast weight cache]: parameters (float32 leaves that require grad), when the
  // graph is being recorded.
  const bool cacheable = t_state.cache && t.dtype() == kFloat32 && t.is_leaf() &&
                         t.requires_grad() && autograd::is_grad_enabled();
  if (!cacheable) return ember::to(t, t.device(), to);
  auto it = t_cache.find(&t.impl());
  if (it != t_cache.end() && it->second.version == t.version() && it->second.cast.dtype() == to)
    return it->second.cast;
  Tensor cast = ember::to(t, t.device(), to);
  t_cache[&t.impl()] = CacheEntry{t, cast, t.version()};
  return cast;
}

Tensor cast_float32(const Tensor& t) {
  if (!any_enabled() || !eligible(t, kFloat32)) return t;
  return ember::to(t, t.device(), kFloat32);
}

}  // namespace ember::autocast
