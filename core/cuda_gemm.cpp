#include "core/cuda_gemm.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

#if defined(EMBER_WITH_CUDA)
namespace ember::kernels::cuda::wgmma {
bool available(int device);  // kernels/cuda/gemm.cu
}  // namespace ember::kernels::cuda::wgmma
#endif

namespace ember::cuda {

namespace {

GemmBackend parse_backend(const std::string& name, const char* where) {
  if (name == "ember") return GemmBackend::ember;
  if (name == "cublas") return GemmBackend::cublas;
  if (name == "auto") return GemmBackend::autotune;
  EMBER_ERROR(where, ": unknown GEMM backend '", name, "' (expected ember, cublas or auto)");
}

int parse_variant(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  EMBER_CHECK(!text.empty() && *end == '\0' && v >= 0 && v <= 9, "EMBER_GEMM_VARIANT: expected ",
              "0 (the default) or a variant 1..9, got '", text, "'");
  return static_cast<int>(v);
}

void check_variant(int variant) {
  EMBER_CHECK(variant >= 0 && variant <= 9, "set_gemm_variant: expected 0 (the default) or a ",
              "variant 1..9, got ", variant);
}

struct State {
  std::mutex mutex;
  bool initialised = false;
  GemmBackend backend = GemmBackend::ember;
  int variant = 0;
  GemmTuning tuning;
  std::vector<GemmChoice> choices;
};

std::atomic<int> g_fault{0};  // read on every GEMM: no lock

State& state() {
  static State s;
  return s;
}

// The state with the environment read (the caller holds the mutex).
State& ready(State& s) {
  if (!s.initialised) {
    s.initialised = true;
    if (const char* e = std::getenv("EMBER_GEMM"); e != nullptr && *e != '\0')
      s.backend = parse_backend(e, "EMBER_GEMM");
    if (const char* v = std::getenv("EMBER_GEMM_VARIANT"); v != nullptr && *v != '\0')
      s.variant = parse_variant(v);
  }
  return s;
}

}  // namespace

const char* gemm_backend_name(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::ember:
      return "ember";
    case GemmBackend::cublas:
      return "cublas";
    case GemmBackend::autotune:
      return "auto";
  }
  return "?";
}

GemmBackend gemm_backend() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return ready(s).backend;
}

void set_gemm_backend(GemmBackend backend) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ready(s).backend = backend;
}

void set_gemm_backend(const std::string& name) {
  set_gemm_backend(parse_backend(name, "set_gemm_backend"));
}

int gemm_variant() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return ready(s).variant;
}

void set_gemm_variant(int variant) {
  check_variant(variant);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ready(s).variant = variant;
}

GemmTuning gemm_tuning() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.tuning;
}

void set_gemm_tuning(GemmTuning tuning) {
  EMBER_CHECK(tuning.min_blocks == 1 || tuning.min_blocks == 2,
              "set_gemm_tuning: min_blocks must be 1 or 2, got ", tuning.min_blocks);
  EMBER_CHECK(tuning.stages >= 2 && tuning.stages <= 4,
              "set_gemm_tuning: stages must be 2, 3 or 4, got ", tuning.stages);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tuning = tuning;
}

std::vector<GemmChoice> gemm_autotune_choices() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.choices;
}

void clear_gemm_autotune_cache() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.choices.clear();
}

std::string detail::find_gemm_choice(const std::string& key) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const GemmChoice& c : s.choices)
    if (c.key == key) return c.choice;
  return "";
}

void detail::record_gemm_choice(const GemmChoice& choice) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (GemmChoice& c : s.choices) {
    if (c.key == choice.key) {
      c = choice;
      return;
    }
  }
  s.choices.push_back(choice);
}

void detail::set_gemm_fault(int variant) { g_fault.store(variant, std::memory_order_relaxed); }

int detail::gemm_fault() { return g_fault.load(std::memory_order_relaxed); }

bool gemm_wgmma_available(int device) {
#if defined(EMBER_WITH_CUDA)
  return kernels::cuda::wgmma::available(device);
#else
  (void)device;
  return false;
#endif
}

}  // namespace ember::cuda
