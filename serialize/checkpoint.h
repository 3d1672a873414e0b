#pragma once
// Saving and loading models and whole training runs (PyTorch's torch.save / torch.load of
// state dicts, and the "checkpoint dict" idiom), on top of safetensors (serialize/safetensors.h).
//
//   save_state_dict(model->state_dict(), "model.safetensors");
//   model->load_state_dict(load_state_dict("model.safetensors", /*map_location=*/kCPU));
//
//   TrainingState run{model.get(), &optimizer, &scheduler, /*plateau*/ nullptr, &loader};
//   save_checkpoint("ckpt/last.safetensors", run, {epoch, step, {{"best_acc", "0.91"}}});
//   ...
//   CheckpointInfo info = load_checkpoint("ckpt/last.safetensors", run);   // resumes exactly
//
// A checkpoint is ONE safetensors file, so it is written atomically (temporary file, fsync,
// rename: a process killed mid-save leaves the previous checkpoint intact) and it opens in any
// safetensors reader. Its tensors are prefixed by part:
//   "model.<key>"       the model's state_dict
//   "optimizer.<key>"   Optimizer::state_dict (Note [Optimizer state_dict keys])
//   "scheduler.<key>"   LRScheduler::state_dict, "plateau.<key>" ReduceLROnPlateau's
//   "scaler.<key>"      amp::GradScaler::state_dict (optim/grad_scaler.h)
//   "rng.cpu"           the default cpu Generator's state (uint8 [16]); "rng.cuda.<i>", the
//                       default generator of cuda:<i>, is read when present (see below)
// and its "__metadata__" holds "format" = "ember-checkpoint/1", "epoch", "step", "parts" (the
// parts saved, comma-separated, from "model,optimizer,scheduler,plateau,scaler,loader,rng"), the
// loader's position ("loader.epoch", "loader.batches_done", "loader.seed", decimal) and the
// caller's extras ("extra.<key>"), plus the checksum of each tensor that every safetensors file
// ember writes carries (Note [safetensors checksums] in safetensors.h: a damaged byte makes the
// load fail naming the tensor, "tensor 'model.0.weight': the data is corrupt (crc32
// mismatch...)"; checkpoints written before the checksums existed load unverified). Resuming
// restores every part given, the generators and the loader's position, so that training
// continues bit for bit as if it had never stopped (the batches, the dropout masks, the learning
// rates and the optimizer moments are all the same).
// Only the default generators are saved: a private Generator the program owns is its own to
// save (Generator::get_state). The CUDA generators ("rng.cuda.<i>") are restored when a file has
// them; saving them waits for the CUDA backend (a CUDA build needs a device count to list them).
//
// Loading checks that the file is a checkpoint, that the parts the caller passes are in it, and
// leaves each part's own checks (missing keys, shapes) to that part's load_state_dict; any
// failure is an ember::Error naming the file and the part ("load_checkpoint: 'last.safetensors':
// optimizer: ..."), and leaves every part and generator as it was. Parts in the file that the
// caller does not pass are not restored (load a model alone from a full checkpoint with
// TrainingState{model.get()}).
//
// Note [Checkpoint temporary files]
// save_file writes "<path>.tmp.<pid>.<n>.<salt>" and renames it over <path>. A writer killed
// mid-save (SIGKILL, power loss) cannot remove its temporary file, so save_state_dict and
// save_checkpoint first remove the temporary files of <path> left by processes that no longer
// exist (remove_stale_temp_files): however often saves are killed, at most one leftover per
// concurrent writer remains next to a checkpoint. The test is "no process with that pid on this
// machine", so do not share one checkpoint path between machines or pid namespaces.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/device.h"
#include "serialize/safetensors.h"

namespace ember {
namespace nn {
class Module;
}
namespace optim {
class Optimizer;
class LRScheduler;
class ReduceLROnPlateau;
}  // namespace optim
namespace data {
class DataLoader;
}
namespace amp {
class GradScaler;
}

// Writes a state dict (e.g. Module::state_dict()) as a safetensors file, atomically.
void save_state_dict(const TensorDict& dict, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});
// Reads one back; with map_location, every tensor is moved to that device (PyTorch's
// map_location), else they stay on the cpu.
TensorDict load_state_dict(const std::string& path,
                           std::optional<Device> map_location = std::nullopt);

// The parts of a training run that a checkpoint saves and restores. Null parts are skipped.
struct TrainingState {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
  optim::ReduceLROnPlateau* plateau = nullptr;
  data::DataLoader* loader = nullptr;
  amp::GradScaler* scaler = nullptr;
};

struct CheckpointInfo {
  int64_t epoch = 0;  // the caller's counters, returned as saved
  int64_t step = 0;
  std::map<std::string, std::string> extra;
};

// The value of "format" in a checkpoint's metadata.
inline constexpr const char* kCheckpointFormat = "ember-checkpoint/1";

// Writes every non-null part of `state`, the default cpu generator and `info` to `path`,
// atomically (see above). Extra keys must be non-empty.
void save_checkpoint(const std::string& path, const TrainingState& state,
                     const CheckpointInfo& info);
// Restores every non-null part of `state` and the generators; returns the counters. With
// map_location the file's tensors are moved to that device first (PyTorch's torch.load); either
// way each part copies them into its own tensors, so a model's parameters keep their device
// and an optimizer's state follows its parameters'.
CheckpointInfo load_checkpoint(const std::string& path, const TrainingState& state,
                               std::optional<Device> map_location = std::nullopt);

// The counters and extras of the checkpoint at `path`, read from its header alone (no tensor is
// read, nothing is restored; the same checks of the format as load_checkpoint): a look at the
// settings a checkpoint was written with before loading it (ember-train's --resume compares
// them with its own first).
CheckpointInfo read_checkpoint_info(const std::string& path);

// Removes the temporary files of `path` that crashed writers left behind (Note [Checkpoint
// temporary files]) and returns how many it removed. Files of live processes (this one
// included) are left alone. The saves above call it; call it yourself to tidy a directory.
size_t remove_stale_temp_files(const std::string& path);

}  // namespace ember
