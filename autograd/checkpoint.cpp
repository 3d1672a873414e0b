#include "autograd/checkpoint.h"

#include <any>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/saved_hooks.h"
#include "core/generator.h"
#include "core/record_function.h"

namespace ember::autograd {

namespace {

thread_local int recomputing_depth = 0;
std::atomic<int64_t> recomputations{0};

std::string describe(DType dtype, const Shape& sizes, Device device) {
  return std::string(dtype_name(dtype)) + " " + shape_str(sizes) + " on " + device.str();
}

// One saved tensor of the region (Note [Activation checkpointing]).
struct Slot {
  Shape sizes;  // what the forward saved
  DType dtype = DType::Float32;
  Device device;
  Tensor value;  // the rerun's tensor, until its node reads it
  uint32_t version = 0;
  bool filled = false;
  bool alive = true;  // its SavedVariable still exists
};

// The autocast state of one device type, as the forward saw it.
struct AutocastState {
  bool enabled;
  DType dtype;
  static AutocastState of(DeviceType d) {
    return {autocast::is_enabled(d), autocast::get_dtype(d)};
  }
};

class Frame : public std::enable_shared_from_this<Frame> {
 public:
  Frame(CheckpointFn fn, const Tensors& inputs, const CheckpointOptions& options)
      : fn_(std::move(fn)),
        inputs_(inputs),
        options_(options),
        autocast_cpu_(AutocastState::of(DeviceType::CPU)),
        autocast_cuda_(AutocastState::of(DeviceType::CUDA)) {
    for (const Tensor& t : inputs_) versions_.push_back(t.defined() ? t.version() : 0);
    if (options_.preserve_rng_state) {
      rng_.emplace_back(kCPU, default_generator(kCPU).get_state());
      for (const Tensor& t : inputs_) {
        if (!t.defined() || t.device().is_cpu()) continue;
        bool seen = false;
        for (const auto& [device, state] : rng_) seen = seen || device == t.device();
        if (!seen) rng_.emplace_back(t.device(), default_generator(t.device()).get_state());
      }
    }
  }

  // The hooks the forward runs under: each saved tensor becomes a slot.
  std::shared_ptr<const SavedTensorHooks> forward_hooks() {
    std::weak_ptr<Frame> weak = weak_from_this();
    auto hooks = std::make_shared<SavedTensorHooks>();
    hooks->pack = [weak](const Tensor& t) -> std::any {
      std::shared_ptr<Frame> frame = weak.lock();
      EMBER_INTERNAL_ASSERT(frame != nullptr, "checkpoint: the frame died during its forward");
      return std::make_shared<Handle>(frame, frame->add_slot(t));
    };
    hooks->unpack = [](const std::any& packed) {
      const auto& handle = std::any_cast<const std::shared_ptr<Handle>&>(packed);
      return handle->frame->take(handle->index);
    };
    return hooks;
  }

 private:
  // A saved tensor's claim on its slot; destroyed with its SavedVariable.
  struct Handle {
    Handle(std::shared_ptr<Frame> f, size_t i) : frame(std::move(f)), index(i) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { frame->release(index); }
    std::shared_ptr<Frame> frame;
    size_t index;
  };

  size_t add_slot(const Tensor& t) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot s;
    s.sizes = t.sizes();
    s.dtype = t.dtype();
    s.device = t.device();
    slots_.push_back(std::move(s));
    return slots_.size() - 1;
  }

  void release(size_t k) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& s = slots_[k];
    s.alive = false;
    s.filled = false;
    s.value = Tensor();
  }

