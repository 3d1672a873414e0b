// HashStore and the pieces every Store shares (store_barrier, the counter format, deadlines).
#include <catch2/catch.hpp>
#include <thread>

#include "distributed/error.h"
#include "distributed/hash_store.h"
#include "distributed/process_group.h"

using namespace ember;
using namespace std::chrono_literals;

TEST_CASE("hash store: set, get, add, compare_set, check, delete", "[dist][store]") {
  dist::HashStore s(2s);
  s.set("a", "1");
  CHECK(s.get_string("a") == "1");
  CHECK(s.add("n", 2) == 2);
  CHECK(s.add("n", 3) == 5);
  CHECK(s.get_string("n") == "5");
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("2"))) == "2");
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("3"))) == "2");
  CHECK(dist::to_string(s.compare_set("new", {}, dist::to_bytes("x"))) == "x");
  CHECK(s.compare_set("missing", dist::to_bytes("y"), dist::to_bytes("z")).empty());
  CHECK(s.check({"a", "n"}));
  CHECK_FALSE(s.check({"a", "missing"}));
  CHECK(s.num_keys() == 3);
  CHECK(s.delete_key("a"));
  CHECK_FALSE(s.delete_key("a"));
  CHECK_THROWS_WITH(s.add("new", 1), Catch::Contains("not an integer counter"));
}

TEST_CASE("hash store: get and wait give up at their deadline with a Timeout error",
          "[dist][store]") {
  dist::HashStore s(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    s.get("never");
    FAIL("get of a missing key returned");
  } catch (const dist::Error& e) {
    CHECK(e.kind() == dist::ErrorKind::Timeout);
    CHECK(std::string(e.what()).find("'never'") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK_THROWS_AS(s.wait({"x", "y"}, 50ms), dist::Error);
  std::thread setter([&] {
    std::this_thread::sleep_for(20ms);
    s.set("late", "ok");
  });
  s.wait({"late"}, 5s);
  setter.join();
  CHECK(s.get_string("late") == "ok");
}

TEST_CASE("store_barrier: everyone passes, or the Timeout says how many arrived", "[dist][store]") {
  dist::HashStore s(5s);
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) ts.emplace_back([&] { dist::store_barrier(s, "b1", 3, 5s); });
  for (auto& t : ts) t.join();
  try {
    dist::store_barrier(s, "b2", 2, 100ms);
    FAIL("a barrier of 2 with one caller passed");
  } catch (const dist::Error& e) {
    CHECK(e.kind() == dist::ErrorKind::Timeout);
    CHECK(std::string(e.what()).find("only 1 of 2 ranks arrived") != std::string::npos);
  }
}

TEST_CASE("Work: wait rethrows the failure, wait with a timeout gives up", "[dist]") {
  dist::Work w("allreduce", 3);
  CHECK_FALSE(w.is_completed());
  CHECK_THROWS_AS(w.wait(20ms), dist::Error);
  w.finish(std::make_exception_ptr(
      dist::Error(dist::ErrorKind::PeerLost, "allreduce", 3, 1, 0.5, "rank 1 closed", 0, 2)));
  CHECK(w.is_completed());
  REQUIRE(w.exception() != nullptr);
  CHECK_THROWS_WITH(w.wait(), Catch::Contains("allreduce #3 (rank 0 of 2): peer lost"));
}

TEST_CASE("Fingerprint descriptions name the op, dtype, size and reduction", "[dist]") {
  dist::Fingerprint f;
  f.seq = 7;
  f.op = static_cast<int32_t>(dist::OpKind::Allreduce);
  f.dtype = static_cast<int32_t>(DType::Float32);
  f.numel = 1024;
  f.reduce_op = static_cast<int32_t>(dist::ReduceOp::Sum);
  CHECK(dist::describe(f) == "allreduce #7 [float32, 1024 elements, sum]");
}
