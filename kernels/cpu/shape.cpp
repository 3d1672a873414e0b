// CPU kernels for the shape ops (core/ops/shape.h) that are not plain strided copies: cat of
// contiguous inputs (memcpy of whole rows) and tril/triu (memcpy of the kept part of each row,
// memset of the rest; all-zero bytes are 0 in every dtype).

#include "core/ops/shape.h"

#include <algorithm>
#include <cstring>

#include "core/parallel.h"

namespace ember::kernels::cpu {

namespace {

// Large single blocks are copied in pieces of this many bytes on the pool.
constexpr int64_t kCopyGrainBytes = int64_t{1} << 20;

void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
  parallel_for(0, bytes, kCopyGrainBytes, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

// out: [outer, out_row_bytes]; input i: [outer, inputs[i].row_bytes], placed side by side.
void cat_kernel(char* out, int64_t outer, int64_t out_row_bytes,
                const std::vector<CatInput>& inputs) {
  if (outer == 1) {  // cat along dim 0 (or dims before dim of size 1): one block per input
    for (const CatInput& in : inputs) {
      parallel_memcpy(out, in.data, in.row_bytes);
      out += in.row_bytes;
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kCopyGrainBytes / out_row_bytes);
  parallel_for(0, outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      char* dst = out + o * out_row_bytes;
      for (const CatInput& in : inputs) {
        std::memcpy(dst, in.data + o * in.row_bytes, static_cast<size_t>(in.row_bytes));
        dst += in.row_bytes;
      }
    }
  });
}

// out, self: contiguous [batch, rows, cols]. Row i keeps columns [lo, hi):
//   tril: j <= i + diagonal  ->  [0, i + diagonal + 1)
//   triu: j >= i + diagonal  ->  [i + diagonal, cols)
void trilu_kernel(char* out, const char* self, int64_t batch, int64_t rows, int64_t cols,
                  int64_t item_bytes, int64_t diagonal, bool upper) {
  const int64_t diag = std::clamp(diagonal, -rows, cols);  // beyond these, nothing changes
  const int64_t row_bytes = cols * item_bytes;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, cols));
  parallel_for(0, batch * rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t i = p % rows;
      const int64_t lo = upper ? std::clamp<int64_t>(i + diag, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(i + diag + 1, 0, cols);
      char* o = out + p * row_bytes;
      const char* s = self + p * row_bytes;
      std::memset(o, 0, static_cast<size_t>(lo * item_bytes));
      if (hi > lo)
        std::memcpy(o + lo * item_bytes, s + lo * item_bytes,
                    static_cast<size_t>((hi - lo) * item_bytes));
      std::memset(o + std::max(hi, lo) * item_bytes, 0,
                  static_cast<size_t>((cols - std::max(hi, lo)) * item_bytes));
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(cat_stub, DeviceType::CPU, cat_kernel);
EMBER_REGISTER_KERNEL(trilu_stub, DeviceType::CPU, trilu_kernel);

}  // namespace ember::kernels::cpu
