// How fast the PTX emulator executes quantc's kernels: it runs every op's shapes on
// every CI run, so its throughput bounds the test suite. Reports
// warp instructions per second and thread (lane) instructions per second, plus the
// counters per output element. Parsing is measured separately from execution.
#include <benchmark/benchmark.h>

#include "ir/ops/Linear4Bit.h"
#include "lower/LowerToPtx.h"
#include "ptx/Target.h"
#include "runtime/backends/emulator/Emulator.h"

namespace {

using namespace quantc;

void report(benchmark::State& state, const runtime::emulator::LaunchCounters& counters, std::uint32_t outputs) {
  state.counters["warp_instructions_per_second"] =
      benchmark::Counter(double(counters.warp_instructions), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["thread_instructions_per_second"] =
      benchmark::Counter(double(counters.thread_instructions), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["warp_instructions_per_output"] = double(counters.warp_instructions) / outputs;
  state.counters["sectors_per_load_request"] = counters.sectors_per_load_request();
}

/// linear_4bit_affine_grouped(in_dim, out_dim, group_size) lowered for sm_80 and
/// executed in the emulator; args are (in_dim, out_dim, group_size).
void BM_EmulateAffineGrouped(benchmark::State& state) {
  const auto in_dim = static_cast<std::uint32_t>(state.range(0));
  const auto out_dim = static_cast<std::uint32_t>(state.range(1));
  const auto group_size = static_cast<std::uint32_t>(state.range(2));
  ir::Program program = ir::ops::linear_4bit_affine_grouped(in_dim, out_dim, group_size);
  std::string ptx = lower::lower_to_ptx(program, ptx::Target{80});
  runtime::BufferSet buffers = runtime::random_buffers(program, 42);
  runtime::emulator::LaunchCounters counters;
  for (auto _ : state) {
    counters = runtime::emulator::run(ptx, program, buffers);
    benchmark::DoNotOptimize(buffers.at("out").bytes.data());
  }
  report(state, counters, out_dim);
}
BENCHMARK(BM_EmulateAffineGrouped)->Args({4096, 256, 128})->Args({256, 4096, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

/// linear_4bit(in_dim, out_dim): one thread per output, a sequential k loop.
void BM_EmulateLinear4Bit(benchmark::State& state) {
  const auto in_dim = static_cast<std::uint32_t>(state.range(0));
  const auto out_dim = static_cast<std::uint32_t>(state.range(1));
  ir::Program program = ir::ops::linear_4bit(in_dim, out_dim);
  std::string ptx = lower::lower_to_ptx(program, ptx::Target{80});
  runtime::BufferSet buffers = runtime::random_buffers(program, 42);
  runtime::emulator::LaunchCounters counters;
  for (auto _ : state) {
    counters = runtime::emulator::run(ptx, program, buffers);
    benchmark::DoNotOptimize(buffers.at("out").bytes.data());
  }
  report(state, counters, out_dim);
}
BENCHMARK(BM_EmulateLinear4Bit)->Args({1024, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();

/// Decoding alone: PTX text -> Module, for the affine grouped kernel.
void BM_ParsePtx(benchmark::State& state) {
  ir::Program program = ir::ops::linear_4bit_affine_grouped(4096, 256, 128);
  std::string ptx = lower::lower_to_ptx(program, ptx::Target{80});
  for (auto _ : state) benchmark::DoNotOptimize(runtime::emulator::parse_ptx(ptx));
  state.counters["bytes_per_second"] = benchmark::Counter(double(ptx.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ParsePtx)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
