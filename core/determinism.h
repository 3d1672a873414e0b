#pragma once
// The global deterministic-algorithms switch (PyTorch's torch.use_deterministic_algorithms).
//
// Note [Deterministic algorithms]
// Some CUDA kernels have two variants: a fast one whose float results depend on the order in
// which threads happen to run (atomicAdd into the same element: float addition is not
// associative, so two runs may differ in the last bits), and a deterministic one that gives the
// same bits on every run and the CPU's result. Today that choice exists for the accumulating
// scatters on CUDA -- scatter_add, scatter_reduce "sum"/"mean", index_add (and so embedding's
// backward) and index_put_ with accumulate=true -- in kernels/cuda/index.cu:
//   off (the default, as in PyTorch): float16/bfloat16/float32/float64 accumulate with atomicAdd;
//   on: each output element is written by one thread that walks its indices in order, like the
//       CPU's ScatterLoop (index_put_ with accumulate=true, whose positions may collide anywhere
//       in self, then runs in one thread: correct and deterministic, but slow for large inputs).
// Integer accumulation is exact, so it is deterministic either way; plain scatter (assignment,
// the last index wins) and every other kernel in ember are always deterministic. The CPU kernels
// are deterministic whatever the switch says. The switch is process-wide (not thread-local, as
// in PyTorch) and read when an op launches its kernel.

namespace ember {

// Turns deterministic algorithms on or off for every thread.
void use_deterministic_algorithms(bool enabled);
// Whether deterministic algorithms are on (false by default).
bool are_deterministic_algorithms_enabled();

// Sets the switch for a scope and restores the previous value on exit (tests, benchmarks).
class DeterministicGuard {
 public:
  explicit DeterministicGuard(bool enabled) : previous_(are_deterministic_algorithms_enabled()) {
    use_deterministic_algorithms(enabled);
  }
  ~DeterministicGuard() { use_deterministic_algorithms(previous_); }
  DeterministicGuard(const DeterministicGuard&) = delete;
  DeterministicGuard& operator=(const DeterministicGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace ember
