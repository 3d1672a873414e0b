// TCPStoreServer: one thread serving every client with poll(2) (Note [TCPStore wire protocol]).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "distributed/error.h"
#include "distributed/store_util.h"
#include "distributed/tcp_socket.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_protocol.h"

namespace ember::dist {

using tcp::Clock;
using tcp::Op;
using tcp::Status;

namespace {

// A get / wait / wait_joined the server could not answer yet.
struct Parked {
  Op op;
  std::vector<std::string> keys;
  int64_t joined_target = 0;
  Clock::time_point deadline;
};

struct Client {
  Bytes in;   // received, not yet handled
  Bytes out;  // replies not yet sent
  std::optional<Parked> parked;
  bool closing = false;  // a malformed request: drop after flushing nothing
};

Bytes frame(const Bytes& payload) {
  Bytes f(4 + payload.size());
  const auto n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) f[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(payload.begin(), payload.end(), f.begin() + 4);
  return f;
}

}  // namespace

struct TCPStoreServer::State {
  int listen_fd = -1;
  int wake_fd = -1;  // an eventfd: the destructor writes it to stop the loop
  std::map<std::string, Bytes> data;
  std::map<int, Client> clients;
  int64_t joined = 0;

  void run();
  void accept_all();
  bool read_from(int fd, Client& c);
  void handle_requests(Client& c);
  void handle(Client& c, const Bytes& request);
  bool try_answer(Client& c, const Parked& p, bool expired);
  void answer_parked(Clock::time_point now);
  void reply(Client& c, Status s, const std::function<void(tcp::Writer&)>& body = {}) {
    tcp::Writer w;
    w.u8(static_cast<uint8_t>(s));
    if (body) body(w);
    const Bytes f = frame(w.take());
    c.out.insert(c.out.end(), f.begin(), f.end());
  }
  std::vector<std::string> missing(const std::vector<std::string>& keys) const {
    std::vector<std::string> m;
    for (const auto& k : keys)
      if (data.count(k) == 0) m.push_back(k);
    return m;
  }
};

void TCPStoreServer::State::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN (no more) or a transient error: poll again
    clients[fd];
  }
}

bool TCPStoreServer::State::read_from(int fd, Client& c) {
  uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.insert(c.in.end(), buf, buf + n);
      continue;
    }
    if (n == 0) return false;  // the client closed
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

void TCPStoreServer::State::handle_requests(Client& c) {
  while (!c.parked && !c.closing && c.in.size() >= 4) {
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(c.in[i]) << (8 * i);
    if (n > tcp::kMaxFrame) {
      c.closing = true;
      return;
    }
    if (c.in.size() < 4 + static_cast<size_t>(n)) return;
    const Bytes request(c.in.begin() + 4, c.in.begin() + 4 + n);
    c.in.erase(c.in.begin(), c.in.begin() + 4 + n);
    try {
      handle(c, request);
    } catch (const std::exception&) {
      c.closing = true;  // a malformed request
    }
  }
}

void TCPStoreServer::State::handle(Client& c, const Bytes& request) {
  tcp::Reader r(request);
  const auto op = static_cast<Op>(r.u8());
  const auto now = Clock::now();
  switch (op) {
    case Op::Set: {
      std::string key = r.str();
      data[key] = r.bytes();
      reply(c, Status::Ok);
      break;
    }
    case Op::Get:
    case Op::Wait: {
      Parked p;
      p.op = op;
      if (op == Op::Get) {
        p.keys.push_back(r.str());
      } else {
        p.keys = r.strs();
      }
      p.deadline = now + std::chrono::milliseconds(std::max<int64_t>(0, r.i64()));
      if (!try_answer(c, p, false)) c.parked = std::move(p);
      break;
    }
    case Op::Add: {
      const std::string key = r.str();
      const int64_t delta = r.i64();
      int64_t value = 0;
      auto it = data.find(key);
      if (it != data.end() && !counter_value(it->second, value)) {
        const std::string what = not_a_counter(key, it->second);
        reply(c, Status::Error, [&](tcp::Writer& w) { w.str(what); });
        break;
      }
      value += delta;
      data[key] = to_bytes(std::to_string(value));
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.i64(value); });
      break;
    }
    case Op::CompareSet: {
      const std::string key = r.str();
      const Bytes expected = r.bytes();
      const Bytes desired = r.bytes();
      auto it = data.find(key);
      Bytes result;
      if (it == data.end()) {
        if (expected.empty()) result = data[key] = desired;
      } else if (it->second == expected) {
        result = it->second = desired;
      } else {
        result = it->second;
      }
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.bytes(result); });
      break;
    }
    case Op::Check: {
      const bool all = missing(r.strs()).empty();
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.u8(all ? 1 : 0); });
      break;
    }
    case Op::Delete: {
      const bool existed = data.erase(r.str()) > 0;
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.u8(existed ? 1 : 0); });
      break;
    }
    case Op::NumKeys:
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.i64(static_cast<int64_t>(data.size())); });
      break;
    case Op::Join:
      ++joined;
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.i64(joined); });
      break;
    case Op::WaitJoined: {
      Parked p;
      p.op = op;
      p.joined_target = r.i64();
      p.deadline = now + std::chrono::milliseconds(std::max<int64_t>(0, r.i64()));
      if (!try_answer(c, p, false)) c.parked = std::move(p);
      break;
    }
    default:
      throw std::runtime_error("unknown opcode");
  }
  if (!r.done()) throw std::runtime_error("trailing bytes");
}

