#pragma once
// The one header for programs that embed ember (like torch/torch.h):
//
//   #include <ember/ember.h>
//   auto x = ember::randn({2, 3});
//   auto y = (x * 2).exp().sum();
//   x.requires_grad_(); ... y.backward();   // autograd: autograd/autograd.h

#include "autograd/autograd.h"
#include "autograd/ops/ops.h"
#include "core/allocator.h"
#include "core/conv_backend.h"
#include "core/cuda.h"
#include "core/determinism.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/generator.h"
#include "core/parallel.h"
#include "core/profiler.h"
#include "core/scalar.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/sampler.h"
#include "data/transforms.h"
#include "distributed/ddp.h"
#include "distributed/env.h"
#include "distributed/error.h"
#include "distributed/file_store.h"
#include "distributed/hash_store.h"
#include "distributed/prefix_store.h"
#include "distributed/process_group.h"
#include "distributed/process_group_gloo.h"
#include "distributed/process_group_nccl.h"
#include "distributed/store.h"
#include "distributed/sync_batch_norm.h"
#include "distributed/tcp_store.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "serialize/checkpoint.h"
#include "serialize/safetensors.h"
