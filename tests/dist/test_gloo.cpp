// ProcessGroupGloo conformance: every op, dtype and reduction, with 2 and 3 processes on
// loopback, ring and halving-doubling; asynchronous Works queued and waited in order.
#include <catch2/catch.hpp>
#include <cmath>

#include "distributed/hash_store.h"
#include "gloo_test_util.h"

using namespace ember;
using namespace std::chrono_literals;
using dist_test::from_doubles;
using dist_test::to_doubles;

namespace {

// Rank r's value at element i (small, exact in every dtype, products fit in uint8 for 3 ranks).
double value(int r, int64_t i) { return (r + 1) + static_cast<double>(i % 3); }

double expected(dist::ReduceOp op, int world, int64_t i, bool integral) {
  double acc = op == dist::ReduceOp::Product ? 1 : 0;
  if (op == dist::ReduceOp::Min) acc = 1e300;
  if (op == dist::ReduceOp::Max) acc = -1e300;
  for (int r = 0; r < world; ++r) {
    const double v = value(r, i);
    switch (op) {
      case dist::ReduceOp::Sum:
      case dist::ReduceOp::Avg:
        acc += v;
        break;
      case dist::ReduceOp::Product:
        acc *= v;
        break;
      case dist::ReduceOp::Min:
        acc = std::min(acc, v);
        break;
      case dist::ReduceOp::Max:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == dist::ReduceOp::Avg) acc = integral ? std::trunc(acc / world) : acc / world;
  return acc;
}

bool integral(DType d) {
  return d == kUInt8 || d == kInt8 || d == DType::Int16 || d == kInt32 || d == kInt64;
}

Tensor rank_tensor(int rank, int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(rank, i);
  return from_doubles(v, dtype);
}

void check_allreduce(dist::ProcessGroup& pg, DType dtype, dist::ReduceOp op, int64_t n) {
  Tensor t = rank_tensor(pg.rank(), n, dtype);
  pg.allreduce(t, op)->wait();
  const auto got = to_doubles(t);
  for (int64_t i = 0; i < n; ++i) {
    const double want = expected(op, pg.size(), i, integral(dtype));
    DIST_EXPECT(got[static_cast<size_t>(i)] == want, "allreduce ", dist::to_string(op), " ",
                dtype_name(dtype), " n=", n, " element ", i, ": got ", got[static_cast<size_t>(i)],
                ", want ", want);
  }
}

}  // namespace

DIST_WORKER(gloo_conformance) {
  auto pg = dist_test::make_gloo(args);
  const int n = args.world_size, me = args.rank;
  DIST_EXPECT(pg->rank() == me && pg->size() == n && pg->backend_name() == "gloo", "identity");

  // allreduce: every dtype and reduction, a few sizes (0, odd, more than one ring segment).
  const DType dtypes[] = {kFloat32, kFloat64,     kInt32,   kInt64,   kUInt8,
                          kInt8,    DType::Int16, kFloat16, kBFloat16};
  const dist::ReduceOp ops[] = {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Min,
                                dist::ReduceOp::Max, dist::ReduceOp::Product};
  for (DType d : dtypes) {
    for (dist::ReduceOp op : ops) check_allreduce(*pg, d, op, 7);
  }
  check_allreduce(*pg, kFloat32, dist::ReduceOp::Sum, 0);
  check_allreduce(*pg, kFloat32, dist::ReduceOp::Sum, 1);
  check_allreduce(*pg, kFloat32, dist::ReduceOp::Max, 600001);  // > 1 MiB segments
  check_allreduce(*pg, kFloat64, dist::ReduceOp::Avg, 300007);

  // Integer Avg truncates toward zero: -1 and -2 average to -1 (2 ranks), -1,-2,-3 to -2.
  {
    Tensor t = from_doubles({-1.0 - me}, kInt32);
    pg->allreduce(t, dist::ReduceOp::Avg)->wait();
    const double want = n == 2 ? -1 : (n == 3 ? -2 : -1 - me);
    DIST_EXPECT(to_doubles(t)[0] == want, "int avg got ", to_doubles(t)[0], " want ", want);
  }

  // broadcast from every root.
  for (int root = 0; root < n; ++root) {
    Tensor t = from_doubles({10.0 * me, 10.0 * me + 1, 10.0 * me + 2}, kFloat32);
    pg->broadcast(t, root)->wait();
    const auto got = to_doubles(t);
    for (int i = 0; i < 3; ++i) {
      DIST_EXPECT(got[static_cast<size_t>(i)] == 10.0 * root + i, "broadcast root ", root, " [", i,
                  "] = ", got[static_cast<size_t>(i)]);
    }
  }

  // allgather: outputs[r] gets rank r's input.
  {
    Tensor in = from_doubles({1.0 * me, 100.0 + me}, kInt64);
    std::vector<Tensor> outs;
    for (int r = 0; r < n; ++r) outs.push_back(zeros({2}, TensorOptions().dtype(kInt64)));
    pg->allgather(outs, in)->wait();
    for (int r = 0; r < n; ++r) {
      const auto got = to_doubles(outs[static_cast<size_t>(r)]);
      DIST_EXPECT(got[0] == r && got[1] == 100 + r, "allgather slot ", r, ": ", got[0], ", ",
                  got[1]);
    }
  }

  // reduce_scatter: rank me gets the sum over ranks of their inputs[me].
  for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Max}) {
    std::vector<Tensor> ins;
    for (int j = 0; j < n; ++j) {
      ins.push_back(from_doubles({(me + 1.0) * (j + 1), 5.0 + j}, kFloat32));
    }
    Tensor out = zeros({2});
    pg->reduce_scatter(out, ins, op)->wait();
    const auto got = to_doubles(out);
    const double want0 =
        op == dist::ReduceOp::Sum ? (me + 1.0) * n * (n + 1) / 2 : 1.0 * n * (me + 1);
    const double want1 = op == dist::ReduceOp::Sum ? n * (5.0 + me) : 5.0 + me;
    DIST_EXPECT(got[0] == want0 && got[1] == want1, "reduce_scatter ", dist::to_string(op), ": ",
                got[0], ", ", got[1], " want ", want0, ", ", want1);
  }

  pg->barrier()->wait();

  // send / recv around the ring, both posted before either is waited for.
  if (n > 1) {
    Tensor out = from_doubles({1.0 * me, 2.0 * me}, kFloat64);
    Tensor in = zeros({2}, TensorOptions().dtype(kFloat64));
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    auto s = pg->send(out, next, 7);
    auto r = pg->recv(in, prev, 7);
    s->wait();
    r->wait();
    const auto got = to_doubles(in);
    DIST_EXPECT(got[0] == prev && got[1] == 2.0 * prev, "recv from ", prev, ": ", got[0]);
    // Tags keep messages apart: tag 2 is sent first, received second.
    Tensor a = from_doubles({1.0}, kFloat32), b = from_doubles({2.0}, kFloat32);
    Tensor ra = zeros({1}), rb = zeros({1});
    auto s1 = pg->send(a, next, 1), s2 = pg->send(b, next, 2);
    auto r2 = pg->recv(rb, prev, 2), r1 = pg->recv(ra, prev, 1);
    for (auto& w : {s1, s2, r2, r1}) w->wait();
    DIST_EXPECT(to_doubles(ra)[0] == 1.0 && to_doubles(rb)[0] == 2.0, "tags ", to_doubles(ra)[0],
                ", ", to_doubles(rb)[0]);
  }

  // Several asynchronous Works queued, then waited in order; seq numbers increase.
  {
    std::vector<Tensor> ts;
    std::vector<dist::WorkPtr> ws;
    for (int k = 0; k < 6; ++k) {
      ts.push_back(full({1000}, static_cast<double>(k + me)));
      ws.push_back(k % 2 ? pg->allreduce(ts.back(), dist::ReduceOp::Sum)
                         : pg->broadcast(ts.back(), k % n));
    }
    for (size_t k = 0; k < ws.size(); ++k) {
      if (k > 0) DIST_EXPECT(ws[k]->seq() == ws[k - 1]->seq() + 1, "seq order");
      ws[k]->wait(10s);
      DIST_EXPECT(ws[k]->is_completed() && !ws[k]->exception(), "work ", k, " completed");
      const int ki = static_cast<int>(k);
      const double want =
          ki % 2 ? static_cast<double>(ki * n + n * (n - 1) / 2) : static_cast<double>(ki + ki % n);
      const auto got = to_doubles(ts[k]);
      DIST_EXPECT(got[0] == want && got[999] == want, "async work ", k, ": ", got[0], " want ",
                  want);
    }
  }
  return 0;
}

