// One epoch of Fashion-MNIST training, ember against libtorch's C++ frontend: the same models,
// the same data, the same hyper-parameters. One (framework, model, threads) configuration per
// process, so that the peak resident memory (getrusage ru_maxrss) belongs to one framework;
// bench/run_bench_train.sh runs the configurations alternately and tabulates the medians
// (its ember runs use bench_train_ember, this program built without libtorch linked in).
//
//   OPENBLAS_NUM_THREADS=1 ./build/bench/bench_train --framework ember|torch --model mlp|cnn
//       [--threads 1] [--epochs 1] [--batches N] [--seed 0] [--layers 0|1] [--eval 1]
//       [--root DIR] [--malloc tuned|default]
//
// Prints one line of JSON:
//   epoch_seconds        wall time of one training epoch (data loading, forward + loss, backward,
//                        zero_grad + optimizer step); with --batches N only the first N batches
//                        run and the time is scaled to the full epoch (batches_timed says so)
//   samples_per_s        training samples per second
//   train_loss_last100   mean training loss of the last (up to) 100 batches
//   test_acc             accuracy on the 10,000 test images after training (eval mode, no_grad;
//                        not part of epoch_seconds, see eval_seconds; -1 with --eval 0, which
//                        is for profiling the training alone)
//   maxrss_kb            peak resident memory of the whole process (getrusage ru_maxrss): the
//                        libraries, the data set (read once, 55 MB of uint8) and the training
//   maxrss_before_train_kb  the same after loading the data and building the model (the peak
//                        of reading the gzip files is usually the process's peak)
//   rss_before_train_kb  resident memory when training starts (VmRSS)
//   train_peak_rss_kb    peak resident memory from the start to the end of training (VmHWM
//                        after resetting it through /proc/self/clear_refs; -1 where the kernel
//                        does not allow that)
//   layers               with --layers 1: forward and backward seconds per epoch of each layer
//                        and of the loss (Note [Per-layer timing])
//   data_s, forward_s, backward_s, step_s   the epoch's time split by phase: batch fetching,
//                        forward + loss, zero_grad (set to none) + backward, optimizer step +
//                        reading the loss value
//
// Setup shared by both frameworks:
// - Models (examples/models.h for ember; the same layers in torch::nn): the MLP
//   Flatten-Linear(784,256)-ReLU-Linear(256,128)-ReLU-Linear(128,10) trained with SGD (lr 0.01,
//   momentum 0.9); the CNN Conv2d(1,32,3,p1)-ReLU-MaxPool2d(2)-Conv2d(32,64,3,p1)-ReLU-
//   MaxPool2d(2)-Flatten-Linear(3136,128)-ReLU-Linear(128,10) trained with Adam (lr 1e-3).
//   Cross-entropy loss, batch size 64, 938 batches per epoch (the last one has 32 images).
// - Data: both read Debian's IDX files once with ember's reader (data::FashionMNIST, which calls
//   data::read_idx) into uint8 tensors. ember iterates them with data::DataLoader (shuffle,
//   no workers); libtorch gets zero-copy views of the same uint8 buffers (torch::from_blob)
//   and builds each batch the same way on the training thread: a seeded random permutation per
//   epoch, index_select of 64 images, conversion to float32 / 255, (B, 1, 28, 28).
// - Gradients are dropped (set to none) before each backward in both.
// - Note [glibc malloc and libtorch]: libtorch's CPU allocator hands every tensor back to
//   glibc's free, and glibc serves blocks above its mmap threshold (128 KiB at start) with a
//   fresh mmap whose pages all fault on first touch. glibc raises that threshold only once the
//   process frees a large mmap'ed block, so libtorch's CNN epoch took 24 s or 66 s on the same
//   VM depending on what the process happened to free while loading the data. --malloc tuned
//   (the default) fixes glibc's thresholds at start (mallopt M_MMAP_THRESHOLD 32 MiB, the
//   most glibc accepts, and M_TRIM_THRESHOLD 1 GiB) so libtorch always runs in its fast state;
//   --malloc default leaves glibc alone. ember caches its large blocks itself (Note
//   [Large-block cache] in core/allocator.cpp) and does not depend on it.
// - ember: ember::set_num_threads(threads); libtorch: torch::set_num_threads(threads). Run with
//   OPENBLAS_NUM_THREADS=1 so that libtorch's OpenBLAS adds no threads of its own.

