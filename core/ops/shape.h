#pragma once
// Placeholder until the family lands.
#include "core/tensor.h"
