#include "core/generator.h"

#include <array>
#include <memory>

#include "core/ops/copy.h"
#include "core/ops/factory.h"

namespace ember {

Generator::Generator(uint64_t seed, Device device) : seed_(seed), device_(device) {}

void Generator::manual_seed(uint64_t s) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = s;
  offset_ = 0;
}

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}

PhiloxState Generator::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  PhiloxState s{seed_, offset_};
  offset_ += blocks;
  return s;
}

Tensor Generator::get_state() const {
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seed = seed_;
    offset = offset_;
  }
  Tensor state = empty({kStateSize}, kUInt8);
  uint8_t* p = state.data_ptr<uint8_t>();
  for (int b = 0; b < 8; ++b) {
    p[b] = static_cast<uint8_t>(seed >> (8 * b));
    p[8 + b] = static_cast<uint8_t>(offset >> (8 * b));
  }
  return state;
}

void Generator::set_state(const Tensor& state) {
  // Any 16 bytes are a valid (seed, offset); only the tensor itself can be wrong.
  EMBER_CHECK(state.defined(), "Generator::set_state: undefined state tensor");
  EMBER_CHECK(state.dtype() == kUInt8 && state.dim() == 1 && state.numel() == kStateSize,
              "Generator::set_state: expected a uint8 tensor of ", kStateSize,
              " bytes (seed and offset) as get_state() returns, got dtype ",
              dtype_name(state.dtype()), " and shape ", state.sizes());
  EMBER_CHECK(state.is_cpu(), "Generator::set_state: the state must be a cpu tensor, got one on ",
              state.device());
  Tensor c = native::contiguous(state);
  const uint8_t* p = c.data_ptr<uint8_t>();
  uint64_t seed = 0, offset = 0;
  for (int b = 0; b < 8; ++b) {
    seed |= static_cast<uint64_t>(p[b]) << (8 * b);
    offset |= static_cast<uint64_t>(p[8 + b]) << (8 * b);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = offset;
}

namespace {

// The default generators, created on first use with the last manual_seed (or kDefaultSeed).
struct DefaultGenerators {
  std::mutex mutex;
  uint64_t seed = kDefaultSeed;
  Generator cpu{kDefaultSeed, kCPU};
  std::array<std::unique_ptr<Generator>, kMaxCudaDevices> cuda;
};

DefaultGenerators& defaults() {
  static DefaultGenerators d;
  return d;
}

}  // namespace

Generator& default_generator(Device device) {
  DefaultGenerators& d = defaults();
  if (device.is_cpu()) return d.cpu;
  EMBER_CHECK(device.index >= 0 && device.index < kMaxCudaDevices, "default_generator: device ",
              device, " is out of range (at most ", kMaxCudaDevices, " CUDA devices)");
  std::lock_guard<std::mutex> lock(d.mutex);
  auto& slot = d.cuda[static_cast<size_t>(device.index)];
  if (!slot) slot = std::make_unique<Generator>(d.seed, device);
  return *slot;
}

void manual_seed(uint64_t seed) {
  DefaultGenerators& d = defaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.seed = seed;
  d.cpu.manual_seed(seed);
  for (auto& g : d.cuda)
    if (g) g->manual_seed(seed);
}

Tensor get_rng_state() { return default_generator(kCPU).get_state(); }
void set_rng_state(const Tensor& state) { default_generator(kCPU).set_state(state); }

}  // namespace ember
