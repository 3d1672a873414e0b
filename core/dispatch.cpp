#include "core/dispatch.h"

namespace ember {

namespace {
// Made on first use: StubListing objects of any translation unit may run before this file's
// own static initialisers (Note [Stub registry]).
std::vector<detail::StubRecord>& stub_list() {
  static std::vector<detail::StubRecord> list;
  return list;
}
}  // namespace

void detail::list_stub(const StubRecord& record) { stub_list().push_back(record); }

std::vector<StubInfo> dispatch_stubs() {
  std::vector<StubInfo> out;
  out.reserve(stub_list().size());
  for (const detail::StubRecord& r : stub_list()) {
    StubInfo info;
    info.name = r.name(r.stub);
    for (int d = 0; d < kNumDeviceTypes; ++d)
      info.has_kernel[d] = r.has_kernel(r.stub, static_cast<DeviceType>(d));
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<std::string> stubs_missing(DeviceType device) {
  std::vector<std::string> out;
  for (const StubInfo& s : dispatch_stubs())
    if (!s.has_kernel[static_cast<int>(device)]) out.push_back(s.name);
  return out;
}

}  // namespace ember
