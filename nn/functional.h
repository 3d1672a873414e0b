#pragma once
// ember::nn::functional: the stateless forms of the layers and losses (PyTorch's
// torch.nn.functional). Each layer header declares its functional form next to its Module;
// this header gathers them.
//
//   namespace F = ember::nn::functional;
//   Tensor y = F::relu(F::conv2d(x, w, b, /*stride*/ {1}, /*padding*/ "same"));
//   Tensor loss = F::cross_entropy(logits, target);

#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/normalization.h"
#include "nn/pooling.h"