#include <ember/ember.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <string>

#include "bench_util.h"
#include "data/dataloader.h"
#include "data/fashion_mnist.h"
#include "examples/models.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

namespace {

using ember::bench::now_seconds;

constexpr int64_t kBatchSize = 64;
constexpr int64_t kEvalBatchSize = 64;  // as in training, so eval does not set the peak

struct Config {
  std::string framework = "ember";
  std::string model = "mlp";
  int threads = 1;
  int epochs = 1;
  int64_t batches = -1;  // batches per epoch to run; -1: all
  uint64_t seed = 0;
  bool layers = false;  // time each layer (forward and backward)
  bool eval = true;     // evaluate on the test set after training (off: test_acc is -1)
  std::string root = ember::data::FashionMNIST::default_root();
  std::string malloc_mode = "tuned";  // Note [glibc malloc and libtorch]
};

// Time per phase, summed over the batches run.
struct Phases {
  double data = 0, forward = 0, backward = 0, step = 0;
};

// Note [Per-layer timing]
// With --layers 1 the Sequential's layers run one at a time, each timed, and a gradient hook
// on each layer's output stamps the time its gradient arrives during backward. The engine
// runs the graph backwards layer after layer, so the backward of layer i is the time from the
// gradient of its output to the gradient of its input (layer 0: to the end of backward()),
// and the loss's backward is the time from the start of backward() to the gradient of the
// logits. The hooks cost a few microseconds per batch; use it to see where time goes, not
// for the headline numbers.
struct LayerProfile {
  std::vector<std::string> names;  // the layers, then "cross_entropy"
  std::vector<double> forward, backward;
  std::vector<double> marks;  // this batch: when the gradient of layer i's output arrived
  size_t first = 0;           // the first layer whose output requires grad (the ones before
                              // it, e.g. a leading Flatten, have no backward)

  explicit LayerProfile(std::vector<std::string> layer_names) : names(std::move(layer_names)) {
    const size_t n = names.size();
    names.push_back("cross_entropy");
    forward.assign(n + 1, 0.0);
    backward.assign(n + 1, 0.0);
    marks.assign(n, 0.0);
  }
  size_t layers() const { return marks.size(); }
  // Splits one backward() that ran from t_start to t_end using the marks.
  void add_backward(double t_start, double t_end) {
    const size_t n = layers();
    backward[n] += marks[n - 1] - t_start;
    for (size_t i = n - 1; i > first; --i) backward[i] += marks[i - 1] - marks[i];
    backward[first] += t_end - marks[first];
  }
};

struct Result {
  int64_t batches_per_epoch = 0;
  int64_t batches_timed = 0;  // per epoch
  double train_seconds = 0;   // all epochs, only the batches run
  double eval_seconds = 0;
  double loss_last100 = 0;
  double test_acc = 0;
  long maxrss_before_train_kb = 0;
  long rss_before_train_kb = 0;  // VmRSS when training starts
  bool peak_reset = false;       // VmHWM was reset when training started
  long train_peak_rss_kb = -1;   // VmHWM at the end of training
  Phases phases;
  std::unique_ptr<LayerProfile> layers;  // with --layers 1
};

long maxrss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // kilobytes on Linux
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 where unavailable.
long proc_status_kb(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  const size_t len = std::strlen(field);
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') kb = std::atol(line + len + 1);
  std::fclose(f);
  return kb;
}

// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0), so that VmHWM
// read later is the peak of the training alone. ru_maxrss is not reset by this.
bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_train: %s\nusage: bench_train --framework ember|torch --model mlp|cnn "
               "[--threads N] [--epochs N] [--batches N] [--seed S] [--layers 0|1] [--eval 0|1] "
               "[--root DIR] [--malloc tuned|default]\n",
               why);
  std::exit(2);
}

