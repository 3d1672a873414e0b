// Walks the op table (tests/op_table): every registered op must have an entry, and every entry
// is checked forward against its float64 reference for each dtype and sample.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "autograd/gradcheck.h"
#include "core/op_registry.h"
#include "op_table/op_table.h"
#include "op_table/op_table_checks.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("every registered op has an op-table entry, and every entry a registered op",
          "[op_table]") {
  check_registry_coverage();
}

TEST_CASE("op table: forward matches the float64 reference", "[op_table]") {
  REQUIRE(!op_table().empty());
  const std::vector<Device> devices = op_table_devices();
  for (const OpInfo& op : op_table()) check_forward(op, devices);
}

TEST_CASE("op table: every op has a CUDA kernel or is pending", "[op_table][cuda]") {
  Device cuda_device;
  bool found = false;
  for (const Device& d : op_table_devices()) {
    if (d.is_cuda()) {
      cuda_device = d;
      found = true;
    }
  }
  if (!found || device_count(DeviceType::CUDA) == 0) {
    WARN("skipped: no cuda device in this build or on this machine");
    return;
  }
  check_cuda_coverage(cuda_device);
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
  int checked = 0, differentiable = 0;
  for (const OpInfo& op : op_table()) {
    if (!ops.count(op.name) || op.grad == GradSupport::None) continue;
    if (std::find(op.dtypes.begin(), op.dtypes.end(), kFloat64) == op.dtypes.end()) continue;
    ++differentiable;
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
  // A family of ops without derivatives (random, factory) has nothing to check; any other
  // family must have gradchecked samples.
  if (differentiable > 0) CHECK(checked > 0);
}

}  // namespace

// One test case per registered op family, made when the program starts (the library's
// families register first: its static initialisers run before this executable's), so a new
// family is gradchecked without anyone adding it to a list. Each becomes its own CTest test,
// "op table gradcheck: <family>".
namespace {
struct FamilyGradcheck final : Catch::ITestInvoker {
  explicit FamilyGradcheck(std::string f) : family(std::move(f)) {}
  void invoke() const override { check_family_gradients(family); }
  std::string family;
};

const bool families_registered = [] {
  // Catch keeps references to the names, and its registrars live as long as the program, as
  // TEST_CASE's static ones do: both are statics here (a deque never moves its elements). The
  // registry owns each invoker.
  static std::deque<std::string> names;
  static std::deque<Catch::AutoReg> registrars;
  for (const OpFamily& f : registered_op_families()) {
    names.push_back("op table gradcheck: " + f.family);
    registrars.emplace_back(new FamilyGradcheck(f.family), CATCH_INTERNAL_LINEINFO, "",
                            Catch::NameAndTags{names.back(), "[op_table][autograd]"});
  }
  return true;
}();
}  // namespace

TEST_CASE("op table gradcheck: every registered family has a gradcheck test case", "[op_table]") {
  REQUIRE(families_registered);
  std::set<std::string> cases;
  for (const Catch::TestCase& t :
       Catch::getAllTestCasesSorted(*Catch::getCurrentContext().getConfig()))
    cases.insert(t.name);
  for (const OpFamily& f : registered_op_families()) {
    INFO("family " << f.family);
    CHECK(cases.count("op table gradcheck: " + f.family) == 1);
  }
  CHECK(registered_op_families().size() >= 15);
}

// ---- backward on cuda against the cpu
// ------------------------------------------------------------ DESIGN.md "The op table drives the
// tests": every op with a CUDA kernel runs its backward on the device too. Each float32 sample of a
// differentiable op runs forward and backward (gradient of the sum of every floating output,
// weighted by a fixed pattern) on the CPU and on the cuda device; the input gradients must agree
// within the dtype's tolerance. A backward that needs a kernel still pending
// (tests/op_table/cuda_pending.cpp: a broadcast gradient is reduced with sum) is counted and
// printed, not failed; any other error or a mismatch fails.
TEST_CASE("op table: backward on cuda matches the cpu", "[op_table][cuda]") {
  Device dev;
  bool found = false;
  for (const Device& d : op_table_devices()) {
    if (d.is_cuda()) {
      dev = d;
      found = true;
    }
  }
  if (!found) {
    WARN("skipped: no cuda device in this build or on this machine");
    return;
  }
  int compared = 0, waiting = 0;
  for (const OpInfo& op : op_table()) {
    if (op.grad == GradSupport::None || !op.compare_across_devices ||
        cuda_pending_ops().count(op.name))
      continue;
    if (std::find(op.dtypes.begin(), op.dtypes.end(), kFloat32) == op.dtypes.end()) continue;
    for (const Sample& s : op.samples(kFloat32)) {
      if (!all_finite(s)) continue;
      if (op.grad_sample_ok && !op.grad_sample_ok(s)) continue;
      INFO("op " << op.name << ", sample: " << s.note);
      // The same leaves on both devices; returns the gradients, or an error message.
      auto run = [&](Device d, Tensors& grads) -> std::string {
        Sample on = s;
        Tensors leaves;
        for (Tensor& a : on.args) {
          if (!a.defined()) continue;
          a = a.detach().to(d);
          if (a.is_floating_point()) {
            a.requires_grad_();
            leaves.push_back(a);
          }
        }
        if (leaves.empty()) return "no floating input";
        try {
          Tensors out = op.run(on);
          Tensor total;
          for (const Tensor& o : out) {
            if (!o.defined() || !o.is_floating_point() || !o.requires_grad()) continue;
            // A fixed, element-dependent weight, so that gradients of different elements differ.
            Tensor w = (arange(o.numel(), o.options()) * 0.37).sin().reshape(o.sizes());
            Tensor term = (o * w).to(kCPU).to(kFloat64);  // summed on the cpu (sum is pending)
            term = term.reshape({-1});
            Tensor part = term.numel() ? term.sum() : zeros({}, kFloat64);
            total = total.defined() ? total + part : part;
          }
          if (!total.defined()) return "no differentiable output";
          total.backward();
        } catch (const Error& e) {
          return e.what();
        }
        grads.clear();
        for (const Tensor& l : leaves) grads.push_back(l.grad());
        return "";
      };
      Tensors cpu_grads, dev_grads;
      const std::string cpu_error = run(kCPU, cpu_grads);
      if (!cpu_error.empty()) continue;  // nothing to compare (no floating output, say)
      const std::string dev_error = run(dev, dev_grads);
      if (dev_error.find("no kernel for device cuda") != std::string::npos) {
        ++waiting;
        continue;
      }
      INFO("backward on " << dev << " failed: " << dev_error);
      REQUIRE(dev_error.empty());
      REQUIRE(dev_grads.size() == cpu_grads.size());
      for (size_t i = 0; i < cpu_grads.size(); ++i) {
        INFO("gradient of floating input " << i);
        if (!cpu_grads[i].defined()) {
          CHECK_FALSE(dev_grads[i].defined());
          continue;
        }
        REQUIRE(dev_grads[i].defined());
        CHECK(dev_grads[i].device() == dev);
        CHECK(compare(dev_grads[i].to(kCPU), to_ref(cpu_grads[i]),
                      op.tol_scale * s.device_tol_scale) == "");
      }
      ++compared;
    }
  }
  std::printf("backward on cuda: %d samples compared, %d waiting for a pending kernel\n", compared,
              waiting);
  CHECK(compared > 100);
}
