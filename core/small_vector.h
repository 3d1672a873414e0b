#pragma once
// SmallVector<T, N>: a vector that keeps up to N elements inline and only allocates beyond
// that. Hot paths (TensorIter's per-operand strides) use it so that a small op makes no heap
// allocation for bookkeeping. Only trivially copyable T.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace ember {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable types");

 public:
  SmallVector() = default;
  SmallVector(size_t n, T v) { assign(n, v); }
  SmallVector(std::initializer_list<T> il) {
    reserve(il.size());
    for (const T& v : il) push_back(v);
  }
  SmallVector(const SmallVector& o) { *this = o; }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      size_ = 0;
      reserve(o.size_);
      std::memcpy(data_, o.data_, o.size_ * sizeof(T));
      size_ = o.size_;
    }
    return *this;
  }
  ~SmallVector() {
    if (data_ != inline_) std::free(data_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& back() { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    size_t cap = std::max(n, capacity_ * 2);
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, data_, size_ * sizeof(T));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    capacity_ = cap;
  }
  void push_back(T v) {
    if (size_ == capacity_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void assign(size_t n, T v) {
    size_ = 0;
    resize(n, v);
  }

 private:
  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
};

// Per-dim bookkeeping of the hot paths (strides in TensorIter).
using DimVector = SmallVector<int64_t, 8>;

}  // namespace ember
