// Walks the op table (tests/op_table): every registered op must have an entry, and every entry
// is checked forward against its float64 reference for each dtype and sample.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <algorithm>

#include "autograd/gradcheck.h"
#include "core/op_registry.h"
#include "op_table/op_table.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Empty string when `got` matches `want` within the dtype's tolerance; else what differs.
std::string compare(const Tensor& got, const RefTensor& want, double tol_scale) {
  std::ostringstream os;
  if (got.sizes() != want.shape) {
    os << "shape " << shape_str(got.sizes()) << " != reference " << shape_str(want.shape);
    return os.str();
  }
  RefTensor g = to_ref(got);
  double tol = tolerance_for(got.dtype(), tol_scale);
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = g.data[i], b = want.data[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) || std::isinf(b)) {
      if (a == b) continue;
    } else if (std::abs(a - b) <= tol * (1.0 + std::abs(b))) {
      continue;
    }
    os << "element " << i << " (index " << shape_str(unravel(i, g.shape)) << "): got " << a
       << ", reference " << b << " (tolerance " << tol << ", dtype " << got.dtype() << ")";
    return os.str();
  }
  return "";
}

}  // namespace

TEST_CASE("every registered op has an op-table entry", "[op_table]") {
  std::set<std::string> have;
  for (auto& e : op_table()) have.insert(e.name);
  std::vector<std::string> missing;
  for (auto& f : registered_op_families())
    for (auto& op : f.ops)
      if (!have.count(op)) missing.push_back(f.family + "/" + op);
  INFO("ops without an op-table entry: " << [&] {
    std::string s;
    for (auto& m : missing) s += m + " ";
    return s;
  }());
  CHECK(missing.empty());
  CHECK(registered_ops().size() >= 30);
}

TEST_CASE("every op-table entry names a registered op", "[op_table]") {
  std::set<std::string> ops;
  for (auto& o : registered_ops()) ops.insert(o);
  for (auto& e : op_table()) {
    INFO(e.name);
    CHECK(ops.count(e.name) == 1);
  }
}

TEST_CASE("op table: forward matches the float64 reference", "[op_table]") {
  REQUIRE(!op_table().empty());
  for (const OpInfo& op : op_table()) {
    for (DType dt : op.dtypes) {
      std::vector<Sample> samples = op.samples(dt);
      REQUIRE(!samples.empty());
      for (const Sample& s : samples) {
        INFO("op " << op.name << ", dtype " << dt << ", sample: " << s.note);
        std::vector<RefTensor> ref_in;
        for (const Tensor& a : s.args) ref_in.push_back(a.defined() ? to_ref(a) : RefTensor());
        std::vector<Tensor> got;
        REQUIRE_NOTHROW(got = op.run(s));
        std::vector<RefTensor> want = op.reference(ref_in);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("output " << i);
          if (op.expected_dtype) CHECK(got[i].dtype() == op.expected_dtype(dt));
          std::string diff = compare(got[i], want[i], op.tol_scale);
          CHECK(diff == "");
        }
      }
    }
  }
}

// ---- autograd: gradcheck and gradgradcheck of every differentiable op --------------------------

