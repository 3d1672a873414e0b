#pragma once
// A fixture for the test layer_includes_catch_upward: a core header that includes a header of
// the autograd layer, which cmake/check_layers.cmake must refuse. Never compiled.
#include "autograd/node.h"
