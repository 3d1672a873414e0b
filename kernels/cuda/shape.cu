// CUDA kernels for the shape ops that are not plain strided copies (core/ops/shape.h): cat of
// contiguous inputs and tril/triu. stack is cat of unsqueezed views; pad, flip and roll are
// composites over copies and advanced indexing (kernels/cuda/index.cu), so they need no kernel
// of their own. The caller made the tensors' device current (the stubs see raw pointers).

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/ops/shape.h"
#include "kernels/cuda/common.cuh"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65536;

// One input of cat: dst [outer, out_row] <- src [outer, in_row] (in words of W), dst already
// moved to the input's first column. Grid-stride over outer * in_row words.
template <class W>
__global__ void cat_copy_kernel(W* dst, const W* src, int64_t outer, int64_t in_row,
                                int64_t out_row) {
  const int64_t total = outer * in_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const int64_t o = t / in_row, w = t % in_row;
    dst[o * out_row + w] = src[t];
  }
}

void cat_cuda(char* out, int64_t outer, int64_t out_row_bytes,
              const std::vector<CatInput>& inputs) {
  const Stream stream = current_stream(Device::cuda(current_device(DeviceType::CUDA)));
  char* dst = out;
  for (const CatInput& in : inputs) {
    if (outer == 1) {  // cat along dim 0: one block per input
      memcpy_async(dst, in.data, static_cast<size_t>(in.row_bytes), native_stream(stream), "cat");
    } else {
      const int w = common_word(
          {reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(in.data),
           static_cast<uintptr_t>(in.row_bytes), static_cast<uintptr_t>(out_row_bytes)});
      dispatch_word(w, [&](auto word) {
        using W = decltype(word);
        const int64_t total = outer * in.row_bytes / w;
        launch_kernel("cat_copy_kernel", &cat_copy_kernel<W>,
                      dim3(std::min<unsigned>(blocks_for(total, kThreads), kMaxBlocks)),
                      dim3(kThreads), 0, stream, reinterpret_cast<W*>(dst),
                      reinterpret_cast<const W*>(in.data), outer, in.row_bytes / w,
                      out_row_bytes / w);
      });
    }
    dst += in.row_bytes;
  }
}

// out, self: contiguous [batch, rows, cols] of E. Element (i, j) of each matrix is kept when
// j - i <= diagonal (tril) or j - i >= diagonal (triu), else zero.
template <class E>
__global__ void trilu_kernel(E* out, const E* self, int64_t total, int64_t rows, int64_t cols,
                             int64_t diagonal, bool upper) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const int64_t j = t % cols, i = (t / cols) % rows;
    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    out[t] = keep ? self[t] : E(0);
  }
}

void trilu_cuda(char* out, const char* self, int64_t batch, int64_t rows, int64_t cols,
                int64_t item_bytes, int64_t diagonal, bool upper) {
  const Stream stream = current_stream(Device::cuda(current_device(DeviceType::CUDA)));
  const int64_t total = batch * rows * cols;
  const int64_t diag = std::clamp(diagonal, -rows, cols);  // beyond these, nothing changes
  const unsigned blocks = std::min<unsigned>(blocks_for(total, kThreads), kMaxBlocks);
  auto launch = [&](auto elem) {
    using E = decltype(elem);
    launch_kernel(upper ? "triu_kernel" : "tril_kernel", &trilu_kernel<E>, dim3(blocks),
                  dim3(kThreads), 0, stream, reinterpret_cast<E*>(out),
                  reinterpret_cast<const E*>(self), total, rows, cols, diag, upper);
  };
  switch (item_bytes) {  // all-zero bytes are 0 in every dtype
    case 1:
      return launch(uint8_t{});
    case 2:
      return launch(uint16_t{});
    case 4:
      return launch(uint32_t{});
    case 8:
      return launch(uint64_t{});
    default:
      EMBER_ERROR(upper ? "triu" : "tril", ": unsupported element size ", item_bytes);
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(cat_stub, DeviceType::CUDA, cat_cuda);
EMBER_REGISTER_KERNEL(trilu_stub, DeviceType::CUDA, trilu_cuda);

}  // namespace ember::kernels::cuda
