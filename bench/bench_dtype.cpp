// Reduced-precision traffic on the CPU: the float32 <-> float16 / bfloat16 casts that mixed
// precision and DDP's fp16 comm hook run on every step, element-wise add in the 16-bit types,
// and sums, in microseconds per call, ember against libtorch (when built with it) in the same
// process, interleaved round by round. Both run on the same thread count (1, then the pool's).
//
//   ./build/bench/bench_dtype [rounds=15] [n=1000000]
//
// n = 235,146 is the MLP's parameter count (the fp16 hook's per-step cast).

#include <ember/ember.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef EMBER_HAVE_LIBTORCH
#include <torch/torch.h>
#endif

using ember::bench::Row;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 1000000;
  const int pool = ember::num_threads();
  volatile float sink = 0;
  for (int threads : {1, pool}) {
    if (threads == pool && pool == 1) break;
    ember::set_num_threads(threads);
    ember::manual_seed(0);
    ember::Tensor f = ember::randn({n});
    ember::Tensor h = f.to(ember::kFloat16), b = f.to(ember::kBFloat16);
    ember::Tensor out_h = ember::empty({n}, ember::kFloat16);
    ember::Tensor out_b = ember::empty({n}, ember::kBFloat16);
    ember::Tensor out_f = ember::empty({n});
    std::vector<Row> rows;
    rows.push_back({"float32 -> float16 (copy_)", [&] { out_h.copy_(f); }, {}});
    rows.push_back({"float16 -> float32 (copy_)", [&] { out_f.copy_(h); }, {}});
    rows.push_back({"float32 -> bfloat16 (copy_)", [&] { out_b.copy_(f); }, {}});
    rows.push_back({"bfloat16 -> float32 (copy_)", [&] { out_f.copy_(b); }, {}});
    rows.push_back({"float16 a + b", [&] { sink = sink + (h + h).numel(); }, {}});
    rows.push_back({"bfloat16 a + b", [&] { sink = sink + (b + b).numel(); }, {}});
    rows.push_back({"float32 sum", [&] { sink = sink + f.sum().item<float>(); }, {}});
    rows.push_back({"float16 sum", [&] { sink = sink + h.sum().item<float>(); }, {}});
#ifdef EMBER_HAVE_LIBTORCH
    torch::set_num_threads(threads);
    torch::manual_seed(0);
    torch::Tensor tf = torch::randn({n});
    torch::Tensor th = tf.to(torch::kHalf), tb = tf.to(torch::kBFloat16);
    torch::Tensor tout_h = torch::empty({n}, torch::kHalf);
    torch::Tensor tout_b = torch::empty({n}, torch::kBFloat16);
    torch::Tensor tout_f = torch::empty({n});
    rows[0].torch_fn = [&] { tout_h.copy_(tf); };
    rows[1].torch_fn = [&] { tout_f.copy_(th); };
    rows[2].torch_fn = [&] { tout_b.copy_(tf); };
    rows[3].torch_fn = [&] { tout_f.copy_(tb); };
    rows[4].torch_fn = [&] { sink = sink + (th + th).numel(); };
    rows[5].torch_fn = [&] { sink = sink + (tb + tb).numel(); };
    rows[6].torch_fn = [&] { sink = sink + tf.sum().item<float>(); };
    rows[7].torch_fn = [&] { sink = sink + th.sum().item<float>(); };
#endif
    const int iters = n >= 4000000 ? 5 : 20;
    std::printf(
        "\nthreads: %d (ember and libtorch), n = %lld, %d rounds x %d iterations, medians\n\n",
        threads, static_cast<long long>(n), rounds, iters);
    ember::bench::run_rows(rows, rounds, iters, "case", "us", 1e6, 1);
  }
  return 0;
}
