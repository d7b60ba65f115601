#include "runtime/backends/cuda/Launch.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/IRVisitor.h"
#include "lower/driver/Hash.h"

namespace quantc::runtime::cuda {

namespace {

/// Opts `function` in to `dynamic_bytes` of dynamic shared memory where, with its
/// `static_bytes`, they pass the 48 KiB a kernel gets without asking (CUDA Programming
/// Guide, cudaFuncAttributeMaxDynamicSharedMemorySize).
void allow_dynamic_shared(const Driver& driver, CUfunction function, std::uint64_t static_bytes, unsigned dynamic_bytes,
                          const std::string& kernel) {
  if (static_bytes + dynamic_bytes <= ir::kMaxStaticSharedBytes) return;
  driver.check(driver.api().cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               static_cast<int>(dynamic_bytes)),
               "cuFuncSetAttribute", fmt::format("kernel {}: {} bytes of dynamic shared memory", kernel, dynamic_bytes));
}
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
  plan.dynamic_shared_bytes = program.reserved_shared_bytes;
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
/// The widest access to each buffer: element size, vector widths, explicit alignments.
class AlignmentCollector : public ir::IRVisitor {
 public:
  explicit AlignmentCollector(std::map<std::string, unsigned>& alignments) : alignments_(alignments) {}

 protected:
  void visit_Load(const ir::Load& node) override {
    require(node.buffer, std::max(node.alignment, node.type.bytes()));
    IRVisitor::visit_Load(node);
  }
  void visit_Store(const ir::Store& node) override {
    require(node.buffer, std::max(node.alignment, node.value.type().bytes()));
    IRVisitor::visit_Store(node);
  }

 private:
  void require(const std::string& buffer, unsigned bytes) {
    auto found = alignments_.find(buffer);
    if (found != alignments_.end()) found->second = std::max(found->second, bytes);
  }
  std::map<std::string, unsigned>& alignments_;
};

std::string buffer_list(const LaunchPlan& plan) {
  std::string names;
  for (const ir::BufferDecl* decl : plan.parameters) names += (names.empty() ? "" : ", ") + decl->name;
  return names.empty() ? std::string("none") : names;
}

/// The checks every caller-provided pointer gets, in binding order.
std::vector<CUdeviceptr> check_pointers(const ir::Program& program, const LaunchPlan& plan,
                                        const std::vector<DevicePointer>& ordered) {
  const std::map<std::string, unsigned> alignments = required_alignments(program);
  std::vector<CUdeviceptr> pointers;
  for (std::size_t i = 0; i < plan.parameters.size(); ++i) {
    const ir::BufferDecl& decl = *plan.parameters[i];
    const DevicePointer& given = ordered[i];
    if (given.pointer == 0) {
      throw RuntimeError(fmt::format("buffer '{}' (binding {}, {} x {}): the device pointer is null; pass the "
                                     "device address of a {}-byte allocation",
                                     decl.name, decl.binding, decl.count, ir::to_string(decl.element),
                                     decl.byte_size()));
    }
    if (given.bytes != decl.byte_size()) {
      throw RuntimeError(fmt::format("buffer '{}' (binding {}): the program declares {} x {} ({} bytes), the device "
                                     "pointer was given with {} bytes; pass a tensor of exactly {} bytes",
                                     decl.name, decl.binding, decl.count, ir::to_string(decl.element),
                                     decl.byte_size(), given.bytes, decl.byte_size()));
    }
    const unsigned alignment = alignments.at(decl.name);
    if (given.pointer % alignment != 0) {
      throw RuntimeError(fmt::format("buffer '{}' (binding {}): device pointer {:#x} is not aligned to the {} bytes "
                                     "the kernel's accesses need; pass an allocation's start or an offset that is "
                                     "a multiple of {}",
                                     decl.name, decl.binding, given.pointer, alignment, alignment));
    }
    pointers.push_back(given.pointer);
  }
  return pointers;
}

}  // namespace

unsigned launch_dynamic_shared_bytes(const ir::Program& program, std::uint32_t registers, const ir::SmLimits& sm) {
  if (program.reserved_shared_bytes == 0) return 0;
  return ir::even_waves_dynamic_shared_bytes(program.workgroups(), program.invocations_per_workgroup(),
                                             program.static_shared_bytes(), registers, sm);
}

