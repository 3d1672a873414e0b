// Checkpoints (serialize/checkpoint.h): state dicts with map_location, exact resume of a whole
// training run, atomic saves under SIGKILL, bad files, and state dicts that PyTorch loads.

#include <dirent.h>
#include <ember/ember.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data/dataloader.h"
#include "serialize/checkpoint.h"
#include "test_util.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A fresh directory for one test case, removed with its files at the end.
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ember_ckpt_XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    for (const std::string& name : list_dir(path)) ::unlink((path + "/" + name).c_str());
    ::rmdir(path.c_str());
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

bool same_dicts(const TensorDict& a, const TensorDict& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same_bytes(a[i].second, b[i].second)) return false;
  return true;
}

std::string join_floats(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", v[i]);
    s += (i ? "," : "") + std::string(buf);
  }
  return s;
}

std::vector<double> split_floats(const std::string& s) {
  std::vector<double> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stod(item));
  return v;
}

// ---- a small training run ---------------------------------------------------------------------

// Linear-ReLU-Dropout-Linear trained with Adam and a per-batch warmup + cosine schedule, on a
// shuffled loader with two workers. The model's initial weights come from `init_seed`.
struct Run {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<optim::SequentialLR> sched;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;

  Run(std::shared_ptr<const data::Dataset> dataset, uint64_t init_seed) {
    manual_seed(init_seed);
    model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(16, 32), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(32, 4)});
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-2));
    auto warmup = std::make_shared<optim::LinearLR>(*opt, 0.1, 1.0, 5);
    auto cosine = std::make_shared<optim::CosineAnnealingLR>(*opt, 21, 1e-4);
    sched = std::make_unique<optim::SequentialLR>(
        *opt, std::vector<std::shared_ptr<optim::LRScheduler>>{warmup, cosine},
        std::vector<int64_t>{5});
    data::DataLoaderOptions o;
    o.batch_size = 16;
    o.shuffle = true;
    o.seed = 1234;
    o.num_workers = 2;
    loader = std::make_unique<data::DataLoader>(dataset, o);
  }

  TrainingState state() { return {model.get(), opt.get(), sched.get(), nullptr, loader.get()}; }

  // Trains until the loader has finished epoch end_epoch - 1, or until the global step
  // reaches `stop` (then mid-epoch); each loss is appended to `losses`.
  void train(int64_t end_epoch, int64_t stop, std::vector<double>& losses) {
    while (loader->epoch() < end_epoch) {
      for (const data::Batch& b : *loader) {
        opt->zero_grad();
        Tensor loss = F::cross_entropy(model->forward(b.data), b.target);
        loss.backward();
        opt->step();
        sched->step();
        losses.push_back(loss.item<double>());
        if (++step == stop) return;
      }
    }
  }
};

std::shared_ptr<const data::Dataset> make_dataset() {
  Generator g(99);
  Tensor x = randn({200, 16}, {}, &g);
  Tensor y = randint(0, 4, {200}, TensorOptions().dtype(kInt64), &g);
  return std::make_shared<data::TensorDataset>(x, y);
}

}  // namespace

