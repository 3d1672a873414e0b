// The CUDA device runtime (kernels/cuda): devices and properties, copies between the host and
// devices with strides, dtypes and broadcasting, pinned memory and non-blocking copies, streams
// and events, and the element-wise kernels against the CPU. Every case is tagged [cuda]; on a
// build or machine without a device each one says why and returns (Catch2 v2 has no SKIP).
// ctest runs them with EMBER_SIM_DEVICES=2 so that a simulated build has two devices.

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda.h"
#include "core/cuda_caching_allocator.h"
#include "core/device_memory.h"
#include "core/profiler.h"
#include "cuda_test_util.h"
#include "test_util.h"

#if defined(EMBER_CUDA_SIM)
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/sim/sim.h"
#endif

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::check_deferred_error;
using ember::testing::have_cuda;
using ember::testing::launch_blocking_env;
using ember::testing::values;

namespace {

// A tensor of n values -2.5, -1.5, ... that every dtype holds exactly (integers truncate).
Tensor ramp(const Shape& shape, DType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(0, static_cast<double>(n)) * 0.5 - 2.5).reshape(shape).to(dtype);
}

// The kernels fn launches, in order: the profiler names each launch (Category::device).
std::vector<std::string> kernels_of(const std::function<void()>& fn) {
  profiler::Profiler prof;
  prof.start();
  fn();
  cuda::synchronize();
  std::vector<std::string> names;
  for (const profiler::FunctionEvent& e : prof.stop().events(profiler::Category::device))
    names.push_back(e.name);
  return names;
}

}  // namespace

TEST_CASE("cuda devices report their properties", "[cuda]") {
  if (!have_cuda()) return;
  REQUIRE(cuda::device_count() >= 1);
  const DeviceProperties p = cuda::get_device_properties(0);
  CHECK(!p.name.empty());
  CHECK(p.major >= 8);
  CHECK(p.warp_size == 32);
  CHECK(p.max_threads_per_block == 1024);
  CHECK(p.total_memory > 0);
  CHECK(p.shared_memory_per_block == 48 * 1024);
  CHECK(p.is_simulated == cuda::is_simulated());
  if (cuda::is_simulated()) {
    CHECK(p.major == 9);
    CHECK(p.minor == 0);
  }
  CHECK_THROWS_WITH(cuda::get_device_properties(cuda::device_count()),
                    Contains("out of range for cuda"));
  CHECK_THROWS_WITH(ones({1}).cuda(cuda::device_count()), Contains("out of range"));
}

