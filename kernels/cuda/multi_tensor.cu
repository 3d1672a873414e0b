// CUDA multi-tensor kernels (core/ops/multi_tensor.h): SGD and Adam/AdamW steps over many
// parameters in one launch, and the total 2-norm of many tensors.
//
// Note [Multi-tensor launches]
// A launch takes its work list by value, in the kernel's argument struct (apex's
// multi_tensor_apply): up to kMaxTensors tensors -- kPtrs pointers each (param, grad, states),
// their numel and their functor -- and up to kMaxBlocks (tensor, chunk) pairs, block b working on
// elements [chunk * kMultiTensorChunk, (chunk + 1) * kMultiTensorChunk) of its tensor. The host
// walks the tensors, adding each one's chunks, and launches whenever either table is full; a
// tensor cut by a launch goes on in the next. The struct stays under the 4 KiB that every CUDA
// version accepts as kernel parameters. Each element sees exactly the per-parameter kernel's
// operations (kernels/cuda/optim.cu), so the two paths give the same bits.
//
// The norm: each block sums the squares of its chunk in opmath_t (a strided fold per thread,
// merged in a fixed tree) and writes one partial to a workspace; a second launch of one block
// adds the partials in double in chunk order and stores sqrt. No atomics: the same tensors give
// the same bits on every run.

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/ops/factory.h"
#include "core/ops/multi_tensor.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/math/convert.h"
#include "kernels/math/optim.h"