bool TCPStoreServer::State::try_answer(Client& c, const Parked& p, bool expired) {
  if (p.op == Op::WaitJoined) {
    if (joined >= p.joined_target) {
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.i64(joined); });
      return true;
    }
    if (expired) reply(c, Status::Timeout, [&](tcp::Writer& w) { w.i64(joined); });
    return expired;
  }
  const auto m = missing(p.keys);
  if (m.empty()) {
    if (p.op == Op::Get) {
      reply(c, Status::Ok, [&](tcp::Writer& w) { w.bytes(data.at(p.keys[0])); });
    } else {
      reply(c, Status::Ok);
    }
    return true;
  }
  if (expired) reply(c, Status::Timeout, [&](tcp::Writer& w) { w.strs(m); });
  return expired;
}

void TCPStoreServer::State::answer_parked(Clock::time_point now) {
  for (auto& [fd, c] : clients) {
    if (c.parked && try_answer(c, *c.parked, now >= c.parked->deadline)) {
      c.parked.reset();
      handle_requests(c);  // a pipelined request behind the answered one
    }
  }
}

void TCPStoreServer::State::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    auto next = Clock::time_point::max();
    for (auto& [fd, c] : clients) {
      fds.push_back({fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      if (c.parked) next = std::min(next, c.parked->deadline);
    }
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 1 << 30));
    }
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) return;  // cannot happen with valid fds; stop serving
    if (fds[0].revents != 0) return;      // the destructor asked to stop
    if (fds[1].revents & POLLIN) accept_all();
    std::vector<int> dead;
    for (size_t i = 2; i < fds.size(); ++i) {
      const int fd = fds[i].fd;
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      Client& c = it->second;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!read_from(fd, c)) {
          dead.push_back(fd);
          continue;
        }
      }
      handle_requests(c);
      if (c.closing) {
        dead.push_back(fd);
        continue;
      }
    }
    // Any change may complete a parked request; deadlines may have passed.
    answer_parked(Clock::now());
    for (auto& [fd, c] : clients) {
      while (!c.out.empty()) {
        const ssize_t w = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
          c.out.erase(c.out.begin(), c.out.begin() + w);
        } else if (w < 0 && errno == EINTR) {
          continue;
        } else {
          if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) dead.push_back(fd);
          break;
        }
      }
    }
    std::sort(dead.begin(), dead.end());
    dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
    for (int fd : dead) {
      ::close(fd);
      clients.erase(fd);
    }
  }
}

TCPStoreServer::TCPStoreServer(const std::string& host, int port)
    : host_(host), state_(std::make_unique<State>()) {
  if (port < 0 || port > 65535) {
    throw Error(ErrorKind::Usage, "store.listen", -1, -1, -1,
                "port " + std::to_string(port) + " is not in 0..65535");
  }
  state_->listen_fd = tcp::listen_on(host, port, port_);
  state_->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state_->wake_fd < 0) {
    ::close(state_->listen_fd);
    throw Error(ErrorKind::Backend, "store.listen", -1, -1, -1,
                std::string("eventfd failed: ") + std::strerror(errno));
  }
  thread_ = std::thread([s = state_.get()] { s->run(); });
}

TCPStoreServer::~TCPStoreServer() {
  const uint64_t one = 1;
  while (::write(state_->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
  for (auto& [fd, c] : state_->clients) ::close(fd);
  ::close(state_->listen_fd);
  ::close(state_->wake_fd);
}

}  // namespace ember::dist
