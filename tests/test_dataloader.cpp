// Samplers and the DataLoader (data/sampler.h, data/dataloader.h): orders, sharding, worker
// threads, determinism across worker counts, saved positions, collation and errors.

#include <ember/ember.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <set>

#include "data/dataloader.h"
#include "data/sampler.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota_vec(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// Example i: data = i + noise drawn from the sample generator (a stand-in for a random
// augmentation), target = i. Optionally throws for one index.
class NoisyDataset : public data::Dataset {
 public:
  explicit NoisyDataset(int64_t n, int64_t bad = -1) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t i) const override {
    EMBER_CHECK(i != bad_, "NoisyDataset: example ", i, " is broken");
    Tensor noise = rand({3}, TensorOptions().dtype(kFloat64), &data::sample_generator());
    return {noise + static_cast<double>(i), scalar_tensor(i, kInt64)};
  }

 private:
  int64_t n_, bad_;
};

std::vector<std::vector<double>> epoch_batches(data::DataLoader& loader, int64_t epoch) {
  loader.set_epoch(epoch);
  std::vector<std::vector<double>> out;
  for (const data::Batch& b : loader) out.push_back(values(b.data));
  return out;
}

}  // namespace

TEST_CASE("samplers: orders are permutations, per epoch, reproducible", "[data]") {
  data::SequentialSampler seq(5);
  CHECK(seq.order(3) == iota_vec(5));

  data::RandomSampler rs(100, /*seed=*/7);
  auto e0 = rs.order(0), e1 = rs.order(1);
  CHECK(sorted(e0) == iota_vec(100));
  CHECK(e0 != e1);                                    // a new permutation each epoch
  CHECK(rs.order(0) == e0);                           // the same epoch gives the same order
  CHECK(data::RandomSampler(100, 8).order(0) != e0);  // another seed, another order
  data::RandomSampler more(10, 1, false, 25);
  auto m = more.order(0);
  REQUIRE(m.size() == 25);
  CHECK(sorted(std::vector<int64_t>(m.begin(), m.begin() + 10)) == iota_vec(10));
  data::RandomSampler with(4, 1, true, 1000);
  auto w = with.order(0);
  CHECK(w.size() == 1000);
  CHECK(std::set<int64_t>(w.begin(), w.end()).size() == 4);

  data::SubsetRandomSampler sub({10, 20, 30}, 3);
  CHECK(sorted(sub.order(5)) == std::vector<int64_t>{10, 20, 30});

  // Weighted: frequencies follow the weights; zero weight never drawn.
  data::WeightedRandomSampler ws({1.0, 0.0, 3.0}, 20000, true, 9);
  auto d = ws.order(0);
  int64_t c0 = std::count(d.begin(), d.end(), 0), c1 = std::count(d.begin(), d.end(), 1);
  CHECK(c1 == 0);
  CHECK(std::abs(static_cast<double>(c0) / 20000 - 0.25) < 0.02);
  data::WeightedRandomSampler wn({1.0, 0.0, 3.0, 2.0}, 3, false, 9);
  CHECK(sorted(wn.order(0)) == std::vector<int64_t>{0, 2, 3});
  CHECK_THROWS_WITH(data::WeightedRandomSampler({1.0, 0.0}, 2, false),
                    Catch::Contains("without replacement"));
  CHECK_THROWS_WITH(data::WeightedRandomSampler({1.0, -1.0}, 2), Catch::Contains("weight 1"));

  auto base = std::make_shared<data::SequentialSampler>(10);
  data::BatchSampler bs(base, 4, false), bd(base, 4, true);
  CHECK(bs.size() == 3);
  CHECK(bs.batches(0).back() == std::vector<int64_t>{8, 9});
  CHECK(bd.size() == 2);
  CHECK(bd.batches(0).size() == 2);
  CHECK_THROWS_WITH(data::BatchSampler(base, 0, false), Catch::Contains("batch_size"));
}

