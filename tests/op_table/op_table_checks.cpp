#include "op_table_checks.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/dispatch.h"
#include "core/op_registry.h"
#include "core/ops/copy.h"
#include "core/stream.h"

namespace ember::testing {

std::string compare(const Tensor& got, const RefTensor& want, double tol_scale) {
  std::ostringstream os;
  if (got.sizes() != want.shape) {
    os << "shape " << shape_str(got.sizes()) << " != reference " << shape_str(want.shape);
    return os.str();
  }
  RefTensor g = to_ref(got);
  const double tol = tolerance_for(got.dtype(), tol_scale);
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = g.data[i], b = want.data[i];
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

std::vector<Device> op_table_devices() {
  std::vector<Device> devices{kCPU};
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    const auto type = static_cast<DeviceType>(d);
    if (type != DeviceType::CPU && copy_stub.has_kernel(DeviceType::CPU, type) &&
        copy_stub.has_kernel(type, DeviceType::CPU) && device_count(type) > 0)
      devices.emplace_back(type, 0);
  }
  return devices;
}

namespace {
// `t` on `device` (an undefined tensor stays undefined), keeping a wrapped number's flag.
Tensor moved_to(const Tensor& t, Device device) {
  if (!t.defined() || t.device() == device) return t;
  Tensor r = native::to(t, device);
  r.impl().is_wrapped_number = t.unsafe_impl()->is_wrapped_number;
  return r;
}
}  // namespace

void check_forward(const OpInfo& op, const std::vector<Device>& devices) {
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
        CHECK(compare(got[i], want[i], op.tol_scale) == "");
      }
      if (!op.compare_across_devices) continue;
      for (const Device& device : devices) {
        if (device.is_cpu()) continue;
        // An op still without a CUDA kernel is on the pending list (cuda_pending_ops), and
        // test "every op has a CUDA kernel or is pending" keeps that list exact.
        if (device.is_cuda() && cuda_pending_ops().count(op.name)) continue;
        INFO("device " << device);
        Sample on_device = s;
        for (Tensor& a : on_device.args) a = moved_to(a, device);
        std::vector<Tensor> dev;
        REQUIRE_NOTHROW(dev = op.run(on_device));
        REQUIRE(dev.size() == got.size());
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("output " << i << " against the cpu result");
          CHECK(dev[i].device() == device);
          CHECK(dev[i].dtype() == got[i].dtype());
          CHECK(compare(native::to(dev[i], kCPU), to_ref(got[i]),
                        op.tol_scale * s.device_tol_scale) == "");
        }
      }
    }
  }
}

void check_cuda_coverage(Device device) {
  const std::set<std::string>& pending = cuda_pending_ops();
  // Per op name (an op may have several entries, pad one per mode): whether a sample met an op
  // without a CUDA kernel, and the first other error.
  std::map<std::string, bool> lacks_kernel;
  std::map<std::string, std::string> other_error;
  for (const OpInfo& op : op_table()) {
    lacks_kernel.emplace(op.name, false);
    for (DType dt : op.dtypes) {
      for (const Sample& s : op.samples(dt)) {
        Sample on_device = s;
        for (Tensor& a : on_device.args) a = moved_to(a, device);
        try {
          op.run(on_device);
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.find("no kernel for device cuda") != std::string::npos) {
            lacks_kernel[op.name] = true;
          } else if (other_error[op.name].empty()) {
            other_error[op.name] = what;
          }
        }
      }
    }
  }
  std::string missing, stale, failed;
  for (const auto& [name, lacks] : lacks_kernel) {
    const bool is_pending = pending.count(name) > 0;
    const std::string& error = other_error[name];
    if (lacks && !is_pending) missing += name + " ";
    if (is_pending && !lacks && error.empty()) stale += name + " ";
    if (!is_pending && !error.empty()) failed += name + " (" + error + ") ";
  }
  for (const std::string& name : pending) {
    INFO("pending op " << name << " has no op-table entry");
    CHECK(lacks_kernel.count(name) == 1);
  }
  std::printf("CUDA kernels pending: %zu of %zu ops (tests/op_table/cuda_pending.cpp)\n",
              pending.size(), lacks_kernel.size());
  INFO("ops without a CUDA kernel that are not on the pending list: " << missing);
  CHECK(missing.empty());
  INFO("pending ops that run on cuda now (take them off the list): " << stale);
  CHECK(stale.empty());
  INFO("ops that fail on cuda for another reason: " << failed);
  CHECK(failed.empty());
}

void check_registry_coverage() {
  std::set<std::string> have, registered;
  for (const OpInfo& e : op_table()) have.insert(e.name);
  std::vector<std::string> missing;
  for (const OpFamily& f : registered_op_families()) {
    for (const std::string& op : f.ops) {
      registered.insert(op);
      if (!have.count(op)) missing.push_back(f.family + "/" + op);
    }
  }
  std::string list;
  for (const std::string& m : missing) list += m + " ";
  INFO("ops without an op-table entry: " << list);
  CHECK(missing.empty());
  for (const OpInfo& e : op_table()) {
    INFO("op-table entry " << e.name << " names no registered op");
    CHECK(registered.count(e.name) == 1);
  }
  CHECK(registered.size() >= 30);
}

}  // namespace ember::testing
