#pragma once
// Samplers decide which examples an epoch visits and in what order (torch.utils.data.Sampler).
//
// In ember a sampler's order is a pure function of (its settings, its seed, the epoch): call
// `order(epoch)` twice and you get the same list. That is what makes loading reproducible
// whatever the number of workers, and lets a DataLoader resume mid-epoch from a checkpoint
// holding only (epoch, batches done).
//
//   data::RandomSampler s(dataset->size(), /*seed=*/42);
//   std::vector<int64_t> first = s.order(0), second = s.order(1);   // two permutations
//
// Random samplers draw from a Generator seeded with mix(seed, epoch) (Philox, core/generator.h),
// so their lists differ from PyTorch's for the same seed; their distribution is the same.

#include <cstdint>
#include <memory>
#include <vector>

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The example indices of epoch `epoch`, in visiting order.
  virtual std::vector<int64_t> order(int64_t epoch) const = 0;
  // How many indices order() returns.
  virtual int64_t size() const = 0;
};

// 0, 1, ..., n - 1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> order(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

// A fresh permutation of 0..n-1 each epoch. num_samples (default n) may differ from n: without
// replacement it is then made of whole permutations followed by the start of one more (as
// PyTorch does); with replacement it is num_samples independent uniform draws.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed = 0, bool replacement = false, int64_t num_samples = -1);
  std::vector<int64_t> order(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }

 private:
  int64_t n_;
  uint64_t seed_;
  bool replacement_;
  int64_t num_samples_;
};

// A fresh permutation of the given indices each epoch.
class SubsetRandomSampler : public Sampler {
 public:
  SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed = 0);
  std::vector<int64_t> order(int64_t epoch) const override;
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }

 private:
  std::vector<int64_t> indices_;
  uint64_t seed_;
};

// num_samples indices drawn with probability proportional to weights[i] (non-negative, not
// all zero). Without replacement, num_samples may not exceed the number of positive weights.
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        uint64_t seed = 0);
  std::vector<int64_t> order(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// The shard of a data set that one of num_replicas processes reads (rank in
// [0, num_replicas)). With shuffle, one permutation per epoch (seeded by seed and the epoch,
// the same on every rank); the list is padded by repeating its start (or, with drop_last,
// cut) to a multiple of num_replicas, and rank r takes positions r, r + R, r + 2R, ...
// set_epoch(e) makes order() without an argument use epoch e, as PyTorch's does (e >= 0, else
// an ember::Error and the epoch stays); order(e) works for any epoch directly.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  std::vector<int64_t> order(int64_t epoch) const override;
  std::vector<int64_t> order() const { return order(epoch_); }
  int64_t size() const override { return num_samples_; }
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }

 private:
  int64_t n_, replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_, total_;
  int64_t epoch_ = 0;
};

// Groups a sampler's order into batches of batch_size (the last one shorter unless drop_last).
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size, bool drop_last);
  std::vector<std::vector<int64_t>> batches(int64_t epoch) const;
  // The number of batches per epoch.
  int64_t size() const;

 private:
  std::shared_ptr<const Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

// A 64-bit seed for epoch `epoch` of a stream seeded with `seed` (SplitMix64 of both), used by
// the samplers and by the DataLoader's per-batch sample seeds.
uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0);

}  // namespace ember::data
