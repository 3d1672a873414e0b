// ember-demo: a tour of the tensor core (the main job until training lands).
#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  Tensor a = arange(6, kFloat32).view({2, 3});
  std::cout << "a = " << a << "\n";
  std::cout << "a.t() = " << a.t() << "\n";
  std::cout << "a * 2 + 1 = " << (a * 2 + 1) << "\n";
  return 0;
}
