// RAII owners of CUDA driver objects: the primary context of a device, modules (with
// their functions), device memory, streams and events. Each owner releases its object
// exactly once, is movable and not copyable, and keeps the driver loaded while it lives.
// Objects created under a Context must not outlive it.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ir/Occupancy.h"
#include "ptx/Target.h"
#include "runtime/backends/cuda/Driver.h"

namespace quantc::runtime::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;             // "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;   // major*10 + minor: 90 for sm_90
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  std::uint64_t l2_cache_bytes = 0;  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
  /// Per-SM limits from the device's attributes (SM count, registers, threads, CTAs and
  /// shared memory per multiprocessor, the shared memory reserved per block and a block's
  /// opt-in maximum): what a launch sizes its even-waves reservation by (ir/Occupancy.h).
  ir::SmLimits sm;
};

/// How many devices the driver sees.
int device_count(const Driver& driver);
/// Properties of device `ordinal`; throws RuntimeError naming the ordinal and the device
/// count when it is out of range.
DeviceInfo device_info(const Driver& driver, int ordinal);

/// The PTX target for a device of `compute_capability` (major*10 + minor): the highest of
/// ptx::supported_targets() that is <= it, since PTX for a lower target JIT-compiles for
/// any newer device. Throws RuntimeError when the device is older than every supported
/// target (sm_75 is the oldest).
ptx::Target target_for_compute_capability(int compute_capability);

/// The retained primary context of one device, made current on the calling thread.
class Context {
 public:
  /// Retains device `ordinal`'s primary context (cuDevicePrimaryCtxRetain) and makes it
  /// current. Throws RuntimeError for an ordinal out of range, CudaError otherwise.
  Context(std::shared_ptr<const Driver> driver, int ordinal);
  ~Context();
  Context(Context&& other) noexcept;
  Context& operator=(Context&&) = delete;
  Context(const Context&) = delete;

  const Driver& driver() const { return *driver_; }
  const std::shared_ptr<const Driver>& shared_driver() const { return driver_; }
  const DeviceInfo& device() const { return device_; }
  CUcontext get() const { return context_; }
  /// Makes this context current on the calling thread (needed on every new thread).
  void make_current() const;
  void synchronize() const;

 private:
  std::shared_ptr<const Driver> driver_;
  DeviceInfo device_;
  CUdevice handle_ = 0;
  CUcontext context_ = nullptr;
};

/// A kernel entry point in a loaded module.
class Function {
 public:
  Function(const Driver* driver, CUfunction handle, std::string name)
      : driver_(driver), handle_(handle), name_(std::move(name)) {}
  CUfunction get() const { return handle_; }
  const std::string& name() const { return name_; }
  /// Registers per thread the loaded code uses (CU_FUNC_ATTRIBUTE_NUM_REGS).
  int registers() const;
  /// Most threads per block this function can be launched with.
  int max_threads_per_block() const;

 private:
  const Driver* driver_;
  CUfunction handle_;
  std::string name_;
};

/// A loaded PTX text or cubin (cuModuleLoadDataEx).
class Module {
 public:
  enum class Format : std::uint8_t { Ptx, Cubin };

  /// Loads `image` into `context`, always asking the JIT for its error and info logs.
  /// PTX is JIT-compiled by the driver; a rejected PTX throws CudaError whose message
  /// holds the JIT error log. A cubin is first checked against the device: one built for
  /// another architecture throws RuntimeError naming both ("cubin is for sm_90, device
  /// ... is sm_80"); an image that is not an ELF cubin throws RuntimeError.
  Module(const Context& context, Format format, std::string_view image);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&&) = delete;
  Module(const Module&) = delete;

  /// The `.entry` named `name`; CudaError (CUDA_ERROR_NOT_FOUND) when absent.
  Function function(const std::string& name) const;
  /// The JIT's info log from loading (registers etc. for PTX; may be empty).
  const std::string& info_log() const { return info_log_; }
  CUmodule get() const { return module_; }

 private:
  std::shared_ptr<const Driver> driver_;
  CUmodule module_ = nullptr;
  std::string info_log_;
};

/// `bytes` of device global memory (cuMemAlloc); zero bytes allocates nothing.
class DeviceMemory {
 public:
  DeviceMemory(const Context& context, std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&&) = delete;
  DeviceMemory(const DeviceMemory&) = delete;

  CUdeviceptr get() const { return pointer_; }
  std::size_t size() const { return bytes_; }

 private:
  std::shared_ptr<const Driver> driver_;
  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  explicit Stream(const Context& context);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;

  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  std::shared_ptr<const Driver> driver_;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(const Context& context);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;

  CUevent get() const { return event_; }
  void record(const Stream& stream) const;
  void synchronize() const;
  /// Milliseconds from `start` to this event (both recorded and completed).
  float milliseconds_since(const Event& start) const;

 private:
  std::shared_ptr<const Driver> driver_;
  CUevent event_ = nullptr;
};

/// A CUDA graph captured from what `enqueue` queues on `stream` (stream capture, this
/// thread only), instantiated once and launched as often as wanted: the launches reach
/// the GPU together instead of one host call each. Throws CudaError when capture,
/// instantiation or a launch fails (after ending the capture), and whatever `enqueue`
/// throws.
class CapturedGraph {
 public:
  CapturedGraph(const Context& context, const Stream& stream, const std::function<void()>& enqueue);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  /// Queues one launch of the whole graph on `stream`.
  void launch(const Stream& stream) const;

 private:
  std::shared_ptr<const Driver> driver_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace quantc::runtime::cuda
