// CPU kernels for copy_ (with dtype conversion) and fill_.

#include "core/ops/copy.h"

#include <type_traits>

#include "kernels/cpu/convert16.h"
#include "kernels/cpu/loops.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cpu {

namespace {

template <class T>
constexpr bool is_16bit_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class dst_t, class src_t>
void copy_loop(TensorIter& iter) {
  constexpr bool f32_and_16bit = (std::is_same_v<src_t, float> && is_16bit_float_v<dst_t>) ||
                                 (is_16bit_float_v<src_t> && std::is_same_v<dst_t, float>);
  if constexpr (f32_and_16bit) {
    // The casts of mixed precision: contiguous rows go through the vectorised runs of
    // kernels/cpu/convert16.h (the same bits as the scalar conversion below).
    iter.for_each([](char** data, const int64_t* strides, int64_t n) {
      if (strides[0] == sizeof(dst_t) && strides[1] == sizeof(src_t)) {
        convert_run(reinterpret_cast<const src_t*>(data[1]), reinterpret_cast<dst_t*>(data[0]), n);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<dst_t*>(data[0] + i * strides[0]) =
            math::convert<dst_t>(*reinterpret_cast<const src_t*>(data[1] + i * strides[1]));
    });
  } else {
    cpu_kernel(iter, [](src_t v) -> dst_t { return math::convert<dst_t>(v); });
  }
}

void copy_kernel(TensorIter& iter, bool /*non_blocking*/) {
  EMBER_DISPATCH_ALL(iter.dtype(0), "copy_", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL(iter.dtype(1), "copy_", [&] { copy_loop<dst_t, scalar_t>(iter); });
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
