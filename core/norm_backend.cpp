// The norm backend switch (core/norm_backend.h).

#include "core/norm_backend.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace ember {

namespace {
// -1: not set by the API (then EMBER_NORM decides); else a NormBackend.
std::atomic<int> chosen{-1};
}  // namespace

NormBackend parse_norm_backend(const std::string& name, const char* what) {
  if (name == "ember") return NormBackend::ember;
  if (name == "cudnn") return NormBackend::cudnn;
  if (name == "auto") return NormBackend::automatic;
  EMBER_ERROR(what, ": expected ember, cudnn or auto, got \"", name, "\"");
}

void set_norm_backend(NormBackend backend) { chosen.store(static_cast<int>(backend)); }

void reset_norm_backend() { chosen.store(-1); }

NormBackend norm_backend() {
  const int c = chosen.load();
  if (c >= 0) return static_cast<NormBackend>(c);
  const char* env = std::getenv("EMBER_NORM");
  return env == nullptr || *env == '\0' ? NormBackend::ember : parse_norm_backend(env);
}

const char* norm_backend_name(NormBackend backend) {
  switch (backend) {
    case NormBackend::ember:
      return "ember";
    case NormBackend::cudnn:
      return "cudnn";
    case NormBackend::automatic:
      return "auto";
  }
  return "?";
}

}  // namespace ember
