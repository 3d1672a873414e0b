// Walks the op table (tests/op_table): every registered op must have an entry, and every entry
// is checked forward against its float64 reference for each dtype and sample.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

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
