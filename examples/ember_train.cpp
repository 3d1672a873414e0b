// ember-train: trains an MLP or a CNN (examples/models.h) on Fashion-MNIST.
//
//   ember-train                       # the CNN, 3 epochs, Adam lr 1e-3 cosine-annealed per batch,
//                                     # batch 64: about 91% test accuracy
//   ember-train --model mlp --optimizer sgd --lr 0.05 --schedule cosine --metrics mlp.csv
//   ember-train --checkpoint-dir ckpt ...          # Ctrl-C saves ckpt/last.safetensors, then
//   ember-train --checkpoint-dir ckpt --resume ... # continues exactly where it stopped
//   ember-train --device cuda --amp fp16           # autocast to float16, loss scaling
//
// --amp bf16 / fp16 runs the forward pass and the loss under autocast (autograd/autocast.h:
// the products in the 16-bit dtype, the loss in float32); fp16 adds a GradScaler
// (optim/grad_scaler.h), saved in checkpoints. Evaluation stays float32.
//
// Each epoch: one pass over the training set (shuffled by --seed, batches from the
// DataLoader), then an evaluation on the test set under eval() and NoGradGuard. Inputs are
// normalised with Fashion-MNIST's mean 0.2860 and std 0.3530 (examples/fashion_data.h, after
// the optional augmentation). Progress goes to stderr (examples/progress.h): when stderr is a
// terminal, a bar with the running loss, samples/s and the epoch's ETA, fitted to the terminal's
// width, and "evaluating" while the test set runs; otherwise a plain line at each 10% of an epoch
// (and at least every 30 s); either way one summary line per epoch. stdout gets ONE JSON line at
// the end: model, epochs, test_acc, train_seconds, train_loss, params, threads, seed and the
// rest of the settings.
//
// Checkpoints (--checkpoint-dir DIR): after each epoch, DIR/epoch-<N>.safetensors and
// DIR/last.safetensors (ember::save_checkpoint: model, optimizer, scheduler, generators and
// the loader's position, written atomically). SIGINT / SIGTERM, or --stop-after STEPS, stop
// after the current batch and save DIR/last.safetensors mid-epoch, with the epoch's running
// sums. --resume loads DIR/last.safetensors and continues exactly: the batches, the learning
// rates and the optimizer moments are those of an uninterrupted run, so its final numbers are
// the same bit for bit. The settings that shape the trajectory must match the checkpoint's
// (they are stored in it, and compared before anything is loaded: "checkpoint ... is for --model
// mlp, this run is --model cnn"); --epochs may grow when the schedule does not depend on it.
//
// Outputs cannot be lost silently (examples/output_file.h): the metrics CSV and the JSON line
// are flushed and checked as they are written, checkpoints are written atomically and checked
// (ember::save_checkpoint), and --checkpoint-dir is probed (a file created and removed) before
// the first epoch; a write that fails ends the run with an error naming the file ("cannot write
// metrics to /dev/full: No space left on device").
//
// Profiling (--profile trace.json [--profile-steps N]): the first five steps pay one-time costs
// and are skipped, the sixth is a warm-up, and steps 7 to 6 + N (N = 10 by default) run under
// the profiler (core/profiler.h) with input shapes and memory. The Chrome trace goes to the file
// (written atomically) and the table of the heaviest ops by self time (on cuda: by device time)
// to stderr. A data-parallel job profiles its main rank. A run that ends during the recorded
// steps hands on what it recorded; one that ends before them says so.
//
// Activation checkpointing (--checkpoint-segments N): the model's modules in N segments, each
// but the last recomputed in backward instead of keeping its activations (nn/checkpoint.h); the
// numbers are those of the plain run, bit for bit.
//
// Data parallelism: started by a launcher as one rank of several (ember-run --nproc-per-node 2
// ember-train ..., torchrun, srun, mpirun), it trains through DistributedDataParallel over Gloo
// (--device cpu) or NCCL (--device cuda), each rank on its share of the data
// (examples/distributed_setup.h); each rank's JSON line carries its rank and the world size.
//
// Exit status: 0 on success (every result written), 1 on an error (the message on stderr; also
// when stderr itself could not be written, though the results were), 2 on bad command-line
// arguments ("--epochs must be a positive integer, got 'abc'"), 130 after an interrupt.

#include <ember/ember.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_values.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/transforms.h"
#include "distributed/ddp.h"
#include "distributed_setup.h"
#include "fashion_data.h"
#include "models.h"
#include "output_file.h"
#include "progress.h"
#include "serialize/checkpoint.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using Clock = std::chrono::steady_clock;

constexpr int64_t kEvalBatch = 256;

struct Config {
  std::string model = "cnn";
  int64_t epochs = 3;
  int64_t batch_size = 64;
  std::string optimizer = "adam";
  double lr = 0.0;             // 0: the optimizer's default (default_lr)
  double weight_decay = -1.0;  // < 0: the optimizer's default (0, AdamW 0.01)
  std::string schedule = "cosine";
  int64_t lr_step = 0;  // StepLR's step_size in epochs; 0: two thirds of the epochs
  double lr_gamma = 0.1;
  int64_t warmup_steps = 0;  // 0: 5% of the steps
  int threads = 0;           // 0: ember's default (the cores, or EMBER_NUM_THREADS)
  uint64_t seed = 0;
  std::string device = "cpu";
  std::string amp = "none";  // none, bf16 or fp16: autocast (and for fp16 a GradScaler)
  std::string data_dir;
  std::string checkpoint_dir;
  bool resume = false;
  std::string metrics;
  int64_t num_workers = 0;
  int64_t train_subset = 0;  // 0: all 60,000
  bool augment = false;
  int64_t stop_after = 0;  // 0: never
  std::string profile;     // Chrome trace of the profiled steps; empty: no profiler
  int64_t profile_steps = 10;
  int64_t checkpoint_segments = 0;    // activation checkpointing; 0: off
  std::string export_onnx;            // the trained model as ONNX; empty: none
  std::string dist_backend = "auto";  // examples/distributed_setup.h
  int64_t dist_timeout = 300;         // seconds
};

