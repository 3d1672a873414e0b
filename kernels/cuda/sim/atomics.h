#pragma once
// CUDA's atomic functions and memory fences for kernels in the simulator.
//
// Device memory is host memory and a kernel's blocks run on several worker threads at once, so
// an atomic on global memory really races with other OS threads: every function here is a GCC
// __atomic builtin on the address (a native read-modify-write for the integer ones, a
// compare-and-swap loop for float, double, __half, __nv_bfloat16 and the min/max/inc/dec
// families). Shared memory needs no more: a block's threads are fibers of one worker, but the
// same functions are correct there too. The overloads are nvcc's (atomicAdd has no `long long`
// overload, atomicMax no float one), so a kernel that compiles here compiles with nvcc.
//
// Note [Atomics and the memory model]
// - The read-modify-writes are relaxed, as CUDA's are: atomic, but ordering nothing else. The
//   _block and _system scoped variants are the same functions. On x86-64 the hardware makes them
//   stronger anyway; the simulator does not model the GPU's weaker memory model.
// - __threadfence, __threadfence_block and __threadfence_system are sequentially consistent
//   fences (the strongest; a GPU's block-scoped fence is weaker).
// - Racecheck does not look at atomics: they go through raw pointers, not the shared-memory
//   proxies (shared.h), so they are neither recorded nor reported as races.
// - Float atomicAdd is exact IEEE addition, rounded to nearest; no flush of denormals.

// The qualifiers before any CUDA header (qualifiers.h says why).
// clang-format off
#include "kernels/cuda/sim/qualifiers.h"
// clang-format on

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ember::sim::detail {

constexpr int kAtomicOrder = __ATOMIC_RELAXED;

// The unsigned integer of N bytes that the compare-and-swap loop works on. __half2 and
// __nv_bfloat162 have user-provided copy operations, so they are not trivially copyable and
// clang rejects them in the generic __atomic builtins (GCC accepts them); an integer of the same
// size is accepted by both. may_alias: the word is read and written through a pointer to the
// value's own storage.
template <std::size_t N>
struct AtomicWord;
template <>
struct AtomicWord<1> {
  using type __attribute__((__may_alias__)) = std::uint8_t;
};
template <>
struct AtomicWord<2> {
  using type __attribute__((__may_alias__)) = std::uint16_t;
};
template <>
struct AtomicWord<4> {
  using type __attribute__((__may_alias__)) = std::uint32_t;
};
template <>
struct AtomicWord<8> {
  using type __attribute__((__may_alias__)) = std::uint64_t;
};

// The bits of `from` as a To of the same size (the void* casts: __half2 is not trivially
// copyable, but its bytes are its value).
template <class To, class From>
inline To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bits_as needs types of the same size");
  To to;
  std::memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof(To));
  return to;
}

// The compare-and-swap loop every non-native atomic uses: replaces *p by update(old) atomically
// and returns old. T is any type of 1, 2, 4 or 8 bytes whose bytes are its value; the loop runs
// on the same-size unsigned integer (AtomicWord), so the comparison is bitwise (a NaN in memory
// does not make the loop spin).
template <class T, class F>
inline T atomic_update(T* p, F update) {
  using Word = typename AtomicWord<sizeof(T)>::type;
  static_assert(alignof(T) >= alignof(Word), "an atomic needs a naturally aligned value");
  Word* word = reinterpret_cast<Word*>(p);
  Word old = __atomic_load_n(word, kAtomicOrder);
  Word desired = 0;
  do {
    desired = bits_as<Word>(update(bits_as<T>(old)));
  } while (
      !__atomic_compare_exchange_n(word, &old, desired, /*weak=*/true, kAtomicOrder, kAtomicOrder));
  return bits_as<T>(old);
}

template <class T>
inline T atomic_cas(T* p, T compare, T value) {
  __atomic_compare_exchange(p, &compare, &value, /*weak=*/false, kAtomicOrder, kAtomicOrder);
  return compare;  // on failure the builtin wrote the value found there
}

}  // namespace ember::sim::detail

