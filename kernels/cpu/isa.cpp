#include "kernels/cpu/isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ember::kernels::cpu {

namespace {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

std::atomic<bool>& flag() {
  static std::atomic<bool> use{[] {
    const char* env = std::getenv("EMBER_CPU_ISA");
    if (env != nullptr && std::strcmp(env, "baseline") == 0) return false;
    return cpu_has_avx2();
  }()};
  return use;
}

}  // namespace

bool use_avx2() { return flag().load(std::memory_order_relaxed); }

bool set_use_avx2(bool on) {
  const bool prev = use_avx2();
  flag().store(on && cpu_has_avx2(), std::memory_order_relaxed);
  return prev;
}

}  // namespace ember::kernels::cpu
