#pragma once
// DataLoader: batches from a Dataset, in order, optionally shuffled, optionally fetched by
// worker threads ahead of time (torch.utils.data.DataLoader).
//
//   data::DataLoaderOptions opt;
//   opt.batch_size = 64;  opt.shuffle = true;  opt.seed = 42;  opt.num_workers = 2;
//   data::DataLoader loader(train_set, opt);
//   for (int64_t epoch = 0; epoch < 5; ++epoch) {
//     loader.set_epoch(epoch);
//     for (const data::Batch& b : loader) { ... b.data, b.target ... }
//   }
//
// Note [Reproducible loading]
// Every batch is a pure function of (the dataset, the options, the epoch, its position):
// - the order comes from the sampler's order(epoch), which depends only on the seed and the
//   epoch (data/sampler.h);
// - before fetching batch b of epoch e, the fetching thread reseeds its sample generator
//   (data::sample_generator, which random transforms draw from) with mix_seed(seed, e, b).
// So the batches are the same with 0, 1 or 8 workers, and a loader restored from `state()`
// continues exactly where the saved one stopped. (PyTorch seeds per worker instead, so there
// the augmentations change with num_workers.)
//
// Workers: with num_workers > 0, that many threads fetch batches ahead of the consumer, at
// most num_workers * prefetch_factor batches in flight; batches are still yielded in order.
// Without persistent_workers the threads stop at the end of each epoch, with it they wait for
// the next one. An exception thrown while fetching (a bad example, a failing transform) is
// rethrown by the iterator when that batch's turn comes. worker_init_fn(worker_id) runs on
// each worker thread when it starts.
//
// pin_memory: batches (data, target, lengths) are copied into page-locked host memory by the
// worker when ember is built with CUDA, so that `batch.data.to(Device::cuda(0), kFloat32,
// /*non_blocking=*/true)` only queues the copy; in a CPU-only build it changes nothing.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "data/sampler.h"

namespace ember::data {

// One batch. `lengths` is set by pad_collate only: the true length of each sequence.
struct Batch {
  Tensor data;
  Tensor target;
  Tensor lengths;
};

using CollateFn = std::function<Batch(std::vector<Example>&&)>;

// The default: stack data and targets along a new first dim (data/dataset.h stack_examples).
Batch default_collate(std::vector<Example>&& examples);
// For variable-length sequences (L_i, ...) with equal trailing dims: data (B, max L, ...)
// padded with `padding_value`, targets stacked, and lengths (B) int64 holding each L_i.
CollateFn pad_collate(double padding_value = 0.0);

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;  // a RandomSampler seeded with `seed`
  uint64_t seed = 0;     // the base seed: shuffling and per-batch sample seeds
  bool drop_last = false;
  // Instead of shuffle: a custom sampler (batched by batch_size / drop_last), or a batch
  // sampler that forms the batches itself. At most one of shuffle, sampler, batch_sampler.
  std::shared_ptr<const Sampler> sampler;
  std::shared_ptr<const BatchSampler> batch_sampler;
  // Empty: the default collate, which asks the dataset for whole batches (get_batch).
  CollateFn collate_fn;
  int64_t num_workers = 0;
  int64_t prefetch_factor = 2;  // batches in flight per worker
  bool persistent_workers = false;
  bool pin_memory = false;
  std::function<void(int64_t worker_id)> worker_init_fn;
};

// Where a loader stands: enough to resume it exactly (Note [Reproducible loading]).
struct DataLoaderState {
  int64_t epoch = 0;
  int64_t batches_done = 0;  // batches of `epoch` already yielded
  uint64_t seed = 0;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches per epoch.
  int64_t size() const;
  // The epoch the next iteration runs (PyTorch's sampler.set_epoch), in [0, 2^63 - 1). A new
  // begin() without set_epoch runs the epoch after the last completed one.
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return state_.epoch; }

  // Save and restore the position. After load_state, the next begin() resumes epoch `epoch`
  // at batch `batches_done`. load_state checks the state as set_epoch checks its epoch: an
  // ember::Error naming the field ("DataLoader.load_state: batches_done must be in [0, 12]
  // ..., got 13") unless seed is this loader's, 0 <= epoch < 2^63 - 1 and 0 <= batches_done
  // <= size(); a refused state changes nothing.
  DataLoaderState state() const { return state_; }
  void load_state(const DataLoaderState& s);

  class Iterator {
   public:
    const Batch& operator*() const { return current_; }
    const Batch* operator->() const { return &current_; }
    Iterator& operator++();
    bool operator!=(const Iterator& other) const { return loader_ != other.loader_; }
    bool operator==(const Iterator& other) const { return loader_ == other.loader_; }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader);
    DataLoader* loader_ = nullptr;  // null: the end
    Batch current_;
  };
  // Starts (or resumes) the current epoch. Only one iteration may be active at a time.
  Iterator begin();
  Iterator end() { return Iterator(nullptr); }

  // The batch at position `b` of epoch `epoch`, fetched on the calling thread (what a worker
  // computes; for tests and for random access).
  Batch fetch(int64_t epoch, int64_t b) const;

 private:
  struct Workers;
  using Plan = std::vector<std::vector<int64_t>>;
  Batch fetch_indices(int64_t epoch, int64_t b, const std::vector<int64_t>& indices) const;
  bool next(Batch& out);  // false at the end of the epoch
  void start_epoch();
  void finish_epoch();

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions opt_;
  std::shared_ptr<const BatchSampler> batches_;
  DataLoaderState state_;
  bool active_ = false;
  std::shared_ptr<const Plan> plan_;  // this epoch's batches of indices
  std::unique_ptr<Workers> workers_;
};

}  // namespace ember::data
