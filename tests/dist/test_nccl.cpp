// ProcessGroupNCCL through the fake NCCL (tests/dist/fake_nccl.h): world size 1 on the CUDA
// simulator, the fingerprint exchange, and the watchdog's timeouts, asynchronous errors and
// aborts. Skipped (with a WARN saying why) in builds without a cuda device.
#include <catch2/catch.hpp>
#include <thread>

#include "core/cuda.h"
#include "core/ops/factory.h"
#include "distributed/hash_store.h"
#include "distributed/process_group_nccl.h"
#include "fake_nccl.h"

using namespace ember;
using namespace std::chrono_literals;
namespace fake = ember::dist_test::fake_nccl;

namespace {

using Clock = std::chrono::steady_clock;

bool have_cuda() {
  if (cuda::is_available()) return true;
  WARN("skipped: " << (cuda_is_built() ? "no CUDA device is available on this machine"
                                       : "ember was built without CUDA (EMBER_CUDA=off)"));
  return false;
}

bool can_hang() {
  if (fake::can_hang()) return true;
  WARN("skipped: the fake NCCL hangs an op with the CUDA simulator's host work (EMBER_CUDA=sim)");
  return false;
}

dist::NcclOptions fake_options(std::chrono::milliseconds timeout = 5s) {
  dist::NcclOptions o;
  o.api = fake::api();
  o.timeout = timeout;
  o.device = 0;
  o.watchdog_interval = 20ms;
  return o;
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.cpu().contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// Runs f, which must throw a dist::Error of `kind`; returns it.
template <class F>
dist::Error expect_error(F&& f, dist::ErrorKind kind) {
  try {
    f();
  } catch (const dist::Error& e) {
    INFO(e.what());
    CHECK(e.kind() == kind);
    return e;
  }
  FAIL("no dist::Error was raised");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("nccl: a build without NCCL fails at once with a clear error", "[dist][nccl]") {
  if (dist::real_nccl_api() != nullptr) {
    WARN("skipped: this build has the real NCCL (EMBER_CUDA=real)");
    return;
  }
  auto store = std::make_shared<dist::HashStore>(5s);
  const auto t0 = Clock::now();
  const dist::Error e =
      expect_error([&] { dist::ProcessGroupNCCL::create(store, 0, 1); }, dist::ErrorKind::Backend);
  CHECK(since(t0) < 0.5);
  CHECK_THAT(e.what(),
             Catch::Contains("NCCL is not in this build (EMBER_CUDA=") && Catch::Contains("Gloo"));
  CHECK(store->num_keys() == 0);  // it never got as far as the store
}

TEST_CASE("nccl: world size 1 through the fake: every op, fingerprints exchanged", "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::reset();
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options());
  CHECK(pg->backend_name() == "nccl");
  CHECK(pg->device() == Device::cuda(0));
  CHECK(store->check({"nccl/unique_id"}));

  const Device dev = Device::cuda(0);
  Tensor a = from_vector<float>({1.f, -2.f, 3.5f}).to(dev);
  for (auto op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max,
                  dist::ReduceOp::Min, dist::ReduceOp::Product}) {
    pg->allreduce(a, op)->wait(10s);
    CHECK(values(a) == std::vector<float>{1.f, -2.f, 3.5f});
  }
  Tensor b = (from_vector<float>({4.f, 5.f}) * 2).to(dev);
  auto w = pg->broadcast(b, 0);
  w->wait(10s);
  CHECK(w->is_completed());
  CHECK(w->exception() == nullptr);
  CHECK(values(b) == std::vector<float>{8.f, 10.f});

  Tensor in = from_vector<float>({1.f, 2.f, 3.f, 4.f}).view({2, 2}).to(dev);
  Tensor out = zeros({2, 2}, TensorOptions().device(dev));
  pg->allgather({out}, in)->wait(10s);
  CHECK(values(out) == std::vector<float>{1.f, 2.f, 3.f, 4.f});
  Tensor rs = zeros({2, 2}, TensorOptions().device(dev));
  pg->reduce_scatter(rs, {in * 3}, dist::ReduceOp::Sum)->wait(10s);
  CHECK(values(rs) == std::vector<float>{3.f, 6.f, 9.f, 12.f});
  pg->barrier()->wait(10s);

  Tensor i64 = from_vector<int64_t>({7, 8}).to(dev);
  pg->allreduce(i64, dist::ReduceOp::Avg)->wait(10s);
  CHECK(i64.cpu().data_ptr<int64_t>()[1] == 8);
  Tensor flags = ones({2}, TensorOptions().dtype(kBool).device(dev));
  pg->allreduce(flags)->wait(10s);
  CHECK(flags.cpu().data_ptr<bool>()[0]);
  pg->allreduce(empty({0}, TensorOptions().device(dev)))->wait(10s);

  // Non-blocking wait: the current stream waits for the op's end event.
  Tensor c = full({3}, 2.f, TensorOptions().device(dev));
  auto wc = pg->allreduce(c);
  std::dynamic_pointer_cast<dist::NcclWork>(wc)->block_current_stream();
  CHECK(values(c * 2) == std::vector<float>{4.f, 4.f, 4.f});
  wc->wait(10s);

  const int collectives = 5 + 1 + 1 + 1 + 1 + 3 + 1;
  CHECK(pg->seq() == collectives);
  const fake::Stats s = fake::stats();
  CHECK(s.all_gather == collectives + 1);  // one fingerprint exchange each, and the allgather
  CHECK(s.all_reduce == 5 + 3 + 1 - 1);    // the empty tensor moves no data
  CHECK(s.broadcast == 1);
  CHECK(s.reduce_scatter == 1);
  CHECK(s.inits == 1);
  CHECK(s.aborts == 0);
  CHECK_FALSE(pg->failed());
  pg.reset();
  CHECK(fake::stats().destroys == 1);
}

TEST_CASE("nccl: bad arguments are Usage errors naming the op", "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::reset();
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options());
  const dist::Error cpu = expect_error([&] { pg->allreduce(ones({2})); }, dist::ErrorKind::Usage);
  CHECK_THAT(cpu.what(), Catch::Contains("allreduce") && Catch::Contains("cuda tensors"));
  const dist::Error i16 = expect_error(
      [&] { pg->allreduce(ones({2}, TensorOptions().dtype(kInt16).device(Device::cuda(0)))); },
      dist::ErrorKind::Usage);
  CHECK_THAT(i16.what(), Catch::Contains("NCCL has no int16"));
  if (cuda::device_count() > 1) {
    const dist::Error other =
        expect_error([&] { pg->broadcast(ones({2}, TensorOptions().device(Device::cuda(1))), 0); },
                     dist::ErrorKind::Usage);
    CHECK_THAT(other.what(), Catch::Contains("cuda:1") && Catch::Contains("cuda:0"));
  }
  dist::NcclOptions o = fake_options();
  o.device = 99;
  expect_error([&] { dist::ProcessGroupNCCL::create(store, 0, 1, o); }, dist::ErrorKind::Usage);
  CHECK_FALSE(pg->failed());
}

