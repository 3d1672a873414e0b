// Printing tensors the way PyTorch does:
//   tensor([[1.0000, 2.5000]], dtype=float64)     4 decimals when values are not all integers
//   tensor([1., 2.])                               integer-valued floats end in "."
//   tensor([1.0000e-05, 1.0000e+03])               scientific when the range is wide
//   tensor([1, 2, 3])                              int64 and float32 print no dtype
//   tensor([[ 0,  1,  2, ..., 97, 98, 99], ...])   summarised past 1000 elements
// Columns are padded to the widest entry.

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/ops/copy.h"
#include "core/ops/view.h"
#include "core/tensor.h"

namespace ember {

namespace {

constexpr int64_t kThreshold = 1000;  // summarise tensors with more elements than this
constexpr int64_t kEdgeItems = 3;     // entries kept at each end of a summarised dim
constexpr int kPrecision = 4;

struct Formatter {
  enum class Mode { Int, Bool, FloatInt, Fixed, Sci } mode = Mode::Fixed;
  int width = 1;

  std::string raw(double v) const {
    char buf[64];
    switch (mode) {
      case Mode::Bool:
        return v != 0 ? "True" : "False";
      case Mode::Int:
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
        return buf;
      default:
        break;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (mode == Mode::FloatInt) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else if (mode == Mode::Sci) {
      std::snprintf(buf, sizeof buf, "%.*e", kPrecision, v);
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", kPrecision, v);
    }
    return buf;
  }
  std::string operator()(double v) const {
    std::string s = raw(v);
    return std::string(static_cast<size_t>(std::max<int>(0, width - static_cast<int>(s.size()))),
                       ' ') +
           s;
  }
};

// The values that will be shown (summarised tensors show only their edges).
void collect(const Tensor& t, bool summarize, std::vector<double>& out) {
  if (t.dim() == 0) {
    out.push_back(t.item<double>());
    return;
  }
  int64_t n = t.size(0);
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    collect(native::select(t, 0, i), summarize, out);
  }
}

Formatter make_formatter(const Tensor& t, const std::vector<double>& vals) {
  Formatter f;
  if (t.dtype() == kBool) {
    f.mode = Formatter::Mode::Bool;
  } else if (!t.is_floating_point()) {
    f.mode = Formatter::Mode::Int;
  } else {
    bool all_int = true;
    double max_abs = 0, min_abs = INFINITY;
    bool any_finite = false;
    for (double v : vals) {
      if (!std::isfinite(v)) continue;
      any_finite = true;
      if (v != std::floor(v)) all_int = false;
      double a = std::abs(v);
      max_abs = std::max(max_abs, a);
      if (a != 0) min_abs = std::min(min_abs, a);
    }
    if (!any_finite) {
      f.mode = Formatter::Mode::Fixed;
    } else if (all_int) {
      f.mode = max_abs > 1e8 ? Formatter::Mode::Sci : Formatter::Mode::FloatInt;
    } else if (max_abs > 1e8 ||
               (min_abs != INFINITY && (max_abs / min_abs > 1000 || min_abs < 1e-4))) {
      f.mode = Formatter::Mode::Sci;
    } else {
      f.mode = Formatter::Mode::Fixed;
    }
  }
  for (double v : vals) f.width = std::max<int>(f.width, static_cast<int>(f.raw(v).size()));
  return f;
}

void print_rec(std::ostream& os, const Tensor& t, const Formatter& f, bool summarize, int indent) {
  if (t.dim() == 0) {
    os << f(t.item<double>());
    return;
  }
  int64_t n = t.size(0);
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      if (t.dim() == 1) {
        os << " ..., ";
      } else {
        os << "...,\n" << std::string(t.dim() > 2 ? 1 : 0, '\n') << std::string(indent + 1, ' ');
      }
      i = n - kEdgeItems;
    }
    print_rec(os, native::select(t, 0, i), f, summarize, indent + 1);
    if (i + 1 < n) {
      if (t.dim() == 1) {
        os << ", ";
      } else {
        os << ",\n"
           << std::string(static_cast<size_t>(t.dim() - 2), '\n') << std::string(indent + 1, ' ');
      }
    }
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t_in) {
  if (!t_in.defined()) return os << "tensor(undefined)";
  Tensor t = t_in.is_cpu() ? t_in : native::to(t_in, kCPU);
  std::vector<std::string> suffix;
  if (!t_in.is_cpu()) suffix.push_back("device='" + t_in.device().str() + "'");
  os << "tensor(";
  if (t.numel() == 0 && t.dim() > 0) {
    os << "[]";
    if (t.dim() != 1) suffix.insert(suffix.begin(), "size=" + shape_str(t.sizes()));
  } else {
    bool summarize = t.numel() > kThreshold;
    std::vector<double> vals;
    collect(t, summarize, vals);
    Formatter f = make_formatter(t, vals);
    print_rec(os, t, f, summarize, 7);
  }
  if (t.dtype() != kFloat32 && t.dtype() != kInt64 && t.dtype() != kBool)
    suffix.push_back(std::string("dtype=") + dtype_name(t.dtype()));
  for (auto& s : suffix) os << ", " << s;
  return os << ')';
}

}  // namespace ember
