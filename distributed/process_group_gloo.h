#pragma once
// ProcessGroupGloo: the ProcessGroup of CPU tensors, over Gloo's TCP transport (Debian's
// libgloo-dev). One process per rank; the ranks meet through a Store.
//
//   auto store = std::make_shared<dist::FileStore>("/tmp/job.store", 30s);
//   dist::GlooOptions o;
//   o.timeout = std::chrono::seconds(10);             // each operation's deadline
//   auto pg = dist::ProcessGroupGloo::create(store, rank, world_size, o);
//   pg->allreduce(grad, dist::ReduceOp::Avg)->wait();
//
// Gloo's headers are not part of this one: the group is a pimpl (process_group_gloo.cpp).
//
// Note [Gloo rendezvous]
// create() first runs a join barrier on the store: each rank sets <prefix>/join/<rank> and waits
// for every rank's key with rendezvous_timeout. A rank that never starts becomes, on every rank
// that did, a dist::Error of kind Timeout naming the missing ranks ("ranks 2 never joined within
// 2000 ms") after rendezvous_timeout -- not after Gloo's own default of 30 s, which its
// rendezvous waits use whatever the context's timeout (measured: a rank that never started made
// a peer fail only after 31 s). Only then does Gloo's connectFullMesh run, through an adapter
// that gives Gloo the store and replaces every wait's timeout by what is left of ember's
// rendezvous deadline. Last, each rank publishes the addresses of its connections, so that a
// lost connection can be reported as the rank it led to.
//
// Note [Gloo execution]
// One worker thread per group runs the collectives in the order they were called; every call
// returns its Work at once. Each collective first exchanges its 40-byte Fingerprint with a Gloo
// allgather (Note [Collective sequence numbers] in process_group.h), then moves its data; each
// of the two steps has the group's timeout. Gloo's exceptions become dist::Errors: a timeout is
// Timeout, a closed or reset connection is PeerLost (naming the rank when the address in Gloo's
// message is one of the peers'), anything else is Backend; the message has the op, its
// sequence number and the elapsed time. The first failure fails the group (Note [A failed group
// stays failed]); the calls queued behind it finish with Aborted. send and recv are posted at
// once from the calling thread (so a rank may send and then receive while its peer does the
// same), and a second thread waits for them in order. The destructor lets the running
// operation end (it ends within the timeout, even when a peer is gone), finishes the queued
// ones with Aborted and joins both threads.
//
// Note [Gloo reductions]
// allreduce reduces every dtype but bool (a Usage error) with Sum, Avg, Min, Max and Product.
// uint8, int8, int16, int32, int64, float32 and float64 are reduced in their own type (integer
// sums and products wrap around, as in two's complement); float16 and bfloat16 are converted to
// float32, reduced, and rounded back once, so the result does not depend on the order the
// ranks' values were added in. Avg is the sum divided by size() in the tensor's dtype: for
// integer tensors that division truncates toward zero (PyTorch's Gloo backend refuses Avg
// altogether; ember keeps the one definition of process_group.h). The algorithm is Gloo's ring
// (gloo::allreduce) or halving-doubling (gloo::AllreduceHalvingDoubling, which handles a world
// size that is not a power of two by its binary blocks; it counts bytes in an int, so a tensor
// of 2 GiB or more is reduced by the ring). reduce_scatter is an allreduce of the
// size() inputs laid end to end and a copy of this rank's slice: correct for every dtype and
// reduction, at size() times the traffic of a true reduce-scatter.

#include <chrono>
#include <memory>
#include <string>

#include "distributed/process_group.h"
#include "distributed/store.h"

namespace ember::dist {

enum class AllreduceAlgorithm { Ring, HalvingDoubling };
const char* to_string(AllreduceAlgorithm a);

struct GlooOptions {
  // The deadline of each operation (each of its two steps, Note [Gloo execution]).
  std::chrono::milliseconds timeout{300000};
  // How long create() waits for every rank to join and connect (Note [Gloo rendezvous]).
  std::chrono::milliseconds rendezvous_timeout{300000};
  // The network to use. interface (a name such as "eth0") wins over hostname (a name or an
  // address of this machine, which its peers must reach). With neither, GLOO_SOCKET_IFNAME is
  // used when set; else the address this machine's hostname resolves to, when a socket can be
  // bound there; else loopback (127.0.0.1), which serves one machine only.
  std::string interface;
  std::string hostname;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Ring;
  // The namespace of this group's keys in the store. Empty: "gloo/<n>" for the n-th group this
  // process creates (ranks that create their groups in the same order agree).
  std::string prefix;
};

class ProcessGroupGloo : public ProcessGroup {
 public:
  // Joins the group: the join barrier, Gloo's full mesh of connections (Note [Gloo
  // rendezvous]). Raises a dist::Error (Timeout when a rank never joins, Backend when the
  // network cannot be used, Usage for bad options).
  static std::shared_ptr<ProcessGroupGloo> create(std::shared_ptr<Store> store, int rank, int size,
                                                  GlooOptions options = {});
  ~ProcessGroupGloo() override;

  std::string backend_name() const override { return "gloo"; }
  const GlooOptions& options() const { return options_; }

 protected:
  WorkPtr run(Call call) override;
  WorkPtr run_send(const Tensor& tensor, int dst, int tag) override;
  WorkPtr run_recv(const Tensor& tensor, int src, int tag) override;
  DeviceType device_type() const override { return DeviceType::CPU; }

 private:
  struct Impl;
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, GlooOptions options);
  void worker_loop();
  void p2p_loop();
  void execute(Call& call);  // one collective: fingerprints, then data (raises on failure)

  GlooOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::dist
