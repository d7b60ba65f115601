// Launch-API host overhead and kernel-cache timings.
//
//   BM_PlanLaunch        buffer checks + parameter order (every launch pays this)   everywhere
//   BM_KernelImageDigest SHA-256 of a PTX image (paid once per KernelImage)          everywhere
//   BM_EmitCold          spec -> program -> PTX, cache cleared each time (build+store) everywhere
//   BM_EmitWarm          the same through a warm on-disk cache (load + hash check)     everywhere
//   BM_LaunchApi         CudaBackend::launch, per launch (host side, asynchronous)     GPU only
//   BM_RawLaunch         cuLaunchKernel with pre-packed arguments, per launch          GPU only
//
// Where lower_to_ptx is not available yet, the emit benchmarks cache a hand-written PTX
// and say so in their label.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Registry.h"
#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"
#include "lower/driver/KernelCache.h"
#include "runtime/backends/cuda/Driver.h"
#include "runtime/backends/cuda/Launch.h"

using namespace quantc;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kCount = 1 << 20;

ir::Program scale_program() {
  using namespace ir;
  ProgramBuilder builder("scale_by_two");
  BufferRef x = builder.input("x", ScalarType::F32, kCount);
  BufferRef y = builder.output("y", ScalarType::F32, kCount);
  builder.launch({256, 1, 1}, {kCount / 256, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.store(y, i, x[i] * 2.0);
  });
  return builder.build();
}

std::string scale_ptx(const ptx::Target& target) {
  return ".version " + target.min_ptx_version().to_string() + "\n.target " + target.name() +
         "\n.address_size 64\n"
         ".visible .entry scale_by_two(.param .u64 x, .param .u64 y)\n{\n"
         "  .reg .b32 %r<5>;\n  .reg .b64 %rd<6>;\n  .reg .f32 %f<3>;\n"
         "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
         "  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "  ld.param.u64 %rd1, [x];\n  ld.param.u64 %rd2, [y];\n"
         "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
         "  mul.wide.u32 %rd3, %r4, 4;\n  add.s64 %rd4, %rd1, %rd3;\n  ld.global.f32 %f1, [%rd4];\n"
         "  add.f32 %f2, %f1, %f1;\n  add.s64 %rd5, %rd2, %rd3;\n  st.global.f32 [%rd5], %f2;\n  ret;\n}\n";
}

/// The first registered op's first test shape as a spec, and a way to emit it.
struct EmitCase {
  ir::ops::OpSpec spec;
  std::string label;
  std::string emit() const {
    try {
      return lower::compile(ir::ops::build_program(spec), {ptx::default_target()}).ptx;
    } catch (const std::exception&) {
      return scale_ptx(ptx::default_target());  // emitter not available on this branch yet
    }
  }
};

EmitCase emit_case() {
  const ir::ops::OpInfo& op = ir::ops::OpRegistry::builtin().all().front();
  EmitCase result{ir::ops::OpSpec{&op, op.test_shapes.front(), std::nullopt, std::nullopt, std::nullopt}, op.name};
  try {
    lower::compile(ir::ops::build_program(result.spec), {ptx::default_target()});
  } catch (const std::exception&) {
    result.label = op.name + " (lower_to_ptx unavailable: caching a hand-written PTX)";
  }
  return result;
}

fs::path bench_cache_directory() { return fs::temp_directory_path() / ("quantc-bench-cache-" + std::to_string(::getpid())); }

void BM_PlanLaunch(benchmark::State& state) {
  const ir::Program program = scale_program();
  const runtime::BufferSet buffers = runtime::allocate_buffers(program);
  for (auto _ : state) benchmark::DoNotOptimize(runtime::cuda::plan_launch(program, buffers));
}
BENCHMARK(BM_PlanLaunch)->Unit(benchmark::kMicrosecond);

