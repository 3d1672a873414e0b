// ember-demo: a short tour of the tensor core. It is the project's main job until training on
// Fashion-MNIST lands; every line below is an op a later layer builds on.
#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  manual_seed(0);

  std::cout << "-- tensors, views and broadcasting\n";
  Tensor a = arange(6, kFloat32).view({2, 3});
  std::cout << "a = " << a << "\n";
  std::cout << "a.t() shares a's storage: " << std::boolalpha << a.t().is_alias_of(a) << "\n";
  std::cout << "a * 2 + tensor({10, 20, 30}) = " << (a * 2 + tensor<float>({10, 20, 30})) << "\n";
  std::cout << "int32 tensor * 2.5 promotes to " << (ones({2}, kInt32) * 2.5).dtype() << "\n";

  std::cout << "\n-- a tiny linear classifier, by hand\n";
  Tensor x = randn({4, 3});
  Tensor w = randn({3, 5}) * 0.5;
  Tensor logits = x.matmul(w);
  Tensor probs = logits.softmax(1);
  std::cout << "probabilities (rows sum to 1):\n" << probs << "\n";
  std::cout << "row sums = " << probs.sum({1}) << "\n";
  std::cout << "argmax per row = " << probs.argmax(1) << "\n";
  auto [top_values, top_indices] = probs.topk(2, 1);
  std::cout << "top-2 classes:\n" << top_indices << "\n";

  std::cout << "\n-- a convolution and a pooling step on a random image\n";
  Tensor image = rand({1, 1, 6, 6});
  Tensor kernel = ones({2, 1, 3, 3}) / 9.0;  // two 3x3 box filters
  Tensor feature = conv2d(image, kernel, Tensor(), {1, 1}, {1, 1});
  Tensor pooled = max_pool2d(feature.relu(), {2, 2});
  std::cout << "conv2d " << shape_str(image.sizes()) << " -> " << shape_str(feature.sizes())
            << ", max_pool2d -> " << shape_str(pooled.sizes()) << "\n";

  std::cout << "\n-- autograd: fit the classifier's weights to fixed labels by gradient descent\n";
  Tensor labels = tensor<int64_t>({0, 3, 1, 4});
  Tensor weights = (randn({3, 5}) * 0.1).requires_grad_();
  weights.set_name("weights");
  for (int step = 0; step <= 50; ++step) {
    Tensor log_probs = x.matmul(weights).log_softmax(1);
    Tensor loss = -log_probs.gather(1, labels.unsqueeze(1)).mean();
    if (step == 0) {
      std::cout << "loss.grad_fn() = " << loss.grad_fn()->name() << "; the graph as DOT:\n"
                << autograd::to_dot(loss);
    }
    loss.backward();
    if (step % 10 == 0) std::cout << "step " << step << " loss " << loss.item<float>() << "\n";
    NoGradGuard no_grad;  // the update itself is not part of any graph
    weights.sub_(weights.grad() * 0.5);
    weights.grad().zero_();
  }

  std::cout << "\n-- the allocator keeps count\n";
  MemoryStats s = memory_stats();
  std::cout << "bytes held by live tensors: " << s.allocated_bytes
            << ", peak: " << s.peak_allocated_bytes
            << ", allocations so far: " << s.total_allocations << "\n";
  return 0;
}