TEST_CASE("checkpoint: a resumed run continues bit for bit", "[checkpoint]") {
  auto dataset = make_dataset();
  TempDir dir;
  const std::string path = dir.file("last.safetensors");
  // 13 batches per epoch (200 = 12 * 16 + 8); the run stops at step 19, batch 6 of epoch 1.
  const int64_t epochs = 2, stop = 19;

  // A: two epochs without a stop.
  std::vector<double> a;
  {
    Run run(dataset, 7);
    REQUIRE(run.loader->size() == 13);
    run.train(epochs, -1, a);
  }
  REQUIRE(a.size() == 26);

  // B: stopped in the middle of epoch 1 and saved...
  std::vector<double> b;
  {
    Run run(dataset, 7);
    run.train(epochs, stop, b);
    REQUIRE(run.loader->state().epoch == 1);
    REQUIRE(run.loader->state().batches_done == 6);
    save_checkpoint(path, run.state(), {1, run.step, {{"note", "mid-epoch"}}});
  }
  REQUIRE(b.size() == static_cast<size_t>(stop));
  // ... then resumed by new objects whose model starts from other weights.
  Run resumed(dataset, 555);
  const Tensor w_before = resumed.model->state_dict().front().second.clone();
  const Tensor rng_before = default_generator(kCPU).get_state();
  CheckpointInfo info = load_checkpoint(path, resumed.state());
  CHECK(info.epoch == 1);
  CHECK(info.step == stop);
  CHECK(info.extra == std::map<std::string, std::string>{{"note", "mid-epoch"}});
  CHECK_FALSE(same_bytes(w_before, resumed.model->state_dict().front().second));
  CHECK_FALSE(same_bytes(rng_before, default_generator(kCPU).get_state()));
  CHECK(resumed.loader->state().batches_done == 6);
  CHECK(resumed.sched->last_epoch() == stop);
  resumed.step = info.step;
  resumed.train(epochs, -1, b);

  REQUIRE(b.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i);
    CHECK(b[i] == a[i]);  // exactly, not approximately
  }

  // The file is one safetensors file with the documented names.
  safetensors::File file = safetensors::load_file(path);
  CHECK(file.metadata.at("format") == "ember-checkpoint/1");
  CHECK(file.metadata.at("parts") == "model,optimizer,scheduler,loader,rng");
  CHECK(file.metadata.at("loader.epoch") == "1");
  CHECK(file.metadata.at("loader.batches_done") == "6");
  CHECK(file.metadata.at("loader.seed") == "1234");
  CHECK(file.metadata.at("extra.note") == "mid-epoch");
  CHECK(safetensors::get(file, "model.0.weight").sizes() == Shape{32, 16});
  CHECK(safetensors::get(file, "optimizer.state.0.exp_avg").sizes() == Shape{32, 16});
  CHECK(safetensors::get(file, "scheduler.last_epoch").item<int64_t>() == stop);
  CHECK(safetensors::get(file, "rng.cpu").numel() == Generator::kStateSize);

  // Controls: the equality above depends on the restored generator and loader position.
  {
    Run run(dataset, 555);
    load_checkpoint(path, run.state());
    manual_seed(3);  // other dropout masks
    std::vector<double> c;
    run.train(epochs, -1, c);
    REQUIRE(c.size() == a.size() - stop);
    CHECK_FALSE(std::equal(c.begin(), c.end(), a.begin() + stop));
  }
  {
    Run run(dataset, 555);
    load_checkpoint(path, {run.model.get(), run.opt.get(), run.sched.get()});
    run.loader->set_epoch(1);  // the epoch's start instead of batch 6
    std::vector<double> c;
    run.train(epochs, -1, c);
    REQUIRE(c.size() == 13);
    CHECK_FALSE(std::equal(c.begin(), c.begin() + 7, a.begin() + stop));
  }
}

TEST_CASE("checkpoint: a failed load leaves every part as it was", "[checkpoint]") {
  auto dataset = make_dataset();
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  {
    Run run(dataset, 7);
    std::vector<double> losses;
    run.train(1, 4, losses);
    save_checkpoint(path, run.state(), {0, 4, {}});
  }
  // A model with one more buffer: the loader, optimizer and scheduler load, the model fails.
  Run other(dataset, 8);
  other.model->register_buffer("extra", zeros({1}));
  const TensorDict opt_before = other.opt->state_dict();
  const TensorDict sched_before = other.sched->state_dict();
  const Tensor rng_before = default_generator(kCPU).get_state();
  CHECK_THROWS_WITH(load_checkpoint(path, other.state()),
                    Catch::Contains("load_checkpoint: '" + path + "': model: ") &&
                        Catch::Contains("Missing key(s): extra"));
  CHECK(same_dicts(other.opt->state_dict(), opt_before));
  CHECK(same_dicts(other.sched->state_dict(), sched_before));
  CHECK(other.loader->state().batches_done == 0);
  CHECK(same_bytes(default_generator(kCPU).get_state(), rng_before));
  // Without the model, the rest loads.
  load_checkpoint(path, {nullptr, other.opt.get(), other.sched.get(), nullptr, other.loader.get()});
  CHECK(other.loader->state().batches_done == 4);
  CHECK_FALSE(same_dicts(other.opt->state_dict(), opt_before));
}

