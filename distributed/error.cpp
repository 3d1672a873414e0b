#include "distributed/error.h"

#include <cstdio>

namespace ember::dist {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Timeout:
      return "timeout";
    case ErrorKind::PeerLost:
      return "peer lost";
    case ErrorKind::Aborted:
      return "aborted";
    case ErrorKind::Backend:
      return "backend error";
    case ErrorKind::Mismatch:
      return "mismatch";
    case ErrorKind::Usage:
      return "usage";
  }
  return "error";
}

namespace {

std::string message(ErrorKind kind, const std::string& op, int64_t seq, int rank, int world_size,
                    const std::string& detail) {
  std::string m = "dist: " + op;
  if (seq >= 0) m += " #" + std::to_string(seq);
  if (rank >= 0) {
    m += " (rank " + std::to_string(rank);
    if (world_size > 0) m += " of " + std::to_string(world_size);
    m += ")";
  }
  m += ": ";
  m += to_string(kind);
  if (!detail.empty()) m += ": " + detail;
  return m;
}

}  // namespace

Error::Error(ErrorKind kind, std::string op, int64_t seq, int peer, double elapsed_seconds,
             const std::string& detail, int rank, int world_size)
    : ember::Error(message(kind, op, seq, rank, world_size, detail)),
      kind_(kind),
      op_(std::move(op)),
      seq_(seq),
      peer_(peer),
      elapsed_(elapsed_seconds) {}

}  // namespace ember::dist