Config parse_args(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--framework")
      c.framework = v;
    else if (flag == "--model")
      c.model = v;
    else if (flag == "--threads")
      c.threads = std::atoi(v);
    else if (flag == "--epochs")
      c.epochs = std::atoi(v);
    else if (flag == "--batches")
      c.batches = std::atoll(v);
    else if (flag == "--seed")
      c.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--root")
      c.root = v;
    else if (flag == "--layers")
      c.layers = std::atoi(v) != 0;
    else if (flag == "--eval")
      c.eval = std::atoi(v) != 0;
    else if (flag == "--malloc")
      c.malloc_mode = v;
    else
      usage(("unknown option " + flag).c_str());
  }
  if (c.framework != "ember" && c.framework != "torch") usage("--framework is ember or torch");
  if (c.model != "mlp" && c.model != "cnn") usage("--model is mlp or cnn");
  if (c.threads < 1 || c.epochs < 1 || c.batches == 0) usage("threads, epochs, batches >= 1");
  if (c.malloc_mode != "tuned" && c.malloc_mode != "default") usage("--malloc is tuned or default");
  return c;
}

// Mean of the recent losses kept by the training loops.
double mean(const std::deque<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

void remember(std::deque<double>& recent, double loss) {
  recent.push_back(loss);
  if (recent.size() > 100) recent.pop_front();
}

// ---- ember --------------------------------------------------------------------------------

// The model's forward, layer by layer when profiling (Note [Per-layer timing]).
ember::Tensor ember_forward(ember::nn::Sequential& model, const ember::Tensor& input,
                            LayerProfile* prof) {
  if (prof == nullptr) return model(input);
  ember::Tensor x = input;
  for (size_t i = 0; i < model.size(); ++i) {
    const double t0 = now_seconds();
    x = (*model[static_cast<int64_t>(i)])(x);
    prof->forward[i] += now_seconds() - t0;
    if (!x.requires_grad()) {
      prof->first = i + 1;
      continue;
    }
    double* mark = &prof->marks[i];
    x.register_hook([mark](const ember::Tensor&) {
      *mark = now_seconds();
      return ember::Tensor();
    });
  }
  return x;
}

Result run_ember(const Config& c, const std::shared_ptr<ember::data::FashionMNIST>& train,
                 const ember::data::FashionMNIST& test) {
  namespace F = ember::nn::functional;
  ember::set_num_threads(c.threads);
  ember::manual_seed(c.seed);
  std::shared_ptr<ember::nn::Sequential> model = ember::examples::make_model(c.model);
  std::unique_ptr<ember::optim::Optimizer> opt;
  if (c.model == "mlp")
    opt = std::make_unique<ember::optim::SGD>(model->parameters(),
                                              ember::optim::SGDOptions(0.01).momentum(0.9));
  else
    opt =
        std::make_unique<ember::optim::Adam>(model->parameters(), ember::optim::AdamOptions(1e-3));

  ember::data::DataLoaderOptions lo;
  lo.batch_size = kBatchSize;
  lo.shuffle = true;
  lo.seed = c.seed;
  ember::data::DataLoader loader(train, lo);

  Result r;
  if (c.layers) {
    std::vector<std::string> names;
    for (const auto& m : *model) names.push_back(m->type_name());
    r.layers = std::make_unique<LayerProfile>(names);
  }
  LayerProfile* prof = r.layers.get();
  r.batches_per_epoch = loader.size();
  r.batches_timed = c.batches < 0 ? r.batches_per_epoch : std::min(c.batches, loader.size());
  r.maxrss_before_train_kb = maxrss_kb();
  r.rss_before_train_kb = proc_status_kb("VmRSS");
  r.peak_reset = reset_peak_rss();
  std::deque<double> recent;

  model->train();
  const double t_train = now_seconds();
  for (int e = 0; e < c.epochs; ++e) {
    loader.set_epoch(e);
    double t0 = now_seconds();
    auto it = loader.begin();
    double t1 = now_seconds();
    r.phases.data += t1 - t0;
    for (int64_t b = 0; it != loader.end() && b < r.batches_timed; ++b) {
      const ember::data::Batch& batch = *it;
      t0 = now_seconds();
      ember::Tensor logits = ember_forward(*model, batch.data, prof);
      const double t_loss = now_seconds();
      ember::Tensor loss = F::cross_entropy(logits, batch.target);
      t1 = now_seconds();
      r.phases.forward += t1 - t0;
      opt->zero_grad();  // set to none
      loss.backward();
      t0 = now_seconds();
      r.phases.backward += t0 - t1;
      if (prof != nullptr) {
        prof->forward.back() += t1 - t_loss;
        prof->add_backward(t1, t0);
      }
      opt->step();
      remember(recent, loss.item<double>());
      t1 = now_seconds();
      r.phases.step += t1 - t0;
      if (b + 1 < r.batches_timed) {
        ++it;
        r.phases.data += now_seconds() - t1;
      }
    }
  }
  r.train_seconds = now_seconds() - t_train;
  r.train_peak_rss_kb = r.peak_reset ? proc_status_kb("VmHWM") : -1;
  r.loss_last100 = mean(recent);

  if (!c.eval) {
    r.test_acc = -1;
    return r;
  }
  const double t_eval = now_seconds();
  model->eval();
  ember::autograd::NoGradGuard no_grad;
  int64_t correct = 0;
  for (int64_t s = 0; s < test.size(); s += kEvalBatchSize) {
    std::vector<int64_t> idx(static_cast<size_t>(std::min(kEvalBatchSize, test.size() - s)));
    std::iota(idx.begin(), idx.end(), s);
    ember::data::Example ex = test.get_batch(idx);
    ember::Tensor pred = (*model)(ex.data).argmax(1);
    correct += pred.eq(ex.target).sum().item<int64_t>();
  }
  r.test_acc = static_cast<double>(correct) / test.size();
  r.eval_seconds = now_seconds() - t_eval;
  return r;
}

// ---- libtorch -----------------------------------------------------------------------------

#ifdef EMBER_HAVE_LIBTORCH

torch::nn::Sequential torch_model(const std::string& name) {
  namespace tnn = torch::nn;
  if (name == "mlp")
    return tnn::Sequential(tnn::Flatten(), tnn::Linear(784, 256), tnn::ReLU(),
                           tnn::Linear(256, 128), tnn::ReLU(), tnn::Linear(128, 10));
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 3).padding(1)), tnn::ReLU(),
                         tnn::MaxPool2d(tnn::MaxPool2dOptions(2)),
                         tnn::Conv2d(tnn::Conv2dOptions(32, 64, 3).padding(1)), tnn::ReLU(),
                         tnn::MaxPool2d(tnn::MaxPool2dOptions(2)), tnn::Flatten(),
                         tnn::Linear(64 * 7 * 7, 128), tnn::ReLU(), tnn::Linear(128, 10));
}

