// TCPStore: one server, many clients; parked waits, deadlines, dead servers, reconnects.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "distributed/error.h"
#include "distributed/tcp_store.h"
#include "harness.h"

using namespace ember;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

dist::TCPStoreOptions opts(std::chrono::milliseconds timeout, bool server = false,
                           int world_size = -1) {
  dist::TCPStoreOptions o;
  o.timeout = timeout;
  o.is_server = server;
  o.world_size = world_size;
  return o;
}

}  // namespace

// Rank 0 hosts the server and waits for all to join; everyone counts, publishes and meets.
DIST_WORKER(tcp_store_counter) {
  const int port = args.int_param("port", 0);
  dist::TCPStore store("127.0.0.1", port, opts(20s, args.rank == 0, args.world_size));
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
  // The server lives in rank 0: it leaves last.
  store.set("bye/" + std::to_string(args.rank), "1");
  if (args.rank == 0) {
    std::vector<std::string> bye;
    for (int r = 0; r < args.world_size; ++r) bye.push_back("bye/" + std::to_string(r));
    store.wait(bye);
  }
  return 0;
}

TEST_CASE("tcp store: three processes count, publish and meet", "[dist][store]") {
  dist_test::RunOptions o;
  o.params["port"] = std::to_string(dist_test::free_port());
  o.timeout = 60s;
  auto r = dist_test::run_workers("tcp_store_counter", 3, o);
  INFO(dist_test::describe(r));
  CHECK(dist_test::all_ok(r));
}

TEST_CASE("tcp store: the Store contract in one process", "[dist][store]") {
  dist::TCPStoreServer server("127.0.0.1", 0);
  REQUIRE(server.port() > 0);
  dist::TCPStore s("127.0.0.1", server.port(), opts(300ms));
  s.set("a", "1");
  CHECK(s.get_string("a") == "1");
  CHECK(s.add("n", 4) == 4);
  CHECK(s.add("n", -1) == 3);
  CHECK(s.get_string("n") == "3");
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("2"))) == "2");
  CHECK(dist::to_string(s.compare_set("a", dist::to_bytes("1"), dist::to_bytes("3"))) == "2");
  CHECK(dist::to_string(s.compare_set("new", {}, dist::to_bytes("x"))) == "x");
  CHECK(s.compare_set("absent", dist::to_bytes("y"), dist::to_bytes("z")).empty());
  CHECK(s.check({"a", "n"}));
  CHECK_FALSE(s.check({"a", "zzz"}));
  CHECK(s.num_keys() == 3);
  CHECK(s.delete_key("a"));
  CHECK_FALSE(s.delete_key("a"));
  const dist::Bytes binary = {0, 255, 1, 0};
  s.set("bin", binary);
  CHECK(s.get("bin") == binary);
  CHECK_THROWS_WITH(s.add("bin", 1), Catch::Contains("not an integer counter"));
  // A second client sees the same data.
  dist::TCPStore t("127.0.0.1", server.port(), opts(300ms));
  CHECK(t.get_string("n") == "3");
}

TEST_CASE("tcp store: get and wait time out naming the missing keys", "[dist][store]") {
  dist::TCPStoreServer server("127.0.0.1", 0);
  dist::TCPStore s("127.0.0.1", server.port(), opts(300ms));
  s.set("here", "1");
  auto t0 = Clock::now();
  try {
    s.wait({"here", "missing"}, 400ms);
    FAIL("wait returned");
  } catch (const dist::Error& e) {
    CHECK(e.kind() == dist::ErrorKind::Timeout);
    CHECK(e.op() == "store.wait");
    CHECK_THAT(e.what(), Catch::Contains("'missing'") && !Catch::Contains("'here'"));
  }
  CHECK(since(t0) >= 0.39);
  CHECK(since(t0) < 1.3);
  t0 = Clock::now();
  CHECK_THROWS_WITH(s.get("nope"), Catch::Contains("store.get") && Catch::Contains("'nope'"));
  CHECK(since(t0) < 1.2);
  // The connection is still good after a timeout.
  CHECK(s.get_string("here") == "1");
}

TEST_CASE("tcp store: a parked wait never blocks the other clients", "[dist][store]") {
  dist::TCPStoreServer server("127.0.0.1", 0);
  dist::TCPStore waiter("127.0.0.1", server.port(), opts(5s));
  dist::TCPStore other("127.0.0.1", server.port(), opts(5s));
  std::string got;
  std::thread t([&] {
    waiter.wait({"go"});
    got = waiter.get_string("go");
  });
  std::this_thread::sleep_for(50ms);
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) other.add("busy", 1);
  CHECK(other.get_string("busy") == "20");
  CHECK(since(t0) < 1.0);
  other.set("go", "now");
  t.join();
  CHECK(got == "now");
}

