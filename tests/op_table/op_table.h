#pragma once
// The op table (DESIGN.md "The op table drives the tests").
//
// Every op ember registers (core/op_registry.h) has an OpInfo here, in the file of its family
// (tests/op_table/<family>_ops.cpp). An OpInfo says which dtypes the op supports, makes sample
// inputs for a dtype -- broadcasting, non-contiguous views, sizes 0 and 1 -- runs the op, and
// computes a reference in float64 with naive loops over RefTensor. tests/test_op_table.cpp walks
// the table: forward against the reference for every op, dtype and sample, and fails for a
// registered op with no entry.
//
// The same entries run in two executables. ember_tests links the library: `add(a, b)` and
// `x.exp()` are the public, recording ops, and the suite adds gradcheck. core_tests links
// ember_core alone and defines EMBER_OP_TABLE_NATIVE: only core's headers are seen, the free
// functions resolve to ember::native (the using-directive below) and the methods to their
// native twins (tests/core/native_methods.cpp), so every core op's forward is checked without
// autograd (Note [Where an op lives] in autograd/ops/ops.h). Entries of the nn families are
// ember_tests only.

#include <functional>
#include <random>
#include <string>
#include <vector>

#ifdef EMBER_OP_TABLE_NATIVE
#include "core/generator.h"
#include "core/ops/binary.h"
#include "core/ops/conv.h"
#include "core/ops/copy.h"
#include "core/ops/factory.h"
#include "core/ops/index.h"
#include "core/ops/linalg.h"
#include "core/ops/random.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/ops/softmax.h"
#include "core/ops/unary.h"
#include "core/ops/view.h"
#include "core/tensor.h"
#else
#include <ember/ember.h>
#endif

namespace ember::testing {
#ifdef EMBER_OP_TABLE_NATIVE
using namespace ember::native;
#endif

// A row-major float64 tensor for references: the simplest possible thing to loop over.
struct RefTensor {
  Shape shape;
  std::vector<double> data;