double default_lr(const std::string& optimizer) { return optimizer == "sgd" ? 0.05 : 1e-3; }

// ---- stopping on a signal -------------------------------------------------------------------

// The first SIGINT / SIGTERM asks the loop to stop after the current batch and save; a second
// one kills the process as usual (the handler restores the default action).
volatile std::sig_atomic_t g_stop_requested = 0;
void request_stop(int sig) {
  g_stop_requested = 1;
  std::signal(sig, SIG_DFL);
}

// ---- the schedules ----------------------------------------------------------------------------

// The schedule and whether it steps once per batch (else once per epoch).
struct Schedule {
  std::unique_ptr<optim::LRScheduler> scheduler;  // null for "none"
  bool per_batch = false;
};

// The steps of the whole run; a length that overflows is a usage error (--epochs too large).
int64_t total_steps(const Config& c, int64_t steps_per_epoch) {
  int64_t total = 0;
  if (__builtin_mul_overflow(c.epochs, steps_per_epoch, &total))
    throw examples::UsageError("--epochs " + std::to_string(c.epochs) +
                               " is too large: " + std::to_string(c.epochs) + " epochs of " +
                               std::to_string(steps_per_epoch) +
                               " steps overflow the step counter (at most " +
                               std::to_string(examples::kMaxInt64) + " steps)");
  return total;
}

Schedule make_schedule(const Config& c, optim::Optimizer& opt, int64_t steps_per_epoch) {
  const int64_t total = total_steps(c, steps_per_epoch);
  Schedule s;
  if (c.schedule == "none") return s;
  if (c.schedule == "step") {
    s.scheduler = std::make_unique<optim::StepLR>(opt, c.lr_step, c.lr_gamma);
    return s;
  }
  s.per_batch = true;
  if (c.schedule == "cosine") {
    s.scheduler = std::make_unique<optim::CosineAnnealingLR>(opt, total);
  } else if (c.schedule == "warmup-cosine") {
    const int64_t warmup = std::max<int64_t>(1, std::min(c.warmup_steps, total - 1));
    auto up = std::make_shared<optim::LinearLR>(opt, 0.01, 1.0, warmup);
    auto down =
        std::make_shared<optim::CosineAnnealingLR>(opt, std::max<int64_t>(1, total - warmup));
    s.scheduler = std::make_unique<optim::SequentialLR>(
        opt, std::vector<std::shared_ptr<optim::LRScheduler>>{up, down},
        std::vector<int64_t>{warmup});
  } else if (c.schedule == "onecycle") {
    s.scheduler =
        std::make_unique<optim::OneCycleLR>(opt, optim::OneCycleLROptions(c.lr).total_steps(total));
  } else {
    EMBER_ERROR("unknown schedule '", c.schedule, "'");
  }
  return s;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Config& c, std::vector<Tensor> params) {
  if (c.optimizer == "sgd")
    return std::make_unique<optim::SGD>(
        std::move(params),
        optim::SGDOptions(c.lr).momentum(0.9).weight_decay(std::max(c.weight_decay, 0.0)));
  if (c.optimizer == "adam")
    return std::make_unique<optim::Adam>(
        std::move(params), optim::AdamOptions(c.lr).weight_decay(std::max(c.weight_decay, 0.0)));
  if (c.optimizer == "adamw")
    return std::make_unique<optim::AdamW>(
        std::move(params),
        optim::AdamWOptions(c.lr).weight_decay(c.weight_decay < 0 ? 1e-2 : c.weight_decay));
  EMBER_ERROR("unknown optimizer '", c.optimizer, "'");
}

// ---- progress on stderr ------------------------------------------------------------------------

// On a terminal, a bar redrawn in place (at most 10 times a second) that fits its width; else a
// plain line at each tenth of the epoch or every 30 s (examples/progress.h). The per-epoch
// summary line is printed by the caller either way.
class ProgressBar {
 public:
  // quiet: draws nothing (the ranks other than 0 of a data-parallel job).
  explicit ProgressBar(bool quiet = false) : tty_(isatty(STDERR_FILENO) == 1), quiet_(quiet) {}

  void start(int64_t epoch, int64_t epochs, int64_t total_batches, int64_t first_batch) {
    if (quiet_) return;
    progress_ = examples::Progress{};
    progress_.epoch = epoch, progress_.epochs = epochs, progress_.total_batches = total_batches;
    first_ = first_batch;
    start_ = last_draw_ = Clock::now();
    samples_ = 0;
    cadence_.start(first_batch, total_batches, 0.0);
  }

  // running_loss is called only when a line is drawn (it may wait for the device).
  void update(int64_t batches_done, int64_t batch_samples,
              const std::function<double()>& running_loss) {
    if (quiet_) return;
    samples_ += batch_samples;
    const auto now = Clock::now();
    if (tty_) {
      if (batches_done < progress_.total_batches &&
          now - last_draw_ < std::chrono::milliseconds(100))
        return;
    } else if (!cadence_.due(batches_done, std::chrono::duration<double>(now - start_).count())) {
      return;
    }
    progress_.loss = running_loss();  // first: the rate then counts the device's work too
    last_draw_ = Clock::now();
    const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
    const int64_t done_here = batches_done - first_;
    progress_.batches_done = batches_done;
    progress_.samples_per_second = elapsed > 0 ? static_cast<double>(samples_) / elapsed : 0.0;
    progress_.eta_seconds =
        done_here > 0
            ? elapsed * static_cast<double>(progress_.total_batches - batches_done) / done_here
            : 0.0;
    if (tty_)
      redraw(examples::bar_line(progress_, examples::terminal_width(STDERR_FILENO)));
    else
      std::fprintf(stderr, "%s\n", examples::log_line(progress_).c_str());
  }

