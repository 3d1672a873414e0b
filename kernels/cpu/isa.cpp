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

// The widest copy the CPU runs: AVX-512F (whose check includes the OS saving the ZMM state)
// counts only on top of AVX2 with F16C, since the AVX-512 copies sit above the AVX2 ones.
CpuIsa cpu_widest() {
  if (!cpu_has_avx2()) return CpuIsa::kBaseline;
  return __builtin_cpu_supports("avx512f") ? CpuIsa::kAvx512 : CpuIsa::kAvx2;
}

CpuIsa min_isa(CpuIsa a, CpuIsa b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

std::atomic<CpuIsa>& current() {
  static std::atomic<CpuIsa> isa{[] {
    const char* env = std::getenv("EMBER_CPU_ISA");
    CpuIsa cap = CpuIsa::kAvx512;
    if (env != nullptr && std::strcmp(env, "baseline") == 0) cap = CpuIsa::kBaseline;
    if (env != nullptr && std::strcmp(env, "avx2") == 0) cap = CpuIsa::kAvx2;
    return min_isa(cap, cpu_widest());
  }()};
  return isa;
}

}  // namespace

CpuIsa cpu_isa() { return current().load(std::memory_order_relaxed); }

CpuIsa set_cpu_isa(CpuIsa isa) {
  const CpuIsa prev = cpu_isa();
  current().store(min_isa(isa, cpu_widest()), std::memory_order_relaxed);
  return prev;
}

bool use_avx2() { return cpu_isa() != CpuIsa::kBaseline; }

bool set_use_avx2(bool on) {
  const bool prev = use_avx2();
  set_cpu_isa(on ? CpuIsa::kAvx512 : CpuIsa::kBaseline);
  return prev;
}

}  // namespace ember::kernels::cpu
