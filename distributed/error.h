#pragma once
// dist::Error: what went wrong in a distributed call, and where. Every failure of a Store, a
// ProcessGroup or DDP raises one (it is an ember::Error, so code that catches those still does):
//
//   dist: allreduce #12 (rank 0 of 2): timed out after 5.00 s waiting for rank 1
//   dist: broadcast #3 (rank 1 of 2): peer lost: rank 0 closed the connection after 0.12 s
//   dist: allreduce #7 (rank 1 of 2): mismatch: this rank called allreduce #7 [float32, 1024
//         elements], rank 0 called broadcast #7 [float32, 1024 elements]
//
// kind() says which of the causes below it was; op(), seq(), peer() and elapsed_seconds()
// carry the rest for programs that react to it (a launcher restarting a job, a test).

#include <cstdint>
#include <string>

#include "core/error.h"

namespace ember::dist {

enum class ErrorKind {
  Timeout,   // a deadline passed: a store key never came, a collective never finished
  PeerLost,  // a peer closed its connection or died (its process exited)
  Aborted,   // the group was aborted (by its watchdog, by a peer's report, or by the user)
  Backend,   // the backend (Gloo, NCCL, the socket layer) reported an error
  Mismatch,  // ranks called different collectives at the same sequence number
  Usage,     // a bad argument: a rank out of range, tensors of the wrong shape or device
};

const char* to_string(ErrorKind kind);

class Error : public ember::Error {
 public:
  // op: "allreduce", "store.get", ...; seq: the collective's sequence number (-1: none);
  // peer: the rank the failure is about (-1: none or unknown); elapsed: seconds since the call
  // started (< 0: not measured); detail: the rest of the message.
  Error(ErrorKind kind, std::string op, int64_t seq, int peer, double elapsed_seconds,
        const std::string& detail, int rank = -1, int world_size = -1);

  ErrorKind kind() const { return kind_; }
  const std::string& op() const { return op_; }
  int64_t seq() const { return seq_; }
  int peer() const { return peer_; }
  double elapsed_seconds() const { return elapsed_; }

 private:
  ErrorKind kind_;
  std::string op_;
  int64_t seq_;
  int peer_;
  double elapsed_;
};

}  // namespace ember::dist
