#include "kernels/cpu/isa.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ember::kernels::cpu {

namespace {

// AVX2 (which the compiler's check also requires the OS to save the AVX state for) and F16C
// (CPUID leaf 1, ECX bit 29: not every compiler's __builtin_cpu_supports knows "f16c").
bool cpu_has_avx2() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && f16c;
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
