#include "core/cuda_memory.h"

#include <cstdio>

#include "core/error.h"
#include "core/stream.h"

namespace ember {

namespace {

// One row of the summary table: a name and four columns.
std::string summary_row(const char* name, const Stat& s, bool bytes) {
  auto cell = [bytes](int64_t v) {
    return bytes ? format_memory_size(v) : std::to_string(static_cast<long long>(v));
  };
  char buf[128];
  std::snprintf(buf, sizeof buf, "| %-26s | %10s | %10s | %10s | %10s |\n", name,
                cell(s.current).c_str(), cell(s.peak).c_str(), cell(s.allocated).c_str(),
                cell(s.freed).c_str());
  return buf;
}

const std::string kRule = "|" + std::string(80, '-') + "|\n";
const std::string kDoubleRule = "|" + std::string(80, '=') + "|\n";

}  // namespace

std::string CUDACachingAllocator::memory_summary(int device) const {
  const CUDAMemoryStats s = memory_stats(device);
  char head[128];
  std::string out = kDoubleRule;
  std::snprintf(head, sizeof head, "| %-78s |\n",
                ("ember CUDA memory summary, device cuda:" + std::to_string(device)).c_str());
  out += head;
  out += kRule;
  std::snprintf(head, sizeof head, "| %-78s |\n",
                detail::str("OOMs: ", s.num_ooms, "   allocation retries: ", s.num_alloc_retries,
                            "   backend: ",
                            config().backend == CUDAAllocatorConfig::Backend::native ? "native"
                            : config().expandable_segments ? "caching, expandable segments"
                                                           : "caching")
                    .c_str());
  out += head;
  out += kDoubleRule;
  std::snprintf(head, sizeof head, "| %-26s | %10s | %10s | %10s | %10s |\n", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  out += head;
  struct Row {
    const char* name;
    const StatArray* stat;
    bool bytes;
  };
  const Row rows[] = {{"Allocated memory", &s.allocated, true},
                      {"Active memory", &s.active, true},
                      {"Reserved memory", &s.reserved, true},
                      {"Inactive split memory", &s.inactive_split, true},
                      {"Allocations", &s.allocation_count, false},
                      {"Active blocks", &s.active_count, false},
                      {"Segments", &s.segment_count, false},
                      {"Inactive split blocks", &s.inactive_split_count, false}};
  for (const Row& r : rows) {
    out += kRule;
    out += summary_row(r.name, (*r.stat)[kAllPools], r.bytes);
    out += summary_row("      from large pool", (*r.stat)[kLargePool], r.bytes);
    out += summary_row("      from small pool", (*r.stat)[kSmallPool], r.bytes);
  }
  out += kDoubleRule;
  return out;
}

namespace cuda {

namespace {
Device cuda_device(int device) {
  return Device(DeviceType::CUDA, device < 0 ? current_device(DeviceType::CUDA) : device);
}
}  // namespace

CUDACachingAllocator& caching_allocator(const char* op) {
  auto* a = dynamic_cast<CUDACachingAllocator*>(get_allocator(DeviceType::CUDA));
  EMBER_CHECK(a != nullptr, op,
              ": the cuda allocator is not the caching allocator (another one was installed "
              "with set_allocator)");
  return *a;
}

int64_t memory_allocated(int device) { return ember::memory_allocated(cuda_device(device)); }
int64_t max_memory_allocated(int device) {
  return ember::max_memory_allocated(cuda_device(device));
}
int64_t memory_reserved(int device) { return ember::memory_reserved(cuda_device(device)); }
int64_t max_memory_reserved(int device) { return ember::max_memory_reserved(cuda_device(device)); }
void reset_peak_memory_stats(int device) { ember::reset_peak_memory_stats(cuda_device(device)); }
void empty_cache() { get_allocator(DeviceType::CUDA)->empty_cache(); }

CUDAMemoryStats memory_stats(int device) {
  return caching_allocator("ember::cuda::memory_stats").memory_stats(cuda_device(device).index);
}

std::string memory_summary(int device) {
  return caching_allocator("ember::cuda::memory_summary").memory_summary(cuda_device(device).index);
}

}  // namespace cuda
}  // namespace ember
