#include "data/dataloader.h"

#include <condition_variable>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "autograd/ops/shape.h"
#include "core/allocator.h"
#include "core/error.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/record_function.h"

namespace ember::data {

Batch default_collate(std::vector<Example>&& examples) {
  Example e = stack_examples(examples);
  return {e.data, e.target, Tensor()};
}

CollateFn pad_collate(double padding_value) {
  return [padding_value](std::vector<Example>&& examples) -> Batch {
    EMBER_CHECK(!examples.empty(), "pad_collate: cannot collate an empty batch");
    const Tensor& first = examples.front().data;
    EMBER_CHECK(first.dim() >= 1, "pad_collate: examples must be sequences (L, ...), got ",
                first.sizes());
    int64_t longest = 0;
    std::vector<int64_t> lengths;
    for (size_t i = 0; i < examples.size(); ++i) {
      const Tensor& d = examples[i].data;
      EMBER_CHECK(d.dim() == first.dim(), "pad_collate: example ", i, " has shape ", d.sizes(),
                  ", example 0 has ", first.sizes());
      for (int64_t k = 1; k < d.dim(); ++k)
        EMBER_CHECK(d.size(k) == first.size(k), "pad_collate: example ", i, " has shape ",
                    d.sizes(), ", example 0 has ", first.sizes(),
                    " (only the first dim may differ)");
      lengths.push_back(d.size(0));
      longest = std::max(longest, d.size(0));
    }
    Shape shape = first.sizes();
    shape[0] = longest;
    shape.insert(shape.begin(), static_cast<int64_t>(examples.size()));
    Tensor data = full(shape, padding_value, TensorOptions().dtype(first.dtype()));
    std::vector<Tensor> targets;
    for (size_t i = 0; i < examples.size(); ++i) {
      data[static_cast<int64_t>(i)].narrow(0, 0, lengths[i]).copy_(examples[i].data);
      if (examples[i].target.defined()) targets.push_back(examples[i].target);
    }
    EMBER_CHECK(targets.empty() || targets.size() == examples.size(),
                "pad_collate: some examples have targets and some do not");
    return {data, targets.empty() ? Tensor() : stack(targets),
            tensor(lengths, {static_cast<int64_t>(lengths.size())}, TensorOptions().dtype(kInt64))};
  };
}

// ---- worker threads ---------------------------------------------------------------------------

struct DataLoader::Workers {
  struct Result {
    Batch batch;
    std::exception_ptr error;
  };

  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::vector<std::thread> threads;
  bool stop = false;
  // The current job (an epoch); `generation` tells results of an abandoned epoch apart.
  uint64_t generation = 0;
  bool has_job = false;
  int64_t epoch = 0;
  std::shared_ptr<const Plan> plan;
  int64_t next_fetch = 0, next_yield = 0, total = 0, max_in_flight = 1;
  std::map<int64_t, Result> ready;

  void run(const DataLoader* loader, int64_t worker_id) {
    if (loader->opt_.worker_init_fn) loader->opt_.worker_init_fn(worker_id);
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      work_cv.wait(lk, [&] {
        return stop || (has_job && next_fetch < total && next_fetch < next_yield + max_in_flight);
      });
      if (stop) return;
      const int64_t b = next_fetch++, e = epoch;
      const uint64_t gen = generation;
      std::shared_ptr<const Plan> job = plan;  // stays alive even if a new epoch starts
      lk.unlock();
      Result r;
      try {
        r.batch = loader->fetch_indices(e, b, (*job)[static_cast<size_t>(b)]);
      } catch (...) {
        r.error = std::current_exception();
      }
      lk.lock();
      if (gen == generation) {
        ready[b] = std::move(r);
        done_cv.notify_all();
      }
    }
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
  }
};

// ---- the loader -------------------------------------------------------------------------------

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), opt_(std::move(options)) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  EMBER_CHECK(opt_.num_workers >= 0, "DataLoader: num_workers option should be non-negative, got ",
              opt_.num_workers);
  EMBER_CHECK(opt_.prefetch_factor >= 1, "DataLoader: prefetch_factor must be at least 1, got ",
              opt_.prefetch_factor);
  const int sources =
      (opt_.shuffle ? 1 : 0) + (opt_.sampler ? 1 : 0) + (opt_.batch_sampler ? 1 : 0);
  EMBER_CHECK(sources <= 1,
              "DataLoader: shuffle, sampler and batch_sampler are mutually exclusive");
  if (opt_.batch_sampler) {
    batches_ = opt_.batch_sampler;
  } else {
    EMBER_CHECK(opt_.batch_size >= 1, "DataLoader: batch_size should be a positive integer, got ",
                opt_.batch_size);
    std::shared_ptr<const Sampler> sampler = opt_.sampler;
    if (!sampler) {
      if (opt_.shuffle)
        sampler = std::make_shared<RandomSampler>(dataset_->size(), opt_.seed);
      else
        sampler = std::make_shared<SequentialSampler>(dataset_->size());
    }
    batches_ = std::make_shared<BatchSampler>(sampler, opt_.batch_size, opt_.drop_last);
  }
  state_.seed = opt_.seed;
}

DataLoader::~DataLoader() {
  if (workers_) workers_->shutdown();
}

int64_t DataLoader::size() const { return batches_->size(); }

namespace {

// An epoch number a loader can run and count on from (its end adds one).
void check_epoch(const char* who, int64_t epoch) {
  EMBER_CHECK(epoch >= 0 && epoch < std::numeric_limits<int64_t>::max(), who,
              ": epoch must be in [0, 2^63 - 1), got ", epoch);
}

}  // namespace

