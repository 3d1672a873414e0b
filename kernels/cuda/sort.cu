// CUDA kernels for sort and topk (core/ops/index.h): a bitonic sort of each line along the dim.
//
// Note [Sorting on CUDA]
// Each element is a (key, position) pair; keys compare in opmath_t (float for float16/bfloat16),
// NaN as larger than every number, and equal keys by position. That is a strict total order, so
// every correct sort gives the one result a stable sort gives -- the CPU's (kernels/cpu/sort.cpp),
// in both directions -- and a bitonic network (not stable by itself) is exact here. A line is
// padded to a power of two P with positions n..P-1, which sort after every real element.
// - Lines of up to kMaxSharedLine elements: one block per line sorts it in shared memory
//   (bitonic_sort_shared_kernel; P / 2 compare-exchanges per step, spread over the block's
//   threads, a barrier between steps).
// - Longer lines: the pairs go to a global scratch buffer ([lines, P] keys and positions), and
//   each of the log2(P) * (log2(P) + 1) / 2 steps of the network is one launch over every line
//   (bitonic_step_kernel); no length limit but memory, O(n log^2 n) work and memory traffic.
// topk sorts the whole line the same way (largest: descending) and writes its first k; sorted
// = false returns them sorted too (any order is allowed).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "kernels/cuda/indexing.cuh"
#include "kernels/math/convert.h"

namespace ember::kernels::cuda {

namespace {

constexpr int64_t kMaxSharedLine = 2048;
constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65536;

template <class K>
__device__ __forceinline__ bool key_is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return v != v;
  } else {
    return false;
  }
}

// a < b with NaN as the largest value (NaNs equal among themselves).
template <class K>
__device__ __forceinline__ bool key_less(K a, K b) {
  return a < b || (!key_is_nan(a) && key_is_nan(b));
}

// Whether (ka, ia) comes before (kb, ib) in the output of a line of n (Note [Sorting on CUDA]).
template <class K>
__device__ __forceinline__ bool comes_before(K ka, int32_t ia, K kb, int32_t ib, int32_t n,
                                             bool descending) {
  const bool pad_a = ia >= n, pad_b = ib >= n;
  if (pad_a || pad_b) return pad_a == pad_b ? ia < ib : pad_b;
  const bool before = descending ? key_less(kb, ka) : key_less(ka, kb);
  const bool after = descending ? key_less(ka, kb) : key_less(kb, ka);
  if (before || after) return before;
  return ia < ib;
}

// The slice's three base pointers (values, indices, self) for iteration position s.
struct Lines {
  OperandData<3> data;
  OffsetCalculator<3> calc;
  int32_t n;  // elements of self per line
  int32_t k;  // outputs per line
  int64_t self_stride, values_stride, indices_stride;
};

// One block per line of at most P elements; P a power of two, blockDim.x <= P / 2.
template <class T, int P>
__global__ void bitonic_sort_shared_kernel(Lines lines, bool descending) {
  using K = opmath_t<T>;
  EMBER_SHARED_ARRAY(K, keys, P);
  EMBER_SHARED_ARRAY(int32_t, pos, P);
  int32_t off[3];
  lines.calc.offsets(static_cast<int32_t>(blockIdx.x), off);
  const char* self = lines.data.ptr[2] + off[2];
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  for (int i = tid; i < P; i += threads) {
    keys[i] = i < lines.n
                  ? static_cast<K>(*reinterpret_cast<const T*>(self + i * lines.self_stride))
                  : K(0);
    pos[i] = i;
  }
  __syncthreads();
  for (int size = 2; size <= P; size <<= 1) {
    for (int half = size >> 1; half > 0; half >>= 1) {
      for (int t = tid; t < P / 2; t += threads) {
        const int a = 2 * half * (t / half) + t % half, b = a + half;
        const bool up = (a & size) == 0;  // this run ends ascending in the output order
        const K ka = keys[a], kb = keys[b];
        const int32_t ia = pos[a], ib = pos[b];
        const bool swap = up ? comes_before(kb, ib, ka, ia, lines.n, descending)
                             : comes_before(ka, ia, kb, ib, lines.n, descending);
        if (swap) {
          keys[a] = kb;
          keys[b] = ka;
          pos[a] = ib;
          pos[b] = ia;
        }
      }
      __syncthreads();
    }
  }
  char* values = lines.data.ptr[0] + off[0];
  char* indices = lines.data.ptr[1] + off[1];
  for (int i = tid; i < lines.k; i += threads) {
    *reinterpret_cast<T*>(values + i * lines.values_stride) =
        math::convert<T>(static_cast<K>(keys[i]));
    *reinterpret_cast<int64_t*>(indices + i * lines.indices_stride) = static_cast<int32_t>(pos[i]);
  }
}

// Global path (Note [Sorting on CUDA]): scratch keys/pos [lines, p].
template <class T>
__global__ void bitonic_load_kernel(Lines lines, int64_t count, int64_t p, opmath_t<T>* keys,
                                    int32_t* pos) {
  using K = opmath_t<T>;
  const int64_t total = count * p;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const int64_t s = t / p, i = t % p;
    int32_t off[3];
    lines.calc.offsets(static_cast<int32_t>(s), off);
    keys[t] = i < lines.n ? static_cast<K>(*reinterpret_cast<const T*>(lines.data.ptr[2] + off[2] +
                                                                       i * lines.self_stride))
                          : K(0);
    pos[t] = static_cast<int32_t>(i);
  }
}