namespace ember::kernels::cuda {

namespace {

using math::convert;

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 200;

// The work of one launch (Note [Multi-tensor launches]). Op: one functor per tensor.
template <int kPtrs, class Op, int kMaxTensors>
struct TensorList {
  void* ptrs[kPtrs][kMaxTensors];
  int64_t numel[kMaxTensors];
  Op op[kMaxTensors];
  unsigned char block_tensor[kMaxBlocks];
  int block_chunk[kMaxBlocks];
};

// The largest tensor count whose list fits the 4 KiB parameter limit (with room to spare).
template <int kPtrs, class Op>
constexpr int max_tensors() {
  constexpr int fixed = kMaxBlocks * (1 + 4) + 64;
  constexpr int per = kPtrs * 8 + 8 + static_cast<int>(sizeof(Op));
  constexpr int n = (4000 - fixed) / per;
  return n < 255 ? n : 255;
}

template <int kPtrs, class Op>
using List = TensorList<kPtrs, Op, max_tensors<kPtrs, Op>()>;

// This block's tensor index and element range.
template <class L>
__device__ __forceinline__ int block_range(const L& list, int64_t& begin, int64_t& end) {
  const int t = list.block_tensor[blockIdx.x];
  begin = static_cast<int64_t>(list.block_chunk[blockIdx.x]) * kMultiTensorChunk;
  end = begin + kMultiTensorChunk < list.numel[t] ? begin + kMultiTensorChunk : list.numel[t];
  return t;
}

// ptrs: param, grad, momentum_buffer (kMomentum only).
template <class T, bool kMomentum>
__global__ void multi_sgd_kernel(List<3, math::SgdStep<opmath_t<T>, kMomentum>> list) {
  using M = opmath_t<T>;
  int64_t begin, end;
  const int t = block_range(list, begin, end);
  T* p = static_cast<T*>(list.ptrs[0][t]);
  const T* g = static_cast<const T*>(list.ptrs[1][t]);
  T* b = static_cast<T*>(list.ptrs[2][t]);
  const auto op = list.op[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    M pi = static_cast<M>(p[i]);
    M bi{};
    if constexpr (kMomentum) bi = op.first ? M{} : static_cast<M>(b[i]);
    op(pi, static_cast<M>(g[i]), bi);
    if constexpr (kMomentum) b[i] = static_cast<T>(bi);
    p[i] = static_cast<T>(pi);
  }
}

// ptrs: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (kAmsgrad only).
template <class T, bool kAmsgrad>
__global__ void multi_adam_kernel(List<5, math::AdamStep<opmath_t<T>, kAmsgrad>> list) {
  using M = opmath_t<T>;
  int64_t begin, end;
  const int t = block_range(list, begin, end);
  T* p = static_cast<T*>(list.ptrs[0][t]);
  const T* g = static_cast<const T*>(list.ptrs[1][t]);
  T* m = static_cast<T*>(list.ptrs[2][t]);
  T* v = static_cast<T*>(list.ptrs[3][t]);
  T* v_max = static_cast<T*>(list.ptrs[4][t]);
  const auto op = list.op[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    M pi = static_cast<M>(p[i]);
    M mi = static_cast<M>(m[i]);
    M vi = static_cast<M>(v[i]);
    M vmax_i{};
    if constexpr (kAmsgrad) vmax_i = static_cast<M>(v_max[i]);
    op(pi, static_cast<M>(g[i]), mi, vi, vmax_i);
    m[i] = static_cast<T>(mi);
    v[i] = static_cast<T>(vi);
    if constexpr (kAmsgrad) v_max[i] = static_cast<T>(vmax_i);
    p[i] = static_cast<T>(pi);
  }
}

// Fills lists with `n` tensors and launches `launch(list, blocks)` whenever one is full.
// add(list, slot, k) stores tensor k's pointers and functor in slot `slot`.
template <class L, class Add, class Launch>
void for_each_launch(size_t n, const std::vector<int64_t>& numel, Add add, Launch launch) {
  constexpr int kTensors = static_cast<int>(sizeof(L::numel) / sizeof(int64_t));
  L list{};
  int tensors = 0, blocks = 0;
  for (size_t k = 0; k < n; ++k) {
    const int64_t chunks = (numel[k] + kMultiTensorChunk - 1) / kMultiTensorChunk;
    if (chunks == 0) continue;
    for (int64_t c = 0; c < chunks; ++c) {
      if (c == 0 || blocks == 0) {  // tensor k (again, after a launch) takes a slot
        add(list, tensors, k);
        list.numel[tensors] = numel[k];
        ++tensors;
      }
      list.block_tensor[blocks] = static_cast<unsigned char>(tensors - 1);
      list.block_chunk[blocks] = static_cast<int>(c);
      ++blocks;
      if (blocks == kMaxBlocks || (tensors == kTensors && c + 1 == chunks)) {
        launch(list, blocks);
        tensors = blocks = 0;
      }
    }
  }
  if (blocks > 0) launch(list, blocks);
}

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// fn(std::true_type{}) or fn(std::false_type{}).
template <class Fn>
void static_bool(bool flag, Fn&& fn) {
  if (flag)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

// Runs fn(bucket) for the updates grouped by (dtype, flag), in first-seen order.
template <class Update, class Flag, class Fn>
void by_bucket(const std::vector<Update>& updates, Flag flag, Fn fn) {
  std::vector<bool> done(updates.size(), false);
  for (size_t i = 0; i < updates.size(); ++i) {
    if (done[i]) continue;
    std::vector<const Update*> bucket;
    for (size_t j = i; j < updates.size(); ++j) {
      if (done[j] || updates[j].param.dtype() != updates[i].param.dtype() ||
          flag(updates[j]) != flag(updates[i]))
        continue;
      done[j] = true;
      bucket.push_back(&updates[j]);
    }
    fn(bucket, flag(updates[i]));
  }
}

void multi_sgd_step_kernel(const std::vector<SgdUpdate>& updates) {
  const Device device = updates.front().param.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  by_bucket(
      updates, [](const SgdUpdate& u) { return u.c.momentum != 0.0; },
      [&](const std::vector<const SgdUpdate*>& bucket, bool momentum) {
        EMBER_DISPATCH_FLOATING(bucket.front()->param.dtype(), "SGD", [&] {
          using T = scalar_t;
          static_bool(momentum, [&](auto has_momentum) {
            constexpr bool kMomentum = decltype(has_momentum)::value;
            using Op = math::SgdStep<opmath_t<T>, kMomentum>;
            using L = List<3, Op>;
            std::vector<int64_t> numel;
            numel.reserve(bucket.size());
            for (const SgdUpdate* u : bucket) numel.push_back(u->param.numel());
            for_each_launch<L>(
                bucket.size(), numel,
                [&](L& list, int slot, size_t k) {
                  const SgdUpdate& u = *bucket[k];
                  list.ptrs[0][slot] = ptr<T>(u.param);
                  list.ptrs[1][slot] = ptr<T>(u.grad);
                  list.ptrs[2][slot] = kMomentum ? ptr<T>(u.momentum_buffer) : nullptr;
                  list.op[slot] = Op::from(u.c);
                },
                [&](const L& list, int blocks) {
                  launch_kernel("multi_sgd_kernel", &multi_sgd_kernel<T, kMomentum>,
                                dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream,
                                list);
                });
          });
        });
      });
}

void multi_adam_step_kernel(const std::vector<AdamUpdate>& updates) {
  const Device device = updates.front().param.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  by_bucket(
      updates, [](const AdamUpdate& u) { return u.c.amsgrad; },
      [&](const std::vector<const AdamUpdate*>& bucket, bool amsgrad) {
        const char* name = bucket.front()->c.decoupled ? "AdamW" : "Adam";
        EMBER_DISPATCH_FLOATING(bucket.front()->param.dtype(), name, [&] {
          using T = scalar_t;
          static_bool(amsgrad, [&](auto use_max) {
            constexpr bool kAmsgrad = decltype(use_max)::value;
            using Op = math::AdamStep<opmath_t<T>, kAmsgrad>;
            using L = List<5, Op>;
            std::vector<int64_t> numel;
            numel.reserve(bucket.size());
            for (const AdamUpdate* u : bucket) numel.push_back(u->param.numel());
            for_each_launch<L>(
                bucket.size(), numel,
                [&](L& list, int slot, size_t k) {
                  const AdamUpdate& u = *bucket[k];
                  list.ptrs[0][slot] = ptr<T>(u.param);
                  list.ptrs[1][slot] = ptr<T>(u.grad);
                  list.ptrs[2][slot] = ptr<T>(u.exp_avg);
                  list.ptrs[3][slot] = ptr<T>(u.exp_avg_sq);
                  list.ptrs[4][slot] = kAmsgrad ? ptr<T>(u.max_exp_avg_sq) : nullptr;
                  list.op[slot] = Op::from(u.c);
                },
                [&](const L& list, int blocks) {
                  launch_kernel("multi_adam_kernel", &multi_adam_kernel<T, kAmsgrad>,
                                dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream,
                                list);
                });
          });
        });
      });
}

// ---- the total norm -------------------------------------------------------------------------

struct NoOp {};

// Block b: the sum of squares of its chunk, in A, to partial[first_block + b].
template <class T>
__global__ void multi_sq_sum_kernel(List<1, NoOp> list, opmath_t<T>* partial, int64_t first_block) {
  using A = opmath_t<T>;
  EMBER_SHARED_ARRAY(A, warp_sums, kThreads / 32);
  int64_t begin, end;
  const int t = block_range(list, begin, end);
  const T* x = static_cast<const T*>(list.ptrs[0][t]);
  A acc = A(0);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A v = convert<A>(x[i]);
    acc += v * v;
  }
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int d = 16; d > 0; d /= 2) acc += __shfl_down_sync(0xffffffffu, acc, d, 32);
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kThreads / 32 ? warp_sums[lane] : A(0);
    for (int d = 16; d > 0; d /= 2) acc += __shfl_down_sync(0xffffffffu, acc, d, 32);
    if (lane == 0) partial[first_block + blockIdx.x] = acc;
  }
}