  // Shown while the test set runs.
  void evaluating(int64_t test_images) {
    if (quiet_) return;
    const std::string text = "epoch " + std::to_string(progress_.epoch + 1) + "/" +
                             std::to_string(progress_.epochs) + ": evaluating on " +
                             std::to_string(test_images) + " test images...";
    if (tty_)
      redraw(examples::fit_line(text, examples::terminal_width(STDERR_FILENO)));
    else
      std::fprintf(stderr, "%s\n", text.c_str());
  }

  // Clears the bar so that the caller's summary line replaces it.
  void finish() {
    if (tty_ && !quiet_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  // "\r", the line, and an erase to the end of the line (what a longer line left behind).
  static void redraw(const std::string& line) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
  }

  bool tty_;
  bool quiet_;
  examples::Progress progress_;
  examples::LogCadence cadence_;
  int64_t first_ = 0, samples_ = 0;
  Clock::time_point start_, last_draw_;
};

// ---- numbers in checkpoints and JSON -----------------------------------------------------------

// %.17g: a double survives the round trip through text exactly.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// The settings that decide the trajectory, stored in each checkpoint as "config.<name>".
std::map<std::string, std::string> trajectory_settings(const Config& c, int64_t steps_per_epoch) {
  std::map<std::string, std::string> m{
      {"model", c.model},
      {"optimizer", c.optimizer},
      {"lr", exact(c.lr)},
      {"weight_decay", exact(c.weight_decay)},
      {"batch_size", std::to_string(c.batch_size)},
      {"seed", std::to_string(c.seed)},
      {"train_subset", std::to_string(c.train_subset)},
      {"augment", c.augment ? "true" : "false"},
      {"schedule", c.schedule},
      {"steps_per_epoch", std::to_string(steps_per_epoch)},
      {"amp", c.amp},
  };
  if (c.schedule == "step") {
    m["lr_step"] = std::to_string(c.lr_step);
    m["lr_gamma"] = exact(c.lr_gamma);
  }
  // Per-batch schedules are laid out over the whole run: the run's length is part of them.
  if (c.schedule == "cosine" || c.schedule == "warmup-cosine" || c.schedule == "onecycle")
    m["epochs"] = std::to_string(c.epochs);
  if (c.schedule == "warmup-cosine") m["warmup_steps"] = std::to_string(c.warmup_steps);
  return m;
}

double extra_double(const CheckpointInfo& info, const std::string& key, const std::string& path) {
  auto it = info.extra.find(key);
  EMBER_CHECK(it != info.extra.end(), "checkpoint ", path, " has no '", key,
              "' entry (not written by ember-train?)");
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    EMBER_ERROR("checkpoint ", path, ": '", key, "' is not a number: ", it->second);
  }
}

// ---- metrics CSV -------------------------------------------------------------------------------

constexpr const char* kCsvHeader = "epoch,step,train_loss,train_acc,test_loss,test_acc,lr,seconds";

// Opens the metrics file: a fresh run truncates it; a resumed run keeps the rows of the epochs
// the checkpoint had completed (dropping any written after it) and appends. A file that is not
// ember-train's metrics (another header, a row that does not start with an epoch number) is an
// error naming the file and the line, before anything is overwritten.
examples::OutputFile open_metrics(const std::string& path, bool resumed, int64_t epochs_done) {
  std::vector<std::string> keep{kCsvHeader};
  if (resumed) {
    std::ifstream in(path);
    std::string line;
    int64_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      auto bad = [&](const std::string& why) {
        EMBER_ERROR("--resume: the metrics file ", path, " line ", line_no, ": ", why, ", got '",
                    line.size() > 80 ? line.substr(0, 80) + "..." : line,
                    "' (not written by ember-train? move it away or pass another --metrics)");
      };
      if (line_no == 1) {
        if (line != kCsvHeader) bad(std::string("expected the header '") + kCsvHeader + "'");
        continue;
      }
      if (line.empty()) continue;
      const size_t comma = line.find(',');
      const std::string epoch = line.substr(0, comma);
      if (comma == std::string::npos || std::count(line.begin(), line.end(), ',') != 7 ||
          epoch.empty() || epoch.size() > 18 ||
          epoch.find_first_not_of("0123456789") != std::string::npos)
        bad("expected 8 comma-separated fields starting with the epoch number");
      if (std::stoll(epoch) <= epochs_done) keep.push_back(line);
    }
    EMBER_CHECK(!in.bad(), "--resume: cannot read the metrics file ", path);
  }
  examples::OutputFile out("metrics", path);
  for (const std::string& l : keep) out.write_line(l);
  return out;
}

// Finds out before the first epoch whether checkpoints can be written to `dir`: creates it if
// needed, then creates, writes, syncs and removes a small file in it.
void probe_checkpoint_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec, "--checkpoint-dir ", dir, ": cannot create the directory: ", ec.message());
  EMBER_CHECK(fs::is_directory(dir, ec), "--checkpoint-dir ", dir, ": not a directory");
  const std::string probe = (fs::path(dir) / ".ember-train-probe.XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  EMBER_CHECK(fd >= 0, "--checkpoint-dir ", dir,
              ": cannot write checkpoints there: ", std::strerror(errno));
  const char byte = 0;
  const bool ok = ::write(fd, &byte, 1) == 1 && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  ::unlink(name.data());
  EMBER_CHECK(ok, "--checkpoint-dir ", dir,
              ": cannot write checkpoints there: ", std::strerror(err));
}

