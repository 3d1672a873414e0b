// ProcessGroupGloo under faults, with short timeouts: a rank killed (SIGKILL) or stopped
// (SIGSTOP) in the middle of a loop of allreduces, a rank that never joins. Every survivor must
// raise a dist::Error within the bound the issue sets, measured in the workers, and a failed
// group must stay failed.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "gloo_test_util.h"

using namespace ember;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Waits (bounded) until the store's counter `key` reaches `at_least`.
bool wait_counter(const std::string& store_path, const std::string& key, int64_t at_least,
                  std::chrono::milliseconds timeout) {
  dist::FileStore store(store_path, 5s);
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (store.add(key, 0) >= at_least) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

// Every rank loops: two allreduces queued, then both waited. Rank 1 counts its iterations in
// the store ("progress") so the test can strike it mid-loop. A survivor prints how long its
// failing iteration took, checks the bound ("bound_ms") and that the group stays failed.
DIST_WORKER(gloo_allreduce_loop) {
  auto pg = dist_test::make_gloo(args);
  dist::FileStore store(args.param("store"), 10s);
  const double bound = args.int_param("bound_ms", 0) / 1000.0;
  Tensor a = ones({1 << 16}), b = ones({1 << 16});
  const auto loop_start = Clock::now();
  for (int64_t it = 0; dist_test::seconds_since(loop_start) < 30; ++it) {
    const auto start = Clock::now();
    auto wa = pg->allreduce(a);
    auto wb = pg->allreduce(b);
    std::string first;
    try {
      wa->wait();
    } catch (const dist::Error& e) {
      first = e.what();
      const double s = dist_test::seconds_since(start);
      std::printf("rank %d: failed after %.2f s at iteration %lld: %s\n", args.rank, s,
                  static_cast<long long>(it), e.what());
      DIST_EXPECT(e.kind() == dist::ErrorKind::PeerLost || e.kind() == dist::ErrorKind::Timeout,
                  "kind ", dist::to_string(e.kind()));
      DIST_EXPECT(s <= bound, "raised after ", s, " s, bound ", bound, " s");
      DIST_EXPECT(std::string(e.what()).find("allreduce #") != std::string::npos, e.what());
    }
    if (first.empty()) {
      try {
        wb->wait();
      } catch (const dist::Error& e) {
        first = e.what();
        const double s = dist_test::seconds_since(start);
        std::printf("rank %d: second failed after %.2f s: %s\n", args.rank, s, e.what());
        DIST_EXPECT(s <= bound, "raised after ", s, " s, bound ", bound, " s");
      }
    } else {
      // The call queued behind the failed one is aborted, quoting the first failure.
      try {
        wb->wait(5s);
        DIST_EXPECT(false, "the call queued behind a failure succeeded");
      } catch (const dist::Error& e) {
        DIST_EXPECT(e.kind() == dist::ErrorKind::Aborted, e.what());
        DIST_EXPECT(std::string(e.what()).find(first) != std::string::npos, e.what());
      }
    }
    if (!first.empty()) {
      // A failed group stays failed.
      try {
        pg->allreduce(a);
        DIST_EXPECT(false, "a call on a failed group was accepted");
      } catch (const dist::Error& e) {
        DIST_EXPECT(e.kind() == dist::ErrorKind::Aborted, e.what());
        DIST_EXPECT(std::string(e.what()).find(first) != std::string::npos, e.what());
      }
      DIST_EXPECT(pg->failed(), "failed()");
      const auto d0 = Clock::now();
      pg.reset();  // the destructor must not hang with a peer gone
      const double ds = dist_test::seconds_since(d0);
      std::printf("rank %d: destroyed in %.2f s\n", args.rank, ds);
      DIST_EXPECT(ds <= bound, "destructor took ", ds, " s");
      return 0;
    }
    if (args.rank == 1) store.add("progress", 1);
  }
  DIST_EXPECT(false, "no failure within 30 s");
  return 1;
}

namespace {

// Runs the loop on `world` ranks, strikes rank 1 with `sig` after 5 of its iterations, and
// checks the survivors (each asserts its own bound).
void strike(int world, const char* algo, int sig, int timeout_ms, int bound_ms) {
  const std::string store = dist_test::scratch_dir() + "/store";
  dist_test::RunOptions o;
  o.params["store"] = store;
  o.params["timeout_ms"] = std::to_string(timeout_ms);
  o.params["bound_ms"] = std::to_string(bound_ms);
  o.params["algo"] = algo;
  o.timeout = 40s;
  auto procs = dist_test::start_workers("gloo_allreduce_loop", world, o);
  REQUIRE(wait_counter(store, "progress", 5, 20s));
  procs[1].signal(sig);
  const auto deadline = Clock::now() + 20s;
  std::vector<dist_test::RankResult> results;
  for (int r = 0; r < world; ++r) {
    if (r != 1) results.push_back(procs[static_cast<size_t>(r)].wait(deadline));
  }
  if (sig != SIGKILL) procs[1].signal(SIGKILL);
  auto victim = procs[1].wait(Clock::now() + 5s);
  INFO(dist_test::describe(results) << "\nvictim: " << victim.summary());
  if (std::getenv("GLOO_TEST_VERBOSE")) WARN(dist_test::describe(results));
  CHECK(dist_test::all_ok(results));
  CHECK(victim.signal == SIGKILL);
}

}  // namespace

TEST_CASE("gloo faults: a rank killed mid-allreduce fails every survivor within timeout + 2 s",
          "[dist][gloo][faults]") {
  for (int world : {2, 3}) {
    for (const char* algo : {"ring", "hd"}) {
      INFO("world " << world << ", " << algo);
      strike(world, algo, SIGKILL, 1000, 1000 + 2000);
    }
  }
}

TEST_CASE("gloo faults: a stopped rank fails its peers within timeout + 1 s",
          "[dist][gloo][faults]") {
  for (int world : {2, 3}) {
    for (const char* algo : {"ring", "hd"}) {
      INFO("world " << world << ", " << algo);
      strike(world, algo, SIGSTOP, 1000, 1000 + 1000);
    }
  }
}

// Ranks 0 and 1 of 3 start; rank 2 never does.
DIST_WORKER(gloo_join_missing) {
  const auto start = Clock::now();
  try {
    dist_test::make_gloo(args);
  } catch (const dist::Error& e) {
    const double s = dist_test::seconds_since(start);
    std::printf("rank %d: %s (%.2f s)\n", args.rank, e.what(), s);
    DIST_EXPECT(e.kind() == dist::ErrorKind::Timeout, e.what());
    DIST_EXPECT(e.peer() == 2, "peer ", e.peer());
    DIST_EXPECT(std::string(e.what()).find("rank 2 never joined") != std::string::npos, e.what());
    const double bound = args.int_param("rdzv_ms", 0) / 1000.0 + 1.0;
    DIST_EXPECT(s <= bound, "raised after ", s, " s, bound ", bound);
    DIST_EXPECT(s >= bound - 1.0 - 0.05, "raised early, after ", s, " s");
    return 0;
  }
  DIST_EXPECT(false, "create() succeeded without rank 2");
  return 1;
}

TEST_CASE("gloo faults: a rank that never joins fails the others within the rendezvous timeout",
          "[dist][gloo][faults]") {
  dist_test::RunOptions o;
  o.params["store"] = dist_test::scratch_dir() + "/store";
  o.params["rdzv_ms"] = "1500";
  o.ranks = {0, 1};
  o.timeout = 20s;
  auto r = dist_test::run_workers("gloo_join_missing", 3, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}
