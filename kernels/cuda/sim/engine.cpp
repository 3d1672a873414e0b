// The execution engine: the worker pool, loop mode, fiber mode and its scheduler, barriers and
// the warp rendezvous (Notes in engine.h and warp.h).
#include "kernels/cuda/sim/engine.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "kernels/cuda/sim/barrier.h"
#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/warp.h"

namespace ember::sim {
namespace detail {

thread_local ThreadState* t_thread __attribute__((tls_model("initial-exec"))) = nullptr;

void no_kernel_thread(const char* what) {
  fail(std::string(what) + " used outside a kernel running in the simulator");
}

Block& current_block(const char* what) { return static_cast<Block&>(*current_thread(what).block); }

std::string thread_coords(unsigned rank, const dim3& dim) {
  unsigned x = rank % dim.x, y = (rank / dim.x) % dim.y, z = rank / (dim.x * dim.y);
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

Worker::~Worker() {
  for (Stack& s : stacks) free_stack(s);
  for (SharedSlot& s : slots) std::free(s.data);
  std::free(dynamic.data);
}

namespace {

std::string hex(unsigned mask) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", mask);
  return buf;
}

std::string site(const char* what, const char* file, int line) {
  return std::string(what) + " (" + file + ":" + std::to_string(line) + ")";
}

std::string where(const Block& b, unsigned rank) {
  return "kernel '" + b.run->name + "' block (" + std::to_string(b.block_idx.x) + "," +
         std::to_string(b.block_idx.y) + "," + std::to_string(b.block_idx.z) + ") thread " +
         thread_coords(rank, b.block_dim);
}

std::string thread_name(const Block& b, unsigned rank) {
  return "thread " + thread_coords(rank, b.block_dim);
}

[[noreturn]] void collective_in_loop_mode(const Block& b, const char* what, const char* file,
                                          int line) {
  fail(site(what, file, line) + " was called in loop mode: the first launch of kernel '" +
       b.run->name +
       "' called no barrier or warp collective, so its threads now run one after another. "
       "Force fiber mode with EMBER_SIM_FIBERS=1 or ember::sim::use_fibers(kernel)");
}

// The thread order of a block for the schedule (Note [Schedules]).
void schedule_order(Block& b, std::vector<unsigned>& order) {
  order.resize(b.threads);
  for (unsigned i = 0; i < b.threads; ++i) order[i] = i;
  switch (b.run->options.schedule) {
    case Schedule::forward:
      break;
    case Schedule::reverse:
      std::reverse(order.begin(), order.end());
      break;
    case Schedule::shuffle:
      std::shuffle(order.begin(), order.end(), b.rng);
      break;
  }
}

uint3 unflatten(unsigned rank, const dim3& d) {
  return uint3{rank % d.x, (rank / d.x) % d.y, rank / (d.x * d.y)};
}

void block_fail(Block& b, unsigned rank, const std::string& message) {
  if (b.failed) return;
  b.failed = true;
  b.error = where(b, rank) + ": " + message;
}

// A thread left the kernel: a barrier or a warp group waiting for it can never complete.
void thread_exit(Block& b, FiberThread& th) {
  th.status = FiberThread::exited;
  --b.live;
  ++b.exited;
  unsigned warp = th.rank / 32, bit = 1u << (th.rank % 32);
  b.warp_exited[warp] |= bit;
  if (b.barrier_waiting > 0) {
    block_fail(b, th.rank,
               "synccheck: the thread exited while " + std::to_string(b.barrier_waiting) +
                   " threads (first " + thread_name(b, b.barrier_first) + ") wait at " +
                   site(b.barrier_what, b.barrier_file, b.barrier_line) +
                   "; every thread of a block must reach each barrier");
    return;
  }
  for (const WarpGroup& g : b.warp_groups[warp]) {
    if (g.mask & bit) {
      block_fail(b, th.rank,
                 "synccheck: lane " + std::to_string(th.rank % 32) + " exited while lanes " +
                     hex(g.arrived) + " of warp " + std::to_string(warp) + " wait for it at " +
                     site(g.what, g.file, g.line) + " with mask " + hex(g.mask) +
                     " (the lanes' masks disagree, or the lane left before the collective)");
      return;
    }
  }
}

void fiber_body(void* arg) {
  FiberThread& th = *static_cast<FiberThread*>(arg);
  Block& b = static_cast<Block&>(*th.block);
  try {
    b.run->invoke(b.run->kernel, b.run->args);
    async_land_all(th);  // copies still in flight land as the thread exits
    mma_check_exit(th);
  } catch (const Error& e) {
    block_fail(b, th.rank, e.what());
  } catch (const std::exception& e) {
    block_fail(b, th.rank, std::string("threw: ") + e.what());
  } catch (...) {
    block_fail(b, th.rank, "threw an exception that is not a std::exception");
  }
  if (!b.failed) thread_exit(b, th);
  fiber_exit(th.context, b.worker->scheduler);
}

std::string deadlock_report(const Block& b) {
  // Group the waiting threads by where they wait.
  std::map<std::tuple<std::string, std::string, int>, std::pair<unsigned, unsigned>> sites;
  for (unsigned r = 0; r < b.threads; ++r) {
    const FiberThread& th = b.fiber_threads[r];
    if (th.status != FiberThread::at_barrier && th.status != FiberThread::at_warp) continue;
    auto key = std::make_tuple(std::string(th.wait_what), std::string(th.wait_file), th.wait_line);
    auto it = sites.find(key);
    if (it == sites.end())
      sites.emplace(key, std::make_pair(1u, r));
    else
      ++it->second.first;
  }
  std::string msg = "kernel '" + b.run->name + "' block (" + std::to_string(b.block_idx.x) + "," +
                    std::to_string(b.block_idx.y) + "," + std::to_string(b.block_idx.z) +
                    "): synccheck: deadlock, no thread can continue (" + std::to_string(b.exited) +
                    " exited):";
  for (const auto& [key, count] : sites) {
    msg += "\n  " + std::to_string(count.first) + " thread(s), first " +
           thread_name(b, count.second) + ", wait at " +
           site(std::get<0>(key).c_str(), std::get<1>(key).c_str(), std::get<2>(key));
  }
  for (size_t w = 0; w < b.warp_groups.size(); ++w) {
    for (const WarpGroup& g : b.warp_groups[w]) {
      msg += "\n  warp " + std::to_string(w) + ": " + site(g.what, g.file, g.line) + " with mask " +
             hex(g.mask) + " still misses lanes " + hex(g.mask & ~g.arrived);
    }
    if (b.warp_groups[w].size() > 1) {
      msg += "\n  the lanes of warp " + std::to_string(w) +
             " disagree: they wait at different warp collectives or with different masks";
    }
  }
  return msg;
}

void run_loop(Block& b) {
  const KernelRun& run = *b.run;
  ThreadState ts;
  ts.block = &b;
  t_thread = &ts;
  try {
    if (run.options.schedule == Schedule::forward) {
      unsigned rank = 0;
      for (unsigned z = 0; z < b.block_dim.z; ++z) {
        for (unsigned y = 0; y < b.block_dim.y; ++y) {
          for (unsigned x = 0; x < b.block_dim.x; ++x) {
            ts.thread_idx = uint3{x, y, z};
            ts.rank = rank++;
            run.invoke(run.kernel, run.args);
            async_land_all(ts);
            mma_check_exit(ts);
          }
        }
      }
    } else {
      std::vector<unsigned> order;
      schedule_order(b, order);
      for (unsigned rank : order) {
        ts.thread_idx = unflatten(rank, b.block_dim);
        ts.rank = rank;
        run.invoke(run.kernel, run.args);
        async_land_all(ts);
        mma_check_exit(ts);
      }
    }
  } catch (const Error& e) {
    t_thread = nullptr;
    fail(where(b, ts.rank) + ": " + e.what());
  } catch (const std::exception& e) {
    t_thread = nullptr;
    fail(where(b, ts.rank) + ": threw: " + e.what());
  } catch (...) {
    t_thread = nullptr;
    fail(where(b, ts.rank) + ": threw an exception that is not a std::exception");
  }
  t_thread = nullptr;
}

void run_fibers(Block& b) {
  Worker& w = *b.worker;
  unsigned n = b.threads;
  size_t stack_size = b.run->options.stack_size;
  if (!w.stacks.empty() && w.stacks.front().size < stack_size) {
    for (Stack& s : w.stacks) free_stack(s);
    w.stacks.clear();
  }
  while (w.stacks.size() < n) w.stacks.push_back(allocate_stack(stack_size));
  if (w.threads.size() < n) w.threads.resize(n);
  b.fiber_threads = w.threads.data();
  for (unsigned r = 0; r < n; ++r) {
    FiberThread& th = b.fiber_threads[r];
    th.rank = r;
    th.thread_idx = unflatten(r, b.block_dim);
    th.block = &b;
    th.status = FiberThread::ready;
    th.async_copies.clear();  // a failed block may have left some
    th.async_commits = 0;
    th.mma_ops.clear();
    th.mma_commits = 0;
    fiber_init(th.context, w.stacks[r], &fiber_body, &th);
  }
  unsigned warps = (n + 31) / 32;
  b.warp_groups.assign(warps, {});
  b.warp_exited.assign(warps, 0);
  b.warp_epoch.assign(warps, 0);
  b.live = n;
  std::vector<unsigned> order;
  schedule_order(b, order);
  b.ready.assign(order.begin(), order.end());
  while (!b.ready.empty() && !b.failed) {
    FiberThread& th = b.fiber_threads[b.ready.front()];
    b.ready.pop_front();
    th.status = FiberThread::running;
    t_thread = &th;
    fiber_switch(w.scheduler, th.context);
  }
  t_thread = nullptr;
  if (!b.failed && b.live > 0) {
    b.failed = true;
    b.error = deadlock_report(b);
  }
  if (b.failed) {
    // The fibers that did not finish never resume; their stacks serve the next block.
    for (unsigned r = 0; r < n; ++r) {
      if (b.fiber_threads[r].status != FiberThread::exited)
        fiber_abandon(b.fiber_threads[r].context);
    }
    fail(b.error);
  }
}

}  // namespace

void prepare_shared(Block& b);  // shared.cpp

void run_block(Worker& w, const KernelRun& run, uint64_t linear) {
  Block b;
  b.run = &run;
  b.worker = &w;
  uint64_t gx = run.grid.x, gy = run.grid.y;
  b.block_idx = uint3{static_cast<unsigned>(linear % gx), static_cast<unsigned>(linear / gx % gy),
                      static_cast<unsigned>(linear / (gx * gy))};
  b.block_dim = run.block;
  b.grid_dim = run.grid;
  b.threads = run.block.x * run.block.y * run.block.z;
  b.fibers = run.fibers;
  b.serial = ++w.block_serial;
  ++w.epoch;
  b.rng.seed(run.options.seed * 0x9E3779B97F4A7C15ull + linear);
  prepare_shared(b);
  if (b.fibers)
    run_fibers(b);
  else
    run_loop(b);
}

// ---- the worker pool ----

namespace {

struct Job {
  const KernelRun* run = nullptr;
  uint64_t total = 0;
  uint64_t next = 0;
  std::vector<uint64_t> order;  // the block order for a shuffled schedule
  int workers = 1;
  int in_flight = 0;
  bool abort = false;
  bool done = false;
  std::string error;
  std::condition_variable finished;
};

class Pool {
 public:
  void run(Job& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (static_cast<int>(threads_.size()) < job.workers) {
      int index = static_cast<int>(threads_.size());
      threads_.emplace_back([this, index] { loop(index); });
    }
    jobs_.push_back(&job);
    wake_.notify_all();
    job.finished.wait(lock, [&] { return job.done; });
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  }

