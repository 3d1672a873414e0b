#pragma once
// Which implementation runs conv2d and its backward on a cuda device (PyTorch's
// torch.backends.cudnn.enabled / .benchmark, as one switch).
//
//   ember::set_conv_backend(ember::ConvBackend::cudnn);   // or EMBER_CONV=cudnn
//
// - ember (the default): the hand-written implicit-GEMM kernels (kernels/cuda/conv.cu).
// - cudnn: cuDNN 9, the reference (builds with EMBER_CUDA=real only; in a simulator build a
//   conv on cuda then raises an ember::Error saying so). Deterministic mode (core/determinism.h)
//   restricts it to cuDNN's deterministic algorithms.
// - auto: per conv shape (and pass: forward, grad_input, grad_weight), times ember against cuDNN
//   once with events, caches the faster and prints one line per shape to stderr. Where cuDNN is
//   not built it runs ember.
// The API call wins over EMBER_CONV (ember | cudnn | auto, read at the first conv); a bad value
// of EMBER_CONV raises an ember::Error naming it. CPU convolutions ignore the switch.

#include <string>

namespace ember {

enum class ConvBackend { ember, cudnn, automatic };

// Sets the backend for every thread (overrides EMBER_CONV).
void set_conv_backend(ConvBackend backend);
// The backend in effect: the last set_conv_backend, else EMBER_CONV, else ember.
ConvBackend conv_backend();
// "ember", "cudnn" or "auto".
const char* conv_backend_name(ConvBackend backend);
// The backend named `name` ("ember", "cudnn" or "auto"); anything else raises, naming `what`.
ConvBackend parse_conv_backend(const std::string& name, const char* what = "EMBER_CONV");

}  // namespace ember