// One step (size, half) of the bitonic network over every line.
template <class K>
__global__ void bitonic_step_kernel(int64_t count, int64_t p, int64_t size, int64_t half, int32_t n,
                                    bool descending, K* keys, int32_t* pos) {
  const int64_t pairs = count * (p / 2);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < pairs;
       t += stride) {
    const int64_t line = t / (p / 2), u = t % (p / 2);
    const int64_t a = 2 * half * (u / half) + u % half, b = a + half;
    const bool up = (a & size) == 0;
    K* k = keys + line * p;
    int32_t* q = pos + line * p;
    const K ka = k[a], kb = k[b];
    const int32_t ia = q[a], ib = q[b];
    const bool swap = up ? comes_before(kb, ib, ka, ia, n, descending)
                         : comes_before(ka, ia, kb, ib, n, descending);
    if (swap) {
      k[a] = kb;
      k[b] = ka;
      q[a] = ib;
      q[b] = ia;
    }
  }
}

template <class T>
__global__ void bitonic_store_kernel(Lines lines, int64_t count, int64_t p, const opmath_t<T>* keys,
                                     const int32_t* pos) {
  const int64_t total = count * lines.k;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const int64_t s = t / lines.k, i = t % lines.k;
    int32_t off[3];
    lines.calc.offsets(static_cast<int32_t>(s), off);
    *reinterpret_cast<T*>(lines.data.ptr[0] + off[0] + i * lines.values_stride) =
        math::convert<T>(keys[s * p + i]);
    *reinterpret_cast<int64_t*>(lines.data.ptr[1] + off[1] + i * lines.indices_stride) =
        pos[s * p + i];
  }
}

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

unsigned grid_for(int64_t total) {
  return std::min<unsigned>(blocks_for(total, kThreads), kMaxBlocks);
}

template <class T, int P>
void launch_shared(const Lines& lines, int64_t count, bool descending, const Stream& stream) {
  constexpr int threads = P / 2 < 1024 ? P / 2 : 1024;
  launch_kernel("bitonic_sort_shared_kernel", &bitonic_sort_shared_kernel<T, P>,
                dim3(static_cast<unsigned>(count)), dim3(threads), 0, stream, lines, descending);
}

template <class T>
void sort_lines(const TensorIter& sub, const SortLoop& loop, bool descending,
                const Stream& stream) {
  using K = opmath_t<T>;
  Lines lines{operand_data<3>(sub),
              make_offset_calculator<3>(sub),
              static_cast<int32_t>(loop.n),
              static_cast<int32_t>(loop.k),
              loop.self_stride,
              loop.values_stride,
              loop.indices_stride};
  const int64_t count = sub.numel();
  if (loop.n <= 64) return launch_shared<T, 64>(lines, count, descending, stream);
  if (loop.n <= 256) return launch_shared<T, 256>(lines, count, descending, stream);
  if (loop.n <= 1024) return launch_shared<T, 1024>(lines, count, descending, stream);
  if (loop.n <= kMaxSharedLine)
    return launch_shared<T, kMaxSharedLine>(lines, count, descending, stream);
  const int64_t p = next_pow2(loop.n);
  DataPtr keys =
      get_allocator(DeviceType::CUDA)->allocate(static_cast<size_t>(count * p) * sizeof(K), stream);
  DataPtr pos = get_allocator(DeviceType::CUDA)
                    ->allocate(static_cast<size_t>(count * p) * sizeof(int32_t), stream);
  K* k = static_cast<K*>(keys.get());
  int32_t* q = static_cast<int32_t*>(pos.get());
  launch_kernel("bitonic_load_kernel", &bitonic_load_kernel<T>, dim3(grid_for(count * p)),
                dim3(kThreads), 0, stream, lines, count, p, k, q);
  for (int64_t size = 2; size <= p; size <<= 1) {
    for (int64_t half = size >> 1; half > 0; half >>= 1) {
      launch_kernel("bitonic_step_kernel", &bitonic_step_kernel<K>, dim3(grid_for(count * (p / 2))),
                    dim3(kThreads), 0, stream, count, p, size, half, lines.n, descending, k, q);
    }
  }
  launch_kernel("bitonic_store_kernel", &bitonic_store_kernel<T>, dim3(grid_for(count * loop.k)),
                dim3(kThreads), 0, stream, lines, count, p, static_cast<const K*>(k),
                static_cast<const int32_t*>(q));
}

void sort_or_topk(TensorIter& iter, const SortLoop& loop, bool descending, const char* op) {
  EMBER_CHECK(loop.n < std::numeric_limits<int32_t>::max(), op, ": a line of ", loop.n,
              " elements is too long for the CUDA sort (at most 2^31 - 2)");
  DeviceGuard guard(iter.device());
  const Stream stream = current_stream(iter.device());
  EMBER_DISPATCH_ALL(iter.dtype(2), op, [&] {
    for_each_32bit(
        iter, [&](const TensorIter& sub) { sort_lines<scalar_t>(sub, loop, descending, stream); });
  });
}

void sort_cuda(TensorIter& iter, const SortLoop& loop, bool descending) {
  sort_or_topk(iter, loop, descending, "sort");
}

void topk_cuda(TensorIter& iter, const SortLoop& loop, bool largest, bool sorted) {
  (void)sorted;  // always sorted (Note [Sorting on CUDA])
  sort_or_topk(iter, loop, largest, "topk");
}

}  // namespace

EMBER_REGISTER_KERNEL(sort_stub, DeviceType::CUDA, sort_cuda);
EMBER_REGISTER_KERNEL(topk_stub, DeviceType::CUDA, topk_cuda);

}  // namespace ember::kernels::cuda
