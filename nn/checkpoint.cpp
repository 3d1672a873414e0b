#include "nn/checkpoint.h"

#include <memory>
#include <utility>
#include <vector>

namespace ember::nn {

Tensor checkpoint_sequential(const Sequential& net, int64_t segments, const Tensor& input,
                             const autograd::CheckpointOptions& options) {
  const auto n = static_cast<int64_t>(net.size());
  EMBER_CHECK(n > 0, "checkpoint_sequential: the Sequential is empty");
  EMBER_CHECK(segments >= 1 && segments <= n, "checkpoint_sequential: ", segments,
              " segments for a Sequential of ", n, " modules (need 1 <= segments <= ", n, ")");
  Tensor x = input;
  int64_t begin = 0;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t end = begin + n / segments + (s < n % segments ? 1 : 0);
    std::vector<std::shared_ptr<Module>> run(net.begin() + begin, net.begin() + end);
    auto forward = [run = std::move(run)](const Tensor& in) {
      Tensor h = in;
      for (const std::shared_ptr<Module>& m : run) h = (*m)(h);
      return h;
    };
    x = s + 1 < segments ? autograd::checkpoint(forward, x, options) : forward(x);
    begin = end;
  }
  return x;
}

}  // namespace ember::nn
