// Shared memory for kernels in the simulator: EMBER_SHARED_ARRAY, EMBER_SHARED_VAR and
// EMBER_DYNAMIC_SHARED (in a real build the lead's kernels/cuda/common.cuh expands them to
// `__shared__ T name[d0][d1]`, `__shared__ T name` and `extern __shared__` viewed as T*).
//
//   EMBER_SHARED_ARRAY(float, tile, 32, 33);   tile[ty][tx] = v;  float x = tile[i][j];
//   EMBER_SHARED_VAR(int, count);              count = 0;  count += 1;
//   EMBER_DYNAMIC_SHARED(float, buffer);       buffer[i] = v;  float* p = buffer + 4;
//
// Note [Shared memory in the simulator]
// Each shared array of a kernel is a separate heap allocation of exactly its size, owned by the
// worker running the block and reused by the next block it runs (so AddressSanitizer puts a
// redzone right after it, where `static thread_local` arrays would hide out-of-bounds
// accesses). Every block sees its shared memory filled anew per EMBER_SIM_FILL (NaN bytes by
// default: initcheck). The names are proxies: every index is bounds-checked (an out-of-bounds
// index is an Error naming the array, the index and the extent), and every element read or
// write goes through an always-inline SharedRef that, when racecheck is on, reports the access
// to the shadow (Note [Racecheck] in shared.cpp).
//
// Every slot, static or dynamic, starts on a kSlotAlignment (32-byte) boundary, or alignof(T)'s
// when larger: WMMA's load_matrix_sync / store_matrix_sync need 32-byte aligned pointers, so a
// tile in shared memory must be usable as `&tile[0][0]` (in a real build EMBER_SHARED_ARRAY
// declares the array __align__(32) for the same reason; kernels/cuda/common.cuh).
//
// Limits: a raw pointer taken from them (`&tile[0][0]`, a SharedPtr converted to T*) bypasses
// the checks, as do atomics; element types are scalars, __half and __nv_bfloat16 (read a
// struct whole: `T v = name[i];`). Passing an element to a function template may need a cast
// (`max(float(tile[i]), x)`), since a proxy is not a T. Shared variables at namespace scope
// are not supported.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/sim/engine.h"

namespace ember::sim::detail {

// The least alignment of a shared-memory slot (the 32 bytes WMMA's loads and stores need).
constexpr size_t kSlotAlignment = 32;

// One EMBER_SHARED_* declaration in a kernel's source (a function-local static).
struct SharedSite {
  const char* name;
  const char* file;
  int line;
  mutable std::atomic<int> id{-1};  // index of the worker's SharedSlot, assigned on first use
  constexpr SharedSite(const char* n, const char* f, int l) : name(n), file(f), line(l) {}
};

// The calling block's memory for `site` (allocated, filled and counted on its first use).
SharedSlot& shared_slot(const SharedSite& site, size_t bytes, size_t align);
// The calling block's dynamic shared memory (the launch's dynamic_shared bytes).
SharedSlot& dynamic_slot(const char* name, const char* file, int line, size_t align);

// racecheck: record an access by the calling thread (noinline: its return address is the access
// site inside the kernel, since the proxies calling it are always inlined).
__attribute__((noinline)) void race_read(SharedSlot& slot, const void* p, size_t bytes);
__attribute__((noinline)) void race_write(SharedSlot& slot, const void* p, size_t bytes);
// racecheck for an access through a raw pointer (WMMA's loads and stores): recorded like
// race_read / race_write when p lies in the calling block's shared memory and racecheck is on;
// a pointer elsewhere (global memory) is ignored.
__attribute__((noinline)) void race_raw(const void* p, size_t bytes, bool write);
// The calling block's shared-memory slot holding [p, p + bytes), or null.
SharedSlot* shared_slot_holding(const void* p, size_t bytes);
[[noreturn]] void shared_out_of_bounds(const SharedSlot& slot, long long index, size_t extent);

#define EMBER_SIM_INLINE inline __attribute__((always_inline))

// A reference to one shared element.
template <class T>
class SharedRef {
 public:
  EMBER_SIM_INLINE SharedRef(T* p, SharedSlot* slot) : p_(p), slot_(slot) {}
  SharedRef(const SharedRef&) = default;

