// The conv backend switch (core/conv_backend.h).

#include "core/conv_backend.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace ember {

namespace {
// -1: not set by the API (then EMBER_CONV decides); else a ConvBackend.
std::atomic<int> chosen{-1};
}  // namespace

ConvBackend parse_conv_backend(const std::string& name, const char* what) {
  if (name == "ember") return ConvBackend::ember;
  if (name == "cudnn") return ConvBackend::cudnn;
  if (name == "auto") return ConvBackend::automatic;
  EMBER_ERROR(what, ": expected ember, cudnn or auto, got \"", name, "\"");
}

void set_conv_backend(ConvBackend backend) { chosen.store(static_cast<int>(backend)); }

ConvBackend conv_backend() {
  const int c = chosen.load();
  if (c >= 0) return static_cast<ConvBackend>(c);
  const char* env = std::getenv("EMBER_CONV");
  return env == nullptr || *env == '\0' ? ConvBackend::ember : parse_conv_backend(env);
}

const char* conv_backend_name(ConvBackend backend) {
  switch (backend) {
    case ConvBackend::ember:
      return "ember";
    case ConvBackend::cudnn:
      return "cudnn";
    case ConvBackend::automatic:
      return "auto";
  }
  return "?";
}

}  // namespace ember