TEST_CASE("to(cuda) and back keeps every dtype's values", "[cuda]") {
  if (!have_cuda()) return;
  for (DType dt :
       {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    INFO("dtype " << dt);
    Tensor a = ramp({3, 5}, dt);
    Tensor d = a.to(Device::cuda(0));
    CHECK(d.device() == Device::cuda(0));
    CHECK(d.dtype() == dt);
    Tensor back = d.cpu();
    CHECK(back.device() == kCPU);
    CHECK(values(back) == values(a));
  }
  CHECK(ones({2}).cuda().device() == Device::cuda(cuda::current_device()));
}

TEST_CASE("copies between host and device handle strides, dtypes and broadcasting", "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  Tensor a = ramp({4, 6}, kFloat32);
  SECTION("a transposed host source") {
    Tensor t = a.t();
    CHECK(values(t.to(dev)) == values(t));
  }
  SECTION("into a strided device destination") {
    Tensor d = zeros({6, 4}, TensorOptions(kFloat32).device(dev)).t();  // (4, 6), not contiguous
    REQUIRE_FALSE(d.is_contiguous());
    d.copy_(a);
    CHECK(values(d) == values(a));
  }
  SECTION("a broadcast source, converting the dtype") {
    Tensor row = ramp({1, 6}, kFloat64);
    Tensor d = empty({4, 6}, TensorOptions(kFloat16).device(dev));
    d.copy_(row);
    CHECK(values(d) == values(row.expand({4, 6}).to(kFloat16)));
  }
  SECTION("a strided device source into a strided host destination") {
    Tensor d = a.to(dev).narrow(1, 1, 4);  // (4, 4) view with offset
    Tensor h = zeros({4, 8}).narrow(1, 2, 4);
    h.copy_(d);
    CHECK(values(h) == values(a.narrow(1, 1, 4)));
  }
  SECTION("a device source converted into a host tensor of another dtype") {
    Tensor h = empty({4, 6}, kInt32);
    h.copy_(a.to(dev));
    CHECK(values(h) == values(a.to(kInt32)));
  }
  SECTION("device to device on one device: strided, converting") {
    Tensor d = a.to(dev);
    Tensor e = empty({6, 4}, TensorOptions(kFloat64).device(dev));
    e.copy_(d.t());
    CHECK(values(e) == values(a.t()));
  }
  SECTION("empty tensors") {
    Tensor e = empty({0, 3}).to(dev);
    CHECK(e.numel() == 0);
    CHECK(e.cpu().sizes() == Shape{0, 3});
  }
}

TEST_CASE("contiguous() of transposed matrices goes through the tiled transpose", "[cuda]") {
  // Note [Transposing copies] in kernels/cuda/copy.cu: a stack of matrices with its last two
  // dims swapped, every element size, edges that are not multiples of the 32 x 32 tile, against
  // the CPU bit for bit; views that are not such a stack take the element-wise kernel.
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  const Tensor on_device = ramp({33, 70}, kFloat32).to(dev);
  CHECK(kernels_of([&] { (void)on_device.t().contiguous(); }) ==
        std::vector<std::string>{"transpose_kernel"});
  for (DType dt : {kFloat32, kBFloat16, kInt8, kFloat64, kInt64, kBool}) {
    INFO("dtype " << dt);
    const Tensor m = ramp({33, 70}, kFloat64).remainder(97).to(dt);
    CHECK(values(m.to(dev).t().contiguous()) == values(m.t().contiguous()));
    const Tensor b = ramp({3, 40, 65}, kFloat64).remainder(89).to(dt);
    const Tensor bt = b.to(dev).transpose(-2, -1).contiguous();
    CHECK(bt.is_contiguous());
    CHECK(values(bt) == values(b.transpose(-2, -1).contiguous()));
  }
  // Not a stack of transposed matrices: a transposed slice (rows stride 2) and a permute of
  // the batch dim.
  const Tensor x = ramp({4, 64, 48}, kFloat32);
  const Tensor xs = x.to(dev).slice(1, 0, 64, 2).transpose(-2, -1).contiguous();
  CHECK(values(xs) == values(x.slice(1, 0, 64, 2).transpose(-2, -1).contiguous()));
  const Tensor xp = x.to(dev).permute({1, 0, 2}).contiguous();
  CHECK(values(xp) == values(x.permute({1, 0, 2}).contiguous()));
  const Tensor xd = x.to(dev);
  for (const std::string& name : kernels_of([&] { (void)xd.permute({1, 0, 2}).contiguous(); }))
    CHECK(name != "transpose_kernel");
}

TEST_CASE("copies between two cuda devices", "[cuda]") {
  if (!have_cuda()) return;
  if (cuda::device_count() < 2) {
    WARN("skipped: needs two cuda devices (EMBER_SIM_DEVICES=2 in a sim build)");
    return;
  }
  Tensor a = ramp({5, 3}, kFloat32);
  Tensor d0 = a.to(Device::cuda(0));
  Tensor d1 = d0.to(Device::cuda(1));
  CHECK(d1.device() == Device::cuda(1));
  CHECK(values(d1) == values(a));
  Tensor strided = empty({3, 5}, TensorOptions(kFloat64).device(Device::cuda(1))).t();
  strided.copy_(d0);
  CHECK(values(strided) == values(a));
  Tensor back = empty({5, 3}, TensorOptions(kFloat32).device(Device::cuda(0)));
  back.copy_(d1.t().t());
  CHECK(values(back) == values(a));
}

TEST_CASE("pinned host memory and non-blocking copies", "[cuda]") {
  if (!have_cuda()) return;
  Tensor a = ramp({64}, kFloat32);
  CHECK_FALSE(a.is_pinned());
  Tensor p = a.pin_memory();
  CHECK(p.is_pinned());
  CHECK(p.device() == kCPU);
  CHECK(values(p) == values(a));
  CHECK(p.pin_memory().is_same(p));
  const Device dev = Device::cuda(0);
  Tensor d = p.to(dev, kFloat32, /*non_blocking=*/true);
  Tensor out = empty({64}, kFloat32).pin_memory();
  out.copy_(d, /*non_blocking=*/true);
  cuda::synchronize();
  CHECK(values(out) == values(a));
  CHECK_THROWS_WITH(d.pin_memory(), Contains("only CPU tensors can be pinned"));
  const MemoryStats s = get_pinned_allocator()->stats();
  CHECK(s.allocated_bytes >= 2 * 64 * 4);
}

TEST_CASE("element-wise ops on cuda match the cpu", "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  Tensor a = ramp({7, 9}, kFloat32);
  Tensor b = ramp({9}, kFloat32) * 0.25 + 3;
  CHECK(values((a + b).cpu()) == values(a.cpu() + b));
  Tensor da = a.to(dev), db = b.to(dev);
  SECTION("contiguous, broadcast and transposed operands") {
    CHECK(values(da + db) == values(a + b));
    CHECK(values(da * db) == values(a * b));
    CHECK(values(da.t() - 1) == values(a.t() - 1));
    // CUDA's expf is within 2 ulp of the true value, not libm's bits (the simulator calls libm,
    // so it matches exactly; an H200 differs in the last bit on some elements).
    const std::vector<double> got = values(ember::exp(da)), want = values(ember::exp(a));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i);
      CHECK(std::abs(got[i] - want[i]) <= 4 * std::numeric_limits<float>::epsilon() * want[i]);
    }
  }
  SECTION("in place, on a view") {
    Tensor v = da.narrow(0, 2, 3);
    v.mul_(2);
    Tensor want = a.clone();
    want.narrow(0, 2, 3).mul_(2);
    CHECK(values(da) == values(want));
  }
  SECTION("half and bfloat16") {
    for (DType dt : {kFloat16, kBFloat16}) {
      Tensor h = a.to(dt);
      CHECK(values(h.to(dev) * 3 + 1) == values(h * 3 + 1));
    }
  }
  SECTION("a size with a partial last vector, misaligned views") {
    Tensor x = ramp({1027}, kFloat32);
    Tensor dx = x.to(dev);
    CHECK(values(dx + dx) == values(x + x));
    CHECK(values(dx.narrow(0, 1, 1025) * 2) == values(x.narrow(0, 1, 1025) * 2));
  }
  SECTION("operands on two devices are refused") { CHECK_THROWS(da + b); }
}

