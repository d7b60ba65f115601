// How fast the reference interpreter runs the fused INT4 linear kernels: the oracle
// must stay practical for real layer shapes. Besides wall time,
// each case reports the dynamic operation counts per output (RunStatistics / out_dim).
#include <benchmark/benchmark.h>

#include "ir/ops/Linear4Bit.h"
#include "runtime/backends/reference/Interpreter.h"

namespace {

using namespace quantc;

void report_per_output(benchmark::State& state, const runtime::reference::RunStatistics& statistics,
                       std::uint32_t out_dim) {
  const double outputs = out_dim;
  state.counters["loads_per_output"] = double(statistics.global_loads) / outputs;
  state.counters["shuffles_per_output"] = double(statistics.subgroup_shuffles) / outputs;
  state.counters["reductions_per_output"] = double(statistics.subgroup_reductions) / outputs;
  state.counters["arithmetic_per_output"] = double(statistics.arithmetic_ops) / outputs;
}

/// linear_4bit_affine_grouped(in_dim, out_dim, group_size) on random inputs; args are
/// (in_dim, out_dim, group_size, host threads; 0 = one per hardware thread).
void BM_AffineGrouped(benchmark::State& state) {
  const auto in_dim = static_cast<std::uint32_t>(state.range(0));
  const auto out_dim = static_cast<std::uint32_t>(state.range(1));
  const auto group_size = static_cast<std::uint32_t>(state.range(2));
  const auto threads = static_cast<unsigned>(state.range(3));
  ir::Program program = ir::ops::linear_4bit_affine_grouped(in_dim, out_dim, group_size);
  runtime::BufferSet buffers = runtime::random_buffers(program, 42);
  runtime::reference::RunStatistics statistics;
  runtime::reference::RunOptions options;
  options.statistics = &statistics;
  options.threads = threads;
  for (auto _ : state) {
    runtime::reference::run(program, buffers, options);
    benchmark::DoNotOptimize(buffers.at("out").bytes.data());
  }
  report_per_output(state, statistics, out_dim);
  state.counters["macs_per_second"] =
      benchmark::Counter(double(in_dim) * out_dim, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AffineGrouped)
    ->ArgNames({"k", "n", "group_size", "threads"})
    ->Args({4096, 4096, 128, 1})
    ->Args({4096, 4096, 128, 0})
    ->Args({256, 4096, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// linear_4bit(in_dim, out_dim): one invocation per output, sequential k loop.
void BM_Linear4Bit(benchmark::State& state) {
  const auto in_dim = static_cast<std::uint32_t>(state.range(0));
  const auto out_dim = static_cast<std::uint32_t>(state.range(1));
  ir::Program program = ir::ops::linear_4bit(in_dim, out_dim);
  runtime::BufferSet buffers = runtime::random_buffers(program, 42);
  runtime::reference::RunStatistics statistics;
  runtime::reference::RunOptions options;
  options.statistics = &statistics;
  for (auto _ : state) {
    runtime::reference::run(program, buffers, options);
    benchmark::DoNotOptimize(buffers.at("out").bytes.data());
  }
  report_per_output(state, statistics, out_dim);
}
BENCHMARK(BM_Linear4Bit)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
