// Allreduce bus bandwidth of the Gloo backend over loopback, ring against halving-doubling,
// 2 processes (or --world N), 1 KiB to 64 MiB of float32; and the latency of a barrier, which is
// exactly one fingerprint exchange (Note [Collective sequence numbers] in process_group.h).
//
//   ./build/bench/bench_dist            # the full table
//   ./build/bench/bench_dist --quick    # up to 1 MiB, few iterations (a smoke run)
//
// The program starts itself once per rank (fork + exec of /proc/self/exe with --rank), the
// ranks meet through a FileStore in a temporary directory, and rank 0 prints the table. Bus
// bandwidth is the NCCL-tests convention for allreduce: 2 (n - 1) / n * bytes / time, the
// traffic each link carries in an optimal algorithm, so that numbers compare across world sizes.
// Each size runs both algorithms alternately, in the same processes; the time is the median of
// the iterations.
//
// Note [Idle ranks are slow to wake]
// The last table times the MLP's 0.9 MiB allreduce after the ranks compute for 0, 1 and 3 ms
// first, as a DDP step does. On the development VM it takes 0.8 ms back to back but about 2 ms
// after 1 ms of computing: while a rank computes, the threads that move its messages sleep, and
// each of the ring's hand-offs then pays a wake-up. Gloo called directly on the calling thread,
// without ember's worker (a scratch program, same VM, same sizes), shows the same: 0.61 ms back
// to back, 2.97 ms after 1 ms of computing -- so the cost is in Gloo's socket threads and the
// VM's wake-ups, and ember's own path (worker hand-off plus the fingerprint) adds about 0.26 ms.
// That, not bandwidth, is most of bench_ddp's world-2 overhead (bench/RESULTS.md).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_ranks.h"
#include "bench_util.h"
#include "core/ops/factory.h"
#include "distributed/file_store.h"
#include "distributed/process_group_gloo.h"

using namespace ember;

namespace {

int run_rank(int rank, int world, const std::string& store_path, bool quick) {
  bench::die_with_parent();
  auto store = std::make_shared<dist::FileStore>(store_path, std::chrono::seconds(60));
  dist::GlooOptions o;
  o.hostname = "127.0.0.1";
  o.timeout = std::chrono::seconds(60);
  o.rendezvous_timeout = std::chrono::seconds(60);
  o.prefix = "ring";
  auto ring = dist::ProcessGroupGloo::create(store, rank, world, o);
  o.prefix = "hd";
  o.algorithm = dist::AllreduceAlgorithm::HalvingDoubling;
  auto hd = dist::ProcessGroupGloo::create(store, rank, world, o);

  {  // barrier latency: one fingerprint allgather
    for (int i = 0; i < 20; ++i) ring->barrier()->wait();
    std::vector<double> t;
    for (int i = 0; i < (quick ? 50 : 500); ++i) {
      const double t0 = bench::now_seconds();
      ring->barrier()->wait();
      t.push_back(bench::now_seconds() - t0);
    }
    if (rank == 0) {
      std::printf(
          "Gloo over loopback, %d processes; barrier (one fingerprint exchange): %.1f us\n\n",
          world, bench::median(t) * 1e6);
      std::printf("%10s %12s %12s %12s %12s %8s\n", "bytes", "ring us", "hd us", "ring GB/s",
                  "hd GB/s", "hd/ring");
    }
  }
  const size_t max_bytes = quick ? (size_t(1) << 20) : (size_t(64) << 20);
  for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    Tensor t = ones({static_cast<int64_t>(bytes / 4)});
    // About 0.25 s of traffic per algorithm at 1 GB/s, between 5 and 200 iterations.
    int iters = static_cast<int>(
        std::min<size_t>(200, std::max<size_t>(5, (size_t(256) << 20) / bytes / 4)));
    if (quick) iters = 5;
    std::vector<double> tr, th;
    ring->allreduce(t)->wait();  // warm up both
    hd->allreduce(t)->wait();
    for (int i = 0; i < iters; ++i) {
      double t0 = bench::now_seconds();
      ring->allreduce(t)->wait();
      tr.push_back(bench::now_seconds() - t0);
      t0 = bench::now_seconds();
      hd->allreduce(t)->wait();
      th.push_back(bench::now_seconds() - t0);
    }
    if (rank == 0) {
      const double mr = bench::median(tr), mh = bench::median(th);
      const double factor = 2.0 * (world - 1) / world * static_cast<double>(bytes) / 1e9;
      std::printf("%10zu %12.1f %12.1f %12.3f %12.3f %8.2f\n", bytes, mr * 1e6, mh * 1e6,
                  factor / mr, factor / mh, mr / mh);
      std::fflush(stdout);
    }
  }
  {  // Note [Idle ranks are slow to wake]: the same 0.9 MiB allreduce (the MLP's gradients)
     // after 0, 1 and 3 ms of computing, as in a training step.
    Tensor t = ones({235146});
    if (rank == 0) std::printf("\nallreduce of 0.90 MiB (ring) after computing for:\n");
    for (double compute_ms : {0.0, 1.0, 3.0}) {
      std::vector<double> tr;
      for (int i = 0; i < (quick ? 5 : 200); ++i) {
        const double until = bench::now_seconds() + compute_ms * 1e-3;
        volatile double sink = 0;
        while (bench::now_seconds() < until) sink = sink + 1.0;
        const double t0 = bench::now_seconds();
        ring->allreduce(t)->wait();
        tr.push_back(bench::now_seconds() - t0);
      }
      if (rank == 0) std::printf("  %.0f ms: %.3f ms\n", compute_ms, bench::median(tr) * 1e3);
    }
  }
  ring->barrier()->wait();
  hd->barrier()->wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int world = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rank") == 0 && i + 3 < argc) {
      return run_rank(std::atoi(argv[i + 1]), std::atoi(argv[i + 2]), argv[i + 3],
                      i + 4 < argc && std::strcmp(argv[i + 4], "quick") == 0);
    }
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--world") == 0 && i + 1 < argc) world = std::atoi(argv[++i]);
  }
  if (world < 2) {
    std::fprintf(stderr, "bench_dist: --world must be at least 2\n");
    return 2;
  }
  return bench::run_ranks("bench_dist", world, {quick ? "quick" : "full"},
                          std::chrono::minutes(10));
}
