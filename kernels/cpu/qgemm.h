#pragma once
// Exact int8 GEMM, the integer core of quantized inference (Note [Exact int8 GEMM]):
//
//   C(i, j) = sum_p (A(i, p) - a_zero_point) * B(j, p)      A: (m, k)   B: (n, k)   C: (m, n)
//
//   A: uint8 activations, row-major, row stride lda (elements, lda >= k)
//   B: int8 weights (one row per output), packed once by pack_qweight (weights are constant)
//   C: int32, row-major, row stride ldc (elements, ldc >= n); only written, never read
//
// Every result is exact: bitwise the int64 sum of the products, on every kernel, for every input
// (no saturation anywhere), as long as k <= kQgemmMaxK (checked).
//
// The micro-kernel is picked at run time, like the float32 GEMM's (kernels/cpu/gemm.h): the
// library is built for baseline x86-64 and only the micro-kernels are compiled for wider ISAs.
// Kernels, widest first:
//   "avx512vnni"  zmm vpdpbusd (AVX-512 F/BW/VNNI)
//   "avxvnni"     ymm vpdpbusd (AVX-VNNI, the VEX encoding: Alder Lake, Sapphire Rapids, Zen 5)
//   "avx2"        ymm, operands widened to int16 and multiplied with vpmaddwd
//   "scalar"      plain loops (any CPU; the only kernel under EMBER_CPU_ISA=baseline)
// The packed layout belongs to a kernel: pack_qweight packs for the kernel selected at that
// moment and the PackedQWeight remembers it; qgemm_u8s8 always runs the kernel its B was packed
// for, so set_qgemm_kernel changes only packs made afterwards, and an old pack stays correct.
//
// Threads: qgemm_u8s8 splits C into blocks of rows (or of columns, for few rows and many
// columns) over ember::parallel_for; it never starts threads, and called from inside a pool task
// it runs on that thread. Results do not depend on the number of threads.

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace ember::kernels::cpu {

// Note [Exact int8 GEMM]
// Quantized inference multiplies uint8 activations (an affine code: real = scale * (a - zero
// point)) by int8 weights (symmetric: real = scale * b) and needs the integer sum exactly: the
// float epilogue rescales it, and any error there is an error in every output.
//
// The instruction. A dot product of bytes wants 4 byte-products summed into each int32 lane.
// - vpmaddubsw (SSSE3/AVX2) multiplies u8 x s8 pairs and adds adjacent pairs into int16 with
//   saturation: 255 * -128 + 255 * -128 = -65280 does not fit int16 and is clamped to -32768.
//   Real activations and weights hit this (all-255 inputs, large weights), so it is not used on
//   raw operands.
// - vpdpbusd (AVX-512 VNNI, and its VEX twin AVX-VNNI) multiplies 4 u8 x s8 pairs per int32 lane
//   and adds all four products to the int32 accumulator in one instruction, with no intermediate
//   rounding or saturation (the "s" variant vpdpbusds saturates the accumulator; we use the
//   wrapping one). Each product is in [-32640, 32385], so it is exact.
// - On plain AVX2 both operands are widened to int16 (u8 -> 0..255, s8 -> -128..127) and
//   vpmaddwd multiplies int16 pairs and adds each adjacent pair into int32: exact, at half the
//   bytes per instruction of vpdpbusd.
// Accumulation is int32. |(a - z) * b| <= 255 * 128 = 32640 per term, so k terms stay inside
// int32 for k <= (2^31 - 1) / 32640 = 65793 (kQgemmMaxK); larger k is refused.
//
// The zero point. vpdpbusd needs the activation as raw uint8, so the kernel computes
// sum_p A(i, p) * B(j, p) and subtracts the zero-point term afterwards:
//   sum_p (A(i, p) - z) * B(j, p) = sum_p A(i, p) * B(j, p) - z * rowsum(B, j)
// where rowsum(B, j) = sum_p B(j, p) is computed once, at packing time. Both sides are bounded
// by 32640 * k, so the int32 subtraction is exact too.
//
// The layout. The micro-kernel keeps an MR x (NV * W) tile of C in vector registers (W int32
// lanes per vector: 16 for zmm, 8 for ymm). For each group of 4 consecutive k it broadcasts the
// 4 bytes A(i, 4g .. 4g+3) of each of its MR rows to every lane, loads NV vectors of B, and
// issues MR * NV vpdpbusd. So B is packed in panels of W columns, and within a panel, group by
// group, the 4 bytes of each of the W columns side by side:
//   panel P, group g: [B(PW, 4g..4g+3), B(PW+1, 4g..4g+3), ..., B(PW+W-1, 4g..4g+3)]
// (one vector load per group), zero-padded past n and past k, so that the padded k of A meets
// zeros in B. The AVX2 layout is the same with pairs of k widened to int16 (4 bytes a pair);
// A's rows are widened to int16 the same way into a small buffer per row strip. A is never
// otherwise packed: broadcasts read it in place (its k tail with a short copy, never past the
// row). The scalar kernel keeps B as given, (n, k) row-major.
//
// Blocking. Row strips of A (MR x kc bytes) stay in L1 while the kernel walks the panels of a
// block of B (kc x nc bytes) that stays in L2: k is split into equal blocks of at most 1024, n
// into blocks of at most 512 KiB / kc columns (kKcMax and kL2Bytes in qgemm.cpp); later k
// blocks add into C. Threads take whole row strips (or whole groups of panels) of C.

// The largest k whose int32 accumulation is exact for every input.
constexpr int64_t kQgemmMaxK = 65793;

// Throws ember::Error ("qgemm: k = ... ") unless 0 <= k <= kQgemmMaxK. pack_qweight and
// qgemm_u8s8 call it before touching any memory.
void check_qgemm_k(int64_t k);

// Bytes aligned to 64 (a cache line, a zmm register), also when copied.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t count) {
    return static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const {
    return false;
  }
};