TEST_CASE("numbers in element-wise ops reach the kernel as arguments", "[cuda]") {
  // Note [CPU scalars on a device] in core/tensor_iter.h: `x * 2` is one launch of the
  // vectorised kernel (no fill of a device copy of the 2, not the strided path), and gives the
  // CPU's bits for every dtype, the number on either side, contiguous or not.
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  const Tensor x = ramp({64, 33}, kFloat32).to(dev);
  const std::vector<std::string> one_launch{"vectorized_elementwise_kernel<4>"};
  CHECK(kernels_of([&] { (void)(x * 2); }) == one_launch);
  CHECK(kernels_of([&] { (void)(2.5 - x); }) == one_launch);
  CHECK(kernels_of([&] { (void)(x > 0.5); }) == one_launch);
  CHECK(kernels_of([&] { (void)ember::div(x, 3); }) == one_launch);
  const Tensor cond = x > 0;
  CHECK(kernels_of([&] { (void)ember::where(cond, x, 0.0); }) == one_launch);
  // A second number is filled on the device first (a one-element launch), and its 0-dim
  // operand makes the op strided.
  CHECK(kernels_of([&] { (void)ember::where(cond, 1.0, 0.0); }) ==
        std::vector<std::string>{"strided_elementwise_kernel", "strided_elementwise_kernel"});

  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8, kUInt8}) {
    INFO("dtype " << dt);
    const Tensor c = ramp({6, 11}, kFloat64).remainder(13).to(dt);
    for (const Tensor& h : {c, c.t()}) {
      const Tensor d = h.to(dev);
      CHECK(values(d + 3) == values(h + 3));
      CHECK(values(3 + d) == values(3 + h));
      CHECK(values(d - 1.5) == values(h - 1.5));
      CHECK(values(1.5 - d) == values(1.5 - h));
      CHECK(values(d * 2) == values(h * 2));
      CHECK(values(2 / (d + 1)) == values(2 / (h + 1)));
      CHECK(values(ember::div(d, 4, "floor")) == values(ember::div(h, 4, "floor")));
      CHECK(values(ember::remainder(d, 5)) == values(ember::remainder(h, 5)));
      CHECK(values(d >= 2) == values(h >= 2));
      CHECK(values(ember::eq(d, 1)) == values(ember::eq(h, 1)));
      CHECK(values(ember::maximum(d, wrapped_scalar_tensor(Scalar(2), d))) ==
            values(ember::maximum(h, wrapped_scalar_tensor(Scalar(2), h))));
      CHECK(values(ember::minimum(wrapped_scalar_tensor(Scalar(1), d), d)) ==
            values(ember::minimum(wrapped_scalar_tensor(Scalar(1), h), h)));
      const Tensor dc = d > 1, hc = h > 1;
      CHECK(values(ember::where(dc, d, 7)) == values(ember::where(hc, h, 7)));
      CHECK(values(ember::where(dc, -1, d)) == values(ember::where(hc, -1, h)));
      CHECK(values(ember::where(dc, 2, 3)) == values(ember::where(hc, 2, 3)));
      if (is_floating(dt)) {
        CHECK(values(ember::pow(2, d)) == values(ember::pow(2, h)));
        CHECK(values(ember::lerp(d, d * 3, 0.25)) == values(ember::lerp(h, h * 3, 0.25)));
      }
    }
  }
  SECTION("in place, and into a float16 output") {
    Tensor h = ramp({5, 8}, kFloat32);
    Tensor d = h.to(dev);
    d.mul_(3).sub_(1);
    h.mul_(3).sub_(1);
    CHECK(values(d) == values(h));
    Tensor dh = zeros({5, 8}, TensorOptions(kFloat16).device(dev));
    Tensor hh = zeros({5, 8}, TensorOptions(kFloat16));
    dh.add_(d * 0.1);
    hh.add_(h * 0.1);
    CHECK(values(dh) == values(hh));
  }
  SECTION("integer division by a number checks it on the host, without waiting") {
    const Tensor i = ramp({40}, kInt64).to(dev);
    cuda::set_sync_debug_mode(cuda::SyncDebugMode::Error);
    CHECK_NOTHROW(ember::div(i, 3, "floor"));
    CHECK_NOTHROW(ember::remainder(i, 7));
    CHECK_THROWS_WITH(ember::div(i, 0, "trunc"), Contains("ZeroDivisionError"));
    CHECK_THROWS_WITH(ember::remainder(i, 0), Contains("ZeroDivisionError"));
    cuda::set_sync_debug_mode(cuda::SyncDebugMode::Off);
    CHECK(values(ember::div(i, 3, "floor")) == values(ember::div(i.cpu(), 3, "floor")));
  }
}

