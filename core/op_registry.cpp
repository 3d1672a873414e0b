#include "core/op_registry.h"

#include <algorithm>
#include <cctype>

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

std::string forward_op_name(const std::string& node_name) {
  std::string n = node_name;
  const std::string suffix = "Backward";
  if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
    n.resize(n.size() - suffix.size());
  std::string out;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ember
