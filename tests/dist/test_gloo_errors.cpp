// ProcessGroupGloo: calls that disagree across ranks raise Mismatch naming both calls; bad
// arguments raise Usage errors naming the op and the values; bad options fail create().
#include <catch2/catch.hpp>
#include <thread>

#include "distributed/hash_store.h"
#include "gloo_test_util.h"

using namespace ember;
using namespace std::chrono_literals;
using dist_test::from_doubles;

namespace {

// Waits for w and returns its dist::Error (fails the worker when it succeeded).
dist::Error wait_error(const dist::WorkPtr& w) {
  try {
    w->wait(20s);
  } catch (const dist::Error& e) {
    return e;
  }
  throw std::runtime_error(w->op() + " #" + std::to_string(w->seq()) + " succeeded");
}

}  // namespace

// Rank 0 calls allreduce where rank 1 calls broadcast (seq 1), then, in a second group, the
// same allreduce with another element count.
DIST_WORKER(gloo_mismatch) {
  {
    auto pg = dist_test::make_gloo(args, "op");
    Tensor t = zeros({4});
    auto w = args.rank == 0 ? pg->allreduce(t) : pg->broadcast(t, 0);
    const dist::Error e = wait_error(w);
    const std::string m = e.what();
    DIST_EXPECT(e.kind() == dist::ErrorKind::Mismatch, "kind ", dist::to_string(e.kind()), ": ", m);
    DIST_EXPECT(m.find("allreduce #1") != std::string::npos, m);
    DIST_EXPECT(m.find("broadcast #1") != std::string::npos, m);
    DIST_EXPECT(e.peer() == 1 - args.rank, "peer ", e.peer(), ": ", m);
    // The group stays failed: the next call raises Aborted quoting the mismatch.
    try {
      pg->barrier();
      DIST_EXPECT(false, "a call on a failed group was accepted");
    } catch (const dist::Error& a) {
      const std::string am = a.what();
      DIST_EXPECT(a.kind() == dist::ErrorKind::Aborted, am);
      DIST_EXPECT(am.find("failed earlier") != std::string::npos && am.find(m) != std::string::npos,
                  am);
    }
  }
  {
    auto pg = dist_test::make_gloo(args, "numel");
    pg->barrier()->wait();  // seq 1 agrees
    Tensor t = zeros({args.rank == 0 ? 4 : 5});
    const dist::Error e = wait_error(pg->allreduce(t));
    const std::string m = e.what();
    DIST_EXPECT(e.kind() == dist::ErrorKind::Mismatch, m);
    DIST_EXPECT(m.find("allreduce #2 [float32, 4 elements, sum]") != std::string::npos &&
                    m.find("allreduce #2 [float32, 5 elements, sum]") != std::string::npos,
                m);
  }
  {
    auto pg = dist_test::make_gloo(args, "reduce");
    Tensor t = zeros({3});
    const dist::Error e =
        wait_error(pg->allreduce(t, args.rank == 0 ? dist::ReduceOp::Sum : dist::ReduceOp::Max));
    DIST_EXPECT(e.kind() == dist::ErrorKind::Mismatch &&
                    std::string(e.what()).find("max") != std::string::npos,
                e.what());
  }
  return 0;
}