// One block of kThreads: out = sqrt(sum of the n partials), in double. Thread i adds partials
// i, i + kThreads, ... in order, then the warps' shuffles and one warp over their sums: a fixed
// order, so the norm has the same bits on every run (a single thread walking thousands of
// partials of a large model would stall the optimizer step on one thread's load latency).
template <class T>
__global__ void multi_norm_finish_kernel(const opmath_t<T>* partial, int64_t n, T* out) {
  EMBER_SHARED_ARRAY(double, warp_sums, kThreads / 32);
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += static_cast<double>(partial[i]);
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d, 32);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < kThreads / 32 ? static_cast<double>(warp_sums[lane]) : 0.0;
    for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d, 32);
    if (lane == 0) *out = convert<T>(std::sqrt(sum));
  }
}

void multi_norm2_kernel(const Tensor& out, const std::vector<Tensor>& tensors) {
  const Device device = out.device();
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  EMBER_DISPATCH_FLOATING(out.dtype(), "clip_grad_norm_", [&] {
    using T = scalar_t;
    using A = opmath_t<T>;
    using L = List<1, NoOp>;
    uses_collectives(&multi_sq_sum_kernel<T>);
    std::vector<int64_t> numel;
    int64_t total_blocks = 0;
    for (const Tensor& t : tensors) {
      numel.push_back(t.numel());
      total_blocks += (t.numel() + kMultiTensorChunk - 1) / kMultiTensorChunk;
    }
    T* o = static_cast<T*>(out.data_ptr());
    if (total_blocks == 0) {
      launch_kernel("multi_norm_finish_kernel", &multi_norm_finish_kernel<T>, dim3(1),
                    dim3(kThreads), 0, stream, static_cast<const A*>(nullptr), int64_t{0}, o);
      return;
    }
    const DType acc_dtype = std::is_same_v<A, double> ? kFloat64 : kFloat32;
    const Tensor partial = empty({total_blocks}, TensorOptions(acc_dtype).device(device));
    A* p = static_cast<A*>(partial.data_ptr());
    int64_t done = 0;
    for_each_launch<L>(
        tensors.size(), numel,
        [&](L& list, int slot, size_t k) {
          list.ptrs[0][slot] = const_cast<void*>(tensors[k].data_ptr());
        },
        [&](const L& list, int blocks) {
          launch_kernel("multi_sq_sum_kernel", &multi_sq_sum_kernel<T>,
                        dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, list, p,
                        done);
          done += blocks;
        });
    launch_kernel("multi_norm_finish_kernel", &multi_norm_finish_kernel<T>, dim3(1), dim3(kThreads),
                  0, stream, static_cast<const A*>(p), total_blocks, o);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(multi_sgd_step_stub, DeviceType::CUDA, multi_sgd_step_kernel);
EMBER_REGISTER_KERNEL(multi_adam_step_stub, DeviceType::CUDA, multi_adam_step_kernel);
EMBER_REGISTER_KERNEL(multi_norm2_stub, DeviceType::CUDA, multi_norm2_kernel);

}  // namespace ember::kernels::cuda
