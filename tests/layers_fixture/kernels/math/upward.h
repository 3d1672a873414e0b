#pragma once
// A fixture for the test layer_includes_catch_upward: a kernels/math header that includes a
// core header other than the vocabulary ones (macros, half, dtype, error). Never compiled.
#include "core/tensor.h"