TEST_CASE("checkpoint: state dicts round trip, with map_location", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  manual_seed(1);
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::BatchNorm1d>(5)});
  save_state_dict(model->state_dict(), path, {{"who", "test"}});
  CHECK(safetensors::load_file(path).metadata.at("who") == "test");

  for (std::optional<Device> where : {std::optional<Device>(), std::optional<Device>(kCPU)}) {
    TensorDict loaded = load_state_dict(path, where);
    CHECK(same_dicts(loaded, model->state_dict()));
    for (const auto& kv : loaded) CHECK(kv.second.device() == kCPU);
    manual_seed(2);
    auto fresh =
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::BatchNorm1d>(5)});
    REQUIRE_FALSE(same_dicts(fresh->state_dict(), model->state_dict()));
    fresh->load_state_dict(loaded);
    CHECK(same_dicts(fresh->state_dict(), model->state_dict()));
  }
  if (!cuda_is_built()) {
    CHECK_THROWS_WITH(
        load_state_dict(path, Device("cuda")),
        Catch::Contains("load_state_dict: '" + path + "'") && Catch::Contains("to cuda:0"));
    CHECK_THROWS_WITH(load_checkpoint(dir.file("none"), {}, Device("cuda")),
                      Catch::Contains("none"));
  }
  CHECK_THROWS_WITH(load_state_dict(dir.file("missing.safetensors")),
                    Catch::Contains("missing.safetensors"));
  // Only the target is left in the directory.
  CHECK(list_dir(dir.path) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("checkpoint: bad files and missing parts are clear errors", "[checkpoint]") {
  TempDir dir;
  manual_seed(4);
  auto model = std::make_shared<nn::Linear>(4, 3);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const std::string path = dir.file("ckpt.safetensors");

  // Only the model was saved: asking for the optimizer names it.
  save_checkpoint(path, {model.get()}, {2, 10, {}});
  CHECK_THROWS_WITH(load_checkpoint(path, {model.get(), &opt}),
                    Catch::Contains("load_checkpoint: '" + path + "'") &&
                        Catch::Contains("no optimizer state") &&
                        Catch::Contains("it holds: model,rng"));
  CheckpointInfo info = load_checkpoint(path, {model.get()});
  CHECK(info.epoch == 2);
  CHECK(info.step == 10);
  CHECK(info.extra.empty());

  // A plain state dict is not a checkpoint.
  const std::string plain = dir.file("plain.safetensors");
  save_state_dict(model->state_dict(), plain);
  CHECK_THROWS_WITH(load_checkpoint(plain, {model.get()}),
                    Catch::Contains(plain) && Catch::Contains("is not an ember checkpoint"));

  // Another format version, and broken counters.
  const std::string future = dir.file("future.safetensors");
  safetensors::save_file({{"rng.cpu", get_rng_state()}}, future,
                         {{"format", "ember-checkpoint/2"}, {"epoch", "0"}, {"step", "0"}});
  CHECK_THROWS_WITH(load_checkpoint(future, {}),
                    Catch::Contains("has format \"ember-checkpoint/2\""));
  const std::string bad_epoch = dir.file("bad_epoch.safetensors");
  safetensors::save_file(
      {{"rng.cpu", get_rng_state()}}, bad_epoch,
      {{"format", kCheckpointFormat}, {"epoch", "1e3"}, {"step", "0"}, {"parts", "rng"}});
  CHECK_THROWS_WITH(load_checkpoint(bad_epoch, {}),
                    Catch::Contains("\"epoch\" should be an integer, got \"1e3\""));
  const std::string bad_rng = dir.file("bad_rng.safetensors");
  safetensors::save_file(
      {{"rng.cpu", zeros({4})}}, bad_rng,
      {{"format", kCheckpointFormat}, {"epoch", "0"}, {"step", "0"}, {"parts", "rng"}});
  const Tensor rng_before = get_rng_state();
  CHECK_THROWS_WITH(load_checkpoint(bad_rng, {}),
                    Catch::Contains("rng: the state of the cpu generator should be uint8 [16]"));
  CHECK(same_bytes(get_rng_state(), rng_before));

  // A truncated checkpoint.
  REQUIRE(::truncate(path.c_str(), 200) == 0);
  CHECK_THROWS_WITH(load_checkpoint(path, {model.get()}),
                    Catch::Contains("load_checkpoint: ") && Catch::Contains(path));

  // A wrong model: the model part's own error, with the file and the part.
  save_checkpoint(path, {model.get(), &opt}, {0, 0, {}});
  auto wider = std::make_shared<nn::Linear>(4, 5);
  CHECK_THROWS_WITH(
      load_checkpoint(path, {wider.get()}),
      Catch::Contains("'" + path + "': model: ") && Catch::Contains("size mismatch for weight"));
  CHECK_THROWS_WITH(save_checkpoint(path, {model.get()}, {0, 0, {{"", "x"}}}),
                    Catch::Contains("an extra key is empty"));
}

TEST_CASE("checkpoint: a save killed at any moment leaves a whole checkpoint", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const std::string tmp_prefix = "ckpt.safetensors.tmp.";
  // Two distinguishable versions of a 21 MB state dict.
  const int64_t n = 5 << 19;
  Tensor x = arange(0, n, 1, TensorOptions().dtype(kFloat32));
  const TensorDict va = {{"w", x}, {"v", x * 0.5}};
  const TensorDict vb = {{"w", -x}, {"v", x * 2.0}};
  save_state_dict(va, path, {{"version", "a"}});
  std::string last = "a";  // the version of the last save known to be complete

  const int threads = num_threads();
  set_num_threads(1);  // the forked child has no pool threads: nothing may run in parallel
  std::mt19937 rng(2024);
  int killed_mid_write = 0;
  // At least 5 kills, and more until one lands while a temporary file is open: a random kill
  // misses the write often enough (the save checksums the tensors before it opens the file)
  // that 5 alone left none in about one run in ten.
  int rep = 0;
  for (; rep < 5 || (killed_mid_write == 0 && rep < 60); ++rep) {
    // The child saves b, a, b, ... and writes one byte to the pipe after each completed save.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(fds[0]);
      try {
        for (int i = 0; i < 100000; ++i) {
          save_state_dict(i % 2 ? va : vb, path, {{"version", i % 2 ? "a" : "b"}});
          if (::write(fds[1], "s", 1) != 1) ::_exit(5);
        }
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(4);
    }
    ::close(fds[1]);
    // Kill it after 0, 1 or 2 completed saves and a random few ms more.
    const int wait_saves = rep % 3;
    char byte;
    int done = 0;
    while (done < wait_saves && ::read(fds[0], &byte, 1) == 1) ++done;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 40)(rng)));
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));  // not an exit: the child was still saving when it died
    CHECK(WTERMSIG(status) == SIGKILL);
    while (::read(fds[0], &byte, 1) == 1) ++done;
    ::close(fds[0]);
    REQUIRE(done >= wait_saves);

    // At most the killed writer's temporary file is left: the saves tidy up earlier ones.
    int temps = 0;
    for (const std::string& name : list_dir(dir.path)) {
      if (name.rfind(tmp_prefix, 0) == 0)
        ++temps;
      else
        CHECK(name == "ckpt.safetensors");
    }
    CHECK(temps <= 1);
    killed_mid_write += temps;

    // The file is the last completed save, or the one after it if the child died between its
    // rename and its report; whole either way.
    if (done > 0) last = (done - 1) % 2 ? "a" : "b";
    const std::string next = done % 2 ? "a" : "b";
    safetensors::File file = safetensors::load_file(path);
    const std::string version = file.metadata.at("version");
    INFO("rep " << rep << ": " << done << " saves completed, the file holds version " << version);
    CHECK((version == last || version == next));
    CHECK(same_dicts(file.tensors, version == "a" ? va : vb));
    last = version;
  }
  set_num_threads(threads);
  INFO(rep << " kills");
  CHECK(killed_mid_write >= 1);  // some kills did land in the middle of a save
  // The next save removes what the killed writers left.
  save_state_dict(vb, path, {{"version", "b"}});
  CHECK(list_dir(dir.path) == std::vector<std::string>{"ckpt.safetensors"});
  CHECK(remove_stale_temp_files(path) == 0);
}