// The layout a PackedQWeight holds: the kernel that reads it (Note [Exact int8 GEMM]).
enum class QWeightLayout : uint8_t {
  kRowMajor,  // "scalar": B(j, p) at data[j * k + p]
  kVnni16,    // "avx512vnni": panels of 16 columns, groups of 4 k as bytes
  kVnni8,     // "avxvnni": panels of 8 columns, groups of 4 k as bytes
  kPairs8,    // "avx2": panels of 8 columns, pairs of k as int16
};

// An int8 weight matrix B (n, k) packed for one kernel, with its row sums. Owns its bytes;
// immutable once made, so one pack can serve many threads. Copyable and movable.
class PackedQWeight {
 public:
  PackedQWeight() = default;  // n = k = 0

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  // rowsum(B, j) = sum_p B(j, p) for j < n (the zero-point term of Note [Exact int8 GEMM]).
  const int32_t* row_sums() const { return row_sums_.data(); }
  // The packed bytes (padding included); what the pack costs in memory is bytes() plus the row
  // sums.
  size_t bytes() const { return data_.size(); }
  const int8_t* data() const { return data_.data(); }
  QWeightLayout layout() const { return layout_; }
  // The name of the kernel that reads this layout ("avx512vnni", "avxvnni", "avx2", "scalar").
  const char* kernel_name() const;

 private:
  friend PackedQWeight pack_qweight(const int8_t* w, int64_t n, int64_t k);
  int64_t n_ = 0, k_ = 0;
  QWeightLayout layout_ = QWeightLayout::kRowMajor;
  std::vector<int8_t, AlignedAllocator<int8_t>> data_;
  // Padded with zeros to whole panels, so that the kernels load them a vector at a time.
  std::vector<int32_t, AlignedAllocator<int32_t>> row_sums_;
};

// Packs w (n, k), row-major and contiguous, for the kernel qgemm_kernel_name() names. n >= 0,
// 0 <= k <= kQgemmMaxK (ember::Error otherwise); w may be null when n * k == 0.
PackedQWeight pack_qweight(const int8_t* w, int64_t n, int64_t k);

// C(m, n) = (A(m, k) - a_zero_point) . B(n, k)^T exactly, with n and k those of b, on the kernel
// b was packed for. 0 <= a_zero_point <= 255, lda >= k, ldc >= n (ember::Error otherwise).
// m == 0 or n == 0: nothing is written (a and c may be null); k == 0: C = 0.
void qgemm_u8s8(int64_t m, const uint8_t* a, int64_t lda, int32_t a_zero_point,
                const PackedQWeight& b, int32_t* c, int64_t ldc);

// The kernel new packs are made for: "avx512vnni", "avxvnni", "avx2" or "scalar".
const char* qgemm_kernel_name();
// Selects the kernel for packs made from now on, by name (for tests and benchmarks); "default"
// returns to the automatic choice (the widest the CPU runs, "scalar" under
// EMBER_CPU_ISA=baseline). Returns false, changing nothing, for an unknown name or a kernel this
// CPU cannot run. Not while other threads pack.
bool set_qgemm_kernel(const char* name);

}  // namespace ember::kernels::cpu