std::map<std::string, unsigned> required_alignments(const ir::Program& program) {
  std::map<std::string, unsigned> alignments;
  for (const ir::BufferDecl& decl : program.buffers) alignments[decl.name] = ir::byte_size(decl.element);
  AlignmentCollector collector(alignments);
  collector.visit(program.entry);
  return alignments;
}

std::vector<CUdeviceptr> bind_device_pointers(const ir::Program& program,
                                              const std::map<std::string, DevicePointer>& buffers) {
  const LaunchPlan plan = plan_shape(program);
  for (const auto& [name, pointer] : buffers) {
    if (program.find_buffer(name) == nullptr) {
      throw RuntimeError(fmt::format("device pointer '{}' names no buffer of program '{}'; its buffers (binding "
                                     "order): {}",
                                     name, program.name, buffer_list(plan)));
    }
  }
  std::vector<DevicePointer> ordered;
  for (const ir::BufferDecl* decl : plan.parameters) {
    auto found = buffers.find(decl->name);
    if (found == buffers.end()) {
      throw RuntimeError(fmt::format("program '{}' needs a device pointer for buffer '{}' ({} x {}, {} bytes); "
                                     "give one for each of: {}",
                                     program.name, decl->name, decl->count, ir::to_string(decl->element),
                                     decl->byte_size(), buffer_list(plan)));
    }
    ordered.push_back(found->second);
  }
  return check_pointers(program, plan, ordered);
}

std::vector<CUdeviceptr> bind_device_pointers(const ir::Program& program, const std::vector<DevicePointer>& buffers) {
  const LaunchPlan plan = plan_shape(program);
  if (buffers.size() != plan.parameters.size()) {
    throw RuntimeError(fmt::format("program '{}' has {} buffers ({} in binding order), {} device pointers were "
                                   "given; pass one per buffer in that order",
                                   program.name, plan.parameters.size(), buffer_list(plan),
                                   buffers.size()));
  }
  return check_pointers(program, plan, buffers);
}

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
  const int registers = function.registers();
  return functions_.emplace(key, LoadedFunction{function, max_threads, registers}).first->second;
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
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(plan.parameters.size());
  for (const ir::BufferDecl* decl : plan.parameters) pointers.push_back(device_buffers.at(decl->name).memory.get());
  launch_pointers(program, image, std::move(pointers), stream_.get());
}

void CudaBackend::launch(const ir::Program& program, const KernelImage& image,
                         const std::map<std::string, DevicePointer>& buffers, std::optional<CUstream> stream) {
  std::vector<CUdeviceptr> pointers = bind_device_pointers(program, buffers);
  check_device_memory(program, pointers);
  launch_pointers(program, image, std::move(pointers), stream.value_or(stream_.get()));
}

void CudaBackend::launch(const ir::Program& program, const KernelImage& image, const std::vector<DevicePointer>& buffers,
                         std::optional<CUstream> stream) {
  std::vector<CUdeviceptr> pointers = bind_device_pointers(program, buffers);
  check_device_memory(program, pointers);
  launch_pointers(program, image, std::move(pointers), stream.value_or(stream_.get()));
}

void CudaBackend::check_device_memory(const ir::Program& program, const std::vector<CUdeviceptr>& pointers) const {
  const LaunchPlan plan = plan_shape(program);
  const Driver& driver = context_.driver();
  context_.make_current();
  for (std::size_t i = 0; i < pointers.size(); ++i) {
    const ir::BufferDecl& decl = *plan.parameters[i];
    // What Triton checks of every tensor argument: the driver maps it into this context.
    CUdeviceptr device_address = 0;
    const CUresult known =
        driver.api().cuPointerGetAttribute(&device_address, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, pointers[i]);
    if (known != CUDA_SUCCESS) {
      throw RuntimeError(fmt::format("buffer '{}': {:#x} is not memory device {} can access ({} from "
                                     "cuPointerGetAttribute); pass a device pointer (e.g. a CUDA tensor's "
                                     "data_ptr()), not host memory or a freed allocation",
                                     decl.name, pointers[i], context_.device().ordinal, driver.error_name(known)));
    }
    // The allocation's extent, where the driver reports it.
    CUdeviceptr start = 0;
    std::size_t size = 0;
    if (driver.api().cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointers[i]) ==
            CUDA_SUCCESS &&
        driver.api().cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointers[i]) == CUDA_SUCCESS &&
        size != 0 && pointers[i] >= start && pointers[i] - start + decl.byte_size() > size) {
      throw RuntimeError(fmt::format("buffer '{}': {} bytes from {:#x} run past the end of its allocation ({} bytes "
                                     "from {:#x}); the tensor is smaller than the program's {} x {}",
                                     decl.name, decl.byte_size(), pointers[i], size, start, decl.count,
                                     ir::to_string(decl.element)));
    }
  }
}