// A zero-copy torch view of an ember uint8 / int64 tensor (which must outlive it).
torch::Tensor as_torch(const ember::Tensor& t, torch::Dtype dtype) {
  EMBER_CHECK(t.is_contiguous(), "bench_train: expected a contiguous tensor");
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  return torch::from_blob(t.data_ptr(), sizes, dtype);
}

// The images of `idx` as float32 (B, 1, 28, 28) in [0, 1], as ember's FashionMNIST::get_batch.
torch::Tensor torch_images(const torch::Tensor& images_u8, const torch::Tensor& idx) {
  return images_u8.index_select(0, idx).to(torch::kFloat32).div_(255.0).unsqueeze(1);
}

// The model's forward, layer by layer when profiling (Note [Per-layer timing]).
torch::Tensor torch_forward(torch::nn::Sequential& model, const torch::Tensor& input,
                            LayerProfile* prof) {
  if (prof == nullptr) return model->forward(input);
  torch::Tensor x = input;
  size_t i = 0;
  for (auto& m : *model) {
    const double t0 = now_seconds();
    x = m.forward(x);
    prof->forward[i] += now_seconds() - t0;
    if (!x.requires_grad()) {
      prof->first = ++i;
      continue;
    }
    double* mark = &prof->marks[i++];
    x.register_hook([mark](const torch::Tensor&) { *mark = now_seconds(); });
  }
  return x;
}