TEST_CASE("tcp store: a client started before the server connects when it comes up",
          "[dist][store]") {
  const int port = dist_test::free_port();
  std::string got;
  std::string error;
  std::thread client([&] {
    try {
      dist::TCPStore s("127.0.0.1", port, opts(5s));
      got = s.get_string("k");
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(400ms);
  dist::TCPStoreServer server("127.0.0.1", port);
  dist::TCPStore setter("127.0.0.1", port, opts(5s));
  setter.set("k", "v");
  client.join();
  CHECK(error.empty());
  CHECK(got == "v");
}

TEST_CASE("tcp store: no server is a Timeout naming host:port within the timeout",
          "[dist][store]") {
  const int port = dist_test::free_port();
  const auto t0 = Clock::now();
  try {
    dist::TCPStore s("127.0.0.1", port, opts(500ms));
    FAIL("connected to nothing");
  } catch (const dist::Error& e) {
    CHECK(e.kind() == dist::ErrorKind::Timeout);
    CHECK_THAT(e.what(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
  }
  CHECK(since(t0) >= 0.45);
  CHECK(since(t0) < 1.5);
}

TEST_CASE("tcp store: the server-side client waits for world_size clients to join",
          "[dist][store]") {
  const int port = dist_test::free_port();
  SECTION("nobody else comes: a Timeout saying how many joined") {
    const auto t0 = Clock::now();
    CHECK_THROWS_WITH(dist::TCPStore("127.0.0.1", port, opts(500ms, true, 2)),
                      Catch::Contains("only 1 of 2 clients joined"));
    CHECK(since(t0) < 2.0);
  }
  SECTION("the other joins") {
    std::thread other([&] {
      std::this_thread::sleep_for(200ms);
      dist::TCPStore c("127.0.0.1", port, opts(3s, false, 2));
      c.set("joined", "1");
    });
    dist::TCPStore server("127.0.0.1", port, opts(3s, true, 2));
    CHECK(server.get_string("joined") == "1");
    other.join();
  }
}

// A server in its own process, killed by the test.
DIST_WORKER(tcp_store_server_proc) {
  dist::TCPStoreServer server("127.0.0.1", args.int_param("port", 0));
  std::this_thread::sleep_for(60s);
  return 0;
}

TEST_CASE("tcp store: a server killed with SIGKILL makes client calls raise within the timeout",
          "[dist][store]") {
  dist_test::RunOptions o;
  const int port = dist_test::free_port();
  o.params["port"] = std::to_string(port);
  auto procs = dist_test::start_workers("tcp_store_server_proc", 1, o);
  dist::TCPStore s("127.0.0.1", port, opts(1500ms));  // retries until the server is up
  s.set("x", "1");
  const std::string where = "127.0.0.1:" + std::to_string(port);
  SECTION("killed during a parked get") {
    std::thread killer([&] {
      std::this_thread::sleep_for(200ms);
      procs[0].signal(SIGKILL);
    });
    const auto t0 = Clock::now();
    try {
      s.get("never");
      FAIL("get returned");
    } catch (const dist::Error& e) {
      CHECK((e.kind() == dist::ErrorKind::PeerLost || e.kind() == dist::ErrorKind::Timeout));
      CHECK_THAT(e.what(), Catch::Contains(where));
    }
    killer.join();
    CHECK(since(t0) < 1.5 + 1.5);  // the get's deadline (timeout + reply slack)
  }
  SECTION("killed between calls") {
    procs[0].signal(SIGKILL);
    procs[0].wait(Clock::now() + 5s);
    const auto t0 = Clock::now();
    try {
      s.set("y", "2");
      FAIL("set returned");
    } catch (const dist::Error& e) {
      CHECK(e.kind() == dist::ErrorKind::PeerLost);
      CHECK_THAT(e.what(), Catch::Contains(where) && Catch::Contains("store.set"));
    }
    CHECK(since(t0) < 2.5);
    // add is not retried after it was sent, and also fails cleanly.
    CHECK_THROWS_AS(s.add("n", 1), dist::Error);
  }
}

TEST_CASE("tcp store: a malformed request drops only that connection", "[dist][store]") {
  dist::TCPStoreServer server("127.0.0.1", 0);
  dist::TCPStore good("127.0.0.1", server.port(), opts(1s));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const uint8_t bad[] = {3, 0, 0, 0, 99, 1, 2};  // a 3-byte frame with an unknown opcode
  REQUIRE(::send(fd, bad, sizeof bad, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof bad));
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint8_t buf[16];
  CHECK(::recv(fd, buf, sizeof buf, 0) == 0);  // closed by the server
  ::close(fd);
  good.set("still", "fine");
  CHECK(good.get_string("still") == "fine");
}

TEST_CASE("tcp store: bad ports are Usage errors", "[dist][store]") {
  CHECK_THROWS_WITH(dist::TCPStore("127.0.0.1", 70000, opts(100ms)), Catch::Contains("port 70000"));
  CHECK_THROWS_WITH(dist::TCPStore("127.0.0.1", 0, opts(100ms)), Catch::Contains("port 0"));
  dist::TCPStoreServer taken("127.0.0.1", 0);
  CHECK_THROWS_WITH(dist::TCPStoreServer("127.0.0.1", taken.port()),
                    Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(taken.port())));
}