TEST_CASE("DistributedSampler shards an epoch across ranks", "[data]") {
  const int64_t n = 10, R = 3;
  std::vector<int64_t> all;
  for (int64_t r = 0; r < R; ++r) {
    data::DistributedSampler s(n, R, r, /*shuffle=*/true, /*seed=*/5);
    s.set_epoch(2);
    auto mine = s.order();
    CHECK(mine.size() == 4);  // ceil(10 / 3), padded
    CHECK(mine == s.order(2));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  CHECK(all.size() == 12);
  std::set<int64_t> distinct(all.begin(), all.end());
  CHECK(distinct.size() == 10);  // every example, two of them twice (the padding)

  // Another epoch, another permutation; the same on every rank (so shards stay disjoint).
  data::DistributedSampler a(n, 2, 0, true, 5), b(n, 2, 1, true, 5);
  CHECK(a.order(0) != a.order(1));
  for (int64_t e : {0, 1, 7}) {
    auto x = a.order(e), y = b.order(e);
    std::set<int64_t> u(x.begin(), x.end());
    u.insert(y.begin(), y.end());
    CHECK(u.size() == 10);
  }
  // drop_last cuts the tail instead of padding; no shuffle is the plain stride.
  data::DistributedSampler cut(n, 3, 2, false, 0, /*drop_last=*/true);
  CHECK(cut.size() == 3);
  CHECK(cut.order(0) == std::vector<int64_t>{2, 5, 8});
  CHECK_THROWS_WITH(data::DistributedSampler(n, 2, 2), Catch::Contains("invalid rank 2"));
}

TEST_CASE("DataLoader: the same batches whatever num_workers is", "[data]") {
  auto ds = std::make_shared<NoisyDataset>(37);
  std::vector<std::vector<std::vector<double>>> runs;
  for (int64_t workers : {0, 1, 3}) {
    data::DataLoaderOptions opt;
    opt.batch_size = 5;
    opt.shuffle = true;
    opt.seed = 123;
    opt.num_workers = workers;
    opt.prefetch_factor = 2;
    data::DataLoader loader(ds, opt);
    CHECK(loader.size() == 8);
    auto e0 = epoch_batches(loader, 0), e1 = epoch_batches(loader, 1);
    REQUIRE(e0.size() == 8);
    CHECK(e0.back().size() == 2 * 3);  // 37 = 7 * 5 + 2
    CHECK(e0 != e1);
    e0.insert(e0.end(), e1.begin(), e1.end());
    runs.push_back(e0);
  }
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);

  // The same seed in a fresh loader gives the same epoch; another seed does not.
  data::DataLoaderOptions opt;
  opt.batch_size = 5;
  opt.shuffle = true;
  opt.seed = 124;
  data::DataLoader other(ds, opt);
  CHECK(epoch_batches(other, 0) !=
        std::vector<std::vector<double>>(runs[0].begin(), runs[0].begin() + 8));
}

TEST_CASE("DataLoader: a saved position resumes exactly", "[data]") {
  auto ds = std::make_shared<NoisyDataset>(30);
  for (int64_t workers : {0, 2}) {
    data::DataLoaderOptions opt;
    opt.batch_size = 4;
    opt.shuffle = true;
    opt.seed = 99;
    opt.num_workers = workers;
    data::DataLoader full(ds, opt);
    std::vector<std::vector<double>> expected;
    for (int64_t e = 0; e < 2; ++e) {
      auto b = epoch_batches(full, e);
      expected.insert(expected.end(), b.begin(), b.end());
    }
    // Stop after 3 batches of epoch 1, "checkpoint", resume in a new loader.
    data::DataLoader first(ds, opt);
    std::vector<std::vector<double>> got = epoch_batches(first, 0);
    first.set_epoch(1);
    int taken = 0;
    for (const data::Batch& b : first) {
      got.push_back(values(b.data));
      if (++taken == 3) break;
    }
    data::DataLoaderState saved = first.state();
    CHECK(saved.epoch == 1);
    CHECK(saved.batches_done == 3);
    data::DataLoader resumed(ds, opt);
    resumed.load_state(saved);
    for (const data::Batch& b : resumed) got.push_back(values(b.data));
    CHECK(got == expected);
    CHECK(resumed.epoch() == 2);  // the epoch completed
    data::DataLoaderState bad = saved;
    bad.seed = 1;
    CHECK_THROWS_WITH(resumed.load_state(bad), Catch::Contains("seed"));
  }
}

