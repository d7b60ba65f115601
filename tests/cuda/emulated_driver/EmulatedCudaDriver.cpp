// An emulated CUDA driver: a shared library with the driver API entry points quantc uses
// (runtime/backends/cuda/Driver.h), backed by host memory and the PTX emulator, so that
// the CUDA backend's whole path (context, module load, device memory, launches on device
// pointers, events, timing) runs and is tested on machines without a GPU:
//
//   QUANTC_CUDA_DRIVER=build/tests/cuda/libquantc_emulated_cuda.so quantc run spec.json --backend cuda
//
// What it models, and what it does not:
//   - one device, "quantc emulated CUDA device", compute capability 9.0 (override with
//     QUANTC_EMULATED_CC=80 and the like), 132 SMs, a 1 MiB L2 (small, so that timing's L2
//     flush and back-to-back buffer sets stay cheap; QUANTC_EMULATED_L2_BYTES=N overrides);
//   - device memory is host memory: a CUdeviceptr is the address of a heap block, and
//     cuPointerGetAttribute knows exactly the blocks cuMemAlloc returned;
//   - every stream operation runs synchronously when it is queued, so streams and events
//     only order what already happened (stream capture records kernel launches only: a
//     graph replays them in order); an event records the host's steady clock, and
//     elapsed times are host (emulator) times, not GPU times;
//   - modules must be PTX text (cuModuleLoadDataEx of a cubin returns
//     CUDA_ERROR_INVALID_IMAGE); a launch runs the entry on runtime::emulator with every
//     pointer argument bound to the allocation it points into (from that address to the
//     allocation's end), then copies the bytes back. Arguments must not alias.
//   - QUANTC_EMULATED_SKIP_LAUNCHES=1 accepts every launch and runs nothing (outputs keep
//     their bytes): a backend that disagrees with the reference, for `--compare` tests;
//   - errors are the driver's codes for the misuse quantc's checks exist for: an unknown
//     pointer, an unknown entry, a kernel the emulator rejects (CUDA_ERROR_LAUNCH_FAILED,
//     the emulator's message on stderr), more than 48 KiB of dynamic shared memory
//     without the kernel's opt-in (CUDA_ERROR_INVALID_VALUE).
// It is test support, not a product: it is built with the tests and installed nowhere.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ptx/Entries.h"
#include "runtime/backends/emulator/EmulatorBackend.h"

struct CUctx_st {};
struct CUmod_st {
  std::string ptx;
  std::vector<quantc::ptx::Entry> entries;
};
struct CUfunc_st {
  CUmod_st* module = nullptr;
  quantc::ptx::Entry entry;
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: launches with more dynamic shared
  /// memory fail, as on hardware; past 48 KiB a kernel opts in with cuFuncSetAttribute.
  int max_dynamic_shared_bytes = 48 * 1024;
};
/// A kernel launch as stream capture records it: the function, the geometry and a copy
/// of each parameter's bytes (the driver copies them at launch, so the caller may reuse
/// its argument array).
struct CapturedLaunch {
  CUfunc_st* function = nullptr;
  std::array<std::uint32_t, 3> grid{}, block{};
  unsigned shared_bytes = 0;
  std::vector<std::vector<std::uint8_t>> parameters;
};
struct CUstream_st {
  bool capturing = false;
  std::vector<CapturedLaunch> captured;
};
struct CUgraph_st {
  std::vector<CapturedLaunch> launches;
};
struct CUgraphExec_st {
  std::vector<CapturedLaunch> launches;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point time{};
  bool recorded = false;
};