void DataLoader::set_epoch(int64_t epoch) {
  EMBER_CHECK(!active_, "DataLoader: set_epoch during an iteration");
  check_epoch("DataLoader.set_epoch", epoch);
  state_.epoch = epoch;
  state_.batches_done = 0;
}

void DataLoader::load_state(const DataLoaderState& s) {
  EMBER_CHECK(!active_, "DataLoader: load_state during an iteration");
  EMBER_CHECK(s.seed == opt_.seed, "DataLoader.load_state: seed ", s.seed,
              " is not this loader's seed ", opt_.seed, " (the saved state is for another seed)");
  check_epoch("DataLoader.load_state", s.epoch);
  EMBER_CHECK(s.batches_done >= 0 && s.batches_done <= size(),
              "DataLoader.load_state: batches_done must be in [0, ", size(),
              "] (the batches of an epoch), got ", s.batches_done, " (epoch ", s.epoch, ")");
  state_ = s;
}

Batch DataLoader::fetch(int64_t epoch, int64_t b) const {
  const std::vector<std::vector<int64_t>> plan = batches_->batches(epoch);
  EMBER_CHECK(b >= 0 && b < static_cast<int64_t>(plan.size()), "DataLoader: epoch ", epoch, " has ",
              plan.size(), " batches, there is no batch ", b);
  return fetch_indices(epoch, b, plan[static_cast<size_t>(b)]);
}

Batch DataLoader::fetch_indices(int64_t epoch, int64_t b,
                                const std::vector<int64_t>& indices) const {
  profiler::RecordFunction range("DataLoader.fetch");  // on the thread that loads
  set_sample_seed(mix_seed(opt_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(b)));
  Batch out;
  if (!opt_.collate_fn) {
    Example e = dataset_->get_batch(indices);
    out = {e.data, e.target, Tensor()};
  } else {
    std::vector<Example> examples;
    examples.reserve(indices.size());
    for (int64_t i : indices) examples.push_back(dataset_->get(i));
    out = opt_.collate_fn(std::move(examples));
  }
  // pin_memory: page-locked copies (on the worker, off the training loop's path) when the CUDA
  // backend installed the pinned allocator and a device is there; otherwise it is only a hint
  // (Note [Pinned host memory] in core/allocator.h) and the batch stays in ordinary host memory.
  if (opt_.pin_memory && has_pinned_allocator() && device_count(DeviceType::CUDA) > 0) {
    for (Tensor* t : {&out.data, &out.target, &out.lengths})
      if (t->defined() && t->is_cpu()) *t = pin_memory(*t);
  }
  return out;
}

void DataLoader::start_epoch() {
  plan_ = std::make_shared<const Plan>(batches_->batches(state_.epoch));
  active_ = true;
  if (opt_.num_workers == 0) return;
  if (!workers_) {
    workers_ = std::make_unique<Workers>();
    for (int64_t w = 0; w < opt_.num_workers; ++w)
      workers_->threads.emplace_back([this, w] { workers_->run(this, w); });
  }
  {
    std::lock_guard<std::mutex> lk(workers_->mu);
    ++workers_->generation;
    workers_->ready.clear();
    workers_->has_job = true;
    workers_->epoch = state_.epoch;
    workers_->plan = plan_;
    workers_->next_fetch = workers_->next_yield = state_.batches_done;
    workers_->total = static_cast<int64_t>(plan_->size());
    workers_->max_in_flight = opt_.num_workers * opt_.prefetch_factor;
  }
  workers_->work_cv.notify_all();
}

void DataLoader::finish_epoch() {
  active_ = false;
  if (!workers_) return;
  {
    std::lock_guard<std::mutex> lk(workers_->mu);
    workers_->has_job = false;
    ++workers_->generation;  // drop whatever is still being fetched
    workers_->ready.clear();
  }
  if (!opt_.persistent_workers) {
    workers_->shutdown();
    workers_.reset();
  }
}

bool DataLoader::next(Batch& out) {
  // The training loop waiting for its batch: a data-bound loop spends its time here.
  profiler::RecordFunction range("DataLoader.next");
  const int64_t b = state_.batches_done;
  if (b >= static_cast<int64_t>(plan_->size())) {
    finish_epoch();
    state_.epoch += 1;
    state_.batches_done = 0;
    return false;
  }
  if (opt_.num_workers == 0) {
    out = fetch_indices(state_.epoch, b, (*plan_)[static_cast<size_t>(b)]);
  } else {
    Workers& w = *workers_;
    std::unique_lock<std::mutex> lk(w.mu);
    w.done_cv.wait(lk, [&] { return w.ready.count(b) > 0; });
    Workers::Result r = std::move(w.ready[b]);
    w.ready.erase(b);
    w.next_yield = b + 1;
    lk.unlock();
    w.work_cv.notify_all();
    if (r.error) {
      // The batch failed: the position stays before it, and the epoch ends here.
      finish_epoch();
      std::rethrow_exception(r.error);
    }
    out = std::move(r.batch);
  }
  state_.batches_done = b + 1;
  return true;
}

DataLoader::Iterator::Iterator(DataLoader* loader) : loader_(loader) {
  if (loader_ != nullptr && !loader_->next(current_)) loader_ = nullptr;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (loader_ != nullptr && !loader_->next(current_)) loader_ = nullptr;
  return *this;
}

DataLoader::Iterator DataLoader::begin() {
  if (active_) finish_epoch();  // an earlier iteration was abandoned: restart from the position
  start_epoch();
  return Iterator(this);
}

}  // namespace ember::data
