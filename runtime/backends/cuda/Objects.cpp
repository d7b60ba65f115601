#include "runtime/backends/cuda/Objects.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "runtime/backends/cuda/Cubin.h"

namespace quantc::runtime::cuda {

namespace {
int attribute(const Driver& driver, CUdevice device, CUdevice_attribute which) {
  int value = 0;
  driver.check(driver.api().cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
  return value;
}

constexpr std::size_t kJitLogBytes = 16 * 1024;

std::string trimmed_log(const std::array<char, kJitLogBytes>& buffer) {
  std::string log(buffer.data());  // the JIT NUL-terminates within the given size
  while (!log.empty() && (log.back() == '\n' || log.back() == '\0')) log.pop_back();
  return log;
}
}  // namespace

int device_count(const Driver& driver) {
  int count = 0;
  driver.check(driver.api().cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

DeviceInfo device_info(const Driver& driver, int ordinal) {
  const int count = device_count(driver);
  if (ordinal < 0 || ordinal >= count) {
    throw RuntimeError(fmt::format("CUDA device {} does not exist: the driver sees {} device(s) (ordinals 0..{})",
                                   ordinal, count, count - 1));
  }
  CUdevice device = 0;
  driver.check(driver.api().cuDeviceGet(&device, ordinal), "cuDeviceGet");
  std::array<char, 256> name{};
  driver.check(driver.api().cuDeviceGetName(name.data(), static_cast<int>(name.size()), device), "cuDeviceGetName");
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = name.data();
  info.compute_capability = 10 * attribute(driver, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
                            attribute(driver, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessor_count = attribute(driver, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(driver, device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.l2_cache_bytes = static_cast<std::uint64_t>(attribute(driver, device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  auto unsigned_attribute = [&](CUdevice_attribute which) {
    return static_cast<std::uint32_t>(std::max(0, attribute(driver, device, which)));
  };
  info.sm.sms = static_cast<std::uint32_t>(std::max(0, info.multiprocessor_count));
  info.sm.registers_per_sm = unsigned_attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.sm.max_threads_per_sm = unsigned_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.sm.max_ctas_per_sm = unsigned_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.sm.shared_bytes_per_sm = unsigned_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.sm.reserved_shared_bytes_per_cta = unsigned_attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  info.sm.max_shared_bytes_per_cta = unsigned_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  return info;
}

ptx::Target target_for_compute_capability(int compute_capability) {
  const std::vector<ptx::Target>& targets = ptx::supported_targets();
  const ptx::Target* chosen = nullptr;
  for (const ptx::Target& target : targets) {
    if (target.sm <= compute_capability) chosen = &target;
  }
  if (chosen == nullptr) {
    throw RuntimeError(fmt::format("the device's compute capability {}.{} is older than every target quantc "
                                   "supports (the oldest is {})",
                                   compute_capability / 10, compute_capability % 10, targets.front().name()));
  }
  return *chosen;
}

// ---- Context ---------------------------------------------------------------------------

Context::Context(std::shared_ptr<const Driver> driver, int ordinal)
    : driver_(std::move(driver)), device_(device_info(*driver_, ordinal)) {
  driver_->check(driver_->api().cuDeviceGet(&handle_, ordinal), "cuDeviceGet");
  driver_->check(driver_->api().cuDevicePrimaryCtxRetain(&context_, handle_), "cuDevicePrimaryCtxRetain");
  make_current();
}

Context::~Context() {
  if (context_ != nullptr) driver_->api().cuDevicePrimaryCtxRelease(handle_);
}

Context::Context(Context&& other) noexcept
    : driver_(other.driver_),
      device_(std::move(other.device_)),
      handle_(other.handle_),
      context_(std::exchange(other.context_, nullptr)) {}

void Context::make_current() const { driver_->check(driver_->api().cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

void Context::synchronize() const { driver_->check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize"); }

// ---- Function --------------------------------------------------------------------------

int Function::registers() const {
  int value = 0;
  driver_->check(driver_->api().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, handle_),
                 "cuFuncGetAttribute");
  return value;
}

int Function::max_threads_per_block() const {
  int value = 0;
  driver_->check(driver_->api().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, handle_),
                 "cuFuncGetAttribute");
  return value;
}

// ---- Module ----------------------------------------------------------------------------

Module::Module(const Context& context, Format format, std::string_view image) : driver_(context.shared_driver()) {
  const int device_architecture = context.device().compute_capability;
  if (format == Format::Cubin) {
    const int architecture = cubin_architecture(image);
    if (!cubin_runs_on(architecture, device_architecture)) {
      throw RuntimeError(fmt::format("cubin is for sm_{}, but device {} ({}) is sm_{}; rebuild it with "
                                     "--target sm_{} or load the PTX instead",
                                     architecture, context.device().ordinal, context.device().name,
                                     device_architecture, device_architecture));
    }
  }
  // The PTX text must be NUL-terminated for the JIT; a cubin is passed as is.
  const std::string owned = format == Format::Ptx ? std::string(image) : std::string();
  const void* data = format == Format::Ptx ? static_cast<const void*>(owned.c_str()) : image.data();

  // JIT options in one place: always ask for both logs.
  std::array<char, kJitLogBytes> error_log{};
  std::array<char, kJitLogBytes> info_log{};
  std::array<CUjit_option, 5> options = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                         CU_JIT_LOG_VERBOSE};
  std::array<void*, 5> values = {error_log.data(), reinterpret_cast<void*>(kJitLogBytes), info_log.data(),
                                 reinterpret_cast<void*>(kJitLogBytes), reinterpret_cast<void*>(1)};
  context.make_current();
  const CUresult result = driver_->api().cuModuleLoadDataEx(&module_, data, static_cast<unsigned>(options.size()),
                                                            options.data(), values.data());
  if (result != CUDA_SUCCESS) {
    std::string detail = trimmed_log(error_log);
    if (result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE) {
      detail += fmt::format("{}the image has no code for this device (sm_{})", detail.empty() ? "" : "\n",
                            device_architecture);
    }
    driver_->check(result, "cuModuleLoadDataEx", detail.empty() ? detail : "JIT log:\n" + detail);
  }
  info_log_ = trimmed_log(info_log);
}

Module::~Module() {
  if (module_ != nullptr) driver_->api().cuModuleUnload(module_);
}

Module::Module(Module&& other) noexcept
    : driver_(other.driver_), module_(std::exchange(other.module_, nullptr)), info_log_(std::move(other.info_log_)) {}

Function Module::function(const std::string& name) const {
  CUfunction function = nullptr;
  driver_->check(driver_->api().cuModuleGetFunction(&function, module_, name.c_str()), "cuModuleGetFunction",
                 fmt::format("no entry named '{}' in the module", name));
  return Function(driver_.get(), function, name);
}

// ---- DeviceMemory ----------------------------------------------------------------------

DeviceMemory::DeviceMemory(const Context& context, std::size_t bytes)
    : driver_(context.shared_driver()), bytes_(bytes) {
  if (bytes == 0) return;
  context.make_current();
  driver_->check(driver_->api().cuMemAlloc(&pointer_, bytes), "cuMemAlloc", fmt::format("allocating {} bytes", bytes));
}

DeviceMemory::~DeviceMemory() {
  if (pointer_ != 0) driver_->api().cuMemFree(pointer_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : driver_(other.driver_), pointer_(std::exchange(other.pointer_, 0)), bytes_(other.bytes_) {}

// ---- Stream ----------------------------------------------------------------------------

Stream::Stream(const Context& context) : driver_(context.shared_driver()) {
  context.make_current();
  driver_->check(driver_->api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() {
  if (stream_ != nullptr) driver_->api().cuStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : driver_(other.driver_), stream_(std::exchange(other.stream_, nullptr)) {}

void Stream::synchronize() const { driver_->check(driver_->api().cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

// ---- Event -----------------------------------------------------------------------------

Event::Event(const Context& context) : driver_(context.shared_driver()) {
  context.make_current();
  driver_->check(driver_->api().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
}

Event::~Event() {
  if (event_ != nullptr) driver_->api().cuEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : driver_(other.driver_), event_(std::exchange(other.event_, nullptr)) {}

void Event::record(const Stream& stream) const {
  driver_->check(driver_->api().cuEventRecord(event_, stream.get()), "cuEventRecord");
}

void Event::synchronize() const { driver_->check(driver_->api().cuEventSynchronize(event_), "cuEventSynchronize"); }

float Event::milliseconds_since(const Event& start) const {
  float milliseconds = 0;
  driver_->check(driver_->api().cuEventElapsedTime(&milliseconds, start.event_, event_), "cuEventElapsedTime");
  return milliseconds;
}

// ---- CapturedGraph ----------------------------------------------------------------------

CapturedGraph::CapturedGraph(const Context& context, const Stream& stream, const std::function<void()>& enqueue)
    : driver_(context.shared_driver()) {
  context.make_current();
  const DriverApi& api = driver_->api();
  driver_->check(api.cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  try {
    enqueue();
  } catch (...) {
    CUgraph partial = nullptr;
    api.cuStreamEndCapture(stream.get(), &partial);
    if (partial != nullptr) api.cuGraphDestroy(partial);
    throw;
  }
  driver_->check(api.cuStreamEndCapture(stream.get(), &graph_), "cuStreamEndCapture");
  const CUresult instantiated = api.cuGraphInstantiateWithFlags(&exec_, graph_, 0);
  if (instantiated != CUDA_SUCCESS) {
    api.cuGraphDestroy(graph_);
    driver_->check(instantiated, "cuGraphInstantiateWithFlags");
  }
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) driver_->api().cuGraphExecDestroy(exec_);
  if (graph_ != nullptr) driver_->api().cuGraphDestroy(graph_);
}

void CapturedGraph::launch(const Stream& stream) const {
  driver_->check(driver_->api().cuGraphLaunch(exec_, stream.get()), "cuGraphLaunch");
}

}  // namespace quantc::runtime::cuda
