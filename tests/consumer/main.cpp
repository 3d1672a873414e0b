#include <ember/ember.h>

#include <iostream>

int main() {
  ember::Tensor a = ember::arange(6, ember::kFloat32).view({2, 3});
  ember::Tensor b = a * 2 + 1;
  double s = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) s += b[i][j].item<double>();
  std::cout << "sum " << s << "\n";
  ember::dist::HashStore store;  // the distributed layer links from the package too
  store.set("k", "v");
  if (store.get_string("k") != "v") return 1;
  return s == 36.0 ? 0 : 1;  // (0+1+...+5)*2 + 6
}