TEST_CASE("integer division by a zero in a tensor raises at the next synchronisation",
          "[cuda][launch_blocking]") {
  // Note [Integer division by zero on a device]: the division kernel records a zero divisor and
  // the op defers the check, so an integer division never waits for the device.
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  for (DType dt : {kInt64, kInt32, kInt8, kUInt8}) {
    INFO("dtype " << dt);
    const Tensor a = (arange(0, 40.0) * 3 - 50).to(dt), z = arange(0, 40.0).remainder(9).to(dt);
    const Tensor nz = z + 1, da = a.to(dev), dz = z.to(dev), dnz = nz.to(dev);
    // Without a zero: the CPU's values, contiguous and strided, and no wait.
    if (!launch_blocking_env()) cuda::set_sync_debug_mode(cuda::SyncDebugMode::Error);
    const Tensor floor = ember::div(da, dnz, "floor"), trunc = ember::div(da, dnz, "trunc"),
                 rem = ember::remainder(da, dnz),
                 strided = ember::remainder(da.view({5, 8}).t(), dnz.view({8, 5}));
    cuda::set_sync_debug_mode(cuda::SyncDebugMode::Off);
    CHECK(values(floor) == values(ember::div(a, nz, "floor")));
    CHECK(values(trunc) == values(ember::div(a, nz, "trunc")));
    CHECK(values(rem) == values(ember::remainder(a, nz)));
    CHECK(values(strided) == values(ember::remainder(a.view({5, 8}).t(), nz.view({8, 5}))));
    // With zeros: contiguous, strided, a number as the dividend, in place.
    check_deferred_error([&] { return ember::div(da, dz, "floor"); },
                         Catch::StartsWith("div: ZeroDivisionError (integer division by zero)"));
    check_deferred_error(
        [&] {
          return ember::remainder(da.view({5, 8}).t(), dz.view({8, 5}));
        },
        Catch::StartsWith("remainder: ZeroDivisionError"));
    check_deferred_error(
        [&] { return ember::div(wrapped_scalar_tensor(Scalar(7), dz), dz, "trunc"); },
        Catch::StartsWith("div: ZeroDivisionError"));
    Tensor target = da.clone();
    check_deferred_error([&] { return target.div_(dz, "floor"); },
                         Catch::StartsWith("div_: ZeroDivisionError"));
  }
}