// The saved settings of `info` against this run's, model and optimizer first: the first that
// differs is an error naming the option ("... is for --model mlp, this run is --model cnn").
void check_resume_settings(const CheckpointInfo& info,
                           const std::map<std::string, std::string>& settings,
                           const std::string& path) {
  std::vector<std::string> order{"model", "optimizer"};
  for (const auto& kv : settings)
    if (kv.first != "model" && kv.first != "optimizer") order.push_back(kv.first);
  const bool from_ember_train = info.extra.count("config.model") > 0;
  EMBER_CHECK(from_ember_train, "--resume: ", path,
              " has no ember-train settings (config.model): it was not written by ember-train");
  auto shown = [](const std::string& key, const std::string& value) {
    if (key == "augment")
      return value == "true" ? std::string("--augment") : std::string("no --augment");
    if (key == "steps_per_epoch") return value + " steps per epoch";
    std::string option = "--" + key;
    std::replace(option.begin(), option.end(), '_', '-');
    std::string v = value;
    char* end = nullptr;
    const double d = std::strtod(value.c_str(), &end);
    if (value.find('.') != std::string::npos && end == value.c_str() + value.size())
      v = json_number(d);  // 0.0030000000000000001 -> 0.003
    if ((key == "weight_decay" && d < 0) || (key == "train_subset" && value == "0"))
      return "the default " + option;
    return option + " " + v;
  };
  for (const std::string& key : order) {
    const std::string& value = settings.at(key);
    auto it = info.extra.find("config." + key);
    if (it == info.extra.end())
      EMBER_ERROR("--resume: ", path, " does not record ", key,
                  " (written by another version of ember-train?); this run has ",
                  shown(key, value));
    EMBER_CHECK(it->second == value, "--resume: checkpoint ", path, " is for ",
                shown(key, it->second), ", this run is ", shown(key, value),
                " (resume with the checkpoint's settings)");
  }
}

// ---- evaluation --------------------------------------------------------------------------------

// A batch on the training device: a pinned batch (the DataLoader pins on its workers when the
// device is cuda) is copied asynchronously on the current stream, so the host goes on to the
// next batch while the copy runs; the kernels that read it are queued behind it.
Tensor on(const Tensor& t, Device device) {
  if (device.is_cpu()) return t;
  return t.to(device, t.dtype(), /*non_blocking=*/t.is_pinned());
}

// A running sum of losses and of correct answers, kept on the training device: a step adds to it
// without waiting for the device (a per-step item() drains a GPU's queue twice a step; Note
// [Sync debug mode] in core/cuda.h), and the host reads it only to print, save or finish an
// epoch. The loss sum is float64 and each addition is the one the host did before --
// double(loss) * n added in order -- so the sums are bit for bit a host accumulation's (the
// resume tests compare them exactly).
class RunningSums {
 public:
  explicit RunningSums(Device device) : device_(device) { set(0.0, 0); }

  void set(double loss_sum, int64_t correct) {
    loss_ = scalar_tensor(loss_sum, TensorOptions(kFloat64).device(device_));
    correct_ = scalar_tensor(correct, TensorOptions(kInt64).device(device_));
  }
  // loss_sum: the batch's summed loss (a mean times the batch size), any floating dtype; the
  // correct answers are counted from its logits and targets.
  void add(const Tensor& loss_sum, const Tensor& logits, const Tensor& target) {
    NoGradGuard no_grad;
    loss_.add_(loss_sum.detach().to(kFloat64));
    correct_.add_(logits.argmax(1).eq(target).sum());
  }
  double loss_sum() const { return loss_.item<double>(); }
  int64_t correct() const { return correct_.item<int64_t>(); }

 private:
  Device device_;
  Tensor loss_, correct_;
};

