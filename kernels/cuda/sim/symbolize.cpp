#include "kernels/cuda/sim/symbolize.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace ember::sim::detail {

namespace {

std::string run_addr2line(const char* object, uintptr_t address) {
  char command[4096];
  std::snprintf(command, sizeof command, "addr2line -C -f -i -e '%s' 0x%lx 2>/dev/null", object,
                static_cast<unsigned long>(address));
  FILE* pipe = popen(command, "r");
  if (!pipe) return "";
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    std::string line = buf;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    lines.push_back(line);
  }
  pclose(pipe);
  // Pairs of (function, file:line), innermost inlined frame first; skip the simulator's own.
  std::string fallback;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    const std::string& loc = lines[i + 1];
    if (loc.empty() || loc[0] == '?') continue;
    std::string location = loc.substr(0, loc.find(" (discriminator"));
    if (fallback.empty()) fallback = location;
    if (location.find("kernels/cuda/sim/") == std::string::npos) return location;
  }
  return fallback;
}

}  // namespace

std::string symbolize(const void* pc) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(pc);
  if (it != cache.end()) return it->second;
  std::string result;
  Dl_info info{};
  auto address = reinterpret_cast<uintptr_t>(pc) - 1;  // inside the call instruction
  if (dladdr(reinterpret_cast<const void*>(address), &info) && info.dli_fname) {
    // A position-independent object is looked up by offset, a fixed executable by address.
    auto base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    const auto* header = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
    uintptr_t lookup = header && header->e_type == ET_EXEC ? address : address - base;
    const char* object = info.dli_fname;
    std::string self;
    if (!*object) object = "/proc/self/exe";
    result = run_addr2line(object, lookup);
    if (result.empty()) {
      std::string name = info.dli_sname ? info.dli_sname : "?";
      int status = 0;
      char* demangled =
          info.dli_sname ? abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status) : nullptr;
      if (demangled && status == 0) name = demangled;
      std::free(demangled);
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%lx",
                    static_cast<unsigned long>(
                        address - reinterpret_cast<uintptr_t>(info.dli_saddr ? info.dli_saddr
                                                                             : info.dli_fbase)));
      result = name + offset + " (" + info.dli_fname + ")";
    }
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", pc);
    result = buf;
  }
  cache.emplace(pc, result);
  return result;
}

}  // namespace ember::sim::detail