  Tensor take(size_t k) {
    bool filled;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      filled = slots_[k].filled;
    }
    if (!filled) recompute();
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& s = slots_[k];
    EMBER_CHECK(s.filled, "checkpoint: the recomputation saved only ", cursor_,
                " tensors for backward, but the forward saved ", slots_.size(), " (tensor ", k,
                ", ", describe(s.dtype, s.sizes, s.device),
                ", is missing): the checkpointed function must run the same ops each time");
    if (s.value.version() != s.version) {
      EMBER_ERROR(
          "checkpoint: one of the variables needed for gradient computation has been modified "
          "by an inplace operation during the recomputation: [",
          describe(s.dtype, s.sizes, s.device), "] (saved tensor ", k,
          " of the checkpointed region) is at version ", s.value.version(), "; expected version ",
          s.version,
          " instead. Without checkpointing this is the same error. Hint: replace the in-place "
          "op that changed it by its out-of-place form.");
    }
    Tensor t = std::move(s.value);
    s.value = Tensor();
    s.filled = false;
    return t;
  }

  void check_inputs() const {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = inputs_[i];
      if (!t.defined() || t.version() == versions_[i]) continue;
      EMBER_ERROR("checkpoint: input ", i, " (", describe(t.dtype(), t.sizes(), t.device()),
                  ") of the checkpointed function was modified in place after the forward "
                  "(version ",
                  versions_[i], ", now ", t.version(),
                  "): the recomputation would see other values than the forward did. Clone "
                  "the input before changing it, or change it after backward.");
    }
  }

  // The rerun's hooks: the k-th saved tensor fills slot k.
  std::shared_ptr<const SavedTensorHooks> recompute_hooks(bool keep_history) {
    auto hooks = std::make_shared<SavedTensorHooks>();
    hooks->pack = [this, keep_history](const Tensor& t) -> std::any {
      const size_t k = cursor_++;
      if (options_.determinism_check) {
        EMBER_CHECK(k < slots_.size(),
                    "checkpoint: the recomputation saved more tensors for "
                    "backward than the forward (",
                    slots_.size(),
                    "): the checkpointed function must run the same ops each time "
                    "(determinism_check=false turns this check off)");
        const Slot& s = slots_[k];
        EMBER_CHECK(s.sizes == t.sizes() && s.dtype == t.dtype() && s.device == t.device(),
                    "checkpoint: saved tensor ", k, " of the recomputation is ",
                    describe(t.dtype(), t.sizes(), t.device()), ", but the forward saved ",
                    describe(s.dtype, s.sizes, s.device),
                    ": the checkpointed function must run the same ops on the same shapes each "
                    "time (determinism_check=false turns this check off)");
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (k < slots_.size() && slots_[k].alive && !slots_[k].filled) {
        Slot& s = slots_[k];
        s.value = keep_history ? t : t.detach();
        s.version = t.version();
        s.filled = true;
      }
      // Under create_graph the rerun's own graph is the path of the second backward.
      return keep_history ? std::any(t) : std::any();
    };
    hooks->unpack = [](const std::any& packed) {
      const Tensor* t = std::any_cast<Tensor>(&packed);
      EMBER_INTERNAL_ASSERT(t != nullptr, "checkpoint: a node of a recomputation ran backward");
      return *t;
    };
    return hooks;
  }

  void recompute() {
    EMBER_CHECK(!running_,
                "checkpoint: backward reached a checkpointed region while recomputing it (does "
                "the checkpointed function call backward or grad on its own graph?)");
    check_inputs();
    profiler::RecordFunction range("checkpoint.recompute", profiler::Category::user);
    const bool keep_history = is_grad_enabled();  // the engine runs with create_graph's mode
    struct Running {
      Frame& f;
      explicit Running(Frame& frame) : f(frame) {
        f.running_ = true;
        ++recomputing_depth;
      }
      ~Running() {
        f.running_ = false;
        --recomputing_depth;
      }
    } running(*this);
    cursor_ = 0;
    {
      RngFork rng(rng_);
      std::optional<autocast::AutocastGuard> cpu, cuda;
      restore_autocast(DeviceType::CPU, autocast_cpu_, cpu);
      restore_autocast(DeviceType::CUDA, autocast_cuda_, cuda);
      EnableGradGuard grad;
      SavedTensorsHooksGuard hooks(recompute_hooks(keep_history));
      Tensors outputs = fn_(inputs_);
    }
    EMBER_CHECK(!options_.determinism_check || cursor_ == slots_.size(),
                "checkpoint: the recomputation saved ", cursor_,
                " tensors for backward, but the forward saved ", slots_.size(),
                ": the checkpointed function must run the same ops each time "
                "(determinism_check=false turns this check off)");
    recomputations.fetch_add(1, std::memory_order_relaxed);
  }

  static void restore_autocast(DeviceType d, const AutocastState& was,
                               std::optional<autocast::AutocastGuard>& guard) {
    const AutocastState now = AutocastState::of(d);
    if (now.enabled == was.enabled && (!was.enabled || now.dtype == was.dtype)) return;
    guard.emplace(d, was.dtype, was.enabled);
  }

  // Sets the recorded generator states for the rerun; puts the current ones back after.
  class RngFork {
   public:
    explicit RngFork(const std::vector<std::pair<Device, Tensor>>& states) {
      for (const auto& [device, state] : states) {
        Generator& g = default_generator(device);
        saved_.emplace_back(&g, g.get_state());
        g.set_state(state);
      }
    }
    ~RngFork() {
      for (auto& [g, state] : saved_) g->set_state(state);
    }
    RngFork(const RngFork&) = delete;
    RngFork& operator=(const RngFork&) = delete;

   private:
    std::vector<std::pair<Generator*, Tensor>> saved_;
  };

  CheckpointFn fn_;
  Tensors inputs_;
  std::vector<uint32_t> versions_;
  CheckpointOptions options_;
  std::vector<std::pair<Device, Tensor>> rng_;
  AutocastState autocast_cpu_, autocast_cuda_;
  std::vector<Slot> slots_;
  size_t cursor_ = 0;
  bool running_ = false;
  // Slots are filled by the rerun on the backward thread; a graph may be freed on another.
  std::mutex mutex_;
};

}  // namespace

Tensors checkpoint(const CheckpointFn& fn, const Tensors& inputs,
                   const CheckpointOptions& options) {
  EMBER_CHECK(fn != nullptr, "checkpoint: no function given");
  if (!is_grad_enabled()) return fn(inputs);
  auto frame = std::make_shared<Frame>(fn, inputs, options);
  SavedTensorsHooksGuard hooks(frame->forward_hooks());
  return fn(inputs);
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  const CheckpointOptions& options) {
  EMBER_CHECK(fn != nullptr, "checkpoint: no function given");
  Tensors out =
      checkpoint([fn](const Tensors& in) { return Tensors{fn(in[0])}; }, {input}, options);
  return out[0];
}

bool is_recomputing() { return recomputing_depth > 0; }

int64_t num_recomputations() { return recomputations.load(std::memory_order_relaxed); }

}  // namespace ember::autograd