// ---- add / sub
// -----------------------------------------------------------------------------------
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline float atomicAdd(float* p, float v) {
  return ember::sim::detail::atomic_update(p, [v](float old) { return old + v; });
}
inline double atomicAdd(double* p, double v) {
  return ember::sim::detail::atomic_update(p, [v](double old) { return old + v; });
}
inline __half atomicAdd(__half* p, __half v) {
  return ember::sim::detail::atomic_update(p, [v](__half old) { return __hadd(old, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
  return ember::sim::detail::atomic_update(p, [v](__nv_bfloat16 old) { return __hadd(old, v); });
}
// The pair forms are atomic for the whole 32-bit word (CUDA only promises each half).
// v is taken by value as in CUDA's signature (a 4-byte value; tidy counts the pair types as
// expensive to copy because their copy operations are user-provided); the lambda takes it and
// old by reference.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
inline __half2 atomicAdd(__half2* p, __half2 v) {
  return ember::sim::detail::atomic_update(p, [&v](const __half2& old) { return __hadd2(old, v); });
}
// NOLINTNEXTLINE(performance-unnecessary-value-param)
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) {
  return ember::sim::detail::atomic_update(
      p, [&v](const __nv_bfloat162& old) { return __hadd2(old, v); });
}
inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned* p, unsigned v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
}

// ---- exchange and compare-and-swap -------------------------------------------------------------
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicExch(unsigned* p, unsigned v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
inline float atomicExch(float* p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
inline int atomicCAS(int* p, int compare, int v) {
  return ember::sim::detail::atomic_cas(p, compare, v);
}
inline unsigned atomicCAS(unsigned* p, unsigned compare, unsigned v) {
  return ember::sim::detail::atomic_cas(p, compare, v);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long compare,
                                    unsigned long long v) {
  return ember::sim::detail::atomic_cas(p, compare, v);
}
inline unsigned short atomicCAS(unsigned short* p, unsigned short compare, unsigned short v) {
  return ember::sim::detail::atomic_cas(p, compare, v);
}

// ---- min / max
// -----------------------------------------------------------------------------------
#define EMBER_SIM_ATOMIC_MIN_MAX(T)                                                        \
  inline T atomicMin(T* p, T v) {                                                          \
    return ember::sim::detail::atomic_update(p, [v](T old) { return v < old ? v : old; }); \
  }                                                                                        \
  inline T atomicMax(T* p, T v) {                                                          \
    return ember::sim::detail::atomic_update(p, [v](T old) { return v > old ? v : old; }); \
  }
EMBER_SIM_ATOMIC_MIN_MAX(int)
EMBER_SIM_ATOMIC_MIN_MAX(unsigned)
EMBER_SIM_ATOMIC_MIN_MAX(long long)
EMBER_SIM_ATOMIC_MIN_MAX(unsigned long long)
#undef EMBER_SIM_ATOMIC_MIN_MAX

// ---- bitwise
// -------------------------------------------------------------------------------------
#define EMBER_SIM_ATOMIC_BITWISE(T)                                                    \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); } \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }   \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
EMBER_SIM_ATOMIC_BITWISE(int)
EMBER_SIM_ATOMIC_BITWISE(unsigned)
EMBER_SIM_ATOMIC_BITWISE(unsigned long long)
#undef EMBER_SIM_ATOMIC_BITWISE

// ---- wrapping increment / decrement
// -------------------------------------------------------------- atomicInc: old >= limit ? 0 : old
// + 1.  atomicDec: (old == 0 || old > limit) ? limit : old - 1.
inline unsigned atomicInc(unsigned* p, unsigned limit) {
  return ember::sim::detail::atomic_update(
      p, [limit](unsigned old) { return old >= limit ? 0u : old + 1u; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
  return ember::sim::detail::atomic_update(
      p, [limit](unsigned old) { return (old == 0u || old > limit) ? limit : old - 1u; });
}

// ---- scoped variants (sm_60+): the same operations (Note [Atomics and the memory model]) -------
#define EMBER_SIM_ATOMIC_SCOPED(name)                                \
  template <class T, class... V>                                     \
  inline auto name##_block(T* p, V... v)->decltype(name(p, v...)) {  \
    return name(p, v...);                                            \
  }                                                                  \
  template <class T, class... V>                                     \
  inline auto name##_system(T* p, V... v)->decltype(name(p, v...)) { \
    return name(p, v...);                                            \
  }
EMBER_SIM_ATOMIC_SCOPED(atomicAdd)
EMBER_SIM_ATOMIC_SCOPED(atomicSub)
EMBER_SIM_ATOMIC_SCOPED(atomicExch)
EMBER_SIM_ATOMIC_SCOPED(atomicCAS)
EMBER_SIM_ATOMIC_SCOPED(atomicMin)
EMBER_SIM_ATOMIC_SCOPED(atomicMax)
EMBER_SIM_ATOMIC_SCOPED(atomicAnd)
EMBER_SIM_ATOMIC_SCOPED(atomicOr)
EMBER_SIM_ATOMIC_SCOPED(atomicXor)
EMBER_SIM_ATOMIC_SCOPED(atomicInc)
EMBER_SIM_ATOMIC_SCOPED(atomicDec)
#undef EMBER_SIM_ATOMIC_SCOPED

// ---- fences
// --------------------------------------------------------------------------------------
// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// NOLINTEND(bugprone-reserved-identifier)
