// Fibers: the simulated GPU threads of a block, each a stack and a saved register set, switched
// cooperatively on one worker thread.
//
// Note [The context switch]
// A switch saves what the System V x86-64 ABI says a callee must preserve (rbx, rbp, r12-r15,
// rsp, the MXCSR and the x87 control word) on the current stack, stores rsp, loads the other
// fiber's rsp and restores its registers: about 15 ns, where swapcontext (which also saves the
// signal mask with a system call) costs several hundred. Everything else (rax, rcx, vector
// registers, flags) is caller-saved, so the compiler already assumes the call clobbers it.
// The code is top-level asm in fiber.cpp; bench/bench_sim compares it with ucontext.
//
// Stacks are mmap'd with a PROT_NONE guard page below them, so an overflow faults instead of
// corrupting the neighbour; EMBER_SIM_STACK sets their size. Workers keep their stacks for the
// next block and the next launch. A new fiber starts in a trampoline whose CFI marks the end of
// the call chain, so gdb's backtrace of a kernel thread ends at the fiber's entry.
//
// Under AddressSanitizer every switch is announced with __sanitizer_start_switch_fiber /
// __sanitizer_finish_switch_fiber, so ASan knows which stack is live.
//
// Note [LeakSanitizer and a worker inside a fiber]
// That announcement has a cost at exit: while a worker runs a fiber, ASan's bounds for the
// thread are the fiber's stack, and LeakSanitizer scans only those. If the process exits then
// (a program may return from main with a kernel still queued), the worker's own stack, which
// holds its Worker and the Block it runs, is not scanned, and everything only they point to
// (the worker's vector of stacks, the block's ready queue) is reported as a leak. CI saw this
// once in a test that ended as an aborted NCCL op's work resumed. So each worker registers its
// own stack as a LeakSanitizer root region when it starts (fiber_register_thread_stack), and the
// scan reads it whichever stack the thread is on.
//
// Exceptions never unwind across a switch: the fiber entry (engine.cpp) catches everything.
#pragma once

#include <cstddef>

namespace ember::sim::detail {

struct Stack {
  char* mapping = nullptr;  // the whole mapping: guard page, then the usable stack
  size_t mapping_size = 0;
  char* bottom = nullptr;  // lowest usable address
  size_t size = 0;         // usable bytes
};

// Maps a stack of `size` usable bytes (rounded up to pages) with a guard page below it.
Stack allocate_stack(size_t size);
void free_stack(Stack& stack);

struct FiberContext {
  void* sp = nullptr;              // saved stack pointer (registers are saved on the stack)
  void (*entry)(void*) = nullptr;  // what a new fiber runs
  void* arg = nullptr;
  // The stack, for ASan's bookkeeping; a worker's own context learns it on the first switch.
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;  // ASan's fake stack of this context while switched out
};

// Prepares `fiber` so that the first switch into it calls entry(arg) on `stack`. The entry must
// never return: it ends with fiber_exit.
void fiber_init(FiberContext& fiber, const Stack& stack, void (*entry)(void*), void* arg);

// Saves the running context into `from` and resumes `to`; returns when something switches back.
void fiber_switch(FiberContext& from, FiberContext& to);

// Forgets a fiber that will never resume (its block failed): under ASan, clears the poison its
// live frames left on the stack, so the next fiber on that stack starts clean.
void fiber_abandon(FiberContext& fiber);

// Under LeakSanitizer, makes the calling thread's own stack a root region for the rest of the
// process (Note [LeakSanitizer and a worker inside a fiber]); a no-op in other builds. For
// threads that switch to fibers and never exit: the simulator's workers.
void fiber_register_thread_stack();

// Leaves a finished fiber for good (its stack may be reused at once).
[[noreturn]] void fiber_exit(FiberContext& from, FiberContext& to);

}  // namespace ember::sim::detail
