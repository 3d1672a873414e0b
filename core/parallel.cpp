#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace ember {

namespace {

thread_local bool t_in_parallel = false;

// Note [Spin before sleeping]
// A training step runs dozens of parallel regions a few microseconds to a few hundred apart.
// Waking a worker blocked on a condition variable costs a futex call on each side and, on a
// virtual machine, an inter-processor interrupt to a halted vCPU: tens of microseconds, as long
// as a whole region of a small layer (a Fashion-MNIST MLP step ran slower on 2 threads than on
// 1). So a worker that finishes a job first polls for the next one for kSpinTime, and the
// caller polls for the job's end for as long, before either blocks on its condition variable
// (OpenMP runtimes do the same, with a longer default). Polling only reads atomics, with a
// pause instruction between reads, so the spinning thread leaves the core's other hardware
// thread alone and gives up the core after kSpinTime.
constexpr std::chrono::microseconds kSpinTime{200};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `done` until it returns true or kSpinTime has passed; returns the last answer.
template <class Done>
bool spin_until(Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// A fixed set of workers that wait for "jobs". A job is one parallel_for: `chunks` pieces,
// claimed by workers and the caller through an atomic counter.
class ThreadPool {
 public:
  explicit ThreadPool(int n) { start(n); }
  ~ThreadPool() { stop(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    start(n);
  }

  void run(int64_t chunks, const std::function<void(int64_t)>& chunk_fn) {
    std::unique_lock<std::mutex> job_lock(job_mutex_);  // one job at a time
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &chunk_fn;
      num_chunks_ = chunks;
      next_ = 0;
      remaining_ = chunks;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work();
    spin_until([&] { return remaining_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return remaining_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void start(int n) {
    shutting_down_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  // Claim and run chunks of the current job until none are left. Claims are made under the
  // mutex: there are at most num_threads() chunks, so this costs nothing measurable, and a
  // worker that wakes late can never claim a chunk of a job it did not see start.
  void work() {
    t_in_parallel = true;
    for (;;) {
      const std::function<void(int64_t)>* fn;
      int64_t c;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (fn_ == nullptr || next_ >= num_chunks_) break;
        c = next_++;
        fn = fn_;
      }
      try {
        (*fn)(c);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(mu_);
      if (--remaining_ == 0) done_cv_.notify_all();
    }
    t_in_parallel = false;
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      // Note [Spin before sleeping]: the next job usually starts within microseconds.
      spin_until([&] {
        return shutting_down_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return shutting_down_ || (generation_ != seen && fn_ != nullptr); });
        if (shutting_down_) return;
        seen = generation_;
      }
      work();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t num_chunks_ = 0;
  int64_t next_ = 0;
  // Written under mu_; atomic so that the spinning loops may read them without it.
  std::atomic<int64_t> remaining_{0};
  std::exception_ptr error_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> shutting_down_{false};
};

int default_num_threads() {
  if (const char* env = std::getenv("EMBER_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

ThreadPool& pool() {
  static ThreadPool p(default_num_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "set_num_threads: need at least 1 thread, got ", n);
  EMBER_CHECK(!t_in_parallel, "set_num_threads: cannot resize the pool from inside a pool task");
  if (n != pool().size()) pool().resize(n);
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (begin >= end) return;
  int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  int threads = t_in_parallel ? 1 : num_threads();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
  std::function<void(int64_t)> chunk_fn = [&](int64_t c) {
    int64_t b = begin + c * per;
    int64_t e = std::min(end, b + per);
    if (b < e) fn(b, e);
  };
  pool().run(chunks, chunk_fn);
}

}  // namespace ember
