#pragma once
// TensorDict: an ordered name -> tensor list, the one dictionary type of ember. A module's
// state_dict (nn::StateDict is this type), an optimizer's or scheduler's flat state dict
// (Note [Optimizer state_dict keys] in optim/optimizer.h) and the tensors of a safetensors file
// (serialize/safetensors.h) are all TensorDicts, so any of them saves to one file and loads
// back without conversion. Order is kept: registration order for modules, file order for files.

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ember {

using TensorDict = std::vector<std::pair<std::string, Tensor>>;

}  // namespace ember
