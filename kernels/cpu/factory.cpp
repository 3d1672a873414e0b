// CPU kernels of the filling factories: arange, linspace (kernels/math/factory.h) and eye's
// diagonal. full and zeros fill through fill_stub (kernels/cpu/copy.cpp).

#include "core/ops/factory.h"

#include <algorithm>

#include "core/dtype.h"
#include "kernels/math/factory.h"

namespace ember::kernels::cpu {

namespace {

// out[i] = op(i) for the n elements of a contiguous out.
template <class T, class Op>
void fill_indexed(const Tensor& out, const Op& op) {
  T* p = out.data_ptr<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = op(i);
}

void arange_kernel(const Tensor& out, const ArangeArgs& args) {
  EMBER_DISPATCH_NUMERIC(out.dtype(), "arange", [&] {
    if (args.floating)
      fill_indexed<scalar_t>(out, math::ArangeOp<scalar_t>{args.start, args.step});
    else
      fill_indexed<scalar_t>(out, math::ArangeIntOp<scalar_t>{args.int_start, args.int_step});
  });
}

void linspace_kernel(const Tensor& out, double start, double end) {
  EMBER_DISPATCH_NUMERIC(out.dtype(), "linspace", [&] {
    fill_indexed<scalar_t>(out, math::LinspaceOp<scalar_t>::make(start, end, out.numel()));
  });
}

void eye_kernel(const Tensor& out) {
  const int64_t n = out.size(0), m = out.size(1);
  EMBER_DISPATCH_ALL(out.dtype(), "eye", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = static_cast<scalar_t>(1);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(arange_stub, DeviceType::CPU, arange_kernel);
EMBER_REGISTER_KERNEL(linspace_stub, DeviceType::CPU, linspace_kernel);
EMBER_REGISTER_KERNEL(eye_stub, DeviceType::CPU, eye_kernel);

}  // namespace ember::kernels::cpu
