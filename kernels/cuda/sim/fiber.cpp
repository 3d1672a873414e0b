#include "kernels/cuda/sim/fiber.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cuda/sim/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#define EMBER_SIM_ASAN 1
#else
#define EMBER_SIM_ASAN 0
#endif

#if !defined(__x86_64__)
#error "the simulator's context switch is written for x86-64"
#endif

// ember_sim_switch_context(void** save_sp, void* new_sp): see Note [The context switch].
// ember_sim_fiber_start: where a new fiber's first `ret` lands; calls r12(r13) and never returns.
asm(R"(
  .text
  .p2align 4
  .globl ember_sim_switch_context
  .hidden ember_sim_switch_context
  .type ember_sim_switch_context, @function
ember_sim_switch_context:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size ember_sim_switch_context, .-ember_sim_switch_context

  .p2align 4
  .globl ember_sim_fiber_start
  .hidden ember_sim_fiber_start
  .type ember_sim_fiber_start, @function
ember_sim_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r13, %rdi
  callq *%r12
  ud2
  .cfi_endproc
  .size ember_sim_fiber_start, .-ember_sim_fiber_start
)");

extern "C" void ember_sim_switch_context(void** save_sp, void* new_sp);
extern "C" void ember_sim_fiber_start();

namespace ember::sim::detail {

namespace {

// The context that switched to the running one (ASan records its stack in it).
thread_local FiberContext* t_switched_from = nullptr;

[[noreturn]] void fiber_main(FiberContext* self) {
#if EMBER_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &t_switched_from->stack_bottom,
                                  &t_switched_from->stack_size);
#endif
  self->entry(self->arg);
  std::abort();  // an entry must leave with fiber_exit
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

Stack allocate_stack(size_t size) {
  size_t page = page_size();
  size = (size + page - 1) / page * page;
  Stack s;
  s.mapping_size = size + page;
  void* p = mmap(nullptr, s.mapping_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    fail("simulator: cannot map a fiber stack of " + std::to_string(size) +
         " bytes: " + std::strerror(errno));
  }
  s.mapping = static_cast<char*>(p);
  if (mprotect(s.mapping, page, PROT_NONE) != 0) {
    munmap(p, s.mapping_size);
    fail(std::string("simulator: cannot protect a fiber stack's guard page: ") +
         std::strerror(errno));
  }
  s.bottom = s.mapping + page;
  s.size = size;
  return s;
}

void free_stack(Stack& stack) {
  if (stack.mapping) munmap(stack.mapping, stack.mapping_size);
  stack = Stack{};
}

void fiber_init(FiberContext& fiber, const Stack& stack, void (*entry)(void*), void* arg) {
  fiber.entry = entry;
  fiber.arg = arg;
  fiber.stack_bottom = stack.bottom;
  fiber.stack_size = stack.size;
  fiber.fake_stack = nullptr;
  auto top = reinterpret_cast<uintptr_t>(stack.bottom + stack.size) & ~uintptr_t{15};
  auto* slot = reinterpret_cast<uint64_t*>(top);
  // What ember_sim_switch_context pops, from the top: return address, rbp, rbx, r12, r13, r14,
  // r15, then MXCSR and the x87 control word (copied from the creating thread).
  slot[-1] = reinterpret_cast<uint64_t>(&ember_sim_fiber_start);
  slot[-2] = 0;                                        // rbp
  slot[-3] = 0;                                        // rbx
  slot[-4] = reinterpret_cast<uint64_t>(&fiber_main);  // r12
  slot[-5] = reinterpret_cast<uint64_t>(&fiber);       // r13
  slot[-6] = 0;                                        // r14
  slot[-7] = 0;                                        // r15
  uint32_t mxcsr = 0;
  uint16_t fpu_cw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpu_cw));
  slot[-8] = 0;
  std::memcpy(&slot[-8], &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(&slot[-8]) + 4, &fpu_cw, 2);
  fiber.sp = &slot[-8];
}

void fiber_switch(FiberContext& from, FiberContext& to) {
  t_switched_from = &from;
#if EMBER_SIM_ASAN
  __sanitizer_start_switch_fiber(&from.fake_stack, to.stack_bottom, to.stack_size);
#endif
  ember_sim_switch_context(&from.sp, to.sp);
#if EMBER_SIM_ASAN
  __sanitizer_finish_switch_fiber(from.fake_stack, &t_switched_from->stack_bottom,
                                  &t_switched_from->stack_size);
#endif
}

void fiber_abandon(FiberContext& fiber) {
#if EMBER_SIM_ASAN
  if (fiber.sp && fiber.stack_bottom) {
    const char* top = static_cast<const char*>(fiber.stack_bottom) + fiber.stack_size;
    const char* low = static_cast<const char*>(fiber.sp) - 256;  // what lies below rsp too
    if (low < fiber.stack_bottom) low = static_cast<const char*>(fiber.stack_bottom);
    __asan_unpoison_memory_region(low, static_cast<size_t>(top - low));
  }
#endif
  fiber.sp = nullptr;
}

void fiber_register_thread_stack() {
#if EMBER_SIM_ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* low = nullptr;
  size_t size = 0;
  // The whole stack, not only what lies above the current frame: LeakSanitizer scans a root
  // region's readable pages, so an untouched page costs a read of zeros and a guard page none.
  if (pthread_attr_getstack(&attr, &low, &size) == 0 && low && size > 0)
    __lsan_register_root_region(low, size);
  pthread_attr_destroy(&attr);
#endif
}

void fiber_exit(FiberContext& from, FiberContext& to) {
  t_switched_from = &from;
#if EMBER_SIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, to.stack_bottom, to.stack_size);
#endif
  ember_sim_switch_context(&from.sp, to.sp);
  std::abort();  // nothing resumes a finished fiber
}

}  // namespace ember::sim::detail