void CudaBackend::launch_pointers(const ir::Program& program, const KernelImage& image,
                                  std::vector<CUdeviceptr> pointers, CUstream stream) {
  const LaunchPlan plan = plan_shape(program);
  const LoadedFunction& loaded = entry(image, program.name);
  const unsigned threads = plan.block[0] * plan.block[1] * plan.block[2];
  if (static_cast<int>(threads) > loaded.max_threads_per_block) {
    throw RuntimeError(fmt::format("program '{}': {} threads per CTA exceed the {} the compiled kernel allows "
                                   "(registers or .maxntid)",
                                   program.name, threads, loaded.max_threads_per_block));
  }
  std::vector<void*> arguments;
  arguments.reserve(pointers.size());
  for (CUdeviceptr& pointer : pointers) arguments.push_back(&pointer);

  context_.make_current();
  // The H100 plan sized again for this device and the registers its JIT gave the kernel.
  const unsigned dynamic_shared_bytes =
      launch_dynamic_shared_bytes(program, static_cast<std::uint32_t>(std::max(0, loaded.registers)), context_.device().sm);
  allow_dynamic_shared(context_.driver(), loaded.function.get(), program.static_shared_bytes(), dynamic_shared_bytes,
                       program.name);
  context_.driver().check(
      context_.driver().api().cuLaunchKernel(loaded.function.get(), plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                                             plan.block[1], plan.block[2], dynamic_shared_bytes, stream,
                                             arguments.data(), /*extra=*/nullptr),
      "cuLaunchKernel",
      fmt::format("kernel '{}', grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory", program.name,
                  plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.block[1], plan.block[2],
                  dynamic_shared_bytes));
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

std::optional<KernelTimes> CudaBackend::run(const ir::Program& program, const KernelImage& image, BufferSet& buffers,
                                            const RunOptions& options) {
  plan_launch(program, buffers);  // all checks before any device work
  DeviceBufferSet device_buffers = upload(program, buffers);
  launch(program, image, device_buffers);
  download(program, device_buffers, buffers);
  if (options.timed_launches == 0) return std::nullopt;
  const LaunchPlan plan = plan_shape(program);
  std::vector<DevicePointer> arguments;
  arguments.reserve(plan.parameters.size());
  for (const ir::BufferDecl* decl : plan.parameters) {
    const DeviceMemory& memory = device_buffers.at(decl->name).memory;
    arguments.push_back({memory.get(), memory.size()});
  }
  return time_launches(
      arguments, [&](const std::vector<CUdeviceptr>& pointers) { launch_pointers(program, image, pointers, stream_.get()); },
      options);
}

KernelTimes CudaBackend::time_launches(const std::vector<DevicePointer>& buffers, const LaunchWith& launch_with,
                                       const RunOptions& options) {
  context_.make_current();
  const Driver& driver = context_.driver();
  const std::uint64_t l2_bytes = context_.device().l2_cache_bytes;
  KernelTimes times;
  times.warmup_launches = options.warmup_launches;
  times.timing = options.timing;
  std::vector<CUdeviceptr> originals;
  originals.reserve(buffers.size());
  for (const DevicePointer& buffer : buffers) originals.push_back(buffer.pointer);
  const Event start(context_), end(context_);

  if (options.timing == LaunchTiming::Isolated) {
    // Twice the L2 size evicts every line the previous launch left (what Triton's
    // do_bench and nvbench do), so the weights come from DRAM on every timed launch.
    times.l2_flush_bytes = std::max<std::uint64_t>(2 * l2_bytes, 1 << 20);
    DeviceMemory flush(context_, times.l2_flush_bytes);
    for (unsigned i = 0; i < options.warmup_launches; ++i) launch_with(originals);
    times.microseconds.reserve(options.timed_launches);
    for (unsigned i = 0; i < options.timed_launches; ++i) {
      driver.check(driver.api().cuMemsetD8Async(flush.get(), static_cast<unsigned char>(i), flush.size(), stream_.get()),
                   "cuMemsetD8Async", "flushing the L2 cache between timed launches");
      start.record(stream_);
      launch_with(originals);
      end.record(stream_);
      end.synchronize();
      times.microseconds.push_back(1e3 * static_cast<double>(end.milliseconds_since(start)));
    }
    times.launches = options.timed_launches;
    return times;
  }

  // Back to back: set 0 is the launch's own buffers, sets 1.. copies of them (taken
  // after the checked run, so scratch state such as split-K arrival counters is as
  // valid in every set as in the original), enough that a round touches at least twice
  // the L2 size: no launch finds its inputs in L2. Each copy is its own allocation,
  // aligned as the original.
  std::uint64_t set_bytes = 0;
  for (const DevicePointer& buffer : buffers) set_bytes += buffer.bytes;
  times.buffer_set_bytes = set_bytes;
  times.buffer_sets = set_bytes == 0 ? 1 : std::max<std::size_t>(1, (2 * l2_bytes + set_bytes - 1) / set_bytes);
  std::vector<DeviceMemory> copies;
  copies.reserve((times.buffer_sets - 1) * buffers.size());
  std::vector<std::vector<CUdeviceptr>> sets = {originals};
  sets.reserve(times.buffer_sets);
  for (std::size_t set = 1; set < times.buffer_sets; ++set) {
    std::vector<CUdeviceptr>& pointers = sets.emplace_back();
    for (const DevicePointer& buffer : buffers) {
      const DeviceMemory& copy = copies.emplace_back(context_, buffer.bytes);
      if (buffer.bytes > 0) {
        driver.check(driver.api().cuMemcpyDtoDAsync(copy.get(), buffer.pointer, buffer.bytes, stream_.get()),
                     "cuMemcpyDtoDAsync", fmt::format("copying a buffer into back-to-back set {}", set));
      }
      pointers.push_back(copy.get());
    }
  }
  // One round is a CUDA graph of the launches through every set (repeated to at least
  // kMinLaunchesPerRound launches, so that the graph's own launch is a small share), so
  // that they reach the GPU together: the time is the GPU's (each kernel and the gap
  // between dependent kernels), not the host's launch rate. A cuLaunchKernel from the
  // host took 2-25 us on the GPU machines here, as long as a 4-bit GEMV.
  constexpr std::size_t kMinLaunchesPerRound = 16;
  const std::size_t passes = (kMinLaunchesPerRound + sets.size() - 1) / sets.size();
  const CapturedGraph round(context_, stream_, [&] {
    for (std::size_t pass = 0; pass < passes; ++pass) {
      for (const std::vector<CUdeviceptr>& pointers : sets) launch_with(pointers);
    }
  });
  const std::size_t launches_per_round = passes * sets.size();
  for (std::size_t launched = 0; launched < options.warmup_launches; launched += launches_per_round) round.launch(stream_);
  const std::size_t rounds =
      std::max<std::size_t>(1, (options.timed_launches + launches_per_round - 1) / launches_per_round);
  times.microseconds.reserve(rounds);
  for (std::size_t i = 0; i < rounds; ++i) {
    start.record(stream_);
    round.launch(stream_);
    end.record(stream_);
    end.synchronize();
    times.microseconds.push_back(1e3 * static_cast<double>(end.milliseconds_since(start)) /
                                 static_cast<double>(launches_per_round));
  }
  times.launches = rounds * launches_per_round;
  return times;
}

// ---- runtime::Backend ------------------------------------------------------------------

BackendKernel CudaBackend::compile(const ir::Program& program, const CompileOptions& options) {
  return compile_to_ptx(program, options, target());
}

RunReport CudaBackend::run(const BackendKernel& kernel, BufferSet& buffers, const RunOptions& options) {
  require_ptx(*this, kernel);
  RunReport report;
  report.times = run(kernel.program, KernelImage::ptx(kernel.ptx), buffers, options);
  return report;
}

RunReport CudaBackend::launch_ptx(const PtxLaunch& launch, std::vector<NamedBuffer>& buffers,
                                  const RunOptions& options) {
  const ptx::Entry entry_declaration = check_ptx_launch(launch, buffers);
  const std::uint64_t threads = std::uint64_t(launch.block[0]) * launch.block[1] * launch.block[2];
  const KernelImage image = KernelImage::ptx(launch.ptx);
  const LoadedFunction& loaded = entry(image, entry_declaration.name);
  if (threads > static_cast<std::uint64_t>(loaded.max_threads_per_block)) {
    throw RuntimeError(fmt::format("kernel {}: a block of {} threads exceeds the {} the loaded kernel allows "
                                   "(registers, .maxntid, or the device's limit)",
                                   entry_declaration.name, threads, loaded.max_threads_per_block));
  }
  context_.make_current();
  const Driver& driver = context_.driver();
  int static_bytes = 0;
  driver.check(driver.api().cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, loaded.function.get()),
               "cuFuncGetAttribute", fmt::format("kernel {}: its static shared memory", entry_declaration.name));
  allow_dynamic_shared(driver, loaded.function.get(), std::uint64_t(static_bytes), launch.dynamic_shared_bytes,
                       entry_declaration.name);
  std::vector<DeviceMemory> memory;
  memory.reserve(buffers.size());
  for (const NamedBuffer& named : buffers) {
    memory.emplace_back(context_, named.buffer.bytes.size());
    if (!named.buffer.bytes.empty()) {
      driver.check(driver.api().cuMemcpyHtoDAsync(memory.back().get(), named.buffer.bytes.data(),
                                                  named.buffer.bytes.size(), stream_.get()),
                   "cuMemcpyHtoDAsync", fmt::format("uploading buffer '{}'", named.name));
    }
  }
  // One 8-byte slot per argument: the driver reads the parameter's size from its start
  // (little-endian, so the scalar's low bytes).
  std::vector<std::uint64_t> values;
  values.reserve(launch.arguments.size());
  for (const PtxArgument& argument : launch.arguments) {
    values.push_back(argument.is_buffer() ? std::uint64_t(memory[argument.buffer].get()) : argument.bits);
  }
  std::vector<void*> arguments;
  arguments.reserve(values.size());
  for (std::uint64_t& value : values) arguments.push_back(&value);
  const auto launch_with = [&](const std::vector<CUdeviceptr>& pointers) {
    for (std::size_t i = 0; i < launch.arguments.size(); ++i) {
      if (launch.arguments[i].is_buffer()) values[i] = pointers[launch.arguments[i].buffer];
    }
    driver.check(driver.api().cuLaunchKernel(loaded.function.get(), launch.grid[0], launch.grid[1], launch.grid[2],
                                             launch.block[0], launch.block[1], launch.block[2],
                                             launch.dynamic_shared_bytes, stream_.get(),
                                             arguments.empty() ? nullptr : arguments.data(), /*extra=*/nullptr),
                 "cuLaunchKernel",
                 fmt::format("kernel '{}', grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory",
                             entry_declaration.name, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
                             launch.block[1], launch.block[2], launch.dynamic_shared_bytes));
  };
  std::vector<DevicePointer> device_buffers;
  device_buffers.reserve(memory.size());
  for (const DeviceMemory& allocation : memory) device_buffers.push_back({allocation.get(), allocation.size()});
  std::vector<CUdeviceptr> pointers;
  for (const DevicePointer& buffer : device_buffers) pointers.push_back(buffer.pointer);
  launch_with(pointers);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    HostBuffer& host = buffers[i].buffer;
    if (host.bytes.empty()) continue;
    driver.check(driver.api().cuMemcpyDtoHAsync(host.bytes.data(), memory[i].get(), host.bytes.size(), stream_.get()),
                 "cuMemcpyDtoHAsync", fmt::format("downloading buffer '{}'", buffers[i].name));
  }
  stream_.synchronize();
  RunReport report;
  if (options.timed_launches > 0) report.times = time_launches(device_buffers, launch_with, options);
  return report;
}

}  // namespace quantc::runtime::cuda