TEST_CASE("streams and events order cuda work", "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  Stream s = new_stream(dev);
  CHECK(s.device() == dev);
  CHECK(s.id() != 0);
  Tensor a = ramp({1 << 12}, kFloat32).to(dev);
  Tensor r;
  {
    StreamGuard guard(s);
    CHECK(current_stream(dev) == s);
    Event start(DeviceType::CUDA, true), stop(DeviceType::CUDA, true);
    start.record();
    r = a * 2 + 1;
    stop.record();
    stop.synchronize();
    CHECK(stop.query());
    CHECK(start.elapsed_ms(stop) >= 0.0);
  }
  CHECK(current_stream(dev).is_default());
  s.synchronize();
  CHECK(s.query());
  CHECK(values(r) == values(ramp({1 << 12}, kFloat32) * 2 + 1));
}

TEST_CASE("backward runs on cuda, on the forward's stream, and returns to the input's device",
          "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  Tensor x = ramp({3, 4}, kFloat32).requires_grad_();
  Stream s = new_stream(dev);
  Tensor y;
  {
    StreamGuard guard(s);
    y = x.cuda() * 3 + 1;
  }
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->stream() == s);
  y.backward(ones_like(y));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device() == kCPU);
  CHECK(values(x.grad()) == std::vector<double>(12, 3.0));
}

TEST_CASE("pin_memory without a CUDA device or backend is a clear error", "[cuda]") {
  if (cuda::is_available()) {
    WARN("skipped: this machine has a CUDA device (the pinned-memory test above covers it)");
    return;
  }
  CHECK_THROWS_WITH(ones({4}).pin_memory(),
                    Contains("page-locked") &&
                        Contains(cuda_is_built() ? "needs a CUDA device" : "built without CUDA"));
}

TEST_CASE("a pinned tensor freed while its non_blocking copy is queued is not read after",
          "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  const int64_t n = 1 << 16;
  // Work queued ahead on the stream, so the copy below is still waiting when its source goes.
  Tensor busy = ones({1 << 22}, TensorOptions(kFloat32).device(dev));
  for (int i = 0; i < 4; ++i) busy = busy * 1.5 + 1;
  Tensor d;
  {
    Tensor pinned = ramp({n}, kFloat32).pin_memory();
    d = pinned.to(dev, kFloat32, /*non_blocking=*/true);
  }  // freed here: cudaFreeHost (and the simulator) first let the queued copy run
  Tensor reuse = full({n}, -7.0).pin_memory();  // likely the same host block, overwritten
  CHECK(values(d) == values(ramp({n}, kFloat32)));
  CHECK(values(reuse)[0] == -7.0);
}

