#include "distributed/tcp_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "distributed/error.h"

namespace ember::dist::tcp {

namespace {

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes (throws DeadlinePassed).
void wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return;  // readable/writable, or an error the next call reports
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConnectionLost(std::string("poll failed: ") + std::strerror(errno));
    throw DeadlinePassed("deadline passed");
  }
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

void resolve(const std::string& host, int port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out.list);
  if (rc != 0) {
    throw Error(ErrorKind::Usage, "store.connect", -1, -1, -1,
                "cannot resolve " + endpoint(host, port) + ": " + ::gai_strerror(rc));
  }
}

}  // namespace

std::string endpoint(const std::string& host, int port) {
  const std::string h = host.empty() ? "*" : host;
  if (h.find(':') != std::string::npos) return "[" + h + "]:" + std::to_string(port);
  return h + ":" + std::to_string(port);
}

int try_connect(const std::string& host, int port, Clock::time_point deadline, std::string& why) {
  AddrInfo ai;
  resolve(host, port, false, ai);
  for (addrinfo* a = ai.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      try {
        wait_ready(fd, POLLOUT, deadline);
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } catch (const std::exception&) {
        errno = ETIMEDOUT;
        rc = -1;
      }
    }
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  }
  return -1;
}

int listen_on(const std::string& host, int port, int& bound_port) {
  AddrInfo ai;
  resolve(host, port, true, ai);
  std::string why = "no address";
  for (addrinfo* a = ai.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 512) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    bound_port = addr.ss_family == AF_INET6
                     ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    return fd;
  }
  throw Error(ErrorKind::Backend, "store.listen", -1, -1, -1,
              "cannot listen on " + endpoint(host, port) + ": " + why);
}

void write_all(int fd, const uint8_t* data, size_t size, Clock::time_point deadline) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_ready(fd, POLLOUT, deadline);
    } else {
      throw ConnectionLost(std::string("send failed: ") + std::strerror(errno));
    }
  }
}

void read_all(int fd, uint8_t* data, size_t size, Clock::time_point deadline) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, data + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      throw ConnectionLost("the server closed the connection");
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_ready(fd, POLLIN, deadline);
    } else {
      throw ConnectionLost(std::string("recv failed: ") + std::strerror(errno));
    }
  }
}

void write_frame(int fd, const Bytes& payload, Clock::time_point deadline) {
  Bytes frame(4 + payload.size());
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(payload.begin(), payload.end(), frame.begin() + 4);
  write_all(fd, frame.data(), frame.size(), deadline);
}

Bytes read_frame(int fd, Clock::time_point deadline) {
  uint8_t head[4];
  read_all(fd, head, 4, deadline);
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(head[i]) << (8 * i);
  if (n > kMaxFrame) throw ConnectionLost("a frame of " + std::to_string(n) + " bytes (damaged?)");
  Bytes payload(n);
  read_all(fd, payload.data(), n, deadline);
  return payload;
}

void Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
Writer& Writer::u8(uint8_t v) {
  out_.push_back(v);
  return *this;
}
Writer& Writer::i64(int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(u >> (8 * i)));
  return *this;
}
Writer& Writer::bytes(const Bytes& b) {
  u32(static_cast<uint32_t>(b.size()));
  out_.insert(out_.end(), b.begin(), b.end());
  return *this;
}
Writer& Writer::str(const std::string& s) { return bytes(to_bytes(s)); }
Writer& Writer::strs(const std::vector<std::string>& v) {
  u32(static_cast<uint32_t>(v.size()));
  for (const auto& s : v) str(s);
  return *this;
}

void Reader::need(size_t n) const {
  if (in_.size() - pos_ < n) {
    throw Error(
        ErrorKind::Backend, "store", -1, -1, -1,
        "a truncated or malformed TCPStore message (" + std::to_string(in_.size()) + " bytes)");
  }
}
uint32_t Reader::u32() {
  need(4);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in_[pos_ + i]) << (8 * i);
  pos_ += 4;
  return v;
}
uint8_t Reader::u8() {
  need(1);
  return in_[pos_++];
}
int64_t Reader::i64() {
  need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
  pos_ += 8;
  return static_cast<int64_t>(v);
}
Bytes Reader::bytes() {
  const uint32_t n = u32();
  need(n);
  Bytes b(in_.begin() + static_cast<std::ptrdiff_t>(pos_),
          in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
  return b;
}
std::string Reader::str() { return to_string(bytes()); }
std::vector<std::string> Reader::strs() {
  const uint32_t n = u32();
  need(static_cast<size_t>(n) * 4);  // each string has at least its length
  std::vector<std::string> v;
  v.reserve(n);
  for (uint32_t i = 0; i < n; ++i) v.push_back(str());
  return v;
}

}  // namespace ember::dist::tcp
