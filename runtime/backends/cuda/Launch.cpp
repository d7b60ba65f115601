#include "runtime/backends/cuda/Launch.h"

#include <algorithm>

#include <fmt/format.h>

#include "lower/driver/Hash.h"

namespace quantc::runtime::cuda {

namespace {
constexpr unsigned kMaxThreadsPerCta = 1024;  // every supported target (CUDA Programming Guide, Table "Technical Specifications")

LaunchPlan plan_shape(const ir::Program& program) {
  LaunchPlan plan;
  std::uint64_t threads = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (program.workgroup_size[axis] == 0 || program.workgroup_count[axis] == 0) {
      throw RuntimeError(fmt::format("program '{}': workgroup size ({}, {}, {}) and count ({}, {}, {}) must be > 0 "
                                     "in every dimension",
                                     program.name, program.workgroup_size[0], program.workgroup_size[1],
                                     program.workgroup_size[2], program.workgroup_count[0],
                                     program.workgroup_count[1], program.workgroup_count[2]));
    }
    plan.block[axis] = program.workgroup_size[axis];
    plan.grid[axis] = program.workgroup_count[axis];
    threads *= program.workgroup_size[axis];
  }
  if (threads > kMaxThreadsPerCta) {
    throw RuntimeError(fmt::format("program '{}': a workgroup of {} invocations exceeds the {} threads a CTA may have",
                                   program.name, threads, kMaxThreadsPerCta));
  }
  for (const ir::BufferDecl& decl : program.buffers) plan.parameters.push_back(&decl);
  std::sort(plan.parameters.begin(), plan.parameters.end(),
            [](const ir::BufferDecl* a, const ir::BufferDecl* b) { return a->binding < b->binding; });
  return plan;
}

void check_device_buffers(const ir::Program& program, const DeviceBufferSet& buffers) {
  for (const ir::BufferDecl& decl : program.buffers) {
    auto found = buffers.find(decl.name);
    if (found == buffers.end()) {
      throw RuntimeError(fmt::format("device buffer '{}' ({} x {}) was not provided", decl.name, decl.count,
                                     ir::to_string(decl.element)));
    }
    if (found->second.element != decl.element) {
      throw RuntimeError(fmt::format("device buffer '{}': expected element type {}, given {}", decl.name,
                                     ir::to_string(decl.element), ir::to_string(found->second.element)));
    }
    if (found->second.memory.size() != decl.byte_size()) {
      throw RuntimeError(fmt::format("device buffer '{}': expected {} elements ({} bytes), given {} bytes", decl.name,
                                     decl.count, decl.byte_size(), found->second.memory.size()));
    }
  }
}
}  // namespace

KernelImage::KernelImage(Module::Format format, std::string bytes)
    : format_(format), bytes_(std::move(bytes)), digest_(lower::sha256_hex(bytes_)) {}

LaunchPlan plan_launch(const ir::Program& program, const BufferSet& buffers) {
  check_buffers(program, buffers);
  return plan_shape(program);
}

CudaBackend::CudaBackend(int device_ordinal) : CudaBackend(driver(), device_ordinal) {}

CudaBackend::CudaBackend(std::shared_ptr<const Driver> driver, int device_ordinal)
    : context_(std::move(driver), device_ordinal), stream_(context_) {}

const Module& CudaBackend::module(const KernelImage& image) {
  auto found = modules_.find(image.digest());
  if (found != modules_.end()) return *found->second;
  auto loaded = std::make_unique<Module>(context_, image.format(), image.bytes());
  return *modules_.emplace(image.digest(), std::move(loaded)).first->second;
}

const CudaBackend::LoadedFunction& CudaBackend::entry(const KernelImage& image, const std::string& name) {
  const std::string key = image.digest() + '/' + name;
  auto found = functions_.find(key);
  if (found != functions_.end()) return found->second;
  Function function = module(image).function(name);
  const int max_threads = function.max_threads_per_block();
  return functions_.emplace(key, LoadedFunction{function, max_threads}).first->second;
}

