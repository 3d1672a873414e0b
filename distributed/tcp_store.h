#pragma once
// TCPStore: a Store served over TCP by one TCPStoreServer to any number of clients, the way ranks
// on different machines meet (torch.distributed.TCPStore).
//
//   // rank 0 (or the launcher) hosts the server; everyone, rank 0 included, is a client:
//   dist::TCPStoreOptions o;
//   o.is_server = rank == 0;      // start a TCPStoreServer in this process
//   o.world_size = world_size;    // the server-side client waits for that many clients to join
//   o.timeout = std::chrono::seconds(30);
//   auto store = std::make_shared<dist::TCPStore>("10.0.0.1", 29500, o);
//
// A client connects with retries until its deadline (the server may start later than the
// clients), and after a lost connection reconnects and retries the request within the deadline
// of the call (Note [TCPStore retries]). Every call has a deadline (Note [Every store call has a
// deadline] in store.h): a dead, stopped or unreachable server becomes a dist::Error -- PeerLost
// when a connection was lost and could not be made again, Timeout when no reply came -- naming
// host:port, within the store's timeout. The client is thread-safe (one request at a time).
//
// Note [TCPStore wire protocol]
// Each message, either way, is a frame: a u32 payload length (little-endian, at most 256 MiB)
// and the payload. Integers are little-endian (u8, i64); a string is a u32 length and its bytes;
// a list is a u32 count and its strings. A request's payload is an opcode (u8) and its
// arguments; a reply's is a status (u8: 0 ok, 1 timeout, 2 error) and its result:
//
//   op  name        arguments                       ok reply           other replies
//   1   set         key, value                      -
//   2   get         key, timeout_ms                 value              timeout: missing keys
//   3   add         key, delta (i64)                new value (i64)    error: message
//   4   compare_set key, expected, desired          value after
//   5   wait        keys (list), timeout_ms         -                  timeout: missing keys
//   6   check       keys (list)                     u8 (1: all exist)
//   7   delete      key                             u8 (1: existed)
//   8   num_keys    -                               i64
//   9   join        -                               i64 (clients joined so far)
//   10  wait_joined n (i64), timeout_ms             i64 (joined)       timeout: i64 (joined)
//
// A get or wait whose keys are missing is parked in the server and answered when the keys arrive
// or its timeout_ms passes; the server keeps serving every other client meanwhile (one thread,
// poll(2)). A client sends one request at a time and reads its reply. A malformed request closes
// that connection (the server logs nothing and keeps serving the others).
//
// Note [TCPStore retries]
// A request that fails before it was fully sent is always retried on a new connection. After it
// was sent, only the requests that can safely run twice are retried (set, get, wait, check,
// num_keys); add and compare_set raise PeerLost instead, since the server may have applied
// them. The server's state lives in its memory: a server that restarts starts empty.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "distributed/store.h"

namespace ember::dist {

// The server: binds host:port (host "": every interface; port 0: a free port, see port()) and
// serves from its own thread until destroyed. The destructor stops the thread and closes every
// connection (their clients then see PeerLost).
class TCPStoreServer {
 public:
  TCPStoreServer(const std::string& host, int port);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return host_; }

  struct State;  // tcp_store_server.cpp

 private:
  std::string host_;
  int port_ = 0;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

struct TCPStoreOptions {
  // Start a TCPStoreServer in this process, on every interface at `port` (0: a free port; the
  // client then connects to it at host:port()).
  bool is_server = false;
  // If > 0, every client announces itself, and the server-side client's constructor waits until
  // world_size clients (itself included) have joined, up to `timeout`.
  int world_size = -1;
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
};

class TCPStore : public Store {
 public:
  TCPStore(std::string host, int port, TCPStoreOptions options = {});
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  using Store::set;
  using Store::wait;

  const std::string& host() const { return host_; }
  int port() const { return port_; }

 private:
  struct Reply;
  // Sends the request `build(remaining_ms)` makes and returns the reply, reconnecting and
  // retrying until `deadline` (Note [TCPStore retries]).
  Reply call(const char* op, const std::function<Bytes(int64_t)>& build, bool idempotent,
             std::chrono::steady_clock::time_point deadline);
  void connect_until(const char* op, std::chrono::steady_clock::time_point deadline,
                     std::chrono::steady_clock::time_point start, bool lost);
  void disconnect();

  std::string host_;
  int port_;
  std::unique_ptr<TCPStoreServer> server_;  // when is_server
  std::mutex mutex_;
  int fd_ = -1;
  bool ever_connected_ = false;
};

}  // namespace ember::dist