// "torch::nn::Conv2dImpl" -> "Conv2d"
std::string torch_layer_name(std::string name) {
  const std::string prefix = "torch::nn::", suffix = "Impl";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

Result run_torch(const Config& c, const ember::data::FashionMNIST& train,
                 const ember::data::FashionMNIST& test) {
  torch::set_num_threads(c.threads);
  torch::manual_seed(c.seed);
  torch::nn::Sequential model = torch_model(c.model);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (c.model == "mlp")
    opt = std::make_unique<torch::optim::SGD>(model->parameters(),
                                              torch::optim::SGDOptions(0.01).momentum(0.9));
  else
    opt =
        std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));

  const torch::Tensor train_x = as_torch(train.images(), torch::kUInt8);
  const torch::Tensor train_y = as_torch(train.labels(), torch::kInt64);
  const torch::Tensor test_x = as_torch(test.images(), torch::kUInt8);
  const torch::Tensor test_y = as_torch(test.labels(), torch::kInt64);
  const int64_t n = train_x.size(0);

  Result r;
  if (c.layers) {
    std::vector<std::string> names;
    for (const auto& m : *model) names.push_back(torch_layer_name(m.ptr()->name()));
    r.layers = std::make_unique<LayerProfile>(names);
  }
  LayerProfile* prof = r.layers.get();
  r.batches_per_epoch = (n + kBatchSize - 1) / kBatchSize;
  r.batches_timed = c.batches < 0 ? r.batches_per_epoch : std::min(c.batches, r.batches_per_epoch);
  r.maxrss_before_train_kb = maxrss_kb();
  r.rss_before_train_kb = proc_status_kb("VmRSS");
  r.peak_reset = reset_peak_rss();
  std::deque<double> recent;
  torch::Generator gen = torch::make_generator<torch::CPUGeneratorImpl>(c.seed);

  model->train();
  const double t_train = now_seconds();
  for (int e = 0; e < c.epochs; ++e) {
    double t0 = now_seconds();
    const torch::Tensor perm = torch::randperm(n, gen, torch::kInt64);
    r.phases.data += now_seconds() - t0;
    for (int64_t b = 0; b < r.batches_timed; ++b) {
      t0 = now_seconds();
      const int64_t start = b * kBatchSize;
      const torch::Tensor idx = perm.narrow(0, start, std::min(kBatchSize, n - start));
      const torch::Tensor x = torch_images(train_x, idx);
      const torch::Tensor y = train_y.index_select(0, idx);
      double t1 = now_seconds();
      r.phases.data += t1 - t0;
      torch::Tensor logits = torch_forward(model, x, prof);
      const double t_loss = now_seconds();
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      t0 = now_seconds();
      r.phases.forward += t0 - t1;
      model->zero_grad(/*set_to_none=*/true);
      loss.backward();
      t1 = now_seconds();
      r.phases.backward += t1 - t0;
      if (prof != nullptr) {
        prof->forward.back() += t0 - t_loss;
        prof->add_backward(t0, t1);
      }
      opt->step();
      remember(recent, loss.item<double>());
      r.phases.step += now_seconds() - t1;
    }
  }
  r.train_seconds = now_seconds() - t_train;
  r.train_peak_rss_kb = r.peak_reset ? proc_status_kb("VmHWM") : -1;
  r.loss_last100 = mean(recent);

  if (!c.eval) {
    r.test_acc = -1;
    return r;
  }
  const double t_eval = now_seconds();
  model->eval();
  torch::NoGradGuard no_grad;
  int64_t correct = 0;
  for (int64_t s = 0; s < test_x.size(0); s += kEvalBatchSize) {
    const int64_t len = std::min(kEvalBatchSize, test_x.size(0) - s);
    const torch::Tensor idx = torch::arange(s, s + len, torch::kInt64);
    torch::Tensor pred = model->forward(torch_images(test_x, idx)).argmax(1);
    correct += pred.eq(test_y.narrow(0, s, len)).sum().item<int64_t>();
  }
  r.test_acc = static_cast<double>(correct) / test_x.size(0);
  r.eval_seconds = now_seconds() - t_eval;
  return r;
}

