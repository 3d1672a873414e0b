#pragma once
// Which implementation runs softmax / log_softmax and batch_norm's forward on a cuda device: the
// normalisation family's switch, next to the convolution's (core/conv_backend.h; one header per
// op family, so each family's switch, variable and cache stay independent).
//
//   ember::set_norm_backend(ember::NormBackend::cudnn);   // or EMBER_NORM=cudnn
//
// - ember (the default): the hand-written kernels (kernels/cuda/softmax.cu, norm.cu).
// - cudnn: cuDNN 9, the reference (builds with EMBER_CUDA=real only; in a simulator build a
//   softmax or batch_norm on cuda then raises an ember::Error saying so). cuDNN runs
//   softmax / log_softmax over the last dim of a contiguous float32 / float16 / bfloat16 input
//   (cudnnSoftmaxForward, CUDNN_SOFTMAX_ACCURATE / CUDNN_SOFTMAX_LOG), and batch_norm's
//   training and eval forward on float32 (cudnnBatchNormalizationForwardTraining / Inference,
//   spatial mode, eps >= CUDNN_BN_MIN_EPSILON, more than one value per channel in training).
//   Every other case (dim not last, a strided input, other dtypes, backward passes) runs the
//   ember kernel: Note [Norm backends on CUDA] in kernels/cuda/norm_cudnn.h.
// - auto: per op and shape, times ember against cuDNN once with events, caches the faster and
//   prints one line per shape to stderr. Where cuDNN is not built, or cannot run the case, it
//   runs ember.
// The API call wins over EMBER_NORM (ember | cudnn | auto, read at each op until the API sets
// one); a bad value of EMBER_NORM raises an ember::Error naming it. CPU ops ignore the switch.

#include <string>

namespace ember {

enum class NormBackend { ember, cudnn, automatic };

// Sets the backend for every thread (overrides EMBER_NORM).
void set_norm_backend(NormBackend backend);
// Forgets set_norm_backend's choice: EMBER_NORM decides again.
void reset_norm_backend();
// The backend in effect: the last set_norm_backend, else EMBER_NORM, else ember.
NormBackend norm_backend();
// "ember", "cudnn" or "auto".
const char* norm_backend_name(NormBackend backend);
// The backend named `name` ("ember", "cudnn" or "auto"); anything else raises, naming `what`.
NormBackend parse_norm_backend(const std::string& name, const char* what = "EMBER_NORM");

}  // namespace ember