TEST_CASE("nccl: a mismatched fingerprint fails the Work with Mismatch and aborts",
          "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::Faults f;
  f.corrupt_all_gather = 2;  // the second collective's exchange: "rank 0 called broadcast"
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options());
  Tensor t = ones({4}, TensorOptions().device(Device::cuda(0)));
  pg->allreduce(t)->wait(10s);
  auto w = pg->allreduce(t);
  const dist::Error e = expect_error([&] { w->wait(10s); }, dist::ErrorKind::Mismatch);
  CHECK_THAT(e.what(), Catch::Contains("this rank called allreduce #2") &&
                           Catch::Contains("rank 0 called broadcast #2"));
  CHECK(pg->failed());
  CHECK(fake::stats().aborts == 1);
  expect_error([&] { pg->allreduce(t); }, dist::ErrorKind::Aborted);
}

TEST_CASE("nccl watchdog: a hung op times out within the timeout plus 1 s and aborts",
          "[dist][nccl]") {
  if (!have_cuda() || !can_hang()) return;
  fake::Faults f;
  f.hang_op = "all_reduce";
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options(1000ms));
  Tensor t = ones({4}, TensorOptions().device(Device::cuda(0)));
  const auto t0 = Clock::now();
  auto hung = pg->allreduce(t);
  auto behind = pg->broadcast(t, 0);  // queued behind it on the group's stream
  CHECK_FALSE(hung->is_completed());
  const dist::Error e = expect_error([&] { hung->wait(10s); }, dist::ErrorKind::Timeout);
  const double waited = since(t0);
  CHECK(waited >= 0.9);
  CHECK(waited < 2.0);
  CHECK(e.op() == "allreduce");
  CHECK(e.seq() == 1);
  CHECK_THAT(e.what(), Catch::Contains("within 1000 ms"));
  // The op behind it fails too, and so does every later call (Note [A failed group stays failed]).
  expect_error([&] { behind->wait(10s); }, dist::ErrorKind::Aborted);
  CHECK(pg->failed());
  const dist::Error later = expect_error([&] { pg->allreduce(t); }, dist::ErrorKind::Aborted);
  CHECK_THAT(later.what(), Catch::Contains("failed earlier") && Catch::Contains("within 1000 ms"));
  CHECK(fake::stats().aborts == 1);
  // The peers are told through the store.
  store->wait({"nccl/abort"}, 2s);
  CHECK_THAT(store->get_string("nccl/abort"),
             Catch::StartsWith("0:") && Catch::Contains("allreduce #1 timed out"));
}

TEST_CASE("nccl watchdog: an asynchronous NCCL error fails the Work with NCCL's message",
          "[dist][nccl]") {
  if (!have_cuda() || !can_hang()) return;
  fake::Faults f;
  f.async_error_after = 2;  // the first allreduce (its fingerprint exchange and its data) works
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options(10s));
  Tensor t = ones({4}, TensorOptions().device(Device::cuda(0)));
  pg->allreduce(t)->wait(10s);
  const auto t0 = Clock::now();
  auto w = pg->allreduce(t);
  const dist::Error e = expect_error([&] { w->wait(10s); }, dist::ErrorKind::Backend);
  CHECK(since(t0) < 1.0);  // found by the watchdog's poll, not the 10 s deadline
  CHECK_THAT(e.what(), Catch::Contains(fake::kAsyncErrorString));
  CHECK(pg->failed());
  CHECK(fake::stats().aborts == 1);
  store->wait({"nccl/abort"}, 2s);
  CHECK_THAT(store->get_string("nccl/abort"), Catch::Contains(fake::kAsyncErrorString));
}