TEST_CASE("checkpoint: state dicts load in PyTorch and PyTorch's load here", "[checkpoint]") {
  // Sequential's children are named 0, 1, ... as torch.nn.Sequential names them, so the keys
  // are PyTorch's. tests/golden/gen_checkpoint.py --check FILE loads an exported file into the
  // same torch.nn model (strict) and compares its output with the one saved in the metadata.
  auto make_model = [] {
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(64, 3)});
  };
  const std::vector<std::string> torch_keys = {"0.weight",
                                               "0.bias",
                                               "1.weight",
                                               "1.bias",
                                               "1.running_mean",
                                               "1.running_var",
                                               "1.num_batches_tracked",
                                               "5.weight",
                                               "5.bias"};

  SECTION("ember -> PyTorch") {
    manual_seed(11);
    auto model = make_model();
    model->forward(randn({8, 1, 8, 8}) * 2.0 + 0.5);  // training mode: moves the BN statistics
    model->eval();
    Generator g(12);
    Tensor x = randn({2, 1, 8, 8}, {}, &g);
    Tensor y = model->forward(x);

    TempDir dir;
    const char* env = std::getenv("EMBER_CKPT_EXPORT");
    const std::string path = env && *env ? std::string(env) : dir.file("export.safetensors");
    save_state_dict(model->state_dict(), path,
                    {{"check.input", join_floats(values(x))},
                     {"check.input_shape", "2,1,8,8"},
                     {"check.output", join_floats(values(y))}});

    TensorDict loaded = load_state_dict(path);
    std::vector<std::string> keys;
    for (const auto& kv : loaded) keys.push_back(kv.first);
    CHECK(keys == torch_keys);
    CHECK(safetensors::get({loaded, {}}, "1.num_batches_tracked").dtype() == kInt64);
    CHECK(safetensors::get({loaded, {}}, "1.num_batches_tracked").item<int64_t>() == 1);
    auto fresh = make_model();
    fresh->load_state_dict(loaded);
    fresh->eval();
    CHECK(same_bytes(fresh->forward(x), y));
    const std::vector<double> saved =
        split_floats(safetensors::load_file(path).metadata.at("check.output"));
    const std::vector<double> want = values(y);
    REQUIRE(saved.size() == want.size());
    for (size_t i = 0; i < saved.size(); ++i)  // %.9g round-trips float32
      CHECK(static_cast<float>(saved[i]) == static_cast<float>(want[i]));
  }

  SECTION("PyTorch -> ember") {
    // Written by tests/golden/gen_checkpoint.py from torch.nn.Sequential's state_dict().
    const std::string golden = std::string(EMBER_GOLDEN_DIR) + "/checkpoint_torch.safetensors";
    safetensors::File file = safetensors::load_file(golden);
    std::vector<std::string> keys;
    for (const auto& kv : file.tensors) keys.push_back(kv.first);
    CHECK(keys == torch_keys);
    auto model = make_model();
    model->load_state_dict(load_state_dict(golden, kCPU));
    model->eval();
    const std::vector<double> xin = split_floats(file.metadata.at("check.input"));
    Tensor x = tensor(xin, {2, 1, 8, 8}).to(kFloat32);
    const std::vector<double> got = values(model->forward(x));
    const std::vector<double> want = split_floats(file.metadata.at("check.output"));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
  }
}

