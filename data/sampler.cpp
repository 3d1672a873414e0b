#include "data/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/ops/random.h"
#include "core/error.h"
#include "core/generator.h"

namespace ember::data {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<int64_t> to_vector(const Tensor& t) {
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

std::vector<int64_t> permutation(int64_t n, Generator& gen) {
  return to_vector(randperm(n, TensorOptions().dtype(kInt64), &gen));
}

// `count` uniform doubles in [0, 1).
std::vector<double> uniforms(int64_t count, Generator& gen) {
  Tensor u = rand({count}, TensorOptions().dtype(kFloat64), &gen);
  const double* p = u.data_ptr<double>();
  return std::vector<double>(p, p + count);
}

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b);
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  EMBER_CHECK(n >= 0, "SequentialSampler: negative size ", n);
}

std::vector<int64_t> SequentialSampler::order(int64_t) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), 0);
  return out;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed, bool replacement, int64_t num_samples)
    : n_(n),
      seed_(seed),
      replacement_(replacement),
      num_samples_(num_samples < 0 ? n : num_samples) {
  EMBER_CHECK(n >= 0, "RandomSampler: negative size ", n);
  EMBER_CHECK(num_samples_ == 0 || n > 0, "RandomSampler: cannot draw ", num_samples_,
              " samples from an empty data set");
}

std::vector<int64_t> RandomSampler::order(int64_t epoch) const {
  Generator gen(mix_seed(seed_, static_cast<uint64_t>(epoch)));
  if (replacement_) {
    if (num_samples_ == 0) return {};
    return to_vector(randint(0, n_, {num_samples_}, TensorOptions().dtype(kInt64), &gen));
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  while (static_cast<int64_t>(out.size()) < num_samples_) {
    std::vector<int64_t> p = permutation(n_, gen);
    const int64_t take = std::min<int64_t>(n_, num_samples_ - static_cast<int64_t>(out.size()));
    out.insert(out.end(), p.begin(), p.begin() + take);
  }
  return out;
}

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed)
    : indices_(std::move(indices)), seed_(seed) {}

std::vector<int64_t> SubsetRandomSampler::order(int64_t epoch) const {
  Generator gen(mix_seed(seed_, static_cast<uint64_t>(epoch)));
  std::vector<int64_t> p = permutation(static_cast<int64_t>(indices_.size()), gen);
  for (int64_t& i : p) i = indices_[static_cast<size_t>(i)];
  return p;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                                             bool replacement, uint64_t seed)
    : weights_(std::move(weights)),
      num_samples_(num_samples),
      replacement_(replacement),
      seed_(seed) {
  EMBER_CHECK(num_samples >= 0, "WeightedRandomSampler: num_samples ", num_samples, " is negative");
  int64_t positive = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    EMBER_CHECK(std::isfinite(weights_[i]) && weights_[i] >= 0, "WeightedRandomSampler: weight ", i,
                " is ", weights_[i], " (weights must be finite and non-negative)");
    positive += weights_[i] > 0 ? 1 : 0;
  }
  EMBER_CHECK(positive > 0 || num_samples == 0, "WeightedRandomSampler: every weight is 0");
  EMBER_CHECK(replacement || num_samples <= positive, "WeightedRandomSampler: cannot draw ",
              num_samples, " samples without replacement from ", positive,
              " examples of positive weight");
}

std::vector<int64_t> WeightedRandomSampler::order(int64_t epoch) const {
  Generator gen(mix_seed(seed_, static_cast<uint64_t>(epoch)));
  std::vector<double> u = uniforms(num_samples_ > 0 ? num_samples_ : 0, gen);
  std::vector<int64_t> out;
  if (replacement_) {
    // Inverse transform sampling on the cumulative weights.
    std::vector<double> cum(weights_.size());
    std::partial_sum(weights_.begin(), weights_.end(), cum.begin());
    const double total = cum.back();
    for (double x : u) {
      auto it = std::upper_bound(cum.begin(), cum.end(), x * total);
      int64_t i = std::min<int64_t>(static_cast<int64_t>(it - cum.begin()),
                                    static_cast<int64_t>(cum.size()) - 1);
      while (weights_[static_cast<size_t>(i)] == 0) --i;  // a draw landing on a zero-width bucket
      out.push_back(i);
    }
    return out;
  }
  // Without replacement: the num_samples largest keys u_i^(1 / w_i) (Efraimidis-Spirakis),
  // which picks in proportion to weight at each step, like successive weighted draws.
  std::vector<double> keys = uniforms(static_cast<int64_t>(weights_.size()), gen);
  std::vector<std::pair<double, int64_t>> ranked;
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (weights_[i] > 0)
      ranked.emplace_back(std::log(std::max(keys[i], 1e-300)) / weights_[i],
                          static_cast<int64_t>(i));
  }
  std::partial_sort(ranked.begin(), ranked.begin() + num_samples_, ranked.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t k = 0; k < num_samples_; ++k) out.push_back(ranked[static_cast<size_t>(k)].second);
  return out;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : n_(dataset_size),
      replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  EMBER_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas ", num_replicas,
              " must be at least 1");
  EMBER_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: invalid rank ", rank,
              ", rank should be in the interval [0, ", num_replicas - 1, "]");
  EMBER_CHECK(dataset_size >= 0, "DistributedSampler: negative data set size");
  // PyTorch: with drop_last the tail that does not divide evenly is dropped, else padded.
  num_samples_ =
      drop_last && n_ % replicas_ != 0 ? n_ / replicas_ : (n_ + replicas_ - 1) / replicas_;
  total_ = num_samples_ * replicas_;
}

void DistributedSampler::set_epoch(int64_t epoch) {
  EMBER_CHECK(epoch >= 0, "DistributedSampler.set_epoch: epoch must be non-negative, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DistributedSampler::order(int64_t epoch) const {
  std::vector<int64_t> all;
  if (shuffle_) {
    // The same permutation on every rank: seeded by (seed, epoch) only.
    Generator gen(mix_seed(seed_, static_cast<uint64_t>(epoch)));
    all = permutation(n_, gen);
  } else {
    all.resize(static_cast<size_t>(n_));
    std::iota(all.begin(), all.end(), 0);
  }
  if (static_cast<int64_t>(all.size()) < total_ && !all.empty()) {
    // Pad by repeating the list from its start (several times if it is tiny).
    const size_t base = all.size();
    for (size_t i = 0; static_cast<int64_t>(all.size()) < total_; ++i) all.push_back(all[i % base]);
  }
  all.resize(static_cast<size_t>(total_));
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = rank_; i < total_; i += replicas_) mine.push_back(all[static_cast<size_t>(i)]);
  return mine;
}

BatchSampler::BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size,
                           bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  EMBER_CHECK(sampler_ != nullptr, "BatchSampler: the sampler is null");
  EMBER_CHECK(batch_size >= 1, "BatchSampler: batch_size should be a positive integer, got ",
              batch_size);
}

std::vector<std::vector<int64_t>> BatchSampler::batches(int64_t epoch) const {
  std::vector<int64_t> order = sampler_->order(epoch);
  std::vector<std::vector<int64_t>> out;
  for (size_t at = 0; at < order.size(); at += static_cast<size_t>(batch_size_)) {
    const size_t end = std::min(order.size(), at + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - at < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(at),
                     order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

int64_t BatchSampler::size() const {
  const int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

}  // namespace ember::data
