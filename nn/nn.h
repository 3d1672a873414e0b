#pragma once
// ember::nn: modules, layers, their functional forms, losses, initialisation and gradient
// clipping (PyTorch's torch.nn).

#include "nn/checkpoint.h"
#include "nn/clip_grad.h"
#include "nn/container.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/module.h"
