// CUDA's warp shuffles, votes and __syncwarp for kernels in the simulator, built on
// warp_exchange (Note [Warps in the simulator] in warp.h). The call site comes from
// __builtin_FILE()/__builtin_LINE() default arguments, evaluated where the call is written.
//
// Lanes outside `width`'s segment, or shifted past its edge, read their own value, as on a GPU.
// Reading a lane that is not in `mask` is a synccheck error (a GPU returns an undefined value).
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/warp.h"

namespace ember::sim::detail {

inline void check_width(int width, const char* what, const char* file, int line) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fail(std::string(what) + " (" + file + ":" + std::to_string(line) + "): width " +
         std::to_string(width) + " is not a power of two in [1, 32]");
  }
}

// Exchanges `value` over `mask` and returns the value of lane src(lane) (or the own value when
// src returns a negative lane).
template <class T, class Src>
T shuffle(unsigned mask, T value, int width, const char* what, const char* file, int line,
          Src src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16,
                "warp shuffles move trivially copyable values of at most 16 bytes");
  check_width(width, what, file, line);
  const unsigned char* all = warp_exchange(mask, &value, sizeof(T), what, file, line);
  int lane = static_cast<int>(lane_id());
  int from = src(lane, lane & ~(width - 1));
  if (from < 0) return value;
  if (!(mask & (1u << from))) {
    fail(std::string("synccheck: ") + what + " (" + file + ":" + std::to_string(line) + "): lane " +
         std::to_string(lane) + " reads lane " + std::to_string(from) +
         ", which is not in the mask");
  }
  T out;
  std::memcpy(&out, all + from * 16, sizeof(T));
  return out;
}

}  // namespace ember::sim::detail

// CUDA's own names (reserved in C++): the simulator supplies them for the host compiler.
// NOLINTBEGIN(bugprone-reserved-identifier)
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32,
              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::sim::detail::shuffle(
      mask, var, width, "__shfl_sync", file, line,
      [&](int, int base) { return base + (src_lane & (width - 1)); });
}

template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::sim::detail::shuffle(mask, var, width, "__shfl_up_sync", file, line,
                                       [&](int lane, int base) {
                                         int from = lane - static_cast<int>(delta);
                                         return from < base ? -1 : from;
                                       });
}

template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                   const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::sim::detail::shuffle(mask, var, width, "__shfl_down_sync", file, line,
                                       [&](int lane, int base) {
                                         int from = lane + static_cast<int>(delta);
                                         return from >= base + width ? -1 : from;
                                       });
}

template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32,
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::sim::detail::shuffle(mask, var, width, "__shfl_xor_sync", file, line,
                                       [&](int lane, int base) {
                                         int from = lane ^ lane_mask;
                                         return from < base || from >= base + width ? -1 : from;
                                       });
}

inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  int p = predicate != 0;
  const unsigned char* all =
      ::ember::sim::warp_exchange(mask, &p, sizeof p, "__ballot_sync", file, line);
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l) {
    int v = 0;
    if (mask & (1u << l)) std::memcpy(&v, all + l * 16, sizeof v);
    if (v) ballot |= 1u << l;
  }
  return ballot;
}

inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  int p = predicate != 0;
  const unsigned char* all =
      ::ember::sim::warp_exchange(mask, &p, sizeof p, "__any_sync", file, line);
  for (unsigned l = 0; l < 32; ++l) {
    int v = 0;
    if (mask & (1u << l)) std::memcpy(&v, all + l * 16, sizeof v);
    if (v) return 1;
  }
  return 0;
}

inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  int p = predicate != 0;
  const unsigned char* all =
      ::ember::sim::warp_exchange(mask, &p, sizeof p, "__all_sync", file, line);
  for (unsigned l = 0; l < 32; ++l) {
    int v = 1;
    if (mask & (1u << l)) std::memcpy(&v, all + l * 16, sizeof v);
    if (!v) return 0;
  }
  return 1;
}

inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  ::ember::sim::warp_exchange(mask, nullptr, 0, "__syncwarp", file, line);
}

// The lanes of the caller's warp that have not exited. Lanes do not run in lockstep here, so
// this is not the set of converged lanes a GPU reports: use it for masks, not to detect
// divergence.
inline unsigned __activemask() { return ::ember::sim::live_lanes(); }
// NOLINTEND(bugprone-reserved-identifier)
