#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "autograd/ops/random.h"
#include "autograd/ops/shape.h"
#include "core/error.h"
#include "core/ops/factory.h"

namespace ember::data {

namespace {

void check_index(const char* what, int64_t index, int64_t size) {
  EMBER_CHECK(index >= 0 && index < size, what, ": index ", index,
              " is out of range for a dataset of ", size, " examples");
}

}  // namespace

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  return stack_examples(examples);
}

Example stack_examples(const std::vector<Example>& examples) {
  EMBER_CHECK(!examples.empty(), "collate: cannot stack an empty batch");
  std::vector<Tensor> data, target;
  const bool has_target = examples.front().target.defined();
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    EMBER_CHECK(e.data.sizes() == examples.front().data.sizes(), "collate: example ", i,
                " has data of shape ", e.data.sizes(), " but example 0 has ",
                examples.front().data.sizes(), " (use a padding collate for varying sizes)");
    EMBER_CHECK(e.target.defined() == has_target, "collate: example ", i,
                has_target ? " has no target" : " has a target", " unlike example 0");
    data.push_back(e.data);
    if (has_target) target.push_back(e.target);
  }
  return {stack(data), has_target ? stack(target) : Tensor()};
}

TensorDataset::TensorDataset(Tensor data, Tensor target)
    : data_(std::move(data)), target_(std::move(target)) {
  EMBER_CHECK(data_.defined() && data_.dim() >= 1,
              "TensorDataset: data must have at least 1 dim (the examples)");
  if (target_.defined()) {
    EMBER_CHECK(target_.dim() >= 1 && target_.size(0) == data_.size(0), "TensorDataset: data has ",
                data_.size(0), " rows but target has ", target_.dim() == 0 ? 0 : target_.size(0));
  }
}

Example TensorDataset::get(int64_t index) const {
  check_index("TensorDataset", index, size());
  return {data_[index], target_.defined() ? target_[index] : Tensor()};
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices) check_index("TensorDataset", i, size());
  Tensor idx =
      tensor(indices, {static_cast<int64_t>(indices.size())}, TensorOptions().dtype(kInt64));
  return {data_.index_select(0, idx), target_.defined() ? target_.index_select(0, idx) : Tensor()};
}

Subset::Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  EMBER_CHECK(base_ != nullptr, "Subset: the base dataset is null");
  const int64_t n = base_->size();
  for (int64_t i : indices_) check_index("Subset", i, n);
}

Example Subset::get(int64_t index) const {
  check_index("Subset", index, size());
  return base_->get(indices_[static_cast<size_t>(index)]);
}

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<const Dataset>> parts)
    : parts_(std::move(parts)) {
  int64_t total = 0;
  for (const auto& p : parts_) {
    EMBER_CHECK(p != nullptr, "ConcatDataset: a part is null");
    total += p->size();
    ends_.push_back(total);
  }
}

Example ConcatDataset::get(int64_t index) const {
  check_index("ConcatDataset", index, size());
  const size_t part =
      static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
  const int64_t start = part == 0 ? 0 : ends_[part - 1];
  return parts_[part]->get(index - start);
}

std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<const Dataset>& base,
                                                  const std::vector<int64_t>& lengths,
                                                  Generator* gen) {
  EMBER_CHECK(base != nullptr, "random_split: the dataset is null");
  int64_t total = 0;
  for (int64_t l : lengths) {
    EMBER_CHECK(l >= 0, "random_split: length ", l, " is negative");
    total += l;
  }
  EMBER_CHECK(total == base->size(), "random_split: the lengths add up to ", total,
              " but the dataset has ", base->size(), " examples");
  Tensor perm = randperm(total, TensorOptions().dtype(kInt64), gen);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<std::shared_ptr<Subset>> out;
  int64_t at = 0;
  for (int64_t l : lengths) {
    out.push_back(std::make_shared<Subset>(base, std::vector<int64_t>(p + at, p + at + l)));
    at += l;
  }
  return out;
}

std::vector<std::shared_ptr<Subset>> random_split(const std::shared_ptr<const Dataset>& base,
                                                  const std::vector<double>& fractions,
                                                  Generator* gen) {
  EMBER_CHECK(base != nullptr, "random_split: the dataset is null");
  double sum = 0;
  for (double f : fractions) {
    EMBER_CHECK(f >= 0 && f <= 1, "random_split: fraction ", f, " is not in [0, 1]");
    sum += f;
  }
  EMBER_CHECK(std::abs(sum - 1.0) < 1e-9, "random_split: the fractions add up to ", sum, ", not 1");
  const int64_t n = base->size();
  std::vector<int64_t> lengths;
  int64_t assigned = 0;
  for (double f : fractions) {
    lengths.push_back(static_cast<int64_t>(std::floor(static_cast<double>(n) * f)));
    assigned += lengths.back();
  }
  // PyTorch deals the remainder one at a time, round robin from the first part.
  for (size_t i = 0; assigned < n; i = (i + 1) % lengths.size(), ++assigned) ++lengths[i];
  return random_split(base, lengths, gen);
}

namespace {
Generator& thread_sample_generator() {
  thread_local Generator gen(0);
  return gen;
}
}  // namespace

Generator& sample_generator() { return thread_sample_generator(); }

void set_sample_seed(uint64_t seed) {
  Generator& g = thread_sample_generator();
  g.manual_seed(seed);
}

}  // namespace ember::data