struct EvalResult {
  double loss = 0.0, acc = 0.0;
};

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device) {
  model.eval();
  NoGradGuard no_grad;
  RunningSums sums(device);
  int64_t seen = 0;
  loader.set_epoch(0);
  for (const data::Batch& b : loader) {
    Tensor target = on(b.target, device);
    Tensor logits = model(on(b.data, device));
    sums.add(F::cross_entropy(logits, target, {}, -100, "sum"), logits, target);
    seen += target.size(0);
  }
  model.train();
  return {sums.loss_sum() / static_cast<double>(seen),
          static_cast<double>(sums.correct()) / static_cast<double>(seen)};
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

// ---- the run -----------------------------------------------------------------------------------

int run(Config c) {
  const auto wall_start = Clock::now();
  if (c.threads > 0) set_num_threads(c.threads);
  // A rank of a data-parallel job (examples/distributed_setup.h) uses cuda:LOCAL_RANK.
  const dist::RankInfo rank_info = dist::rank_info_from_env();
  const Device device = examples::device_for(rank_info, Device(c.device));
  EMBER_CHECK(device.is_cpu() || cuda_is_built(), "--device ", c.device,
              ": the CUDA backend is not built (this ember build is CPU-only; use --device cpu)");
  EMBER_CHECK(!device.is_cuda() || device.index < device_count(DeviceType::CUDA), "--device ",
              c.device, ": no such CUDA device (this machine has ", device_count(DeviceType::CUDA),
              "; use --device cpu)");
  EMBER_CHECK(!c.resume || !c.checkpoint_dir.empty(),
              "--resume needs --checkpoint-dir (where to find last.safetensors)");
  if (c.lr == 0.0) c.lr = default_lr(c.optimizer);
  const examples::DistSetup ds = examples::setup_distributed(
      rank_info, c.dist_backend, device.is_cuda(), std::chrono::seconds(c.dist_timeout));
  // Before the data and the model: an unwritable checkpoint directory fails now, not after an
  // epoch of training. Rank 0 writes the checkpoints and the metrics of a data-parallel job.
  if (!c.checkpoint_dir.empty() && ds.is_main()) probe_checkpoint_dir(c.checkpoint_dir);

  // Data: normalised batches gathered in one pass (examples/fashion_data.h); with
  // --augment, random crops and flips of each [0, 1] image first.
  data::FashionMNIST::Transform augment;
  if (c.augment)
    augment = data::transforms::Compose(
        {data::transforms::RandomCrop(28, 2), data::transforms::RandomHorizontalFlip()});
  auto train_set = std::make_shared<examples::NormalizedFashionMNIST>(
      std::make_shared<data::FashionMNIST>(c.data_dir, /*train=*/true, augment), c.augment,
      c.train_subset);
  auto test_set = std::make_shared<examples::NormalizedFashionMNIST>(
      std::make_shared<data::FashionMNIST>(c.data_dir, /*train=*/false));
  data::DataLoaderOptions train_opt;
  train_opt.batch_size = c.batch_size;
  if (ds.active()) {  // each rank its share of every epoch, the same permutation on all
    train_opt.sampler = std::make_shared<data::DistributedSampler>(
        train_set->size(), ds.world_size(), ds.rank(), /*shuffle=*/true, c.seed);
  } else {
    train_opt.shuffle = true;
  }
  train_opt.seed = c.seed;
  train_opt.num_workers = c.num_workers;
  train_opt.persistent_workers = c.num_workers > 0;
  train_opt.pin_memory = device.is_cuda();
  data::DataLoader train_loader(train_set, train_opt);
  data::DataLoaderOptions test_opt;
  test_opt.batch_size = kEvalBatch;
  test_opt.pin_memory = device.is_cuda();
  data::DataLoader test_loader(test_set, test_opt);
  EMBER_CHECK(train_set->size() > 0, "the training set is empty: the Fashion-MNIST files in ",
              c.data_dir, " hold no training images");
  EMBER_CHECK(test_set->size() > 0, "the test set is empty: the Fashion-MNIST files in ",
              c.data_dir, " hold no test images");
  const int64_t steps_per_epoch = train_loader.size();
  total_steps(c, steps_per_epoch);  // refuses an --epochs whose steps overflow

  if (c.lr_step <= 0) c.lr_step = std::max<int64_t>(1, c.epochs * 2 / 3);
  if (c.warmup_steps <= 0) c.warmup_steps = std::max<int64_t>(1, c.epochs * steps_per_epoch / 20);

  // Model, optimizer, schedule: the seed fixes the initial weights.
  manual_seed(c.seed);
  std::shared_ptr<nn::Sequential> model = examples::make_model(c.model);
  if (!device.is_cpu()) model->to(device);
  const auto modules = static_cast<int64_t>(model->size());
  if (c.checkpoint_segments > modules)
    throw examples::UsageError("--checkpoint-segments " + std::to_string(c.checkpoint_segments) +
                               ": the " + c.model + " has " + std::to_string(modules) + " modules");
  if (!c.export_onnx.empty()) {  // refused now rather than after the training
    const std::filesystem::path dir = std::filesystem::path(c.export_onnx).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw examples::UsageError("--export-onnx " + c.export_onnx + ": the directory '" +
                                 dir.string() + "' does not exist");
  }
  int64_t params = 0;
  for (const Tensor& p : model->parameters()) params += p.numel();
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(c, model->parameters());
  Schedule sched = make_schedule(c, *opt, steps_per_epoch);

  // Mixed precision (README "Mixed precision"): autocast around the forward pass and the loss;
  // float16 also scales the loss, and the scaler's state is part of the checkpoint.
  const bool amp = c.amp != "none";
  const DType amp_dtype = c.amp == "fp16" ? kFloat16 : kBFloat16;
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(c.amp == "fp16"));
  TrainingState state{model.get(), opt.get(),     sched.scheduler.get(),
                      nullptr,     &train_loader, c.amp == "fp16" ? &scaler : nullptr};
  namespace fs = std::filesystem;
  const std::string last_path =
      c.checkpoint_dir.empty() ? "" : (fs::path(c.checkpoint_dir) / "last.safetensors").string();

  // Counters, restored on resume.
  int64_t step = 0;
  int64_t skipped_steps = 0;  // --amp fp16: steps the GradScaler skipped
  double train_seconds = 0.0;
  double epoch_seconds = 0.0;  // the current epoch's running sums
  RunningSums epoch_sums(device);
  int64_t epoch_seen = 0;
  double last_train_loss = NAN, last_train_acc = NAN, last_test_loss = NAN, last_test_acc = NAN;
  const std::map<std::string, std::string> settings = trajectory_settings(c, steps_per_epoch);

  if (c.resume) {
    EMBER_CHECK(fs::exists(last_path), "--resume: no checkpoint ", last_path);
    // The settings first (from the header alone): a checkpoint of another model or optimizer
    // is named as such, not by the first state_dict that fails to fit.
    check_resume_settings(read_checkpoint_info(last_path), settings, last_path);
    CheckpointInfo info = load_checkpoint(last_path, state, device);
    step = info.step;
    train_seconds = extra_double(info, "train_seconds", last_path);
    const double loss_sum = extra_double(info, "epoch_loss_sum", last_path);
    epoch_seconds = extra_double(info, "epoch_seconds", last_path);
    epoch_sums.set(loss_sum, static_cast<int64_t>(extra_double(info, "epoch_correct", last_path)));
    epoch_seen = static_cast<int64_t>(extra_double(info, "epoch_seen", last_path));
    skipped_steps = static_cast<int64_t>(extra_double(info, "skipped_steps", last_path));
    last_train_loss = extra_double(info, "train_loss", last_path);
    last_train_acc = extra_double(info, "train_acc", last_path);
    last_test_loss = extra_double(info, "test_loss", last_path);
    last_test_acc = extra_double(info, "test_acc", last_path);
    std::fprintf(stderr, "resuming from %s: epoch %lld, batch %lld, step %lld\n", last_path.c_str(),
                 static_cast<long long>(train_loader.epoch()) + 1,
                 static_cast<long long>(train_loader.state().batches_done),
                 static_cast<long long>(step));
  }

  // Data parallelism: after a resume, so that rank 0 broadcasts what every rank loaded. Rank
  // 0's checkpoint holds the epoch's running sums over all ranks (summed before saving), so
  // the other ranks restart theirs from zero.
  std::shared_ptr<dist::DistributedDataParallel> ddp;
  if (ds.active()) {
    ddp = std::make_shared<dist::DistributedDataParallel>(model, ds.group);
    if (!ds.is_main()) {
      epoch_sums.set(0.0, 0);
      epoch_seen = 0;
    }
  }
  // The epoch's running sums over the ranks (a no-op in a world of one).
  auto sum_epoch_over_ranks = [&] {
    std::vector<double> sums = {epoch_sums.loss_sum(), static_cast<double>(epoch_sums.correct()),
                                static_cast<double>(epoch_seen)};
    examples::sum_over_ranks(ds, sums, device);
    if (ds.active()) epoch_sums.set(sums[0], static_cast<int64_t>(sums[1]));
    epoch_seen = static_cast<int64_t>(sums[2]);
  };

  auto save = [&](const std::string& path) {
    CheckpointInfo info;
    info.epoch = train_loader.epoch();
    info.step = step;
    for (const auto& [key, value] : settings) info.extra["config." + key] = value;
    info.extra["train_seconds"] = exact(train_seconds);
    info.extra["epoch_loss_sum"] = exact(epoch_sums.loss_sum());
    info.extra["epoch_seconds"] = exact(epoch_seconds);
    info.extra["epoch_correct"] = std::to_string(epoch_sums.correct());
    info.extra["epoch_seen"] = std::to_string(epoch_seen);
    info.extra["skipped_steps"] = std::to_string(skipped_steps);
    info.extra["train_loss"] = exact(last_train_loss);
    info.extra["train_acc"] = exact(last_train_acc);
    info.extra["test_loss"] = exact(last_test_loss);
    info.extra["test_acc"] = exact(last_test_acc);
    save_checkpoint(path, state, info);
  };

  examples::OutputFile metrics;
  if (!c.metrics.empty() && ds.is_main())
    metrics = open_metrics(c.metrics, c.resume, train_loader.epoch());

  if (!c.checkpoint_dir.empty()) {
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
  }
  if (ds.is_main()) {
    std::fprintf(stderr,
                 "ember-train: %s (%lld parameters), %s lr %g, schedule %s, batch %lld, %lld "
                 "train / %lld test images, %d threads\n",
                 c.model.c_str(), static_cast<long long>(params), c.optimizer.c_str(), c.lr,
                 c.schedule.c_str(), static_cast<long long>(c.batch_size),
                 static_cast<long long>(train_set->size()),
                 static_cast<long long>(test_set->size()), num_threads());
    if (ds.active())
      std::fprintf(stderr, "ember-train: data-parallel over %d ranks (%s, ranks from %s)\n",
                   ds.world_size(), ds.group->backend_name().c_str(), ds.info.source.c_str());
  }

  // --profile: skip 5 steps, warm up on 1, record profile_steps (the top of this file).
  std::unique_ptr<profiler::Profiler> prof;
  bool profiled = false;  // a trace was written
  if (!c.profile.empty() && ds.is_main()) {
    profiler::ProfilerOptions popt;
    popt.record_shapes = true;
    popt.profile_memory = true;
    profiler::Schedule psched;
    psched.wait = 5;
    psched.warmup = 1;
    psched.active = c.profile_steps;
    psched.repeat = 1;
    prof = std::make_unique<profiler::Profiler>(
        popt, psched, [&c, &profiled, device](const profiler::Result& r) {
          r.export_chrome_trace(c.profile);
          profiled = true;
          const int64_t first = r.first_step() + 1, last = r.first_step() + r.num_steps();
          std::fprintf(stderr, "ember-train: profiled steps %lld to %lld; Chrome trace in %s\n%s",
                       static_cast<long long>(first), static_cast<long long>(last),
                       c.profile.c_str(),
                       r.table(device.is_cuda() ? profiler::SortBy::device_time
                                                : profiler::SortBy::self_time,
                               20)
                           .c_str());
        });
    prof->start();
  }
  auto end_profile = [&] {
    if (!prof || !prof->running()) return;
    (void)prof->stop();
    const int64_t last_profiled = 6 + c.profile_steps;
    if (!profiled)
      std::fprintf(stderr,
                   "ember-train: --profile: the run ended after %lld steps, before the profiled "
                   "ones (steps 7 to %lld); no trace written\n",
                   static_cast<long long>(prof->step_num()), static_cast<long long>(last_profiled));
  };

  ProgressBar bar(/*quiet=*/!ds.is_main());
  model->train();
  while (train_loader.epoch() < c.epochs) {
    const int64_t epoch = train_loader.epoch();
    bar.start(epoch, c.epochs, steps_per_epoch, train_loader.state().batches_done);
    const auto epoch_start = Clock::now();
    bool stopped = false;
    for (const data::Batch& b : train_loader) {
      Tensor target = on(b.target, device);
      Tensor logits, loss;
      {
        // Only with --amp: an open region, even a disabled one, sends every op to the casts.
        std::optional<autocast::AutocastGuard> autocast_region;
        if (amp) autocast_region.emplace(device.type, amp_dtype);
        const Tensor x = on(b.data, device);
        // --checkpoint-segments: the same numbers, fewer activations kept (nn/checkpoint.h).
        auto forward = [&] {
          return c.checkpoint_segments > 0
                     ? nn::checkpoint_sequential(*model, c.checkpoint_segments, x)
                     : (*model)(x);
        };
        logits = ddp ? ddp->forward_with(forward) : forward();
        loss = F::cross_entropy(logits, target);
      }
      opt->zero_grad();
      scaler.scale(loss).backward();
      if (!scaler.step(*opt)) ++skipped_steps;  // float16 gradients overflowed: no step
      scaler.update();
      if (sched.per_batch) sched.scheduler->step();
      ++step;

      const int64_t n = target.size(0);
      {
        NoGradGuard no_grad;
        epoch_sums.add(loss.detach().to(kFloat64) * n, logits, target);  // no wait for the device
      }
      epoch_seen += n;
      bar.update(train_loader.state().batches_done, n,
                 [&] { return epoch_sums.loss_sum() / static_cast<double>(epoch_seen); });
      if (prof) prof->step();  // the end of the step: its bookkeeping is in its range
      if (g_stop_requested || (c.stop_after > 0 && step >= c.stop_after)) {
        stopped = true;
        break;
      }
    }
    // The steps no longer wait for the device (RunningSums): the epoch's time includes the
    // queued work.
    if (device.is_cuda()) cuda::synchronize(device.index);
    const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
    epoch_seconds += seconds;
    train_seconds += seconds;
    if (stopped) {
      end_profile();
      bar.finish();
      sum_epoch_over_ranks();
      if (!last_path.empty() && ds.is_main()) save(last_path);
      if (ds.is_main())
        std::fprintf(stderr, "stopped at epoch %lld, batch %lld (step %lld)%s%s\n",
                     static_cast<long long>(epoch) + 1,
                     static_cast<long long>(train_loader.state().batches_done),
                     static_cast<long long>(step), last_path.empty() ? "" : "; saved ",
                     last_path.c_str());
      metrics.close();
      return g_stop_requested ? 130 : 0;
    }
    if (!sched.per_batch && sched.scheduler) sched.scheduler->step();

    const auto eval_start = Clock::now();
    bar.evaluating(test_set->size());
    const EvalResult test = evaluate(*model, test_loader, device);  // the same on every rank
    const double eval_seconds = std::chrono::duration<double>(Clock::now() - eval_start).count();
    sum_epoch_over_ranks();
    last_train_loss = epoch_sums.loss_sum() / static_cast<double>(epoch_seen);
    last_train_acc = static_cast<double>(epoch_sums.correct()) / static_cast<double>(epoch_seen);
    last_test_loss = test.loss;
    last_test_acc = test.acc;
    const double lr = opt->param_groups().front().lr();
    bar.finish();
    if (ds.is_main())
      std::fprintf(stderr,
                   "epoch %lld/%lld: train_loss %.4f train_acc %.4f test_loss %.4f test_acc "
                   "%.4f lr %.3g | %.1f s (%.0f samples/s), eval %.1f s\n",
                   static_cast<long long>(epoch) + 1, static_cast<long long>(c.epochs),
                   last_train_loss, last_train_acc, last_test_loss, last_test_acc, lr,
                   epoch_seconds, static_cast<double>(epoch_seen) / epoch_seconds, eval_seconds);
    if (metrics.is_open())
      metrics.write_line(std::to_string(epoch + 1) + ',' + std::to_string(step) + ',' +
                         json_number(last_train_loss) + ',' + json_number(last_train_acc) + ',' +
                         json_number(last_test_loss) + ',' + json_number(last_test_acc) + ',' +
                         json_number(lr) + ',' + json_number(epoch_seconds));
    epoch_seconds = 0.0;
    epoch_sums.set(0.0, 0);
    epoch_seen = 0;
    if (!c.checkpoint_dir.empty() && ds.is_main()) {
      const std::string name = "epoch-" + std::to_string(epoch + 1) + ".safetensors";
      save((fs::path(c.checkpoint_dir) / name).string());
      save(last_path);
    }
  }

  end_profile();
  metrics.close();
  // The trained model for other runtimes, verified against ember's forward on test images
  // (Note [Verify what you export] in serialize/onnx.h); the batch dim stays dynamic.
  if (!c.export_onnx.empty() && ds.is_main()) {
    std::vector<int64_t> first;
    for (int64_t i = 0; i < std::min<int64_t>(8, test_set->size()); ++i) first.push_back(i);
    onnx::export_model(*model, test_set->get_batch(first).data.to(device), c.export_onnx);
    std::fprintf(stderr, "exported the model to %s (ONNX opset 17, verified)\n",
                 c.export_onnx.c_str());
  }
  const double total_seconds = std::chrono::duration<double>(Clock::now() - wall_start).count();
  std::ostringstream json;
  json << "{\"model\": \"" << c.model << "\", \"epochs\": " << c.epochs
       << ", \"test_acc\": " << json_number(last_test_acc)
       << ", \"test_loss\": " << json_number(last_test_loss)
       << ", \"train_loss\": " << json_number(last_train_loss)
       << ", \"train_acc\": " << json_number(last_train_acc)
       << ", \"train_seconds\": " << json_number(train_seconds)
       << ", \"total_seconds\": " << json_number(total_seconds) << ", \"steps\": " << step
       << ", \"params\": " << params << ", \"optimizer\": \"" << c.optimizer
       << "\", \"lr\": " << json_number(c.lr) << ", \"schedule\": \"" << c.schedule
       << "\", \"batch_size\": " << c.batch_size
       << ", \"augment\": " << (c.augment ? "true" : "false")
       << ", \"train_examples\": " << train_set->size() << ", \"threads\": " << num_threads()
       << ", \"seed\": " << c.seed << ", \"device\": \"" << device.str() << "\", \"amp\": \""
       << c.amp << "\", \"amp_scale\": " << json_number(scaler.get_scale())
       << ", \"skipped_steps\": " << skipped_steps
       << ", \"checkpoint_segments\": " << c.checkpoint_segments << ", \"onnx\": \""
       << c.export_onnx << "\", \"rank\": " << ds.rank() << ", \"world_size\": " << ds.world_size()
       << ", \"peak_rss_mb\": " << json_number(peak_rss_mb()) << "}";
  examples::write_stdout_line(json.str());
  return 0;
}

}  // namespace

