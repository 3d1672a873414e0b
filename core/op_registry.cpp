#include "core/op_registry.h"

namespace ember {

namespace {
std::vector<OpFamily>& families() {
  static std::vector<OpFamily> f;
  return f;
}
}  // namespace

void OpFamilyRegistrar::add(const char* family, const char* const* ops, size_t n) {
  OpFamily f{family, {}};
  for (size_t i = 0; i < n; ++i) f.ops.emplace_back(ops[i]);
  families().push_back(std::move(f));
}

const std::vector<OpFamily>& registered_op_families() { return families(); }

std::vector<std::string> registered_ops() {
  std::vector<std::string> all;
  for (auto& f : families())
    for (auto& o : f.ops) all.push_back(o);
  return all;
}

}  // namespace ember