TEST_CASE("DataLoader: workers, errors, collation and options", "[data]") {
  // An exception while fetching reaches the consumer, for both fetching paths.
  for (int64_t workers : {0, 2}) {
    data::DataLoaderOptions opt;
    opt.batch_size = 4;
    opt.num_workers = workers;
    data::DataLoader loader(std::make_shared<NoisyDataset>(20, /*bad=*/9), opt);
    int64_t seen = 0;
    CHECK_THROWS_WITH(
        [&] {
          for (const data::Batch& b : loader) seen += b.data.size(0);
        }(),
        Catch::Contains("example 9 is broken"));
    CHECK(seen == 8);  // the two batches before the broken one
  }

  // worker_init_fn runs once per worker; persistent workers survive epochs.
  std::atomic<int> inits{0};
  data::DataLoaderOptions opt;
  opt.batch_size = 3;
  opt.num_workers = 2;
  opt.persistent_workers = true;
  opt.worker_init_fn = [&](int64_t id) {
    CHECK(id >= 0);
    CHECK(id < 2);
    ++inits;
  };
  {
    data::DataLoader loader(std::make_shared<NoisyDataset>(10), opt);
    for (int64_t e = 0; e < 3; ++e) CHECK(epoch_batches(loader, e).size() == 4);
  }
  CHECK(inits.load() == 2);
  opt.persistent_workers = false;
  inits = 0;
  {
    data::DataLoader loader(std::make_shared<NoisyDataset>(10), opt);
    for (int64_t e = 0; e < 3; ++e) epoch_batches(loader, e);
  }
  CHECK(inits.load() == 6);  // new threads each epoch

  // drop_last, a custom sampler, a batch sampler; conflicting options are refused.
  auto ds = std::make_shared<NoisyDataset>(10);
  data::DataLoaderOptions d;
  d.batch_size = 4;
  d.drop_last = true;
  CHECK(data::DataLoader(ds, d).size() == 2);
  d.sampler = std::make_shared<data::SubsetRandomSampler>(std::vector<int64_t>{1, 3, 5, 7}, 0);
  data::DataLoader sub(ds, d);
  std::vector<int64_t> targets;
  for (const data::Batch& b : sub)
    for (double t : values(b.target)) targets.push_back(static_cast<int64_t>(t));
  CHECK(sorted(targets) == std::vector<int64_t>{1, 3, 5, 7});
  d.shuffle = true;
  CHECK_THROWS_WITH(data::DataLoader(ds, d), Catch::Contains("mutually exclusive"));

  // pad_collate: variable-length sequences padded, with their lengths.
  std::vector<data::Example> ex = {{ones({2, 3}), scalar_tensor(0, kInt64)},
                                   {ones({4, 3}) * 2, scalar_tensor(1, kInt64)}};
  data::Batch p = data::pad_collate(-1.0)(std::move(ex));
  CHECK(p.data.sizes() == Shape{2, 4, 3});
  CHECK(values(p.lengths) == std::vector<double>{2, 4});
  CHECK(p.data[0][3][0].item<float>() == -1.0f);
  CHECK(p.data[1][3][0].item<float>() == 2.0f);
  std::vector<data::Example> bad = {{ones({2, 3}), {}}, {ones({2, 4}), {}}};
  CHECK_THROWS_WITH(data::pad_collate()(std::move(bad)), Catch::Contains("only the first dim"));

  // A collate_fn sees single examples.
  data::DataLoaderOptions c;
  c.batch_size = 3;
  c.collate_fn = [](std::vector<data::Example>&& es) {
    data::Batch b = data::default_collate(std::move(es));
    b.data = b.data * 0.0;
    return b;
  };
  for (const data::Batch& b : data::DataLoader(ds, c))
    CHECK(b.data.abs().sum().item<double>() == 0.0);
}

TEST_CASE("DataLoader: pin_memory pins batches when the CUDA backend is built", "[data][cuda]") {
  auto ds = std::make_shared<NoisyDataset>(12);
  // Pinned where the backend provides page-locked memory and a device, ordinary memory elsewhere.
  const bool pins = has_pinned_allocator() && device_count(DeviceType::CUDA) > 0;
  for (int64_t workers : {0, 2}) {
    INFO("num_workers " << workers);
    data::DataLoaderOptions opt;
    opt.batch_size = 4;
    opt.num_workers = workers;
    opt.pin_memory = true;
    data::DataLoader pinned(ds, opt);
    opt.pin_memory = false;
    data::DataLoader plain(ds, opt);
    std::vector<std::vector<double>> a, b;
    for (const data::Batch& batch : pinned) {
      CHECK(batch.data.is_pinned() == pins);
      CHECK(batch.target.is_pinned() == pins);
      CHECK(batch.data.is_cpu());
      a.push_back(values(batch.data));
    }
    for (const data::Batch& batch : plain) {
      CHECK_FALSE(batch.data.is_pinned());
      b.push_back(values(batch.data));
    }
    CHECK(a == b);
  }
}
