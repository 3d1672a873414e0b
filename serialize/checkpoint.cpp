#include "serialize/checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/generator.h"
#include "data/dataloader.h"
#include "nn/module.h"
#include "optim/grad_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/reduce_lr_on_plateau.h"

namespace ember {
namespace {

// The parts a checkpoint can hold, in the order "parts" lists them.
constexpr const char* kParts[] = {"model",  "optimizer", "scheduler", "plateau",
                                  "scaler", "loader",    "rng"};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

TensorDict with_prefix(const TensorDict& dict, const std::string& prefix) {
  TensorDict out;
  out.reserve(dict.size());
  for (const auto& [k, t] : dict) out.emplace_back(prefix + k, t);
  return out;
}

// The tensors named "<prefix><key>", as "<key>".
TensorDict part_of(const TensorDict& dict, const std::string& prefix) {
  TensorDict out;
  for (const auto& [k, t] : dict)
    if (starts_with(k, prefix)) out.emplace_back(k.substr(prefix.size()), t);
  return out;
}

// Runs `fn`, rethrowing an ember::Error with "load_checkpoint: '<path>': <part>: " in front.
template <class Fn>
void in_part(const std::string& path, const char* part, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    throw Error(detail::str("load_checkpoint: '", path, "': ", part, ": ", e.what()));
  }
}

class Reader {
 public:
  Reader(const std::string& path, const std::map<std::string, std::string>& metadata)
      : path_(path), metadata_(metadata) {}

  const std::string& get(const std::string& key) const {
    auto it = metadata_.find(key);
    EMBER_CHECK(it != metadata_.end(), "load_checkpoint: '", path_, "': the metadata has no \"",
                key, "\" entry");
    return it->second;
  }
  int64_t get_int(const std::string& key) const {
    const std::string& v = get(key);
    const bool negative = !v.empty() && v[0] == '-';
    const std::string digits = negative ? v.substr(1) : v;
    errno = 0;
    const long long x = all_digits(digits) ? std::strtoll(v.c_str(), nullptr, 10) : 0;
    EMBER_CHECK(all_digits(digits) && errno == 0, "load_checkpoint: '", path_, "': metadata \"",
                key, "\" should be an integer, got \"", v, "\"");
    return static_cast<int64_t>(x);
  }
  uint64_t get_uint(const std::string& key) const {
    const std::string& v = get(key);
    errno = 0;
    const unsigned long long x = all_digits(v) ? std::strtoull(v.c_str(), nullptr, 10) : 0;
    EMBER_CHECK(all_digits(v) && errno == 0, "load_checkpoint: '", path_, "': metadata \"", key,
                "\" should be a non-negative integer, got \"", v, "\"");
    return static_cast<uint64_t>(x);
  }

