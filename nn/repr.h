#pragma once
// Values written the way Python's repr() writes them, so that extra_repr() and the printed
// module tree read exactly like PyTorch's ("eps=1e-05", "bias=True", "kernel_size=(3, 3)").

#include <string>

#include "core/tensor.h"

namespace ember::nn {

// The shortest decimal that reads back as v, positional for exponents in [-4, 16) and
// scientific otherwise, as Python prints floats: "0.01", "0.5", "1.0", "1e-05", "inf", "nan".
std::string python_float(double v);
// "True" / "False".
inline const char* python_bool(bool b) { return b ? "True" : "False"; }
// A tuple of ints: "(3,)", "(3, 3)".
std::string python_tuple(const Shape& v);

}  // namespace ember::nn