namespace {

bool all_finite(const Sample& s) {
  for (const Tensor& a : s.args) {
    if (a.defined() && a.is_floating_point() && a.numel() > 0 &&
        !ember::isfinite(a).all().item<bool>())
      return false;
  }
  return true;
}

// Gradchecks every op of `family` over its float64 samples (DESIGN.md "The op table drives
// the tests"): an op whose floating output does not require grad has no derivative and fails.
void check_family_gradients(const std::string& family, size_t gradgrad_samples = 3) {
  std::set<std::string> ops;
  for (const auto& f : registered_op_families())
    if (f.family == family) ops.insert(f.ops.begin(), f.ops.end());
  REQUIRE(!ops.empty());
  int checked = 0;
  for (const OpInfo& op : op_table()) {
    if (!ops.count(op.name) || op.grad == GradSupport::None) continue;
    if (std::find(op.dtypes.begin(), op.dtypes.end(), kFloat64) == op.dtypes.end()) continue;
    size_t n = 0;
    for (const Sample& s : op.samples(kFloat64)) {
      if (!all_finite(s)) continue;
      if (op.grad_sample_ok && !op.grad_sample_ok(s)) continue;
      Tensors args;
      bool any_float = false;
      for (const Tensor& a : s.args) {
        if (a.defined() && a.is_floating_point()) {
          // Central differences perturb one storage element at a time: an expanded input
          // (stride 0) would move many elements at once, so it is made dense first.
          bool overlapping = false;
          for (int64_t d = 0; d < a.dim(); ++d) overlapping |= a.stride(d) == 0 && a.size(d) > 1;
          args.push_back((overlapping ? a.contiguous() : a).detach().requires_grad_());
          any_float = true;
        } else {
          args.push_back(a);
        }
      }
      if (!any_float) continue;
      INFO("op " << op.name << ", sample: " << s.note);
      auto fn = [&](const Tensors& in) {
        Sample s2 = s;
        s2.args = in;
        return op.run(s2);
      };
      Tensors out;
      REQUIRE_NOTHROW(out = fn(args));
      bool has_float_output = false;
      for (size_t i = 0; i < out.size(); ++i) {
        if (!out[i].defined() || !out[i].is_floating_point()) continue;
        has_float_output = true;
        INFO("output " << i << " has no grad_fn: the op has no derivative");
        CHECK(out[i].requires_grad());
      }
      if (!has_float_output) continue;  // bool or integer results only: nothing to check
      autograd::GradcheckResult r;
      REQUIRE_NOTHROW(r = autograd::gradcheck(fn, args));
      INFO(r.report);
      CHECK(r.ok);
      if (op.grad == GradSupport::Full && n < gradgrad_samples) {
        autograd::GradcheckResult r2;
        REQUIRE_NOTHROW(r2 = autograd::gradgradcheck(fn, args));
        INFO("gradgradcheck: " << r2.report);
        CHECK(r2.ok);
      }
      ++n;
      ++checked;
    }
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("op table gradcheck: unary", "[op_table][autograd]") { check_family_gradients("unary"); }
TEST_CASE("op table gradcheck: binary", "[op_table][autograd]") { check_family_gradients("binary"); }
TEST_CASE("op table gradcheck: reduce", "[op_table][autograd]") { check_family_gradients("reduce"); }
TEST_CASE("op table gradcheck: softmax", "[op_table][autograd]") { check_family_gradients("softmax"); }
TEST_CASE("op table gradcheck: linalg", "[op_table][autograd]") { check_family_gradients("linalg"); }
TEST_CASE("op table gradcheck: index", "[op_table][autograd]") { check_family_gradients("index"); }
TEST_CASE("op table gradcheck: shape", "[op_table][autograd]") { check_family_gradients("shape"); }
TEST_CASE("op table gradcheck: conv", "[op_table][autograd]") { check_family_gradients("conv"); }
TEST_CASE("op table gradcheck: view", "[op_table][autograd]") { check_family_gradients("view"); }
TEST_CASE("op table gradcheck: copy", "[op_table][autograd]") { check_family_gradients("copy"); }
TEST_CASE("op table gradcheck: nn_conv", "[op_table][autograd]") { check_family_gradients("nn_conv"); }
TEST_CASE("op table gradcheck: nn_activation", "[op_table][autograd]") { check_family_gradients("nn_activation"); }
TEST_CASE("op table gradcheck: nn_loss", "[op_table][autograd]") { check_family_gradients("nn_loss"); }
TEST_CASE("op table gradcheck: nn_norm", "[op_table][autograd]") { check_family_gradients("nn_norm"); }
TEST_CASE("op table gradcheck: nn_attention", "[op_table][autograd]") { check_family_gradients("nn_attention"); }
