// CUDA kernels for copy_ (every device pair with CUDA, Note [Device-pair stubs] in
// core/dispatch.h) and fill_.
//
// Note [Copies between devices]
// Bytes cross between the host and a device, or between two devices, only as one contiguous
// block (memcpy_async on the destination device's current stream). Everything else -- a dtype
// conversion, a broadcast source, strided views on either side -- is done on one side by an
// ordinary copy kernel into or out of a contiguous staging tensor:
//   host -> device  the host converts and packs the source (in dst's dtype and shape); the block
//                   goes across; a strided destination is filled from a device staging tensor.
//   device -> host  the device converts and packs the source (in dst's dtype, the source's own
//                   shape); the block comes across; the host broadcasts or scatters it into dst.
//   device -> device on one device: one element-wise kernel. Between two devices: pack on the
//                   source, one peer block, unpack on the destination, with the destination's
//                   stream waiting for the source's (an event) first.
// A host-side copy is finished when copy_ returns (cudaMemcpy semantics), except with
// non_blocking when the host side is the user's own pinned tensor: then only the stream holds
// the work, as PyTorch's non_blocking=True.

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/allocator.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/view.h"
#include "core/storage.h"
#include "core/stream.h"
#include "core/tensor_iter.h"
#include "kernels/cuda/device_checks.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/sync_debug.h"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

template <class To, class From>
struct CastOp {
  EMBER_HOST_DEVICE To operator()(From v) const { return math::convert<To>(v); }
};

template <class T>
struct FillOp {
  T value;
  EMBER_HOST_DEVICE T operator()() const { return value; }
};

// Note [Transposing copies]
// contiguous() of a transposed matrix (a view whose last two dims are swapped, as x.t() or a
// GEMM operand made K-major, kernels/cuda/gemm.cu) reads its source with a stride of a row: the
// element-wise kernel writes coalesced but reads each element from its own 32-byte sector. Such
// copies go through shared memory instead: a block of 32 x 8 threads reads a 32 x 32 tile along
// the source's unit-stride dim (coalesced), passes a barrier, and writes it along the
// destination's (coalesced), each thread four rows; the tile's rows are padded to 33 so the
// column reads do not all fall in one bank. The elements are moved as unsigned integers of
// their size (no dtype conversion happens here). Batches of matrices are the grid's z.
constexpr int kTransposeTile = 32, kTransposeRows = 8;

// dst[z][r][c] = src[z][c][r] for matrices of rows x cols (dst's shape), `batches` of them.
template <class U>
__global__ void transpose_kernel(const U* src, U* dst, int64_t rows, int64_t cols,
                                 int64_t batches) {
  EMBER_SHARED_ARRAY(U, tile, kTransposeTile, kTransposeTile + 1);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTransposeTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTransposeTile;
  for (int64_t z = blockIdx.z; z < batches; z += gridDim.z) {
    const U* s = src + z * rows * cols;  // element (r, c) at s[c * rows + r]
    U* d = dst + z * rows * cols;
    for (int j = ty; j < kTransposeTile; j += kTransposeRows) {
      const int64_t c = c0 + j, r = r0 + tx;
      if (c < cols && r < rows) tile[j][tx] = s[c * rows + r];
    }
    __syncthreads();
    for (int j = ty; j < kTransposeTile; j += kTransposeRows) {
      const int64_t r = r0 + j, c = c0 + tx;
      if (r < rows && c < cols) d[r * cols + c] = tile[tx][j];
    }
    __syncthreads();  // the tile is rewritten by the next batch
  }
}

// Runs dst = src as a transposing copy when src is a contiguous stack of matrices with its last
// two dims swapped, dst contiguous of the same shape and dtype; false otherwise.
bool transposing_copy(const Tensor& dst, const Tensor& src) {
  const int64_t nd = dst.dim();
  if (nd < 2 || dst.dtype() != src.dtype() || dst.sizes() != src.sizes() || !dst.is_contiguous())
    return false;
  const int64_t rows = dst.size(-2), cols = dst.size(-1);
  if (rows < 2 || cols < 2 || src.stride(-2) != 1 || src.stride(-1) != rows) return false;
  int64_t expect = rows * cols;
  for (int64_t d = nd - 3; d >= 0; --d) {
    if (src.size(d) != 1 && src.stride(d) != expect) return false;
    expect *= src.size(d);
  }
  const int64_t batches = dst.numel() / (rows * cols);
  const auto tiles = [](int64_t n) { return (n + kTransposeTile - 1) / kTransposeTile; };
  if (batches == 0 || tiles(rows) > 65535) return false;
  const dim3 grid(static_cast<unsigned>(tiles(cols)), static_cast<unsigned>(tiles(rows)),
                  static_cast<unsigned>(std::min<int64_t>(batches, 65535)));
  const Stream stream = current_stream(dst.device());
  auto run = [&](auto word) {
    using U = decltype(word);
    launch_kernel("transpose_kernel", &transpose_kernel<U>, grid,
                  dim3(kTransposeTile, kTransposeRows), 0, stream,
                  static_cast<const U*>(src.data_ptr()), static_cast<U*>(dst.data_ptr()), rows,
                  cols, batches);
  };
  switch (dst.element_size()) {
    case 1:
      run(uint8_t{});
      return true;
    case 2:
      run(uint16_t{});
      return true;
    case 4:
      run(uint32_t{});
      return true;
    case 8:
      run(uint64_t{});
      return true;
    default:
      return false;
  }
}

