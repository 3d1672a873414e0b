#pragma once
// Sockets for the TCPStore (internal): connect with a deadline, checked reads and writes of whole
// buffers (partial transfers, EINTR, never SIGPIPE: MSG_NOSIGNAL), and the little-endian
// encoding of the wire protocol (Note [TCPStore wire protocol] in tcp_store.h).

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace ember::dist::tcp {

using Clock = std::chrono::steady_clock;

// The largest frame either side accepts: a bigger length prefix is a foreign or damaged peer.
inline constexpr uint32_t kMaxFrame = 256u << 20;

// The connection closed or failed (ECONNRESET, EOF, EPIPE): `what` says how.
struct ConnectionLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The deadline passed before the transfer finished.
struct DeadlinePassed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "host:port", with brackets for an IPv6 literal.
std::string endpoint(const std::string& host, int port);

// One connection attempt to host:port, bounded by `deadline`. Returns the connected socket
// (blocking, TCP_NODELAY, close-on-exec), or -1 with `why` set when the server refused or could not
// be reached yet (worth retrying). A host name that cannot be resolved throws dist::Error (Usage).
int try_connect(const std::string& host, int port, Clock::time_point deadline, std::string& why);

// A listening socket bound to host:port (host "": every interface; port 0: any free port).
// Throws dist::Error naming host:port when it cannot bind. Sets `bound_port`.
int listen_on(const std::string& host, int port, int& bound_port);

// Writes all of `data`, waiting for the socket up to `deadline`.
void write_all(int fd, const uint8_t* data, size_t size, Clock::time_point deadline);
// Reads exactly `size` bytes, up to `deadline`.
void read_all(int fd, uint8_t* data, size_t size, Clock::time_point deadline);
// Sends one frame (u32 length + payload) / receives one frame's payload.
void write_frame(int fd, const Bytes& payload, Clock::time_point deadline);
Bytes read_frame(int fd, Clock::time_point deadline);

// Builds a frame payload.
class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& i64(int64_t v);
  Writer& bytes(const Bytes& b);
  Writer& str(const std::string& s);
  Writer& strs(const std::vector<std::string>& v);
  Bytes take() { return std::move(out_); }

 private:
  void u32(uint32_t v);
  Bytes out_;
};

// Reads a frame payload; a short or malformed payload throws dist::Error (Backend).
class Reader {
 public:
  explicit Reader(const Bytes& in) : in_(in) {}
  uint8_t u8();
  int64_t i64();
  Bytes bytes();
  std::string str();
  std::vector<std::string> strs();
  bool done() const { return pos_ == in_.size(); }

 private:
  uint32_t u32();
  void need(size_t n) const;
  const Bytes& in_;
  size_t pos_ = 0;
};

}  // namespace ember::dist::tcp
