#include "core/parallel.h"

#include <algorithm>
#include <atomic>
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
  int64_t next_ = 0, remaining_ = 0;
  std::exception_ptr error_;
  uint64_t generation_ = 0;
  bool shutting_down_ = false;
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