namespace {

constexpr int kMultiprocessors = 132;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kL2Bytes = 1 << 20;
constexpr int kRegistersPerThread = 32;

struct State {
  std::mutex mutex;
  bool initialized = false;
  CUctx_st context;
  std::map<std::uintptr_t, std::vector<std::uint8_t>> allocations;  // by start address
  std::vector<std::unique_ptr<CUmod_st>> modules;
  std::vector<std::unique_ptr<CUfunc_st>> functions;
};

State& state() {
  static State instance;
  return instance;
}

int compute_capability() {
  const char* value = std::getenv("QUANTC_EMULATED_CC");
  return value != nullptr && *value != '\0' ? std::atoi(value) : 90;
}

int l2_cache_bytes() {
  const char* value = std::getenv("QUANTC_EMULATED_L2_BYTES");
  return value != nullptr && *value != '\0' ? std::atoi(value) : kL2Bytes;
}

/// The allocation holding `address`, or nullptr. The caller holds the mutex.
std::pair<const std::uintptr_t, std::vector<std::uint8_t>>* find_allocation(State& s, std::uintptr_t address) {
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  if (address >= it->first + std::max<std::size_t>(it->second.size(), 1)) return nullptr;
  return &*it;
}

CUresult launch(CUfunc_st& function, const std::array<std::uint32_t, 3>& grid, const std::array<std::uint32_t, 3>& block,
                unsigned shared_bytes, void** parameters) {
  using namespace quantc;
  State& s = state();
  runtime::PtxLaunch launch;
  launch.ptx = function.module->ptx;
  launch.entry = function.entry.name;
  launch.grid = grid;
  launch.block = block;
  launch.dynamic_shared_bytes = shared_bytes;
  std::vector<runtime::NamedBuffer> buffers;
  std::vector<std::uint8_t*> targets;  // where each buffer's bytes go back
  for (std::size_t i = 0; i < function.entry.parameters.size(); ++i) {
    const ptx::EntryParameter& parameter = function.entry.parameters[i];
    std::uint64_t bits = 0;
    std::memcpy(&bits, parameters[i], std::min<std::size_t>(parameter.bytes(), sizeof bits));
    auto* allocation = parameter.holds_pointer() ? find_allocation(s, bits) : nullptr;
    if (allocation == nullptr) {
      launch.arguments.push_back(runtime::PtxArgument::of_scalar(bits, parameter.bytes()));
      continue;
    }
    const std::size_t offset = bits - allocation->first;
    std::uint8_t* begin = allocation->second.data() + offset;
    buffers.push_back({parameter.name, runtime::HostBuffer{ir::ScalarType::U8,
                                                           std::vector<std::uint8_t>(begin, begin + allocation->second.size() - offset)}});
    targets.push_back(begin);
    launch.arguments.push_back(runtime::PtxArgument::of_buffer(buffers.size() - 1));
  }
  try {
    runtime::emulator::EmulatorBackend emulator;
    emulator.launch_ptx(launch, buffers);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "emulated CUDA driver: launch of %s failed: %s\n", function.entry.name.c_str(), error.what());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    std::memcpy(targets[i], buffers[i].buffer.bytes.data(), buffers[i].buffer.bytes.size());
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int) {
  std::lock_guard lock(state().mutex);
  state().initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_READY: *name = "CUDA_ERROR_NOT_READY"; return CUDA_SUCCESS;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  const char* name = nullptr;
  if (cuGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "reported by the emulated CUDA driver (tests/cuda/emulated_driver)";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(length), "quantc emulated CUDA device (sm_%d)", compute_capability());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = compute_capability() / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = compute_capability() % 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = kMultiprocessors; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = kMaxThreadsPerBlock; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = l2_cache_bytes(); return CUDA_SUCCESS;
    // An H100 SXM's SM (CUDA C++ Programming Guide, "Technical Specifications per Compute
    // Capability"), what launches size their even-waves reservations by.
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 * 1024; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 * 1024; return CUDA_SUCCESS;
    default: *value = 0; return CUDA_SUCCESS;
  }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  *context = &state().context;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*, void**) {
  const char* text = static_cast<const char*>(image);
  // PTX is NUL-terminated text; a cubin starts with the ELF magic.
  if (std::strncmp(text, "\x7f" "ELF", 4) == 0) return CUDA_ERROR_INVALID_IMAGE;
  auto loaded = std::make_unique<CUmod_st>();
  loaded->ptx = text;
  try {
    loaded->entries = quantc::ptx::read_entries(loaded->ptx);
  } catch (const std::exception&) {
    return CUDA_ERROR_INVALID_PTX;
  }
  std::lock_guard lock(state().mutex);
  *module = loaded.get();
  state().modules.push_back(std::move(loaded));
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }  // freed with the library

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  for (const quantc::ptx::Entry& entry : module->entries) {
    if (entry.name != name) continue;
    auto created = std::make_unique<CUfunc_st>();
    created->module = module;
    created->entry = entry;
    std::lock_guard lock(state().mutex);
    *function = created.get();
    state().functions.push_back(std::move(created));
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction) {
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = kRegistersPerThread; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = kMaxThreadsPerBlock; return CUDA_SUCCESS;
    default: *value = 0; return CUDA_SUCCESS;
  }
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;  // an H100 CTA's most
    function->max_dynamic_shared_bytes = value;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  std::lock_guard lock(state().mutex);
  std::vector<std::uint8_t> block(std::max<std::size_t>(bytes, 1));
  const auto address = reinterpret_cast<std::uintptr_t>(block.data());
  state().allocations.emplace(address, std::move(block)).first->second.resize(bytes);
  *pointer = address;
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr pointer) {
  std::lock_guard lock(state().mutex);
  return state().allocations.erase(pointer) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr destination, const void* source, size_t bytes, CUstream) {
  std::lock_guard lock(state().mutex);
  auto* allocation = find_allocation(state(), destination);
  if (allocation == nullptr || destination - allocation->first + bytes > allocation->second.size()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(reinterpret_cast<void*>(destination), source, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void* destination, CUdeviceptr source, size_t bytes, CUstream) {
  std::lock_guard lock(state().mutex);
  auto* allocation = find_allocation(state(), source);
  if (allocation == nullptr || source - allocation->first + bytes > allocation->second.size()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(destination, reinterpret_cast<const void*>(source), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr destination, CUdeviceptr source, size_t bytes, CUstream) {
  std::lock_guard lock(state().mutex);
  auto* to = find_allocation(state(), destination);
  auto* from = find_allocation(state(), source);
  if (to == nullptr || from == nullptr || destination - to->first + bytes > to->second.size() ||
      source - from->first + bytes > from->second.size()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, size_t count, CUstream) {
  std::lock_guard lock(state().mutex);
  auto* allocation = find_allocation(state(), destination);
  if (allocation == nullptr || destination - allocation->first + count > allocation->second.size()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memset(reinterpret_cast<void*>(destination), value, count);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  std::lock_guard lock(state().mutex);
  auto* allocation = find_allocation(state(), pointer);
  if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = pointer; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = allocation->first; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<std::size_t*>(data) = allocation->second.size(); return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = new CUstream_st;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream stream) {
  delete stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = new CUevent_st;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream) {
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) { return event->recorded ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *milliseconds = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  if (stream == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (stream->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  stream->capturing = true;
  stream->captured.clear();
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  if (stream == nullptr || !stream->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  stream->capturing = false;
  *graph = new CUgraph_st{std::move(stream->captured)};
  stream->captured.clear();
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->launches};
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  std::lock_guard lock(state().mutex);
  for (CapturedLaunch& captured : exec->launches) {
    std::vector<void*> parameters;
    for (std::vector<std::uint8_t>& bytes : captured.parameters) parameters.push_back(bytes.data());
    const CUresult result =
        launch(*captured.function, captured.grid, captured.block, captured.shared_bytes, parameters.data());
    if (result != CUDA_SUCCESS) return result;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  delete graph;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes,
                        CUstream stream, void** parameters, void** extra) {
  if (extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (stream != nullptr && stream->capturing) {
    CapturedLaunch captured{function, {grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared_bytes, {}};
    for (std::size_t i = 0; i < function->entry.parameters.size(); ++i) {
      const auto* begin = static_cast<const std::uint8_t*>(parameters[i]);
      captured.parameters.emplace_back(begin, begin + function->entry.parameters[i].bytes());
    }
    stream->captured.push_back(std::move(captured));
    return CUDA_SUCCESS;
  }
  if (shared_bytes > unsigned(function->max_dynamic_shared_bytes)) return CUDA_ERROR_INVALID_VALUE;
  const char* skip = std::getenv("QUANTC_EMULATED_SKIP_LAUNCHES");
  if (skip != nullptr && std::string(skip) == "1") return CUDA_SUCCESS;
  std::lock_guard lock(state().mutex);
  return launch(*function, {grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared_bytes, parameters);
}

}  // extern "C"
