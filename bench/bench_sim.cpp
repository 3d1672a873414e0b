// bench_sim: what the CUDA simulator's machinery costs on this machine (kernels/cuda/sim).
//   - a fiber context switch: the simulator's asm switch next to ucontext's swapcontext
//   - one __syncthreads of a 256-thread block (every thread switches out and back in)
//   - an element-wise kernel in loop mode and in fiber mode
// These are simulator timings on the CPU; they never stand for GPU speed.
//   ./bench_sim [elements]     (default 4194304)
#include <ucontext.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/sim/fiber.h"
#include "kernels/cuda/sim/sim.h"

namespace sim = ember::sim;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- context switches: main and one fiber ping-pong ----

constexpr long kSwitchRounds = 2000000;
sim::detail::FiberContext main_context, fiber_context;

void ping(void*) {
  for (;;) sim::detail::fiber_switch(fiber_context, main_context);
}

double asm_switch_ns() {
  sim::detail::Stack stack = sim::detail::allocate_stack(64 << 10);
  sim::detail::fiber_init(fiber_context, stack, &ping, nullptr);
  sim::detail::fiber_switch(main_context, fiber_context);  // warm up
  auto start = Clock::now();
  for (long i = 0; i < kSwitchRounds; ++i) sim::detail::fiber_switch(main_context, fiber_context);
  double s = seconds_since(start);
  sim::detail::free_stack(stack);
  return s * 1e9 / (2.0 * kSwitchRounds);
}

ucontext_t main_uc, fiber_uc;

void uc_ping() {
  for (;;) swapcontext(&fiber_uc, &main_uc);
}

double ucontext_switch_ns() {
  std::vector<char> stack(64 << 10);
  getcontext(&fiber_uc);
  fiber_uc.uc_stack.ss_sp = stack.data();
  fiber_uc.uc_stack.ss_size = stack.size();
  fiber_uc.uc_link = nullptr;
  makecontext(&fiber_uc, &uc_ping, 0);
  swapcontext(&main_uc, &fiber_uc);
  long rounds = kSwitchRounds / 10;
  auto start = Clock::now();
  for (long i = 0; i < rounds; ++i) swapcontext(&main_uc, &fiber_uc);
  return seconds_since(start) * 1e9 / (2.0 * rounds);
}

// ---- kernels ----

__global__ void barriers(int rounds, int* out) {
  int x = 0;
  for (int i = 0; i < rounds; ++i) {
    __syncthreads();
    x += i;
  }
  if (threadIdx.x == 0) out[0] = x;
}

__global__ void axpy_loop(const float* x, float* y, float a, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void axpy_fibers(const float* x, float* y, float a, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}

double barrier_ns() {
  const int rounds = 2000;
  int out = 0;
  sim::launch({"barriers", dim3(1), dim3(256)}, barriers, 10, &out);  // learns fiber mode
  sim::stream_synchronize(sim::default_stream(0));
  auto start = Clock::now();
  sim::launch({"barriers", dim3(1), dim3(256)}, barriers, rounds, &out);
  sim::stream_synchronize(sim::default_stream(0));
  return seconds_since(start) * 1e9 / rounds;
}

template <class Kernel>
double kernel_seconds(const char* name, Kernel kernel, const float* x, float* y, int n) {
  dim3 grid((n + 255) / 256), block(256);
  sim::launch({name, grid, block}, kernel, x, y, 2.0f, n);  // warm up (and learn the mode)
  sim::stream_synchronize(sim::default_stream(0));
  auto start = Clock::now();
  const int reps = 3;
  for (int r = 0; r < reps; ++r) sim::launch({name, grid, block}, kernel, x, y, 2.0f, n);
  sim::stream_synchronize(sim::default_stream(0));
  return seconds_since(start) / reps;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : (1 << 22);
  sim::Options o = sim::options();
  o.workers = 1;  // single-thread costs, comparable across machines
  o.racecheck = false;
  sim::set_options(o);

  double asm_ns = asm_switch_ns();
  double uc_ns = ucontext_switch_ns();
  double bar_ns = barrier_ns();

  std::vector<float> x(static_cast<size_t>(n), 1.0f), y(static_cast<size_t>(n), 0.0f);
  sim::use_fibers(reinterpret_cast<const void*>(&axpy_fibers));
  double loop_s = kernel_seconds("axpy_loop", axpy_loop, x.data(), y.data(), n);
  double fiber_s = kernel_seconds("axpy_fibers", axpy_fibers, x.data(), y.data(), n);

  std::printf("bench_sim (1 worker; simulator timings, not GPU speed)\n");
  std::printf("%-44s %12s\n", "case", "result");
  std::printf("%-44s %9.1f ns\n", "context switch, asm (ember::sim fiber)", asm_ns);
  std::printf("%-44s %9.1f ns\n", "context switch, ucontext swapcontext", uc_ns);
  std::printf("%-44s %9.1fx\n", "  ucontext / asm", uc_ns / asm_ns);
  std::printf("%-44s %9.1f ns\n", "__syncthreads, 256-thread block", bar_ns);
  std::printf("%-44s %9.2f ns/elem\n", "axpy, loop mode", loop_s * 1e9 / n);
  std::printf("%-44s %9.2f ns/elem\n", "axpy, fiber mode", fiber_s * 1e9 / n);
  std::printf("%-44s %9.1fx\n", "  fiber / loop", fiber_s / loop_s);
  return 0;
}
