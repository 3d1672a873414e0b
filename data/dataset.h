#pragma once
// Datasets (PyTorch's torch.utils.data): where examples come from.
//
//   auto train = std::make_shared<data::FashionMNIST>(data::FashionMNIST::default_root(), true);
//   data::Example ex = train->get(0);              // ex.data (1, 28, 28) float32, ex.target int64
//   auto [a, b] = data::random_split(train, {50000, 10000}, gen);
//
// - Dataset: random access by index, `size()` examples. `get` must be safe to call from several
//   threads at once (DataLoader workers do): datasets are read-only after construction.
// - IterableDataset: a stream read in order (a file, a generator), for data without indices.
// - An Example is a (data, target) pair of tensors, PyTorch's C++ frontend's shape of a sample;
//   target may be undefined for unlabelled data.
//
// Randomness inside `get` (random crops, flips) draws from data::sample_generator(), a
// thread-local Generator that the DataLoader reseeds per batch from its base seed, the epoch
// and the batch's position, so the examples are the same whatever the number of workers
// (data/dataloader.h). Outside a loader it is a per-thread generator seeded by
// data::set_sample_seed (default 0).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace ember::data {

struct Example {
  Tensor data;
  Tensor target;  // may be undefined
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Example `index` in [0, size()); out of range is an error naming the dataset and the size.
  virtual Example get(int64_t index) const = 0;
  // Examples `indices` stacked into one batch (data (B, ...), target (B, ...)), exactly as the
  // default collate stacks get()'s results: the default does that. Datasets that can gather a
  // batch at once (TensorDataset, FashionMNIST without a transform) override it; the
  // DataLoader uses it when it collates by stacking.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

// Stacks examples along a new first dim (data with data, targets with targets): the default
// collate. All data must share one shape, and so must the targets.
Example stack_examples(const std::vector<Example>& examples);

class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  // Starts a new pass over the stream.
  virtual void reset() = 0;
  // The next example, or nullopt at the end of the pass.
  virtual std::optional<Example> next() = 0;
};

// Examples made of rows of tensors sharing their first dim: example i is
// (data[i], target[i]) (target optional).
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(Tensor data, Tensor target = {});
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return target_; }

 private:
  Tensor data_, target_;
};

// The examples of `base` at `indices`, in that order.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

// The datasets one after another.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<const Dataset>> parts);
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  Example get(int64_t index) const override;

 private:
  std::vector<std::shared_ptr<const Dataset>> parts_;
  std::vector<int64_t> ends_;  // cumulative sizes
};

// Splits `base` into disjoint random Subsets of the given lengths, which must add up to its
// size (PyTorch's random_split with integer lengths), or fractions adding up to 1 (the
// remainder is dealt one by one to the first parts, as PyTorch does). A randperm from `gen`
// (nullptr: the default generator) decides the split.
std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<const Dataset>& base,
                                                  const std::vector<int64_t>& lengths,
                                                  Generator* gen = nullptr);
std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<const Dataset>& base,
                                                  const std::vector<double>& fractions,
                                                  Generator* gen = nullptr);

// The generator that random transforms draw from on this thread (see the top of this file).
Generator& sample_generator();
// Reseeds this thread's sample generator (the loader calls it before each batch).
void set_sample_seed(uint64_t seed);

}  // namespace ember::data