TEST_CASE("gloo: ranks that call different collectives both raise Mismatch", "[dist][gloo]") {
  dist_test::RunOptions o;
  o.params["store"] = dist_test::scratch_dir() + "/store";
  o.params["timeout_ms"] = "5000";
  o.timeout = 40s;
  auto r = dist_test::run_workers("gloo_mismatch", 2, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

namespace {

std::shared_ptr<dist::ProcessGroupGloo> single(dist::GlooOptions o = {}) {
  auto store = std::make_shared<dist::HashStore>(5s);
  o.hostname = o.interface.empty() ? "127.0.0.1" : "";
  o.timeout = 2s;
  return dist::ProcessGroupGloo::create(store, 0, 1, o);
}

template <class F>
dist::Error error_of(F&& f) {
  try {
    f();
  } catch (const dist::Error& e) {
    return e;
  }
  FAIL("no dist::Error was raised");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("gloo: bad arguments raise Usage errors naming the op", "[dist][gloo]") {
  auto pg = single();
  Tensor m = zeros({3, 4});
  auto e = error_of([&] { pg->allreduce(m.t()); });
  CHECK(e.kind() == dist::ErrorKind::Usage);
  CHECK_THAT(e.what(), Catch::Contains("allreduce") && Catch::Contains("contiguous"));

  e = error_of([&] { pg->allgather({zeros({2}), zeros({2})}, zeros({2})); });
  CHECK(e.kind() == dist::ErrorKind::Usage);
  CHECK_THAT(e.what(), Catch::Contains("expected 1 output tensors") && Catch::Contains("got 2"));

  e = error_of([&] { pg->allgather({zeros({3})}, zeros({2})); });
  CHECK_THAT(e.what(), Catch::Contains("every output must match the input"));

  e = error_of([&] { pg->reduce_scatter(zeros({2}), {}); });
  CHECK_THAT(e.what(), Catch::Contains("reduce_scatter") && Catch::Contains("expected 1 input"));

  e = error_of([&] { pg->broadcast(zeros({2}), 1); });
  CHECK_THAT(e.what(), Catch::Contains("root 1 is not a rank"));

  e = error_of([&] { pg->allreduce(zeros({2}, TensorOptions().dtype(kBool))); });
  CHECK(e.kind() == dist::ErrorKind::Usage);
  CHECK_THAT(e.what(), Catch::Contains("does not reduce bool"));

  e = error_of([&] { pg->send(zeros({2}), 0); });
  CHECK_THAT(e.what(), Catch::Contains("not another rank"));

  // None of these failed the group.
  CHECK_FALSE(pg->failed());
  Tensor t = from_doubles({2}, kFloat32);
  pg->allreduce(t)->wait();
}

TEST_CASE("gloo: bad options and a network that cannot be used fail create()", "[dist][gloo]") {
  auto store = std::make_shared<dist::HashStore>(5s);
  dist::GlooOptions o;
  o.interface = "ember-no-such-if0";
  auto e = error_of([&] { dist::ProcessGroupGloo::create(store, 0, 1, o); });
  CHECK(e.kind() == dist::ErrorKind::Backend);
  CHECK_THAT(e.what(), Catch::Contains("ember-no-such-if0"));

  o = {};
  o.rendezvous_timeout = 0ms;
  e = error_of([&] { dist::ProcessGroupGloo::create(store, 0, 1, o); });
  CHECK(e.kind() == dist::ErrorKind::Usage);

  e = error_of([&] { dist::ProcessGroupGloo::create(store, 2, 2, {}); });
  CHECK(e.kind() == dist::ErrorKind::Usage);
  CHECK_THAT(e.what(), Catch::Contains("rank 2 is not in a world of size 2"));

  e = error_of([&] { dist::ProcessGroupGloo::create(nullptr, 0, 1, {}); });
  CHECK_THAT(e.what(), Catch::Contains("store is null"));
}

TEST_CASE("gloo: the network choice follows the documented order", "[dist][gloo]") {
  // Nothing given: this machine's hostname or loopback -- either way a working group of one.
  auto store = std::make_shared<dist::HashStore>(5s);
  dist::GlooOptions o;
  o.timeout = 2s;
  auto pg = dist::ProcessGroupGloo::create(store, 0, 1, o);
  pg->barrier()->wait();
  // GLOO_SOCKET_IFNAME is used when the options name nothing.
  setenv("GLOO_SOCKET_IFNAME", "ember-no-such-if1", 1);
  auto e = error_of([&] { dist::ProcessGroupGloo::create(store, 0, 1, o); });
  CHECK_THAT(e.what(),
             Catch::Contains("ember-no-such-if1") && Catch::Contains("GLOO_SOCKET_IFNAME"));
  // An explicit hostname wins over it.
  o.hostname = "127.0.0.1";
  pg = dist::ProcessGroupGloo::create(store, 0, 1, o);
  pg->barrier()->wait();
  unsetenv("GLOO_SOCKET_IFNAME");
  // The loopback interface by name.
  o.hostname = "";
  o.interface = "lo";
  pg = dist::ProcessGroupGloo::create(store, 0, 1, o);
  pg->barrier()->wait();
}

// Rank 0: a recv that rank 1 never matches times out naming rank 1 and the tag; then, in a
// second group, three allreduces rank 1 never joins, and the group destroyed at once: the
// running one times out, the queued ones are aborted, the destructor returns within the
// timeout. Rank 1 waits in the store until rank 0 is done.
DIST_WORKER(gloo_unmatched) {
  dist::FileStore store(args.param("store"), 20s);
  auto pg = dist_test::make_gloo(args, "p2p");
  auto pg2 = dist_test::make_gloo(args, "destroy");
  if (args.rank == 1) {
    store.wait({"done"}, 20s);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  Tensor t = zeros({4});
  const dist::Error e = wait_error(pg->recv(t, 1, 5));
  const double s = dist_test::seconds_since(start);
  DIST_EXPECT(e.kind() == dist::ErrorKind::Timeout && e.peer() == 1, e.what());
  DIST_EXPECT(std::string(e.what()).find("recv (rank 0 of 2): timeout: from rank 1 (tag 5)") !=
                  std::string::npos,
              e.what());
  DIST_EXPECT(s < 1.0 + 1.0, "after ", s, " s");
  DIST_EXPECT(pg->failed(), "a timed out recv fails the group");

  std::vector<Tensor> ts{zeros({4}), zeros({4}), zeros({4})};
  std::vector<dist::WorkPtr> ws;
  for (auto& x : ts) ws.push_back(pg2->allreduce(x));
  DIST_EXPECT(!ws[0]->is_completed(), "completed without rank 1");
  std::this_thread::sleep_for(300ms);  // let the first one start
  const auto d0 = std::chrono::steady_clock::now();
  pg2.reset();
  const double ds = dist_test::seconds_since(d0);
  DIST_EXPECT(ds < 1.0 + 1.0, "destructor took ", ds, " s");
  for (size_t k = 0; k < ws.size(); ++k) {
    DIST_EXPECT(ws[k]->is_completed(), "work ", k, " not finished by the destructor");
    const dist::Error we = wait_error(ws[k]);
    const std::string m = we.what();
    if (k == 0) {
      // Running (a timeout) -- or, on a loaded machine, not yet started when destroyed.
      DIST_EXPECT(we.kind() == dist::ErrorKind::Timeout || m.find("destroyed") != std::string::npos,
                  m);
    } else {
      DIST_EXPECT(we.kind() == dist::ErrorKind::Aborted, m);
      DIST_EXPECT(
          m.find("destroyed") != std::string::npos || m.find("failed earlier") != std::string::npos,
          m);
    }
  }
  store.set("done", "1");
  return 0;
}

TEST_CASE("gloo: an unmatched recv times out naming its peer, the destructor aborts the queue",
          "[dist][gloo]") {
  dist_test::RunOptions o;
  o.params["store"] = dist_test::scratch_dir() + "/store";
  o.params["timeout_ms"] = "1000";
  o.timeout = 30s;
  auto r = dist_test::run_workers("gloo_unmatched", 2, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}