  RefTensor() = default;
  RefTensor(Shape s, std::vector<double> d) : shape(std::move(s)), data(std::move(d)) {}
  explicit RefTensor(Shape s, double fill = 0.0)
      : shape(std::move(s)), data(static_cast<size_t>(shape_numel(shape)), fill) {}

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  // Row-major strides of `shape`.
  Shape strides() const { return contiguous_strides(shape); }
  double& at(const Shape& idx);
  double at(const Shape& idx) const;
};

// An ember tensor's values as float64 (any dtype, any layout).
RefTensor to_ref(const Tensor& t);
// Multi-index of linear position i in a row-major shape.
Shape unravel(int64_t i, const Shape& shape);
// The element of `t` that broadcasting maps index `idx` (of a broadcast shape) to.
double broadcast_at(const RefTensor& t, const Shape& idx);

// Element-wise references with NumPy broadcasting.
RefTensor ref_unary(const RefTensor& a, const std::function<double(double)>& f);
RefTensor ref_binary(const RefTensor& a, const RefTensor& b,
                     const std::function<double(double, double)>& f);
RefTensor ref_ternary(const RefTensor& a, const RefTensor& b, const RefTensor& c,
                      const std::function<double(double, double, double)>& f);

// One set of inputs for an op. `args` holds the tensors; `note` says what the sample exercises.
struct Sample {
  std::vector<Tensor> args;
  std::string note;
  // Multiplies the tolerance when a device's result is compared with the CPU's (forward and
  // backward). A device kernel may group a reduction's additions differently from the CPU's
  // (kernels/cuda/reduce.cuh, scan.cu), and some results amplify that difference: a scan whose
  // partial sums cancel, a normalisation of values whose mean is far larger than their spread.
  double device_tol_scale = 1;
};

// What the autograd part of the op-table suite checks for an op (tests/test_op_table.cpp).
enum class GradSupport {
  Full,        // gradcheck and gradgradcheck in float64
  FirstOrder,  // gradcheck only
  None,        // not differentiable (random ops): outputs are not checked
};

struct OpInfo {
  std::string name;  // as registered by the op's family (core/op_registry.h)
  std::vector<DType> dtypes;
  std::function<std::vector<Sample>(DType)> samples;
  // Runs the ember op; ops with several outputs return them all.
  std::function<std::vector<Tensor>(const Sample&)> run;
  // float64 reference from the same inputs (as RefTensors, in the order of sample.args).
  std::function<std::vector<RefTensor>(const std::vector<RefTensor>&)> reference;
  // Tolerance multiplier on the output dtype's epsilon (see tolerance_for).
  double tol_scale = 4.0;
  // Optional: the dtype each output must have for a given input dtype (default: don't check).
  std::function<DType(DType)> expected_dtype;
  // Autograd: every floating output of a float64 sample whose floating inputs require grad
  // must require grad too (else the op has no derivative), and pass gradcheck.
  GradSupport grad = GradSupport::Full;
  // Optional: false for a float64 sample that gradcheck must skip (one sitting on a kink, e.g.
  // ties of max). Say why next to the entry.
  std::function<bool(const Sample&)> grad_sample_ok;
  // Whether the result on another device must equal the CPU's (check_forward). Every entry
  // does at present, the random ops included (a generator of the same seed draws the same
  // numbers on every device: Note [Philox streams]).
  bool compare_across_devices = true;
};

// Absolute-and-relative tolerance for comparing an output of `dt` with a float64 reference.
double tolerance_for(DType dt, double scale);

// Registration: a family file holds `static OpTableRegistrar reg({OpInfo{...}, ...});`.
std::vector<OpInfo>& op_table();
struct OpTableRegistrar {
  explicit OpTableRegistrar(std::vector<OpInfo> entries);
};

// ---- sample inputs ----------------------------------------------------------------------------
// Deterministic random tensors: floats in [lo, hi), integers in [lo, hi], bools half true.
Tensor random_tensor(const Shape& shape, DType dt, double lo = -2.0, double hi = 2.0,
                     uint64_t seed = 1);
// The same values, laid out non-contiguously (a transposed copy, transposed back).
Tensor noncontiguous(const Tensor& t);

// The standard shapes for element-wise ops: 0-dim, sizes 0 and 1, 1-D, 2-D, 3-D, and
// non-contiguous versions. lo/hi bound the values (positive ranges for log, sqrt...).
std::vector<Sample> unary_samples(DType dt, double lo = -2.0, double hi = 2.0);
// Pairs with broadcasting ([3,1] with [1,4], [4] with [2,3,4], 0-dim with [3]...), sizes 0 and
// 1, and non-contiguous operands.
std::vector<Sample> binary_samples(DType dt, double lo = -2.0, double hi = 2.0, double lo_b = -2.0,
                                   double hi_b = 2.0);

// ---- helpers for entries ------------------------------------------------------------------
using Refs = std::vector<RefTensor>;
inline std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }
// Integer op parameters travel in a sample as int64 tensors: a scalar, or a list.
inline Tensor param(int64_t v) { return scalar_tensor(v, kInt64); }
inline Tensor params(const Shape& v) { return tensor(v, {static_cast<int64_t>(v.size())}, kInt64); }
inline int64_t ival(const Tensor& t) { return t.item<int64_t>(); }
inline int64_t ival(const RefTensor& r) { return static_cast<int64_t>(r.data.at(0)); }
inline Shape ivals(const RefTensor& r) {
  Shape out;
  for (double v : r.data) out.push_back(static_cast<int64_t>(v));
  return out;
}
// A possibly negative dim or index wrapped into [0, n).
inline int64_t wrap(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

// Dtype sets.
std::vector<DType> all_dtypes();       // every dtype
std::vector<DType> numeric_dtypes();   // every dtype but bool
std::vector<DType> floating_dtypes();  // float16, bfloat16, float32, float64
std::vector<DType> integral_dtypes(bool include_bool = false);

}  // namespace ember::testing