// The numeric options, as given: parsed by examples/cli_values.h for short, exact messages.
// An empty string is an option that was not given (its default comes from the other settings).
struct NumberArgs {
  std::string epochs = "3", batch_size = "64", lr, weight_decay, lr_step, lr_gamma = "0.1",
              warmup_steps, threads, seed = "0", num_workers = "0", train_subset, stop_after,
              dist_timeout = "300", profile_steps = "10", checkpoint_segments = "0";
};

void parse_numbers(const NumberArgs& a, Config& c) {
  using examples::kInf;
  using examples::parse_int;
  using examples::parse_real;
  c.epochs = parse_int("--epochs", a.epochs, 1);
  c.batch_size = parse_int("--batch-size", a.batch_size, 1);
  if (!a.lr.empty()) c.lr = parse_real("--lr", a.lr, 0.0, kInf, /*min_inclusive=*/false);
  if (!a.weight_decay.empty())
    c.weight_decay = parse_real("--weight-decay", a.weight_decay, 0.0, kInf, true);
  if (!a.lr_step.empty()) c.lr_step = parse_int("--lr-step", a.lr_step, 1);
  c.lr_gamma = parse_real("--lr-gamma", a.lr_gamma, 0.0, 1.0, true);
  if (!a.warmup_steps.empty()) c.warmup_steps = parse_int("--warmup-steps", a.warmup_steps, 1);
  if (!a.threads.empty()) c.threads = static_cast<int>(parse_int("--threads", a.threads, 1, 4096));
  c.seed = examples::parse_uint64("--seed", a.seed);
  c.num_workers = parse_int("--num-workers", a.num_workers, 0, 1024);
  if (!a.train_subset.empty()) c.train_subset = parse_int("--train-subset", a.train_subset, 1);
  if (!a.stop_after.empty()) c.stop_after = parse_int("--stop-after", a.stop_after, 1);
  c.dist_timeout = parse_int("--dist-timeout", a.dist_timeout, 1, 86400);
  c.profile_steps = parse_int("--profile-steps", a.profile_steps, 1, 100000);
  c.checkpoint_segments = parse_int("--checkpoint-segments", a.checkpoint_segments, 0, 1000);
}

