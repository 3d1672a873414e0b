// Copies between devices dispatch through copy_stub's (source, destination) table (Note
// [Device-pair stubs] in core/dispatch.h). A stand-in cuda device whose memory is host memory
// (tests/fake_device.h) shows the whole path in a CPU-only build.

#include <catch2/catch.hpp>

#include "core/tensor_iter.h"
#include "fake_device.h"
#include "test_util.h"

using namespace ember;
using Catch::Matchers::Contains;
using ember::testing::FakeCudaScope;
using ember::testing::values;

namespace {

int g_cross_device_copies = 0;
Device g_iter_device, g_src_device;

// The "CUDA" copy kernels of the fake device: its memory is host memory, so the CPU kernel can
// move the bytes; they record what the iterator described.
void fake_cross_device_copy(TensorIter& iter, bool non_blocking) {
  ++g_cross_device_copies;
  g_iter_device = iter.device();
  g_src_device = iter.tensor(1).device();
  copy_stub.table[0][0](iter, non_blocking);
}

// Installs the fake cpu<->cuda kernels for a scope.
struct FakeCopyKernels {
  copy_fn old_h2d = copy_stub.table[0][1], old_d2h = copy_stub.table[1][0];
  FakeCopyKernels() {
    copy_stub.table[static_cast<int>(DeviceType::CPU)][static_cast<int>(DeviceType::CUDA)] =
        &fake_cross_device_copy;
    copy_stub.table[static_cast<int>(DeviceType::CUDA)][static_cast<int>(DeviceType::CPU)] =
        &fake_cross_device_copy;
  }
  ~FakeCopyKernels() {
    copy_stub.table[0][1] = old_h2d;
    copy_stub.table[1][0] = old_d2h;
  }
};

}  // namespace

TEST_CASE("copy_stub has one kernel per device pair", "[core][device_copy]") {
  CHECK(copy_stub.has_kernel(DeviceType::CPU, DeviceType::CPU));
  if (cuda_is_built()) return;
  CHECK_FALSE(copy_stub.has_kernel(DeviceType::CPU, DeviceType::CUDA));
  CHECK_FALSE(copy_stub.has_kernel(DeviceType::CUDA, DeviceType::CPU));
  Tensor a = ones({2, 3});
  Tensor b = empty({2, 3});
  TensorIter iter = TensorIterConfig("copy_").add_output(b).add_input(a).build();
  CHECK_THROWS_WITH(
      copy_stub(DeviceType::CPU, DeviceType::CUDA, iter, false),
      Contains("copy_stub: no kernel from cpu to cuda") && Contains("built without CUDA"));
  // The cpu -> cpu entry is the kernel every same-device copy uses.
  copy_stub(DeviceType::CPU, DeviceType::CPU, iter, false);
  CHECK(values(b) == std::vector<double>(6, 1.0));
}

TEST_CASE("a copy to a device without a kernel names both devices", "[core][device_copy]") {
  if (cuda_is_built()) return;  // "this build has CPU<->CUDA copy kernels"
  // Without a cuda allocator a cuda tensor cannot even be made.
  CHECK_THROWS_WITH(ones({2}).to(Device("cuda")), Contains("built without CUDA"));
  FakeCudaScope fake(/*install_allocator=*/true);
  Tensor dev = empty({2, 3}, TensorOptions().device(Device("cuda:1")));
  CHECK(dev.device() == Device("cuda:1"));
  CHECK_THROWS_WITH(
      dev.copy_(ones({2, 3})),
      Contains("copy_: no kernel copies from cpu to cuda:1") && Contains("built without CUDA"));
  CHECK_THROWS_WITH(dev.to(kCPU), Contains("copy_: no kernel copies from cuda:1 to cpu"));
}

TEST_CASE("copies between devices reach the device pair's kernel", "[core][device_copy]") {
  FakeCudaScope fake(/*install_allocator=*/true);
  FakeCopyKernels kernels;
  g_cross_device_copies = 0;

  // cpu -> cuda with broadcasting and a dtype conversion, through one mixed-device iterator.
  Tensor src = arange(0, 4, 1, TensorOptions(kInt32));  // (4,) broadcast to (3, 4)
  Tensor dev = empty({3, 4}, TensorOptions(kFloat32).device(Device("cuda:0")));
  dev.copy_(src);
  CHECK(g_cross_device_copies == 1);
  CHECK(g_iter_device == Device("cuda:0"));
  CHECK(g_src_device == kCPU);

  // cuda -> cpu through to(), which allocates on the cpu and copies.
  Tensor back = dev.to(kCPU);
  CHECK(g_cross_device_copies == 2);
  CHECK(g_iter_device == kCPU);
  CHECK(g_src_device == Device("cuda:0"));
  CHECK(back.device() == kCPU);
  CHECK(back.dtype() == kFloat32);
  CHECK(values(back) == std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});

  // Same-device copies never use the cross-device entries.
  Tensor c = empty({3, 4});
  c.copy_(back.t().t());
  c.copy_(back);
  CHECK(g_cross_device_copies == 2);
}