 private:
  const std::string& path_;
  const std::map<std::string, std::string>& metadata_;
};

// Checks that `metadata` is a checkpoint's, of a format this build reads, and returns its counters.
CheckpointInfo info_of(const std::string& path,
                       const std::map<std::string, std::string>& metadata) {
  const Reader meta(path, metadata);
  auto format = metadata.find("format");
  EMBER_CHECK(format != metadata.end(), "load_checkpoint: '", path,
              "' is not an ember checkpoint (its metadata has no \"format\": \"", kCheckpointFormat,
              "\"); a plain state dict loads with load_state_dict and Module::load_state_dict");
  EMBER_CHECK(format->second == kCheckpointFormat, "load_checkpoint: '", path, "' has format \"",
              format->second, "\", this build reads \"", kCheckpointFormat, "\"");
  CheckpointInfo info;
  info.epoch = meta.get_int("epoch");
  info.step = meta.get_int("step");
  for (const auto& [k, v] : metadata)
    if (starts_with(k, "extra.")) info.extra[k.substr(6)] = v;
  return info;
}

// The directory and file name of `path`.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

void save_state_dict(const TensorDict& dict, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  remove_stale_temp_files(path);
  safetensors::save_file(dict, path, metadata);
}

TensorDict load_state_dict(const std::string& path, std::optional<Device> map_location) {
  safetensors::File file = safetensors::load_file(path);
  if (!map_location || map_location->is_cpu()) return std::move(file.tensors);
  for (auto& [name, t] : file.tensors) {
    try {
      t = t.to(*map_location);
    } catch (const Error& e) {
      throw Error(detail::str("load_state_dict: '", path, "': cannot move tensor '", name, "' to ",
                              *map_location, ": ", e.what()));
    }
  }
  return std::move(file.tensors);
}

void save_checkpoint(const std::string& path, const TrainingState& state,
                     const CheckpointInfo& info) {
  TensorDict tensors;
  std::map<std::string, std::string> meta;
  std::string parts;
  auto add = [&](const char* part, const TensorDict& dict) {
    TensorDict named = with_prefix(dict, std::string(part) + ".");
    tensors.insert(tensors.end(), named.begin(), named.end());
    parts += (parts.empty() ? "" : ",") + std::string(part);
  };
  if (state.model) add("model", state.model->state_dict());
  if (state.optimizer) add("optimizer", state.optimizer->state_dict());
  if (state.scheduler) add("scheduler", state.scheduler->state_dict());
  if (state.plateau) add("plateau", state.plateau->state_dict());
  if (state.scaler) add("scaler", state.scaler->state_dict());
  if (state.loader) {
    const data::DataLoaderState s = state.loader->state();
    meta["loader.epoch"] = std::to_string(s.epoch);
    meta["loader.batches_done"] = std::to_string(s.batches_done);
    meta["loader.seed"] = std::to_string(s.seed);
    parts += (parts.empty() ? "" : ",") + std::string("loader");
  }
  add("rng", {{"cpu", default_generator(kCPU).get_state()}});

  meta["format"] = kCheckpointFormat;
  meta["epoch"] = std::to_string(info.epoch);
  meta["step"] = std::to_string(info.step);
  meta["parts"] = parts;
  for (const auto& [k, v] : info.extra) {
    EMBER_CHECK(!k.empty(), "save_checkpoint: '", path, "': an extra key is empty");
    meta["extra." + k] = v;
  }
  try {
    save_state_dict(tensors, path, meta);
  } catch (const Error& e) {
    throw Error(detail::str("save_checkpoint: ", e.what()));
  }
}

CheckpointInfo load_checkpoint(const std::string& path, const TrainingState& state,
                               std::optional<Device> map_location) {
  safetensors::File file;
  try {
    file = safetensors::load_file(path);
  } catch (const Error& e) {
    throw Error(detail::str("load_checkpoint: ", e.what()));
  }
  const Reader meta(path, file.metadata);
  CheckpointInfo info = info_of(path, file.metadata);

  // Which parts the file has, and are the requested ones among them?
  std::map<std::string, bool> saved;
  const std::string& listed = meta.get("parts");
  for (size_t begin = 0; begin <= listed.size();) {
    size_t comma = listed.find(',', begin);
    if (comma == std::string::npos) comma = listed.size();
    if (comma > begin) saved[listed.substr(begin, comma - begin)] = true;
    begin = comma + 1;
  }
  auto require = [&](const char* part, bool requested) {
    EMBER_CHECK(!requested || saved.count(part), "load_checkpoint: '", path,
                "': the checkpoint has no ", part,
                " state (it holds: ", listed.empty() ? "nothing" : listed, ")");
  };
  require("model", state.model != nullptr);
  require("optimizer", state.optimizer != nullptr);
  require("scheduler", state.scheduler != nullptr);
  require("plateau", state.plateau != nullptr);
  require("scaler", state.scaler != nullptr);
  require("loader", state.loader != nullptr);
  require("rng", true);

  // The generators' states are checked before anything changes.
  std::vector<std::pair<Device, Tensor>> generators;
  for (const auto& [k, t] : file.tensors) {
    if (k == "rng.cpu") {
      generators.emplace_back(kCPU, t);
    } else if (starts_with(k, "rng.cuda.")) {
      const std::string index = k.substr(9);
      EMBER_CHECK(all_digits(index) && index.size() <= 2 && std::stoi(index) < kMaxCudaDevices,
                  "load_checkpoint: '", path, "': rng: bad generator name '", k, "'");
      generators.emplace_back(Device(DeviceType::CUDA, std::stoi(index)), t);
    }
  }
  bool has_cpu = false;
  for (const auto& g : generators) has_cpu = has_cpu || g.first.is_cpu();
  EMBER_CHECK(has_cpu, "load_checkpoint: '", path,
              "': rng: the checkpoint has no \"rng.cpu\" tensor");
  for (const auto& [device, t] : generators)
    EMBER_CHECK(t.dtype() == kUInt8 && t.dim() == 1 && t.numel() == Generator::kStateSize,
                "load_checkpoint: '", path, "': rng: the state of the ", device,
                " generator should be uint8 [", Generator::kStateSize, "], got ", t.dtype(), " ",
                t.sizes());

  // The loader's position is read before anything changes, too.
  data::DataLoaderState position;
  if (state.loader) {
    position.epoch = meta.get_int("loader.epoch");
    position.batches_done = meta.get_int("loader.batches_done");
    position.seed = meta.get_uint("loader.seed");
  }

  // The tensors the parts load, moved to map_location.
  TensorDict tensors;
  tensors.reserve(file.tensors.size());
  for (auto& [k, t] : file.tensors) {
    if (starts_with(k, "rng.")) continue;
    if (map_location && *map_location != t.device()) {
      in_part(path, "map_location", [&, &t = t] { t = t.to(*map_location); });
    }
    tensors.emplace_back(k, std::move(t));
  }
  file.tensors.clear();

  // Each part loads in turn; if one fails, the ones before it are put back as they were. The
  // model goes last: Module::load_state_dict checks every key and shape before it copies, so
  // it either fails unchanged or succeeds, and nothing after it can fail.
  std::vector<std::function<void()>> undo;
  try {
    if (state.loader) {
      data::DataLoader* loader = state.loader;
      const data::DataLoaderState before = loader->state();
      in_part(path, "loader", [&] { loader->load_state(position); });
      undo.push_back([loader, before] { loader->load_state(before); });
    }
    if (state.optimizer) {
      optim::Optimizer* opt = state.optimizer;
      auto before = std::make_shared<TensorDict>(opt->state_dict());
      in_part(path, "optimizer", [&] { opt->load_state_dict(part_of(tensors, "optimizer.")); });
      undo.push_back([opt, before] { opt->load_state_dict(*before); });
    }
    if (state.scheduler) {
      optim::LRScheduler* sched = state.scheduler;
      auto before = std::make_shared<TensorDict>(sched->state_dict());
      in_part(path, "scheduler", [&] { sched->load_state_dict(part_of(tensors, "scheduler.")); });
      undo.push_back([sched, before] { sched->load_state_dict(*before); });
    }
    if (state.plateau) {
      optim::ReduceLROnPlateau* plateau = state.plateau;
      auto before = std::make_shared<TensorDict>(plateau->state_dict());
      in_part(path, "plateau", [&] { plateau->load_state_dict(part_of(tensors, "plateau.")); });
      undo.push_back([plateau, before] { plateau->load_state_dict(*before); });
    }
    if (state.scaler) {
      amp::GradScaler* scaler = state.scaler;
      auto before = std::make_shared<TensorDict>(scaler->state_dict());
      in_part(path, "scaler", [&] { scaler->load_state_dict(part_of(tensors, "scaler.")); });
      undo.push_back([scaler, before] {
        if (!before->empty()) scaler->load_state_dict(*before);
      });
    }
    if (state.model) {
      in_part(path, "model",
              [&] { state.model->load_state_dict(part_of(tensors, "model."), /*strict=*/true); });
    }
  } catch (...) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      try {
        (*it)();
      } catch (...) {
        // Restoring a part's own state_dict does not fail; if it somehow does, the first
        // error is the one to report.
      }
    }
    throw;
  }
  for (const auto& [device, t] : generators) default_generator(device).set_state(t);
  return info;
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  std::map<std::string, std::string> metadata;
  try {
    metadata = safetensors::load_metadata(path);
  } catch (const Error& e) {
    throw Error(detail::str("load_checkpoint: ", e.what()));
  }
  return info_of(path, metadata);
}

size_t remove_stale_temp_files(const std::string& path) {
  const auto [dir, base] = split_path(path);
  const std::string prefix = base + ".tmp.";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return 0;  // no directory yet: nothing to tidy (the save reports the real problem)
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (!starts_with(name, prefix)) continue;
    // "<pid>.<n>.<salt>": three numbers (save_file's temporary names, see safetensors.cpp).
    std::vector<std::string> fields;
    size_t begin = prefix.size();
    for (;;) {
      const size_t dot = name.find('.', begin);
      fields.push_back(
          name.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    if (fields.size() != 3 || !all_digits(fields[0]) || !all_digits(fields[1]) ||
        !all_digits(fields[2]) || fields[0].size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(fields[0]));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    stale.push_back(dir + "/" + name);
  }
  size_t removed = 0;
  for (const std::string& f : stale)
    if (::unlink(f.c_str()) == 0) ++removed;
  return removed;
}

}  // namespace ember