 private:
  void loop(int index) {
    fiber_register_thread_stack();  // Note [LeakSanitizer and a worker inside a fiber]
    Worker worker;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Job* job = nullptr;
      for (Job* j : jobs_) {
        if (index < j->workers && !j->abort && j->next < j->total) {
          job = j;
          break;
        }
      }
      if (!job) {
        wake_.wait(lock);
        continue;
      }
      uint64_t i = job->next++;
      ++job->in_flight;
      lock.unlock();
      uint64_t linear = i;
      Schedule schedule = job->run->options.schedule;
      if (schedule == Schedule::reverse)
        linear = job->total - 1 - i;
      else if (schedule == Schedule::shuffle && !job->order.empty())
        linear = job->order[i];
      std::string error;
      try {
        run_block(worker, *job->run, linear);
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      --job->in_flight;
      if (!error.empty() && !job->abort) {
        job->abort = true;
        job->error = error;
      }
      if ((job->abort || job->next >= job->total) && job->in_flight == 0 && !job->done) {
        job->done = true;
        job->finished.notify_all();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Job*> jobs_;
  std::vector<std::thread> threads_;
};

// Never destroyed: workers may still wait for work when the process exits.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void run_kernel(const KernelRun& run) {
  Job job;
  job.run = &run;
  job.total = uint64_t{run.grid.x} * run.grid.y * run.grid.z;
  job.workers = std::max(
      1, std::min<int>(run.options.workers, static_cast<int>(std::min<uint64_t>(job.total, 1024))));
  if (run.options.schedule == Schedule::shuffle && job.total <= (uint64_t{1} << 24)) {
    job.order.resize(job.total);
    for (uint64_t i = 0; i < job.total; ++i) job.order[i] = i;
    std::mt19937_64 rng(run.options.seed);
    std::shuffle(job.order.begin(), job.order.end(), rng);
  }
  pool().run(job);
  if (!job.error.empty()) fail(job.error);
}

// ---- barriers ----

int block_barrier(BarrierKind kind, int predicate, const char* what, const char* file, int line) {
  Block& b = current_block(what);
  b.run->info->used_collective.store(true, std::memory_order_relaxed);
  if (!b.fibers) collective_in_loop_mode(b, what, file, line);
  FiberThread& th = static_cast<FiberThread&>(*t_thread);
  if (b.exited > 0) {
    fail("synccheck: " + site(what, file, line) + " is reached after " + std::to_string(b.exited) +
         " thread(s) of the block exited; every thread of a block must reach each barrier");
  }
  if (b.barrier_waiting == 0) {
    b.barrier_what = what;
    b.barrier_file = file;
    b.barrier_line = line;
    b.barrier_first = th.rank;
    b.barrier_count = 0;
  } else if (b.barrier_line != line || std::strcmp(b.barrier_file, file) != 0 ||
             std::strcmp(b.barrier_what, what) != 0) {
    fail("synccheck: divergent barriers: this thread waits at " + site(what, file, line) +
         " while " + std::to_string(b.barrier_waiting) + " thread(s) (first " +
         thread_name(b, b.barrier_first) + ") wait at " +
         site(b.barrier_what, b.barrier_file, b.barrier_line));
  }
  ++b.barrier_waiting;
  if (predicate) ++b.barrier_count;
  th.status = FiberThread::at_barrier;
  th.wait_what = what;
  th.wait_file = file;
  th.wait_line = line;
  if (b.barrier_waiting == b.live) {
    switch (kind) {
      case BarrierKind::plain:
        b.barrier_result = 0;
        break;
      case BarrierKind::count:
        b.barrier_result = b.barrier_count;
        break;
      case BarrierKind::all:
        b.barrier_result = b.barrier_count == int(b.barrier_waiting);
        break;
      case BarrierKind::any:
        b.barrier_result = b.barrier_count > 0;
        break;
    }
    ++b.worker->epoch;  // a new barrier interval for racecheck
    b.barrier_waiting = 0;
    auto release = [&](unsigned r) {
      if (b.fiber_threads[r].status == FiberThread::at_barrier) {
        b.fiber_threads[r].status = FiberThread::ready;
        b.ready.push_back(r);
      }
    };
    if (b.run->options.schedule == Schedule::forward) {
      for (unsigned r = 0; r < b.threads; ++r) release(r);
    } else {
      std::vector<unsigned> order;
      schedule_order(b, order);
      for (unsigned r : order) release(r);
    }
  }
  fiber_switch(th.context, b.worker->scheduler);
  return b.barrier_result;
}

}  // namespace detail

// ---- the warp primitive ----

unsigned thread_rank() { return detail::current_thread("thread_rank").rank; }
unsigned lane_id() { return thread_rank() % 32; }
unsigned warp_id() { return thread_rank() / 32; }

unsigned live_lanes() {
  detail::Block& b = detail::current_block("__activemask");
  unsigned warp = detail::t_thread->rank / 32;
  unsigned lanes = b.threads - warp * 32;
  unsigned valid = lanes >= 32 ? ~0u : (1u << lanes) - 1;
  if (!b.fibers) return 1u << (detail::t_thread->rank % 32);
  return valid & ~b.warp_exited[warp];
}

const unsigned char* warp_exchange(unsigned mask, const void* value, size_t size, const char* what,
                                   const char* file, int line) {
  using namespace detail;
  Block& b = current_block(what);
  b.run->info->used_collective.store(true, std::memory_order_relaxed);
  if (!b.fibers) collective_in_loop_mode(b, what, file, line);
  if (size > 16) fail(site(what, file, line) + ": a warp exchange moves at most 16 bytes a lane");
  FiberThread& th = static_cast<FiberThread&>(*t_thread);
  unsigned warp = th.rank / 32, lane = th.rank % 32, bit = 1u << lane;
  unsigned lanes = b.threads - warp * 32;
  unsigned valid = lanes >= 32 ? ~0u : (1u << lanes) - 1;
  // (No std::string may live across the switch below: an abandoned fiber never frees it.)
  auto here = [&] { return site(what, file, line); };
  if (!(mask & bit)) {
    fail("synccheck: " + here() + ": mask " + hex(mask) + " omits the calling lane " +
         std::to_string(lane));
  }
  if (mask & ~valid) {
    fail("synccheck: " + here() + ": mask " + hex(mask) + " names lanes " + hex(mask & ~valid) +
         " beyond blockDim (warp " + std::to_string(warp) + " has only lanes " + hex(valid) + ")");
  }
  if (mask & b.warp_exited[warp]) {
    fail("synccheck: " + here() + ": mask " + hex(mask) + " names lanes " +
         hex(mask & b.warp_exited[warp]) + " that already exited");
  }
  // Join the pending group of this lane's kind and mask; otherwise start one. Overlapping
  // groups are legal (lanes 0-15 at a __syncwarp() waiting for lanes 16-31 still in a half-warp
  // vote); masks that truly disagree never complete and end as a deadlock report.
  std::vector<WarpGroup>& groups = b.warp_groups[warp];
  size_t gi = groups.size();
  for (size_t i = 0; i < groups.size(); ++i) {
    const WarpGroup& g = groups[i];
    if (g.mask == mask && g.size == size && std::strcmp(g.what, what) == 0) {
      gi = i;
      break;
    }
  }
  if (gi == groups.size()) {
    groups.emplace_back();
    WarpGroup& g = groups.back();
    g.mask = mask;
    g.what = what;
    g.file = file;
    g.line = line;
    g.size = size;
  }
  WarpGroup& g = groups[gi];
  if (size) std::memcpy(g.deposits + lane * 16, value, size);
  g.arrived |= bit;
  if (g.arrived == mask) {
    for (unsigned l = 0; l < 32; ++l) {
      if (!(mask & (1u << l))) continue;
      FiberThread& other = b.fiber_threads[warp * 32 + l];
      std::memcpy(other.result, g.deposits, sizeof g.deposits);
      if (l != lane) {
        other.status = FiberThread::ready;
        b.ready.push_back(warp * 32 + l);
      }
    }
    ++b.warp_epoch[warp];
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(gi));
    return th.result;
  }
  th.status = FiberThread::at_warp;
  th.wait_what = what;
  th.wait_file = file;
  th.wait_line = line;
  fiber_switch(th.context, b.worker->scheduler);
  return th.result;
}

}  // namespace ember::sim
