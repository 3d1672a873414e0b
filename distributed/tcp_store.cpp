// TCPStore, the client (Note [TCPStore wire protocol], Note [TCPStore retries]).
#include "distributed/tcp_store.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "distributed/error.h"
#include "distributed/store_util.h"
#include "distributed/tcp_socket.h"
#include "distributed/tcp_store_protocol.h"

namespace ember::dist {

using tcp::Clock;
using tcp::Op;
using tcp::Status;

namespace {

// How long past a wait's own timeout the client waits for the server's answer to it.
constexpr std::chrono::milliseconds kReplySlack{1000};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int64_t remaining_ms(Clock::time_point deadline) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

}  // namespace

struct TCPStore::Reply {
  Status status;
  Bytes payload;  // the whole reply, read from offset 1 by a Reader after the status
};

TCPStore::TCPStore(std::string host, int port, TCPStoreOptions options)
    : Store(options.timeout), host_(std::move(host)), port_(port) {
  if (port < 0 || port > 65535 || (port == 0 && !options.is_server)) {
    throw Error(ErrorKind::Usage, "store.connect", -1, -1, -1,
                "port " + std::to_string(port) + " is not in 1..65535");
  }
  if (options.is_server) {
    server_ = std::make_unique<TCPStoreServer>("", port);
    port_ = server_->port();
  }
  const auto start = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connect_until("store.connect", start + timeout(), start, false);
  }
  if (options.world_size > 0) {
    call(
        "store.join",
        [](int64_t) { return tcp::Writer().u8(static_cast<uint8_t>(Op::Join)).take(); }, false,
        start + timeout());
    if (options.is_server) {
      const auto left = remaining_ms(start + timeout());
      Reply r = call(
          "store.join",
          [&](int64_t ms) {
            return tcp::Writer()
                .u8(static_cast<uint8_t>(Op::WaitJoined))
                .i64(options.world_size)
                .i64(std::max<int64_t>(0, ms - kReplySlack.count()))
                .take();
          },
          true, start + std::chrono::milliseconds(left) + kReplySlack);
      if (r.status != Status::Ok) {
        tcp::Reader rd(r.payload);
        rd.u8();
        const int64_t joined = rd.i64();
        throw Error(ErrorKind::Timeout, "store.join", -1, -1, seconds_since(start),
                    "only " + std::to_string(joined) + " of " + std::to_string(options.world_size) +
                        " clients joined the store at " + tcp::endpoint(host_, port_) + " within " +
                        std::to_string(timeout().count()) + " ms");
      }
    }
  }
}

TCPStore::~TCPStore() {
  disconnect();
  server_.reset();
}

void TCPStore::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void TCPStore::connect_until(const char* op, Clock::time_point deadline, Clock::time_point start,
                             bool lost) {
  std::string why;
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    fd_ = tcp::try_connect(host_, port_, deadline, why);
    if (fd_ >= 0) {
      ever_connected_ = true;
      return;
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
  }
  const std::string where = "the store server " + tcp::endpoint(host_, port_);
  if (lost) {
    throw Error(ErrorKind::PeerLost, op, -1, -1, seconds_since(start),
                "lost the connection to " + where + " and could not reconnect within " +
                    std::to_string(timeout().count()) + " ms (" + why + ")");
  }
  throw Error(ErrorKind::Timeout, op, -1, -1, seconds_since(start),
              "could not connect to " + where + " within " + std::to_string(timeout().count()) +
                  " ms (" + why + ")");
}