  EMBER_SIM_INLINE operator T() const {
    if (!slot_->shadow.empty()) race_read(*slot_, p_, sizeof(T));
    return *p_;
  }
  EMBER_SIM_INLINE const SharedRef& operator=(const T& value) const {
    if (!slot_->shadow.empty()) race_write(*slot_, p_, sizeof(T));
    *p_ = value;
    return *this;
  }
  // Assigning a reference copies the element, as CUDA's `s[i] = s[j]` does: the source is read
  // into a T before the destination is written, so self-assignment (`r = r`) is a correct read
  // and write of the same element, which racecheck should see like any other.
  // NOLINTNEXTLINE(bugprone-unhandled-self-assignment)
  EMBER_SIM_INLINE const SharedRef& operator=(const SharedRef& other) const {
    return *this = static_cast<T>(other);
  }
  // The raw address (accesses through it are not race-checked).
  EMBER_SIM_INLINE T* operator&() const { return p_; }

#define EMBER_SIM_COMPOUND(op)                                         \
  template <class U>                                                   \
  EMBER_SIM_INLINE const SharedRef& operator op##=(const U& v) const { \
    return *this = static_cast<T>(static_cast<T>(*this) op v);         \
  }
  EMBER_SIM_COMPOUND(+)
  EMBER_SIM_COMPOUND(-)
  EMBER_SIM_COMPOUND(*)
  EMBER_SIM_COMPOUND(/)
  EMBER_SIM_COMPOUND(%)
  EMBER_SIM_COMPOUND(&)
  EMBER_SIM_COMPOUND(|)
  EMBER_SIM_COMPOUND(^)
  EMBER_SIM_COMPOUND(<<)
  EMBER_SIM_COMPOUND(>>)
#undef EMBER_SIM_COMPOUND
  EMBER_SIM_INLINE const SharedRef& operator++() const { return *this += 1; }
  EMBER_SIM_INLINE const SharedRef& operator--() const { return *this -= 1; }
  EMBER_SIM_INLINE T operator++(int) const {
    T old = *this;
    *this = static_cast<T>(old + 1);
    return old;
  }
  EMBER_SIM_INLINE T operator--(int) const {
    T old = *this;
    *this = static_cast<T>(old - 1);
    return old;
  }

 private:
  T* p_;
  SharedSlot* slot_;
};

// An EMBER_SHARED_ARRAY (or one row of it): indexing checks the extent and yields the next
// dimension's view, or a SharedRef for the last one.
template <class T, size_t D0, size_t... Rest>
class SharedView {
 public:
  static constexpr size_t stride = (size_t{1} * ... * Rest);
  EMBER_SIM_INLINE SharedView(T* base, SharedSlot* slot) : base_(base), slot_(slot) {}

  template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
  EMBER_SIM_INLINE auto operator[](I index) const {
    auto i = static_cast<long long>(index);
    if (__builtin_expect(i < 0 || static_cast<size_t>(i) >= D0, 0)) {
      shared_out_of_bounds(*slot_, i, D0);
    }
    if constexpr (sizeof...(Rest) == 0) {
      return SharedRef<T>(base_ + i, slot_);
    } else {
      return SharedView<T, Rest...>(base_ + static_cast<size_t>(i) * stride, slot_);
    }
  }
  // Decays like an array: a raw pointer to the first element (not race-checked).
  EMBER_SIM_INLINE operator T*() const { return base_; }
  EMBER_SIM_INLINE T* data() const { return base_; }
  static constexpr size_t size() { return D0; }

 private:
  T* base_;
  SharedSlot* slot_;
};

