// Where ember makes the host wait for a cuda device: the sync debug mode (Note [Sync debug mode]
// in core/cuda.h) over a whole training step, which must wait nowhere -- its checks of index
// values, cross-entropy targets and pooling indices are deferred (Note [Deferred device checks]
// in kernels/cuda/device_checks.h) -- and over the ops that must wait; the profiler's
// cudaStreamSynchronize ranges. Tagged [cuda].

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/cuda.h"
#include "core/profiler.h"
#include "cuda_test_util.h"
#include "examples/models.h"
#include "nn/clip_grad.h"
#include "nn/functional.h"
#include "optim/adam.h"
#include "test_util.h"

using namespace ember;
using Catch::Contains;
using ember::testing::have_cuda;
using ember::testing::launch_blocking_env;

namespace {

const Device kDev = Device::cuda(0);

// Sets the mode for a scope and restores Off, also when a check fails.
struct SyncDebugScope {
  explicit SyncDebugScope(cuda::SyncDebugMode m) { cuda::set_sync_debug_mode(m); }
  ~SyncDebugScope() { cuda::set_sync_debug_mode(cuda::SyncDebugMode::Off); }
};

// What `f` writes to stderr (file descriptor 2, where the warnings go).
template <class F>
std::string capture_stderr(F&& f) {
  std::fflush(stderr);
  char path[] = "/tmp/ember_stderr_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = dup(2);
  dup2(fd, 2);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    std::remove(path);
    throw;
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

}  // namespace

TEST_CASE("a cuda training step never makes the host wait for the device", "[cuda]") {
  if (!have_cuda() || launch_blocking_env()) return;
  manual_seed(3);
  auto model = examples::make_cnn();
  model->to(kDev);
  Tensor table = randn({20, 10}).to(kDev).requires_grad_(true);
  std::vector<Tensor> params = model->parameters();
  params.push_back(table);
  optim::Adam opt(params, optim::AdamOptions(1e-3));
  const Tensor x = randn({4, 1, 28, 28}).to(kDev);
  const Tensor y = randint(0, 10, {4}, kInt64).to(kDev);
  const Tensor ids = randint(0, 20, {4, 3}, kInt64).to(kDev);
  cuda::synchronize();
  SyncDebugScope error_mode(cuda::SyncDebugMode::Error);
  Tensor loss;
  // Forward (convolutions, max pooling, an embedding, the fused cross-entropy), backward (the
  // max-pool backward checks its indices, the embedding's scatter its ids), clipping, Adam.
  for (int step = 0; step < 2; ++step) {
    REQUIRE_NOTHROW(opt.zero_grad());
    REQUIRE_NOTHROW(loss = nn::functional::cross_entropy(
                        model->forward(x) + nn::functional::embedding(ids, table).sum({1}), y));
    REQUIRE_NOTHROW(loss.backward());
    REQUIRE_NOTHROW(nn::utils::clip_grad_norm_(params, 1.0));
    REQUIRE_NOTHROW(opt.step());
  }
  // Reading the loss waits, and says so before it does.
  CHECK_THROWS_WITH(loss.item<float>(), Contains("copy_: makes the host wait for cuda:0") &&
                                            Contains("sync debug mode is error"));
  // Explicit waits are never reported.
  CHECK_NOTHROW(cuda::synchronize());
  CHECK_NOTHROW(current_stream(kDev).synchronize());
  // A non-blocking copy into pinned memory does not wait; Stream::synchronize then does.
  Tensor host = empty({}, TensorOptions(kFloat32)).pin_memory();
  CHECK_NOTHROW(host.copy_(loss.detach(), /*non_blocking=*/true));
  CHECK_NOTHROW(current_stream(kDev).synchronize());
  cuda::set_sync_debug_mode(cuda::SyncDebugMode::Off);
  CHECK(host.item<float>() == loss.item<float>());
  CHECK(std::isfinite(loss.item<float>()));
}

TEST_CASE("the sync debug mode reports the ops that wait: once in warn, before waiting in error",
          "[cuda]") {
  if (!have_cuda() || launch_blocking_env()) return;
  const Tensor x = arange(0, 12, 1, kFloat32).reshape({3, 4}).to(kDev);
  CHECK(cuda::get_sync_debug_mode() == cuda::SyncDebugMode::Off);
  {
    SyncDebugScope error_mode(cuda::SyncDebugMode::Error);
    CHECK_THROWS_WITH(x.cpu(), Contains("copy_: makes the host wait for cuda:0"));
    CHECK_THROWS_WITH((x > 5.0).nonzero(), Contains("nonzero: makes the host wait for cuda:0"));
    CHECK_THROWS_WITH(x.masked_select(x > 5.0), Contains("nonzero: makes the host wait"));
    CHECK_THROWS_WITH(randn({3}).to(kDev), Contains("copy_: makes the host wait"));  // pageable
    CHECK_NOTHROW(x * 2 + 1);
  }
  {
    SyncDebugScope warn_mode(cuda::SyncDebugMode::Warn);
    Tensor a, b;
    const std::string out = capture_stderr([&] {
      a = (x > 5.0).nonzero();
      b = (x > 7.0).nonzero();
    });
    const std::string line = "ember: nonzero makes the host wait for cuda:0";
    const size_t first = out.find(line);
    CHECK(first != std::string::npos);
    CHECK(out.find(line, first + 1) == std::string::npos);  // once
    CHECK(a.size(0) == 6);                                  // the ops themselves ran
    CHECK(b.size(0) == 4);
  }
  const std::string quiet = capture_stderr([&] { (void)x.sum().item<float>(); });
  CHECK(quiet.find("makes the host wait") == std::string::npos);  // Off: nothing
}

TEST_CASE("the profiler shows where the host waits for a cuda device", "[cuda]") {
  if (!have_cuda() || launch_blocking_env()) return;
  const Tensor x = arange(0, 12, 1, kFloat32).reshape({3, 4}).to(kDev);
  cuda::synchronize();
  const auto waits_in = [](const std::function<void()>& fn) {
    profiler::Profiler prof;
    prof.start();
    fn();
    int n = 0;
    for (const profiler::FunctionEvent& e : prof.stop().events(profiler::Category::user))
      n += e.name == "cudaStreamSynchronize" || e.name == "cudaDeviceSynchronize";
    return n;
  };
  const Tensor rows = tensor<int64_t>({2, 0}).to(kDev);  // a copy from pageable memory: waits
  Tensor y;
  CHECK(waits_in([&] { y = (x * 2 + 1).index_select(0, rows); }) == 0);
  CHECK(waits_in([&] { (void)y.sum().item<float>(); }) == 1);
  CHECK(waits_in([&] { cuda::synchronize(); }) == 1);
}

TEST_CASE("EMBER_CUDA_SYNC_DEBUG takes off, warn or error and names a bad value", "[cuda]") {
  using cuda::SyncDebugMode;
  using cuda::detail::parse_sync_debug_mode;
  CHECK(parse_sync_debug_mode(nullptr) == SyncDebugMode::Off);
  CHECK(parse_sync_debug_mode("") == SyncDebugMode::Off);
  CHECK(parse_sync_debug_mode("off") == SyncDebugMode::Off);
  CHECK(parse_sync_debug_mode("1") == SyncDebugMode::Warn);
  CHECK(parse_sync_debug_mode("warn") == SyncDebugMode::Warn);
  CHECK(parse_sync_debug_mode("error") == SyncDebugMode::Error);
  CHECK(parse_sync_debug_mode("2") == SyncDebugMode::Error);
  CHECK_THROWS_WITH(parse_sync_debug_mode("loud"),
                    Contains("EMBER_CUDA_SYNC_DEBUG='loud': use off, warn or error"));
}