#endif  // EMBER_HAVE_LIBTORCH

}  // namespace

int main(int argc, char** argv) {
  const Config c = parse_args(argc, argv);
  if (c.malloc_mode == "tuned") {
    // Note [glibc malloc and libtorch]. Before anything is allocated.
    if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1)
      usage("mallopt refused the --malloc tuned thresholds");
  }
#ifndef EMBER_HAVE_LIBTORCH
  if (c.framework == "torch") usage("built without libtorch (apt-get install libtorch-dev)");
#endif
  try {
    auto train = std::make_shared<ember::data::FashionMNIST>(c.root, /*train=*/true);
    ember::data::FashionMNIST test(c.root, /*train=*/false);
    Result r;
#ifdef EMBER_HAVE_LIBTORCH
    r = c.framework == "ember" ? run_ember(c, train, test) : run_torch(c, *train, test);
#else
    r = run_ember(c, train, test);
#endif
    // Resetting VmHWM resets ru_maxrss too, so the whole-process peak is the larger of the two
    // readings.
    const long rss = std::max(maxrss_kb(), r.maxrss_before_train_kb);
    const double scale = static_cast<double>(r.batches_per_epoch) / r.batches_timed / c.epochs;
    const double epoch_s = r.train_seconds * scale;
    const double samples = static_cast<double>(train->size());
    std::printf(
        "{\"framework\":\"%s\",\"model\":\"%s\",\"threads\":%d,\"epochs\":%d,\"batch_size\":%lld,"
        "\"batches_per_epoch\":%lld,\"batches_timed\":%lld,\"epoch_seconds\":%.4f,"
        "\"samples_per_s\":%.1f,\"train_loss_last100\":%.4f,\"test_acc\":%.4f,"
        "\"eval_seconds\":%.3f,\"maxrss_kb\":%ld,\"maxrss_before_train_kb\":%ld,"
        "\"rss_before_train_kb\":%ld,\"train_peak_rss_kb\":%ld,"
        "\"data_s\":%.4f,\"forward_s\":%.4f,\"backward_s\":%.4f,\"step_s\":%.4f,"
        "\"malloc\":\"%s\",\"data\":\"IDX read by ember::data::read_idx; batches: %s\"",
        c.framework.c_str(), c.model.c_str(), c.threads, c.epochs,
        static_cast<long long>(kBatchSize), static_cast<long long>(r.batches_per_epoch),
        static_cast<long long>(r.batches_timed), epoch_s, samples / epoch_s, r.loss_last100,
        r.test_acc, r.eval_seconds, rss, r.maxrss_before_train_kb, r.rss_before_train_kb,
        r.train_peak_rss_kb, r.phases.data * scale, r.phases.forward * scale,
        r.phases.backward * scale, r.phases.step * scale, c.malloc_mode.c_str(),
        c.framework == "ember" ? "data::DataLoader(shuffle)"
                               : "torch randperm + index_select on from_blob views");
    if (r.layers) {
      // Per epoch, like the phases: "layers":[{"name":..,"forward_s":..,"backward_s":..},..]
      std::printf(",\"layers\":[");
      for (size_t i = 0; i < r.layers->names.size(); ++i)
        std::printf("%s{\"name\":\"%s\",\"forward_s\":%.4f,\"backward_s\":%.4f}", i ? "," : "",
                    r.layers->names[i].c_str(), r.layers->forward[i] * scale,
                    r.layers->backward[i] * scale);
      std::printf("]");
    }
    std::printf("}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
