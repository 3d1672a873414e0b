// Shared-memory slots, initcheck fill, bounds errors and racecheck (Note [Shared memory in the
// simulator] in shared.h).
//
// Note [Racecheck]
// The shadow keeps, per byte of shared memory, the last writer and the last reader(s) with the
// barrier interval ("epoch") of the access. Epochs come from a per-worker counter bumped at
// every block start and every completed __syncthreads, so a shadow never needs clearing. Two
// accesses to a byte by different threads in the same epoch, at least one a write, race: no
// barrier orders them. Threads of one warp are also ordered by a warp collective between the
// accesses (each completed collective bumps the warp's own counter), so warp-synchronous code
// with __syncwarp is accepted. The report names both threads and both source lines: the access
// sites are the return addresses of race_read/race_write, symbolised at report time. It is an
// approximation: a warp collective with a partial mask orders all lanes of the warp here, and
// atomics or raw pointers into shared memory are not tracked -- except WMMA's loads and stores,
// which report each lane's slice of the tile through race_raw (kernels/cuda/sim/wmma.h).
#include "kernels/cuda/sim/shared.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kernels/cuda/sim/error.h"
#include "kernels/cuda/sim/symbolize.h"

namespace ember::sim::detail {

namespace {

std::atomic<int> next_site_id{0};

int site_id(const SharedSite& site) {
  int id = site.id.load(std::memory_order_acquire);
  if (id >= 0) return id;
  int fresh = next_site_id.fetch_add(1);
  if (site.id.compare_exchange_strong(id, fresh)) return fresh;
  return id;  // another thread assigned it first
}

std::string describe(const SharedSlot& slot) {
  return std::string("shared '") + slot.name + "' (" + slot.file + ":" + std::to_string(slot.line) +
         ")";
}

// Gives `slot` exactly `bytes` of heap memory (a new allocation when the size changes, so
// ASan's redzone starts at its end) and the shadow racecheck needs. Every slot starts on a
// kSlotAlignment boundary, or alignof(T)'s when larger (Note [Shared memory in the simulator]).
void size_slot(SharedSlot& slot, size_t bytes, size_t align, bool racecheck) {
  const size_t a = align < kSlotAlignment ? kSlotAlignment : align;
  if (slot.data == nullptr || slot.bytes != bytes ||
      reinterpret_cast<std::uintptr_t>(slot.data) % a != 0) {
    std::free(slot.data);
    void* p = nullptr;
    if (posix_memalign(&p, a, bytes ? bytes : 1) != 0) fail("simulator: out of host memory");
    slot.data = static_cast<char*>(p);
    slot.bytes = bytes;
  }
  if (racecheck) {
    if (slot.shadow.size() != bytes) slot.shadow.assign(bytes, ShadowByte{});
  } else if (!slot.shadow.empty()) {
    slot.shadow = {};
  }
}

void fill(SharedSlot& slot, Fill how) {
  if (how == Fill::nan)
    std::memset(slot.data, 0xFF, slot.bytes);
  else if (how == Fill::zero)
    std::memset(slot.data, 0, slot.bytes);
}

}  // namespace

void prepare_shared(Block& b) {
  const KernelRun& run = *b.run;
  if (run.dynamic_shared == 0) return;
  SharedSlot& slot = b.worker->dynamic;
  size_slot(slot, run.dynamic_shared, 256, run.options.racecheck);
  fill(slot, run.options.fill);
  slot.block_serial = b.serial;
}

SharedSlot& shared_slot(const SharedSite& site, size_t bytes, size_t align) {
  Block& b = current_block(site.name);
  std::deque<SharedSlot>& slots = b.worker->slots;
  auto id = static_cast<size_t>(site_id(site));
  if (slots.size() <= id) slots.resize(id + 1);
  SharedSlot& slot = slots[id];
  if (slot.block_serial == b.serial) return slot;
  // First use in this block: size, fill and count it.
  slot.name = site.name;
  slot.file = site.file;
  slot.line = site.line;
  size_slot(slot, bytes, align, b.run->options.racecheck);
  fill(slot, b.run->options.fill);
  slot.block_serial = b.serial;
  b.static_shared += bytes;
  size_t prev = b.run->info->static_shared.load();
  while (prev < b.static_shared &&
         !b.run->info->static_shared.compare_exchange_weak(prev, b.static_shared)) {
  }
  if (b.static_shared > (48u << 10)) {
    fail("kernel '" + b.run->name + "' declares " + std::to_string(b.static_shared) +
         " bytes of static shared memory (" + describe(slot) +
         " brings it past the 49152 bytes a block may declare statically; use dynamic shared "
         "memory with set_max_dynamic_shared for more)");
  }
  if (b.static_shared + b.run->dynamic_shared > b.run->shared_limit) {
    fail("kernel '" + b.run->name + "' needs " + std::to_string(b.static_shared) +
         " bytes of static + " + std::to_string(b.run->dynamic_shared) +
         " bytes of dynamic shared memory, more than the " + std::to_string(b.run->shared_limit) +
         " bytes allowed (" + describe(slot) + ")");
  }
  return slot;
}

SharedSlot& dynamic_slot(const char* name, const char* file, int line, size_t align) {
  Block& b = current_block(name);
  SharedSlot& slot = b.worker->dynamic;
  if (b.run->dynamic_shared == 0) {
    // An empty region: every index is out of bounds.
    static thread_local SharedSlot empty;
    empty.name = name;
    empty.file = file;
    empty.line = line;
    empty.bytes = 0;
    return empty;
  }
  slot.name = name;
  slot.file = file;
  slot.line = line;
  if (align > 256) fail(describe(slot) + ": alignment above 256 bytes is not supported");
  return slot;
}

void shared_out_of_bounds(const SharedSlot& slot, long long index, size_t extent) {
  fail("out-of-bounds shared memory access: index " + std::to_string(index) + " of " +
       describe(slot) + ", whose extent is " + std::to_string(extent));
}

namespace {

enum class Access { read, write };

// Whether an earlier access by `other` (warp epoch `other_warp_epoch`, in the current block
// epoch) is ordered before an access by `self`.
bool ordered(const Block& b, uint32_t self, uint32_t other_warp, uint32_t other_warp_epoch) {
  uint32_t warp = self / 32;
  return other_warp == warp && b.warp_epoch.size() > warp && b.warp_epoch[warp] > other_warp_epoch;
}

[[noreturn]] void hazard(const Block& b, const SharedSlot& slot, size_t offset, const char* kind,
                         const char* self_verb, const void* self_pc, uint32_t other,
                         const char* other_verb, const void* other_pc) {
  std::string other_name = other == kManyReaders ? std::string("other threads")
                                                 : "thread " + thread_coords(other, b.block_dim);
  fail("racecheck: " + std::string(kind) + " hazard on " + describe(slot) + " at byte " +
       std::to_string(offset) + ": this thread " + self_verb + " it at " + symbolize(self_pc) +
       ", " + other_name + " " + other_verb + " it at " + symbolize(other_pc) +
       " in the same barrier interval (no __syncthreads between them)");
}

void record(SharedSlot& slot, const void* p, size_t bytes, Access access, const void* pc) {
  Block& b = current_block("shared memory");
  if (access == Access::write && !b.mma_reads.empty())
    mma_check_write(b, p, bytes, "racecheck: a write to " + describe(slot));
  uint32_t self = t_thread->rank;
  uint32_t warp = self / 32;
  uint32_t epoch = b.worker->epoch;
  uint32_t warp_epoch = b.warp_epoch.size() > warp ? b.warp_epoch[warp] : 0;
  size_t offset = static_cast<size_t>(static_cast<const char*>(p) - slot.data);
  for (size_t i = 0; i < bytes; ++i) {
    ShadowByte& s = slot.shadow[offset + i];
    bool written_now = s.write_epoch == epoch && s.writer != self &&
                       !ordered(b, self, s.writer / 32, s.write_warp_epoch);
    if (access == Access::read) {
      if (written_now) {
        hazard(b, slot, offset + i, "read-after-write", "reads", pc, s.writer, "wrote", s.write_pc);
      }
      if (s.read_epoch == epoch && s.reader != self) {
        if (s.read_warp != warp) s.read_warp = kManyReaders;
        s.reader = kManyReaders;
        if (warp_epoch > s.read_warp_epoch) s.read_warp_epoch = warp_epoch;
      } else {
        s.reader = self;
        s.read_warp = warp;
        s.read_warp_epoch = warp_epoch;
      }
      s.read_epoch = epoch;
      s.read_pc = pc;
    } else {
      if (written_now) {
        hazard(b, slot, offset + i, "write-after-write", "writes", pc, s.writer, "wrote",
               s.write_pc);
      }
      if (s.read_epoch == epoch && s.reader != self &&
          !ordered(b, self, s.read_warp, s.read_warp_epoch)) {
        hazard(b, slot, offset + i, "write-after-read", "writes", pc, s.reader, "read", s.read_pc);
      }
      s.writer = self;
      s.write_epoch = epoch;
      s.write_warp_epoch = warp_epoch;
      s.write_pc = pc;
    }
  }
}

}  // namespace

void race_read(SharedSlot& slot, const void* p, size_t bytes) {
  record(slot, p, bytes, Access::read, __builtin_return_address(0));
}

void race_write(SharedSlot& slot, const void* p, size_t bytes) {
  record(slot, p, bytes, Access::write, __builtin_return_address(0));
}

SharedSlot* shared_slot_holding(const void* p, size_t bytes) {
  Block& b = current_block("shared memory");
  const char* q = static_cast<const char*>(p);
  auto holds = [&](const SharedSlot& s) {
    return s.block_serial == b.serial && s.data != nullptr && q >= s.data &&
           q + bytes <= s.data + s.bytes;
  };
  if (b.run->dynamic_shared > 0 && holds(b.worker->dynamic)) return &b.worker->dynamic;
  for (SharedSlot& s : b.worker->slots) {
    if (holds(s)) return &s;
  }
  return nullptr;
}

void race_raw(const void* p, size_t bytes, bool write) {
  Block& b = current_block("shared memory");
  if (!b.run->options.racecheck) return;
  SharedSlot* slot = shared_slot_holding(p, bytes);
  if (slot != nullptr && !slot->shadow.empty())
    record(*slot, p, bytes, write ? Access::write : Access::read, __builtin_return_address(0));
}

}  // namespace ember::sim::detail