// dst = src on one cuda device (converting dtypes, src broadcast to dst), one element-wise kernel.
void copy_on_device(const Tensor& dst, const Tensor& src) {
  TensorIter iter = TensorIterConfig("copy_")
                        .add_output(dst)
                        .add_input(src)
                        .static_shape(dst.sizes())
                        .check_mem_overlap(false)  // native::copy_ checked the user's tensors
                        .build();
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    memcpy_async(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                 current_native_stream(dst.device().index), "copy_");
    return;
  }
  if (transposing_copy(dst, src)) return;  // Note [Transposing copies]
  EMBER_DISPATCH_ALL(dst.dtype(), "copy_", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      using src_t = scalar_t;
      gpu_kernel(iter, CastOp<dst_t, src_t>{});
    });
  });
}

bool is_plain(const Tensor& t, const Tensor& like) {
  return t.is_contiguous() && t.dtype() == like.dtype() && t.sizes() == like.sizes();
}

void copy_device_to_device(TensorIter& iter, bool) {
  const Tensor& dst = iter.tensor(0);
  const Tensor& src = iter.tensor(1);
  if (dst.device() == src.device()) {
    DeviceGuard guard(dst.device());
    copy_on_device(dst, src);
    return;
  }
  // Between two devices (Note [Copies between devices]).
  Tensor packed;
  {
    DeviceGuard guard(src.device());
    packed = src.is_contiguous() && src.dtype() == dst.dtype()
                 ? src
                 : native::to(native::contiguous(src), src.device(), dst.dtype());
  }
  Event ready(DeviceType::CUDA);
  ready.record(current_stream(src.device()));
  DeviceGuard guard(dst.device());
  const Stream dst_stream = current_stream(dst.device());
  ready.block(dst_stream);
  Tensor landed = is_plain(dst, packed) ? dst : empty(packed.sizes(), dst.options());
  std::optional<HostWait> wait;  // Note [Sync debug mode]
  if (!packed.is_same(src)) wait.emplace("copy_", dst.device().index);
  memcpy_async(landed.data_ptr(), packed.data_ptr(), packed.nbytes(), native_stream(dst_stream),
               "copy_");
  // The source-side staging tensor must live until the copy ran.
  if (!packed.is_same(src)) stream_synchronize(native_stream(dst_stream), "copy_");
  if (!landed.is_same(dst)) copy_on_device(dst, landed);
}

void copy_host_to_device(TensorIter& iter, bool non_blocking) {
  const Tensor& dst = iter.tensor(0);
  const Tensor& src = iter.tensor(1);
  DeviceGuard guard(dst.device());
  // The host packs: dst's dtype and shape, contiguous.
  Tensor host = is_plain(src, dst)
                    ? src
                    : native::contiguous(native::expand(native::to(src, dst.dtype()), dst.sizes()));
  Tensor landed = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.options());
  const bool async = non_blocking && host.is_same(src) && src.is_pinned();
  std::optional<HostWait> wait;
  if (!async) wait.emplace("copy_", dst.device().index);
  NativeStream s = current_native_stream(dst.device().index);
  memcpy_async(landed.data_ptr(), host.data_ptr(), host.nbytes(), s, "copy_");
  if (!landed.is_same(dst)) copy_on_device(dst, landed);
  if (async) {
    // The pinned block is not handed out again before this copy ran (Note [Cached pinned
    // blocks] in kernels/cuda/memory.cpp).
    get_pinned_allocator()->record_stream(src.impl().storage->data_ptr,
                                          current_stream(dst.device()));
    return;
  }
  stream_synchronize(s, "copy_");
}

void copy_device_to_host(TensorIter& iter, bool non_blocking) {
  const Tensor& dst = iter.tensor(0);
  const Tensor& src = iter.tensor(1);
  DeviceGuard guard(src.device());
  // The device packs: dst's dtype, the source's shape, contiguous.
  Tensor packed = src.is_contiguous() && src.dtype() == dst.dtype()
                      ? src
                      : native::to(native::contiguous(src), src.device(), dst.dtype());
  const bool direct = is_plain(dst, packed);
  Tensor host = direct ? dst : empty(packed.sizes(), dst.options());
  const bool async = direct && non_blocking && dst.is_pinned() && packed.is_same(src);
  std::optional<HostWait> wait;
  if (!async) wait.emplace("copy_", src.device().index);
  NativeStream s = current_native_stream(src.device().index);
  memcpy_async(host.data_ptr(), packed.data_ptr(), packed.nbytes(), s, "copy_");
  if (async) {
    get_pinned_allocator()->record_stream(dst.impl().storage->data_ptr,
                                          current_stream(src.device()));
    return;
  }
  stream_synchronize(s, "copy_");
  raise_failed_checks("copy_");  // before the host sees the values (Note [Deferred device checks])
  if (!direct) native::copy_(dst, host);
}

void fill_kernel(TensorIter& iter, const Scalar& value) {
  DeviceGuard guard(iter.device());
  EMBER_DISPATCH_ALL(iter.dtype(0), "fill_", [&] {
    const scalar_t v = value.to<scalar_t>();
    gpu_kernel(iter, FillOp<scalar_t>{v});
  });
}

}  // namespace

EMBER_REGISTER_DEVICE_PAIR_KERNEL(copy_stub, DeviceType::CUDA, DeviceType::CUDA,
                                  copy_device_to_device);
EMBER_REGISTER_DEVICE_PAIR_KERNEL(copy_stub, DeviceType::CPU, DeviceType::CUDA,
                                  copy_host_to_device);
EMBER_REGISTER_DEVICE_PAIR_KERNEL(copy_stub, DeviceType::CUDA, DeviceType::CPU,
                                  copy_device_to_host);
EMBER_REGISTER_KERNEL(fill_stub, DeviceType::CUDA, fill_kernel);

}  // namespace ember::kernels::cuda