TCPStore::Reply TCPStore::call(const char* op, const std::function<Bytes(int64_t)>& build,
                               bool idempotent, Clock::time_point deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto start = Clock::now();
  bool lost = false;
  std::string lost_why;
  for (;;) {
    if (fd_ < 0) connect_until(op, deadline, start, lost);
    bool sent = false;
    try {
      tcp::write_frame(fd_, build(remaining_ms(deadline)), deadline);
      sent = true;
      Bytes payload = tcp::read_frame(fd_, deadline);
      if (payload.empty()) throw tcp::ConnectionLost("an empty reply");
      const auto status = static_cast<Status>(payload[0]);
      if (status == Status::Error) {
        tcp::Reader rd(payload);
        rd.u8();
        throw Error(ErrorKind::Usage, op, -1, -1, seconds_since(start), rd.str());
      }
      return Reply{status, std::move(payload)};
    } catch (const tcp::DeadlinePassed&) {
      disconnect();  // the stream is mid-reply: start over on a new connection next time
      throw Error(ErrorKind::Timeout, op, -1, -1, seconds_since(start),
                  "no reply from the store server " + tcp::endpoint(host_, port_) + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         Clock::now() - start)
                                         .count()) +
                      " ms");
    } catch (const tcp::ConnectionLost& e) {
      disconnect();
      lost = true;
      lost_why = e.what();
      if (sent && !idempotent) {
        throw Error(ErrorKind::PeerLost, op, -1, -1, seconds_since(start),
                    "lost the connection to the store server " + tcp::endpoint(host_, port_) +
                        " after sending the request (" + lost_why +
                        "); not retried, it may have been applied");
      }
      if (Clock::now() >= deadline) {
        throw Error(ErrorKind::PeerLost, op, -1, -1, seconds_since(start),
                    "lost the connection to the store server " + tcp::endpoint(host_, port_) +
                        " (" + lost_why + ")");
      }
    }
  }
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  call(
      "store.set",
      [&](int64_t) {
        return tcp::Writer().u8(static_cast<uint8_t>(Op::Set)).str(key).bytes(value).take();
      },
      true, Clock::now() + timeout());
}

Bytes TCPStore::get(const std::string& key) {
  const auto start = Clock::now();
  const auto wait_deadline = start + timeout();
  Reply r = call(
      "store.get",
      [&](int64_t) {
        return tcp::Writer()
            .u8(static_cast<uint8_t>(Op::Get))
            .str(key)
            .i64(remaining_ms(wait_deadline))
            .take();
      },
      true, wait_deadline + kReplySlack);
  tcp::Reader rd(r.payload);
  rd.u8();
  if (r.status == Status::Timeout) throw_wait_timeout("store.get", rd.strs(), timeout(), start);
  return rd.bytes();
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Reply r = call(
      "store.add",
      [&](int64_t) {
        return tcp::Writer().u8(static_cast<uint8_t>(Op::Add)).str(key).i64(delta).take();
      },
      false, Clock::now() + timeout());
  tcp::Reader rd(r.payload);
  rd.u8();
  return rd.i64();
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Reply r = call(
      "store.compare_set",
      [&](int64_t) {
        return tcp::Writer()
            .u8(static_cast<uint8_t>(Op::CompareSet))
            .str(key)
            .bytes(expected)
            .bytes(desired)
            .take();
      },
      false, Clock::now() + timeout());
  tcp::Reader rd(r.payload);
  rd.u8();
  return rd.bytes();
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) {
    throw Error(ErrorKind::Usage, "store.wait", -1, -1, -1,
                "the timeout must not be negative, got " + std::to_string(timeout.count()) + " ms");
  }
  const auto start = Clock::now();
  const auto wait_deadline = start + timeout;
  Reply r = call(
      "store.wait",
      [&](int64_t) {
        return tcp::Writer()
            .u8(static_cast<uint8_t>(Op::Wait))
            .strs(keys)
            .i64(remaining_ms(wait_deadline))
            .take();
      },
      true, wait_deadline + kReplySlack);
  if (r.status == Status::Timeout) {
    tcp::Reader rd(r.payload);
    rd.u8();
    throw_wait_timeout("store.wait", rd.strs(), timeout, start);
  }
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Reply r = call(
      "store.check",
      [&](int64_t) { return tcp::Writer().u8(static_cast<uint8_t>(Op::Check)).strs(keys).take(); },
      true, Clock::now() + timeout());
  tcp::Reader rd(r.payload);
  rd.u8();
  return rd.u8() != 0;
}

bool TCPStore::delete_key(const std::string& key) {
  Reply r = call(
      "store.delete_key",
      [&](int64_t) { return tcp::Writer().u8(static_cast<uint8_t>(Op::Delete)).str(key).take(); },
      false, Clock::now() + timeout());
  tcp::Reader rd(r.payload);
  rd.u8();
  return rd.u8() != 0;
}

int64_t TCPStore::num_keys() {
  Reply r = call(
      "store.num_keys",
      [&](int64_t) { return tcp::Writer().u8(static_cast<uint8_t>(Op::NumKeys)).take(); }, true,
      Clock::now() + timeout());
  tcp::Reader rd(r.payload);
  rd.u8();
  return rd.i64();
}

}  // namespace ember::dist