TEST_CASE("nccl watchdog: a peer's abort report aborts the group within a second", "[dist][nccl]") {
  if (!have_cuda() || !can_hang()) return;
  fake::Faults f;
  f.hang_op = "all_reduce";
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options(30s));
  Tensor t = ones({4}, TensorOptions().device(Device::cuda(0)));
  auto w = pg->allreduce(t);
  const auto t0 = Clock::now();
  store->set("nccl/abort", "1:allreduce #1 timed out after 30000 ms");
  const dist::Error e = expect_error([&] { w->wait(10s); }, dist::ErrorKind::Aborted);
  CHECK(since(t0) < 1.0);
  CHECK(e.peer() == 1);
  CHECK_THAT(e.what(), Catch::Contains("rank 1 reported: allreduce #1 timed out"));
  CHECK(pg->failed());
  CHECK(fake::stats().aborts == 1);
  // This rank did not overwrite the root cause with its own report.
  CHECK(store->get_string("nccl/abort") == "1:allreduce #1 timed out after 30000 ms");
}

TEST_CASE("nccl watchdog: a peer's report fails an idle group too, abort() fails pending work",
          "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::reset();
  {
    auto store = std::make_shared<dist::HashStore>(5s);
    auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options());
    store->set("nccl/abort", "3:it ran out of memory");
    const auto t0 = Clock::now();
    while (!pg->failed() && since(t0) < 2.0) std::this_thread::sleep_for(5ms);
    CHECK(since(t0) < 1.0);
    const dist::Error e = expect_error([&] { pg->barrier(); }, dist::ErrorKind::Aborted);
    CHECK_THAT(e.what(), Catch::Contains("rank 3 reported: it ran out of memory"));
  }
  if (!can_hang()) return;
  fake::Faults f;
  f.hang_op = "broadcast";
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options(30s));
  auto w = pg->broadcast(ones({2}, TensorOptions().device(Device::cuda(0))), 0);
  pg->abort("the job is shutting down");
  const dist::Error e = expect_error([&] { w->wait(1s); }, dist::ErrorKind::Aborted);
  CHECK_THAT(e.what(), Catch::Contains("the job is shutting down"));
  CHECK(fake::stats().aborts == 1);
  store->wait({"nccl/abort"}, 2s);
  CHECK(store->get_string("nccl/abort") == "0:the job is shutting down");
}

TEST_CASE("nccl: the group's stream runs after the work queued on the caller's stream",
          "[dist][nccl]") {
  if (!have_cuda() || !can_hang()) return;
  fake::reset();
  auto store = std::make_shared<dist::HashStore>(5s);
  auto pg = dist::ProcessGroupNCCL::create(store, 0, 1, fake_options());
  const Device dev = Device::cuda(0);
  Tensor in = zeros({3}, TensorOptions().device(dev));
  Tensor out = zeros({3}, TensorOptions().device(dev));
  auto release = fake::block(current_stream(dev));  // the compute stream is busy
  in.fill_(7.f);                                    // queued behind it
  auto w = pg->allgather({out}, in);
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(w->is_completed());  // NCCL waits for the compute stream's event
  release();
  w->wait(10s);
  CHECK(values(out) == std::vector<float>{7.f, 7.f, 7.f});
}

TEST_CASE("nccl: a communicator that never finishes initialising times out", "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::Faults f;
  f.init_never_finishes = true;
  fake::reset(f);
  auto store = std::make_shared<dist::HashStore>(5s);
  const auto t0 = Clock::now();
  const dist::Error e =
      expect_error([&] { dist::ProcessGroupNCCL::create(store, 0, 1, fake_options(500ms)); },
                   dist::ErrorKind::Timeout);
  CHECK(since(t0) < 1.5);
  CHECK_THAT(e.what(), Catch::Contains("was not ready within 500 ms"));
  CHECK(fake::stats().aborts == 1);  // the half-made communicator is aborted, not leaked
}

TEST_CASE("nccl: a rank whose rank 0 never publishes the unique id times out", "[dist][nccl]") {
  if (!have_cuda()) return;
  fake::reset();
  auto store = std::make_shared<dist::HashStore>(5s);
  const auto t0 = Clock::now();
  const dist::Error e =
      expect_error([&] { dist::ProcessGroupNCCL::create(store, 1, 2, fake_options(300ms)); },
                   dist::ErrorKind::Timeout);
  CHECK(since(t0) < 1.5);
  CHECK(e.peer() == 0);
  CHECK_THAT(e.what(), Catch::Contains("nccl/unique_id"));
  CHECK(fake::stats().inits == 0);
}
