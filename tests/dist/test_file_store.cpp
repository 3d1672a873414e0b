// FileStore: processes that share one file agree on one order of changes.
#include <catch2/catch.hpp>
#include <fstream>

#include "distributed/error.h"
#include "distributed/file_store.h"
#include "harness.h"

using namespace ember;
using namespace std::chrono_literals;

// Every rank adds to a counter 50 times, publishes its key, then waits for the others' keys.
DIST_WORKER(file_store_counter) {
  dist::FileStore store(args.param("path"), 20s);
  for (int i = 0; i < 50; ++i) store.add("counter", 1);
  store.set("rank/" + std::to_string(args.rank), std::to_string(args.rank * 10));
  std::vector<std::string> keys;
  for (int r = 0; r < args.world_size; ++r) keys.push_back("rank/" + std::to_string(r));
  store.wait(keys);
  for (int r = 0; r < args.world_size; ++r) {
    const std::string v = store.get_string("rank/" + std::to_string(r));
    DIST_EXPECT(v == std::to_string(r * 10), "rank/", r, " = ", v);
  }
  dist::store_barrier(store, "done", args.world_size, 20s);
  const int64_t total = store.add("counter", 0);
  DIST_EXPECT(total == 50 * args.world_size, "counter ", total);
  return 0;
}

TEST_CASE("file store: three processes count, publish and meet", "[dist][store]") {
  dist_test::RunOptions o;
  o.params["path"] = dist_test::scratch_dir() + "/store";
  o.timeout = 60s;
  auto r = dist_test::run_workers("file_store_counter", 3, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("file store: the Store contract in one process", "[dist][store]") {
  const std::string path = dist_test::scratch_dir() + "/store";
  dist::FileStore s(path, 200ms);
  s.set("a", "1");
  CHECK(s.get_string("a") == "1");
  CHECK(s.add("n", 4) == 4);
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("2"))) == "2");
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("3"))) == "2");
  CHECK(s.delete_key("a"));
  CHECK_FALSE(s.check({"a"}));
  CHECK(s.num_keys() == 1);
  try {
    s.get("a");
    FAIL("get of a deleted key returned");
  } catch (const dist::Error& e) {
    CHECK(e.kind() == dist::ErrorKind::Timeout);
  }
  dist::FileStore again(path, 200ms);  // a second handle replays the log
  CHECK(again.get_string("n") == "4");
  CHECK_FALSE(again.check({"a"}));
}

TEST_CASE("file store: a damaged file is an error naming the path and offset", "[dist][store]") {
  const std::string path = dist_test::scratch_dir() + "/store";
  {
    std::ofstream f(path, std::ios::binary);
    f << "not a store";
  }
  dist::FileStore s(path, 200ms);
  CHECK_THROWS_WITH(s.check({"x"}),
                    Catch::Contains("is damaged at offset 0") && Catch::Contains(path));
}