// Note [Cached pinned blocks] in kernels/cuda/memory.cpp: a freed pinned block is kept and
// handed out again for its size class, but not while a non_blocking copy queued on it has yet
// to run; empty_cache returns the free blocks.
TEST_CASE("pinned blocks are cached, and reused only after their queued copies ran", "[cuda]") {
  if (!have_cuda()) return;
  const Device dev = Device::cuda(0);
  Allocator* pinned = get_pinned_allocator();
  cuda::synchronize();
  pinned->empty_cache();
  const int64_t base = pinned->stats().reserved_bytes;
  void* first = nullptr;
  {
    Tensor p = empty({1000}, kFloat32).pin_memory();  // 4000 bytes: the 4096-byte class
    first = p.data_ptr();
    CHECK(pinned->stats().reserved_bytes == base + 4096);
  }
  CHECK(pinned->stats().reserved_bytes == base + 4096);  // kept
  CHECK(pinned->stats().cached_bytes >= 4096);
  {
    Tensor q = empty({900}, kFloat32).pin_memory();  // the same class: the same block
    CHECK(q.data_ptr() == first);
  }
#if defined(EMBER_CUDA_SIM)
  // A copy that cannot run yet: the stream first waits for host work released below.
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  auto* stream = static_cast<sim::Stream*>(kernels::cuda::native_stream(current_stream(dev)));
  sim::enqueue(stream, [open] { open.wait(); });
  Tensor d;
  {
    Tensor p = ramp({1000}, kFloat32).pin_memory();
    CHECK(p.data_ptr() == first);
    d = p.to(dev, kFloat32, /*non_blocking=*/true);
  }
  {
    Tensor q = full({1000}, -1.0).pin_memory();  // first's copy is still queued: another block
    CHECK(q.data_ptr() != first);
  }
  gate.set_value();
  cuda::synchronize();
  CHECK(values(d) == values(ramp({1000}, kFloat32)));
  const int64_t reserved = pinned->stats().reserved_bytes;
  {
    Tensor a = empty({1000}, kFloat32).pin_memory(), b = empty({1000}, kFloat32).pin_memory();
    CHECK(pinned->stats().reserved_bytes == reserved);  // both kept blocks reused
  }
#endif
  pinned->empty_cache();
  CHECK(pinned->stats().reserved_bytes == pinned->stats().allocated_bytes);
  CHECK(pinned->stats().cached_bytes == 0);
}

// The device's own memory provider (the driver's virtual memory calls on a GPU, the simulator's
// in a sim build) behind an expandable segment: a growth, a release of the free tail that starts
// inside that growth (Note [One physical allocation per granule] in kernels/cuda/runtime_real.cpp:
// the driver cannot unmap part of one mapping), a second growth over the released pages, and the
// values written through all of it.
TEST_CASE("expandable segments on the device release part of a growth and map it again", "[cuda]") {
  if (!have_cuda()) return;
  DeviceMemoryProvider* mem = get_device_memory_provider();
  REQUIRE(mem != nullptr);
  if (!mem->supports_expandable()) {
    WARN("skipped: this device has no virtual memory management");
    return;
  }
  constexpr int64_t MiB = int64_t{1} << 20;
  REQUIRE(mem->granularity() == static_cast<size_t>(2 * MiB));
  cuda::synchronize();
  CUDAAllocatorConfig config;
  config.expandable_segments = true;
  CUDACachingAllocator alloc(mem, config);
  Allocator* old = get_allocator(DeviceType::CUDA);
  set_allocator(DeviceType::CUDA, &alloc);
  struct Restore {
    Allocator* old;
    ~Restore() { set_allocator(DeviceType::CUDA, old); }
  } restore{old};
  const auto large = [&] { return alloc.memory_stats(0).reserved[kLargePool].current; };
  const TensorOptions on_cuda = TensorOptions().device(Device::cuda(0));
  {
    Tensor a = full({11 * MiB / 4}, 1.0f, on_cuda);  // 11 MiB: one growth of 12 MiB
    CHECK(large() == 12 * MiB);
    CHECK(a.sum().item<float>() == static_cast<float>(11 * MiB / 4));
  }
  Tensor b = full({4 * MiB / 4}, 2.0f, on_cuda);  // the first 4 MiB of the freed growth
  CHECK(large() == 12 * MiB);
  cuda::synchronize();
  alloc.empty_cache();  // unmaps [4 MiB, 12 MiB): from inside the first growth to its end
  CHECK(large() == 4 * MiB);
  Tensor c = full({30 * MiB / 4}, 0.5f, on_cuda);  // grows over the released pages
  CHECK(large() == 34 * MiB);
  CHECK(b.sum().item<float>() == 2.0f * static_cast<float>(MiB));
  CHECK(c.sum().item<float>() == 0.5f * static_cast<float>(30 * MiB / 4));
  b = Tensor();
  c = Tensor();
  cuda::synchronize();
  alloc.empty_cache();
  CHECK(large() == 0);
  CHECK(alloc.memory_stats(0).allocated_bytes == 0);
}
