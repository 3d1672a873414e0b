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

  std::cout << "\n-- the allocator keeps count\n";
  MemoryStats s = memory_stats();
  std::cout << "bytes held by live tensors: " << s.allocated_bytes
            << ", peak: " << s.peak_allocated_bytes << ", allocations so far: "
            << s.total_allocations << "\n";
  return 0;
}