void BM_KernelImageDigest(benchmark::State& state) {
  const std::string ptx = scale_ptx(ptx::default_target());
  for (auto _ : state) benchmark::DoNotOptimize(runtime::cuda::KernelImage::ptx(ptx));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * ptx.size()));
}
BENCHMARK(BM_KernelImageDigest)->Unit(benchmark::kMicrosecond);

void BM_EmitCold(benchmark::State& state) {
  const EmitCase emit = emit_case();
  lower::KernelCache cache(bench_cache_directory(), [](auto, const std::string&) {});
  const auto key = lower::CacheKey::for_spec(emit.spec, ptx::default_target().name(), "O2");
  for (auto _ : state) {
    state.PauseTiming();
    cache.clear();
    state.ResumeTiming();
    benchmark::DoNotOptimize(cache.get_or_build(key, lower::ArtifactKind::Ptx, [&] { return emit.emit(); }));
  }
  state.SetLabel(emit.label);
  fs::remove_all(bench_cache_directory());
}
BENCHMARK(BM_EmitCold)->Unit(benchmark::kMicrosecond);

void BM_EmitWarm(benchmark::State& state) {
  const EmitCase emit = emit_case();
  lower::KernelCache cache(bench_cache_directory(), [](auto, const std::string&) {});
  const auto key = lower::CacheKey::for_spec(emit.spec, ptx::default_target().name(), "O2");
  cache.get_or_build(key, lower::ArtifactKind::Ptx, [&] { return emit.emit(); });
  bool hit = false;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        cache.get_or_build(key, lower::ArtifactKind::Ptx, [&] { return emit.emit(); }, &hit));
  }
  if (!hit) state.SkipWithError("the warm lookup missed");
  state.SetLabel(emit.label);
  fs::remove_all(bench_cache_directory());
}
BENCHMARK(BM_EmitWarm)->Unit(benchmark::kMicrosecond);

bool skip_without_gpu(benchmark::State& state) {
  if (runtime::cuda::gpu_available()) return false;
  state.SkipWithError(("no GPU: " + runtime::cuda::gpu_unavailable_reason()).c_str());
  return true;
}

void BM_LaunchApi(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  runtime::cuda::CudaBackend gpu;
  const ir::Program program = scale_program();
  const auto image = runtime::cuda::KernelImage::ptx(scale_ptx(gpu.target()));
  const runtime::cuda::DeviceBufferSet device = gpu.upload(program, runtime::allocate_buffers(program));
  gpu.launch(program, image, device);  // loads the module once, outside the timing
  gpu.stream().synchronize();
  std::int64_t launches = 0;
  for (auto _ : state) {
    gpu.launch(program, image, device);
    if (++launches % 256 == 0) {  // keep the queue short; the wait is excluded
      state.PauseTiming();
      gpu.stream().synchronize();
      state.ResumeTiming();
    }
  }
  gpu.stream().synchronize();
}
BENCHMARK(BM_LaunchApi)->Unit(benchmark::kMicrosecond);

void BM_RawLaunch(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  runtime::cuda::CudaBackend gpu;
  const ir::Program program = scale_program();
  const runtime::cuda::Module& module = gpu.module(runtime::cuda::KernelImage::ptx(scale_ptx(gpu.target())));
  const runtime::cuda::Function function = module.function("scale_by_two");
  const runtime::cuda::DeviceBufferSet device = gpu.upload(program, runtime::allocate_buffers(program));
  CUdeviceptr x = device.at("x").memory.get();
  CUdeviceptr y = device.at("y").memory.get();
  void* arguments[] = {&x, &y};
  const auto& api = gpu.context().driver().api();
  std::int64_t launches = 0;
  for (auto _ : state) {
    api.cuLaunchKernel(function.get(), kCount / 256, 1, 1, 256, 1, 1, 0, gpu.stream().get(), arguments, nullptr);
    if (++launches % 256 == 0) {
      state.PauseTiming();
      gpu.stream().synchronize();
      state.ResumeTiming();
    }
  }
  gpu.stream().synchronize();
}
BENCHMARK(BM_RawLaunch)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