// The setup before the first try only throws on a programming error (a malformed option),
// which should end the program loudly.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  Config c;
  NumberArgs n;
  c.data_dir = ember::data::FashionMNIST::default_root();
  CLI::App app{"ember-train: trains an MLP or a CNN on Fashion-MNIST and prints one JSON line"};
  app.add_option("--model", c.model, "mlp (784-256-128-10) or cnn (2 conv blocks)")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  app.add_option("--epochs", n.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--batch-size", n.batch_size, "examples per step")->capture_default_str();
  app.add_option("--optimizer", c.optimizer, "sgd (momentum 0.9), adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", n.lr,
                 "learning rate (the peak for onecycle) [default: 0.05 sgd, 1e-3 adam(w)]");
  app.add_option("--weight-decay", n.weight_decay, "[default: 0, adamw 0.01]");
  app.add_option("--schedule", c.schedule,
                 "none, step (per epoch), cosine, warmup-cosine or onecycle (per batch)")
      ->check(CLI::IsMember({"none", "step", "cosine", "warmup-cosine", "onecycle"}))
      ->capture_default_str();
  app.add_option("--lr-step", n.lr_step, "step: epochs between decays [default: 2/3 of --epochs]");
  app.add_option("--lr-gamma", n.lr_gamma, "step: the decay factor, in [0, 1]")
      ->capture_default_str();
  app.add_option("--warmup-steps", n.warmup_steps,
                 "warmup-cosine: steps of linear warmup [default: 5% of the steps]");
  app.add_option("--threads", n.threads,
                 "compute threads, 1 to 4096 [default: the cores, or EMBER_NUM_THREADS]");
  app.add_option("--seed", n.seed, "initial weights, shuffling and augmentation (0 to 2^64 - 1)")
      ->capture_default_str();
  app.add_option("--device", c.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--amp", c.amp,
                 "mixed precision: none, bf16 (autocast) or fp16 (autocast and a GradScaler)")
      ->check(CLI::IsMember({"none", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--data-dir", c.data_dir,
                 "Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist)")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "save DIR/epoch-N.safetensors and DIR/last.safetensors each epoch");
  app.add_flag("--resume", c.resume, "continue from DIR/last.safetensors of --checkpoint-dir");
  app.add_option("--metrics", c.metrics,
                 "CSV file: epoch,step,train_loss,train_acc,test_loss,test_acc,lr,seconds");
  app.add_option("--num-workers", n.num_workers, "DataLoader worker threads, 0 to 1024")
      ->capture_default_str();
  app.add_option("--train-subset", n.train_subset, "train on the first N examples only");
  app.add_flag("--augment", c.augment, "RandomCrop(28, padding 2) and horizontal flips");
  app.add_option("--dist-backend", c.dist_backend,
                 "data-parallel jobs (ember-run): gloo (cpu), nccl (cuda) or auto")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}))
      ->capture_default_str();
  app.add_option("--dist-timeout", n.dist_timeout,
                 "data-parallel jobs: seconds before a collective or the rendezvous fails")
      ->capture_default_str();
  app.add_option("--stop-after", n.stop_after,
                 "stop after this many steps in all, as if interrupted (saves last.safetensors)");
  app.add_option("--profile", c.profile,
                 "profile steps 7 to 6 + --profile-steps: a Chrome trace to this file, the table "
                 "to stderr");
  app.add_option("--profile-steps", n.profile_steps, "steps the profiler records, 1 to 100000")
      ->capture_default_str();
  app.add_option("--checkpoint-segments", n.checkpoint_segments,
                 "activation checkpointing: the model in N segments, all but the last "
                 "recomputed in backward (0: off)")
      ->capture_default_str();
  app.add_option("--export-onnx", c.export_onnx,
                 "after training, the model as an ONNX file (opset 17, dynamic batch), verified "
                 "against ember's forward");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0
  }
  int status = 1;
  try {
    parse_numbers(n, c);
    status = run(c);
  } catch (const examples::UsageError& e) {
    std::fprintf(stderr, "ember-train: error: %s\n", e.what());
    status = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember-train: error: %s\n", e.what());
    status = 1;
  }
  // The results are written and checked by now; a stderr that could not be written (its
  // messages lost) still makes the status an error.
  if (std::fflush(stderr) != 0 || std::ferror(stderr)) status = status == 0 ? 1 : status;
  return status;
}
