#include "core/op_registry.h"

#include <algorithm>

namespace ember {

namespace {
std::vector<OpFamily>& families() {
  static std::vector<OpFamily> f;
  return f;
}
}  // namespace

// Several files may register ops of one family (nn's layers do): they share one OpFamily.
void OpFamilyRegistrar::add(const char* family, const char* const* ops, size_t n) {
  std::vector<OpFamily>& all = families();
  auto it =
      std::find_if(all.begin(), all.end(), [&](const OpFamily& f) { return f.family == family; });
  if (it == all.end()) it = all.insert(all.end(), OpFamily{family, {}});
  for (size_t i = 0; i < n; ++i) it->ops.emplace_back(ops[i]);
}

const std::vector<OpFamily>& registered_op_families() { return families(); }

std::vector<std::string> registered_ops() {
  std::vector<std::string> all;
  for (auto& f : families())
    for (auto& o : f.ops) all.push_back(o);
  return all;
}

}  // namespace ember