TEST_CASE("checkpoint: a damaged tensor is refused by name, old files still load", "[checkpoint]") {
  TempDir dir;
  manual_seed(5);
  auto model = std::make_shared<nn::Linear>(4, 3);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const std::string path = dir.file("ckpt.safetensors");
  save_checkpoint(path, {model.get(), &opt}, {1, 7, {{"model_name", "linear"}}});

  // read_checkpoint_info: the counters from the header alone.
  CheckpointInfo peek = read_checkpoint_info(path);
  CHECK(peek.epoch == 1);
  CHECK(peek.step == 7);
  CHECK(peek.extra == std::map<std::string, std::string>{{"model_name", "linear"}});
  const std::string plain = dir.file("plain.safetensors");
  save_state_dict(model->state_dict(), plain);
  CHECK_THROWS_WITH(read_checkpoint_info(plain), Catch::Contains("is not an ember checkpoint"));

  // One byte of the weight flipped on disk: a finite, plausible value, refused by its checksum
  // before any part changes.
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  const Tensor w = model->weight.detach().contiguous();
  const std::string w_bytes(static_cast<const char*>(w.data_ptr()), w.nbytes());
  const size_t at = bytes.find(w_bytes);
  REQUIRE(at != std::string::npos);
  std::string bad = bytes;
  bad[at + 4 * 5] ^= 0x01;  // the lowest mantissa bit of weight[1][1]
  const std::string damaged = dir.file("damaged.safetensors");
  {
    std::ofstream f(damaged, std::ios::binary);
    f.write(bad.data(), static_cast<std::streamsize>(bad.size()));
  }
  auto other = std::make_shared<nn::Linear>(4, 3);
  const Tensor before = other->weight.detach().clone();
  CHECK_THROWS_WITH(load_checkpoint(damaged, {other.get()}),
                    Catch::Contains("load_checkpoint: ") && Catch::Contains(damaged) &&
                        Catch::Contains("tensor 'model.weight': the data is corrupt") &&
                        Catch::Contains("crc32 mismatch"));
  CHECK(same_bytes(other->weight.detach(), before));
  CHECK_THROWS_WITH(load_state_dict(damaged),
                    Catch::Contains("tensor 'model.weight'") && Catch::Contains("crc32 mismatch"));

  // A checkpoint written before the checksums (the same tensors and metadata, none of ember's
  // checksum keys) loads unverified.
  safetensors::File file = safetensors::load_file(path);
  CHECK(file.checksummed);
  const std::string old = dir.file("old.safetensors");
  safetensors::save_file(file.tensors, old, file.metadata, safetensors::Checksums::None);
  CHECK_FALSE(safetensors::load_file(old).checksummed);
  CHECK(load_checkpoint(old, {other.get()}).step == 7);
  CHECK(same_bytes(other->weight.detach(), model->weight.detach()));
}
