// The execution engine's internals: how a launch's blocks become fibers or a loop on workers.
// Not for kernels (they see thread_state.h, barrier.h, warp.h, shared.h).
//
// Note [Loop mode and fiber mode]
// Most kernels never call a barrier or a warp collective: each thread runs start to finish on
// its own. Such a kernel runs its block as a plain loop over the threads, calling the kernel
// once per thread: no stacks, no switches. A kernel that does synchronise needs every thread of
// the block alive at once, so each thread is a fiber (fiber.h) and the block's scheduler runs
// them cooperatively: a fiber runs until it waits at a barrier or a warp collective (or exits),
// then the next ready one runs. Which mode a kernel needs is learned from its first launch: it
// runs as fibers, and if no thread called a collective the later launches use loop mode. A
// collective met in loop mode (a kernel whose first launch took another path) is an error that
// says so; EMBER_SIM_FIBERS=1 or ember::sim::use_fibers(kernel) force fiber mode.
//
// Note [Schedules]
// Within a block the ready fibers run in rank order (forward), reverse rank order, or a
// shuffled order (EMBER_SIM_SCHEDULE, EMBER_SIM_SEED), both at the start and after each
// barrier; loop mode runs its threads in the same order, and the blocks of a launch are handed
// to the workers in that order too. A result that depends on the order is a race: run the
// suite under the other schedules to find it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/sim/fiber.h"
#include "kernels/cuda/sim/options.h"
#include "kernels/cuda/sim/thread_state.h"

namespace ember::sim::detail {

// What the simulator knows about one kernel function (keyed by its address).
struct KernelInfo {
  enum Mode { unknown, loop, fibers };
  std::atomic<int> mode{unknown};
  std::atomic<bool> used_collective{false};
  std::atomic<bool> force_fibers{false};
  std::atomic<size_t> max_dynamic_shared{0};  // set_max_dynamic_shared; 0: not opted in
  std::atomic<size_t> static_shared{0};       // largest static shared use seen
};

// One launch, as the workers see it.
struct KernelRun {
  std::string name;
  const void* kernel = nullptr;
  void (*invoke)(const void* kernel, void* args) = nullptr;  // calls kernel(args...)
  void* args = nullptr;
  dim3 grid, block;
  size_t dynamic_shared = 0;
  size_t shared_limit = 48 << 10;  // static + dynamic may not exceed this
  bool fibers = false;
  KernelInfo* info = nullptr;
  Options options;
};

// Runs every block of `run` on the worker pool; throws Error (the first block's failure, naming
// the kernel, block and thread) after all workers stopped.
void run_kernel(const KernelRun& run);

// ---- racecheck shadow and shared-memory slots (shared.cpp) ----

// Per byte of shared memory: who last wrote and read it, in which barrier interval ("epoch",
// unique per block and barrier on a worker) and warp interval (bumped by each warp collective).
struct ShadowByte {
  uint32_t writer = 0, write_epoch = 0, write_warp_epoch = 0;
  uint32_t reader = 0, read_epoch = 0, read_warp_epoch = 0, read_warp = 0;
  const void* write_pc = nullptr;
  const void* read_pc = nullptr;
};
constexpr uint32_t kManyReaders = 0xFFFFFFFFu;

struct SharedSite;

// The memory of one shared array (or of the dynamic shared memory) on a worker, reused by the
// blocks that worker runs. Each is its own heap allocation of exactly its size, so ASan's
// redzones sit right after it.
struct SharedSlot {
  char* data = nullptr;
  size_t bytes = 0;
  std::vector<ShadowByte> shadow;  // empty when racecheck is off
  uint64_t block_serial = 0;       // the block that last initialised it
  const char* name = "";           // for reports
  const char* file = "";
  int line = 0;
};

struct Block;

struct FiberThread : ThreadState {
  enum Status { ready, running, at_barrier, at_warp, exited };
  FiberContext context;
  Status status = ready;
  const char* wait_what = "";  // where it waits, for deadlock reports
  const char* wait_file = "";
  int wait_line = 0;
  alignas(16) unsigned char result[32 * 16];  // a warp collective's deposits
};

struct WarpGroup {
  unsigned mask = 0, arrived = 0;
  const char* what = "";
  const char* file = "";
  int line = 0;
  size_t size = 0;
  alignas(16) unsigned char deposits[32 * 16];
};

struct Worker;

// Shared memory [lo, hi) read by `count` wgmma operations in flight in the block, issued at
// file:line (Note [wgmma in the simulator]).
struct MmaRead {
  const char* lo;
  const char* hi;
  unsigned count;
  const char* file;
  int line;
};

struct Block : BlockState {
  const KernelRun* run = nullptr;
  Worker* worker = nullptr;
  bool fibers = false;
  uint64_t serial = 0;
  size_t static_shared = 0;
  std::mt19937_64 rng;
  // fiber mode
  FiberThread* fiber_threads = nullptr;  // the worker's, one per thread
  unsigned live = 0, exited = 0;
  std::deque<unsigned> ready;
  unsigned barrier_waiting = 0;
  const char* barrier_what = "";
  const char* barrier_file = "";
  int barrier_line = 0;
  unsigned barrier_first = 0;  // rank of the first thread waiting
  int barrier_count = 0;
  int barrier_result = 0;
  std::vector<std::vector<WarpGroup>> warp_groups;
  std::vector<unsigned> warp_exited;
  std::vector<uint32_t> warp_epoch;
  std::vector<MmaRead> mma_reads;  // the operands of the wgmmas in flight
  bool failed = false;
  std::string error;
};

// Fails when [p, p + bytes) overlaps shared memory a wgmma in flight in block b reads (wgmma.cpp).
void mma_check_write(const Block& b, const void* p, size_t bytes, const std::string& what);

struct Worker {
  FiberContext scheduler;
  std::vector<Stack> stacks;
  std::vector<FiberThread> threads;
  // By SharedSite id. A deque: a kernel holds references to its slots (through its shared
  // arrays) while a later declaration in it adds slots, which must not move the earlier ones.
  std::deque<SharedSlot> slots;
  SharedSlot dynamic;
  uint32_t epoch = 0;
  uint64_t block_serial = 0;
  ~Worker();
};

// The block the calling simulated thread belongs to (throws Error outside a kernel).
Block& current_block(const char* what);

// "(x,y,z)" of a rank in a block of `dim`.
std::string thread_coords(unsigned rank, const dim3& dim);

}  // namespace ember::sim::detail