TEST_CASE("gloo: conformance, 2 and 3 processes, ring and halving-doubling", "[dist][gloo]") {
  for (int world : {2, 3}) {
    for (const char* algo : {"ring", "hd"}) {
      dist_test::RunOptions o;
      o.params["store"] = dist_test::scratch_dir() + "/store";
      o.params["algo"] = algo;
      o.timeout = 60s;
      auto r = dist_test::run_workers("gloo_conformance", world, o);
      INFO("world " << world << ", " << algo << "\n" << dist_test::describe(r));
      CHECK(dist_test::all_ok(r));
    }
  }
}

TEST_CASE("gloo: a group of one process runs every op locally", "[dist][gloo]") {
  auto store = std::make_shared<dist::HashStore>(5s);
  dist::GlooOptions o;
  o.hostname = "127.0.0.1";
  o.timeout = 2s;
  auto pg = dist::ProcessGroupGloo::create(store, 0, 1, o);
  Tensor t = from_doubles({1, 2, 3}, kFloat32);
  pg->allreduce(t, dist::ReduceOp::Avg)->wait();
  CHECK(to_doubles(t) == std::vector<double>{1, 2, 3});
  pg->broadcast(t, 0)->wait();
  std::vector<Tensor> outs{zeros({3})};
  pg->allgather(outs, t)->wait();
  CHECK(to_doubles(outs[0]) == std::vector<double>{1, 2, 3});
  Tensor rs = zeros({3});
  pg->reduce_scatter(rs, {t}, dist::ReduceOp::Sum)->wait();
  CHECK(to_doubles(rs) == std::vector<double>{1, 2, 3});
  pg->barrier()->wait();
  CHECK(pg->seq() == 5);
}