// EMBER_DYNAMIC_SHARED: a pointer into the dynamic shared memory that checks every access
// against the launch's dynamic size.
template <class T>
class SharedPtr {
 public:
  EMBER_SIM_INLINE SharedPtr(T* p, T* begin, T* end, SharedSlot* slot)
      : p_(p), begin_(begin), end_(end), slot_(slot) {}

  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  EMBER_SIM_INLINE SharedRef<T> operator[](I index) const {
    T* q = p_ + static_cast<std::ptrdiff_t>(index);
    if (__builtin_expect(q < begin_ || q >= end_, 0)) {
      shared_out_of_bounds(*slot_, static_cast<long long>(q - begin_),
                           static_cast<size_t>(end_ - begin_));
    }
    return SharedRef<T>(q, slot_);
  }
  EMBER_SIM_INLINE SharedRef<T> operator*() const { return (*this)[0]; }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  EMBER_SIM_INLINE SharedPtr operator+(I n) const {
    return SharedPtr(p_ + static_cast<std::ptrdiff_t>(n), begin_, end_, slot_);
  }
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  EMBER_SIM_INLINE SharedPtr operator-(I n) const {
    return SharedPtr(p_ - static_cast<std::ptrdiff_t>(n), begin_, end_, slot_);
  }
  EMBER_SIM_INLINE std::ptrdiff_t operator-(const SharedPtr& o) const { return p_ - o.p_; }
  template <class I>
  EMBER_SIM_INLINE SharedPtr& operator+=(I n) {
    p_ += n;
    return *this;
  }
  template <class I>
  EMBER_SIM_INLINE SharedPtr& operator-=(I n) {
    p_ -= n;
    return *this;
  }
  EMBER_SIM_INLINE SharedPtr& operator++() { return *this += 1; }
  EMBER_SIM_INLINE SharedPtr& operator--() { return *this -= 1; }
  EMBER_SIM_INLINE bool operator==(const SharedPtr& o) const { return p_ == o.p_; }
  EMBER_SIM_INLINE bool operator!=(const SharedPtr& o) const { return p_ != o.p_; }
  EMBER_SIM_INLINE bool operator<(const SharedPtr& o) const { return p_ < o.p_; }
  EMBER_SIM_INLINE bool operator<=(const SharedPtr& o) const { return p_ <= o.p_; }
  EMBER_SIM_INLINE bool operator>(const SharedPtr& o) const { return p_ > o.p_; }
  EMBER_SIM_INLINE bool operator>=(const SharedPtr& o) const { return p_ >= o.p_; }
  // The raw pointer (accesses through it are not checked).
  EMBER_SIM_INLINE operator T*() const { return p_; }
  EMBER_SIM_INLINE T* get() const { return p_; }
  // Elements from here to the end of the dynamic shared memory.
  EMBER_SIM_INLINE size_t size() const { return static_cast<size_t>(end_ - p_); }

 private:
  T* p_;
  T* begin_;
  T* end_;
  SharedSlot* slot_;
};

template <class T, size_t... Dims>
EMBER_SIM_INLINE SharedView<T, Dims...> make_shared_array(const SharedSite& site) {
  static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) <= 3, "1 to 3 dimensions");
  SharedSlot& slot = shared_slot(site, sizeof(T) * (size_t{1} * ... * Dims), alignof(T));
  return SharedView<T, Dims...>(reinterpret_cast<T*>(slot.data), &slot);
}

template <class T>
EMBER_SIM_INLINE SharedRef<T> make_shared_var(const SharedSite& site) {
  SharedSlot& slot = shared_slot(site, sizeof(T), alignof(T));
  return SharedRef<T>(reinterpret_cast<T*>(slot.data), &slot);
}

template <class T>
EMBER_SIM_INLINE SharedPtr<T> make_dynamic_shared(const char* name, const char* file, int line) {
  SharedSlot& slot = dynamic_slot(name, file, line, alignof(T));
  T* begin = reinterpret_cast<T*>(slot.data);
  return SharedPtr<T>(begin, begin, begin + slot.bytes / sizeof(T), &slot);
}

}  // namespace ember::sim::detail

#define EMBER_SHARED_ARRAY(T, name, ...)                                                       \
  static ::ember::sim::detail::SharedSite ember_shared_site_##name{#name, __FILE__, __LINE__}; \
  const auto name =                                                                            \
      ::ember::sim::detail::make_shared_array<T, __VA_ARGS__>(ember_shared_site_##name)

#define EMBER_SHARED_VAR(T, name)                                                              \
  static ::ember::sim::detail::SharedSite ember_shared_site_##name{#name, __FILE__, __LINE__}; \
  const auto name = ::ember::sim::detail::make_shared_var<T>(ember_shared_site_##name)

#define EMBER_DYNAMIC_SHARED(T, name) \
  auto name = ::ember::sim::detail::make_dynamic_shared<T>(#name, __FILE__, __LINE__)