DeviceBufferSet CudaBackend::upload(const ir::Program& program, const BufferSet& buffers) {
  check_buffers(program, buffers);
  context_.make_current();
  const CUstream stream = stream_.get();
  DeviceBufferSet device_buffers;
  for (const ir::BufferDecl& decl : program.buffers) {
    const HostBuffer& host = buffers.at(decl.name);
    DeviceMemory memory(context_, host.bytes.size());
    if (!host.bytes.empty()) {
      context_.driver().check(
          context_.driver().api().cuMemcpyHtoDAsync(memory.get(), host.bytes.data(), host.bytes.size(), stream),
          "cuMemcpyHtoDAsync", fmt::format("uploading buffer '{}'", decl.name));
    }
    device_buffers.emplace(decl.name, DeviceBuffer{decl.element, std::move(memory)});
  }
  // Host buffers may be freed once this returns: wait for the copies.
  stream_.synchronize();
  return device_buffers;
}

void CudaBackend::launch(const ir::Program& program, const KernelImage& image, const DeviceBufferSet& device_buffers) {
  check_device_buffers(program, device_buffers);
  const LaunchPlan plan = plan_shape(program);
  const LoadedFunction& loaded = entry(image, program.name);
  const unsigned threads = plan.block[0] * plan.block[1] * plan.block[2];
  if (static_cast<int>(threads) > loaded.max_threads_per_block) {
    throw RuntimeError(fmt::format("program '{}': {} threads per CTA exceed the {} the compiled kernel allows "
                                   "(registers or .maxntid)",
                                   program.name, threads, loaded.max_threads_per_block));
  }
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(plan.parameters.size());
  for (const ir::BufferDecl* decl : plan.parameters) pointers.push_back(device_buffers.at(decl->name).memory.get());
  std::vector<void*> arguments;
  arguments.reserve(pointers.size());
  for (CUdeviceptr& pointer : pointers) arguments.push_back(&pointer);

  context_.make_current();
  context_.driver().check(
      context_.driver().api().cuLaunchKernel(loaded.function.get(), plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                                             plan.block[1], plan.block[2], /*sharedMemBytes=*/0, stream_.get(),
                                             arguments.data(), /*extra=*/nullptr),
      "cuLaunchKernel",
      fmt::format("kernel '{}', grid ({}, {}, {}), block ({}, {}, {})", program.name, plan.grid[0], plan.grid[1],
                  plan.grid[2], plan.block[0], plan.block[1], plan.block[2]));
}

void CudaBackend::download(const ir::Program& program, const DeviceBufferSet& device_buffers, BufferSet& buffers) {
  context_.make_current();
  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    const ir::ByteRange range = decl.readable_range();
    if (range.end <= range.begin) continue;
    HostBuffer& host = buffers.at(decl.name);
    const DeviceBuffer& device = device_buffers.at(decl.name);
    if (range.end > host.bytes.size() || range.end > device.memory.size()) {
      throw RuntimeError(fmt::format("buffer '{}': readable byte range [{}, {}) exceeds its {} bytes", decl.name,
                                     range.begin, range.end, host.bytes.size()));
    }
    context_.driver().check(
        context_.driver().api().cuMemcpyDtoHAsync(host.bytes.data() + range.begin, device.memory.get() + range.begin,
                                                  range.end - range.begin, stream_.get()),
        "cuMemcpyDtoHAsync", fmt::format("downloading buffer '{}'", decl.name));
  }
  stream_.synchronize();
}

void CudaBackend::run(const ir::Program& program, const KernelImage& image, BufferSet& buffers) {
  plan_launch(program, buffers);  // all checks before any device work
  DeviceBufferSet device_buffers = upload(program, buffers);
  launch(program, image, device_buffers);
  download(program, device_buffers, buffers);
}

}  // namespace quantc::runtime::cuda
