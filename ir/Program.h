// A kernel: its buffers (the kernel parameters, in binding order), its launch shape and
// its entry statement.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace quantc::ir {

/// How a kernel uses a buffer. ReadOnly buffers are inputs, ReadWrite and WriteOnly
/// outputs (ReadWrite ones are read first). Scratch is device memory the kernel keeps
/// to itself between its workgroups (split-K partial sums, arrival counters): no input,
/// no output. Its contract: it is all zeros when a launch starts, and every launch that
/// completes leaves it all zeros again, so the caller allocates it zero-filled once
/// (runtime::allocate_buffers does) and passes the same memory to every later launch;
/// launches that may run at the same time need their own. Scratch buffers come after
/// every input and output (the verifier checks), so the caller's bindings are 0, 1, ...
enum class BufferAccess : std::uint8_t { ReadOnly, ReadWrite, WriteOnly, Scratch };
std::string_view to_string(BufferAccess access);  // "read_only", "read_write", "write_only", "scratch"

/// Half-open byte range [begin, end) of an output buffer that holds the logical
/// result; the rest is launch padding that callers should not read.
struct ByteRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool operator==(const ByteRange&) const = default;
};

/// One kernel parameter: a typed device buffer of `count` elements of `element`.
/// `count` is in elements, never bytes; byte size = count * byte_size(element).
struct BufferDecl {
  std::string name;
  std::uint32_t binding = 0;  // parameter position; bindings are 0, 1, 2, ... in order
  BufferAccess access = BufferAccess::ReadOnly;
  ScalarType element = ScalarType::F32;
  std::uint32_t count = 0;
  std::optional<ByteRange> output_byte_range;  // only meaningful for written buffers

  std::uint64_t byte_size() const;
  /// Written by the kernel: an output or scratch.
  bool is_written() const { return access != BufferAccess::ReadOnly; }
  /// A result the caller reads back (ReadWrite, WriteOnly).
  bool is_output() const { return access == BufferAccess::ReadWrite || access == BufferAccess::WriteOnly; }
  bool is_scratch() const { return access == BufferAccess::Scratch; }
  /// The bytes a caller should read back: output_byte_range, else the whole buffer.
  ByteRange readable_range() const;
  bool operator==(const BufferDecl&) const = default;
};

/// A workgroup-scope array (WGSL `var<workgroup>`, PTX `.shared`): `count` elements of
/// `element`, one instance per workgroup, statically sized. It is no kernel parameter
/// (no binding) and has no host-visible contents. Loads and stores name it like a
/// buffer (`name[index]`, scalar or vector); its contents are undefined until written
/// (the interpreter and the emulator start each workgroup with zeros), and ordering
/// between invocations is the program's business: a Barrier (`bar.sync 0`) between a
/// store and another invocation's load of the same element. Every array starts 16-byte
/// aligned (PTX `.shared .align 16 .b8 name[bytes]`), so vector accesses up to 16
/// bytes are provable from the index alone, as for global buffers.
struct SharedDecl {
  std::string name;
  ScalarType element = ScalarType::F32;
  std::uint32_t count = 0;

  std::uint64_t byte_size() const;
  bool operator==(const SharedDecl&) const = default;
};

/// The static shared memory a program may declare, as for a CUDA kernel without the
/// dynamic-shared opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr std::uint64_t kMaxStaticSharedBytes = 48 * 1024;
/// Shared memory per workgroup, `.shared` and reserved together (Program::reserved_shared_bytes),
/// that every supported target can launch: past kMaxStaticSharedBytes the launch opts in
/// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), up to sm_75's 64 KiB a CTA.
inline constexpr std::uint64_t kMaxLaunchSharedBytes = 64 * 1024;
/// Invocations per workgroup: the CUDA limit of threads per CTA.
inline constexpr std::uint64_t kMaxWorkgroupInvocations = 1024;
/// Shared arrays start at this byte alignment (each array's offset is rounded up).
inline constexpr std::uint32_t kSharedAlignment = 16;
/// The most threads an SM holds at once on any supported target (sm_80, sm_90: 2048;
/// sm_75: 1024): the bound on min_resident_workgroups x invocations per workgroup.
inline constexpr std::uint64_t kMaxResidentInvocations = 2048;

struct Program {
  std::string name;
  std::vector<BufferDecl> buffers;
  std::vector<SharedDecl> shared;                         // workgroup arrays, not parameters
  std::array<std::uint32_t, 3> workgroup_size{1, 1, 1};   // invocations per workgroup (CTA)
  std::array<std::uint32_t, 3> workgroup_count{1, 1, 1};  // workgroups in the grid
  /// Workgroups the schedule asks to keep resident at once on each multiprocessor (SM), 0
  /// for no request: PTX `.minnctapersm` (PTX ISA "Performance-Tuning Directives"), which
  /// makes ptxas cap each thread's registers so that this many CTAs fit an SM's register
  /// file, as CUDA C++'s `__launch_bounds__(threads, min_blocks)`. A hint: no backend
  /// reads it but the PTX emitter, and no result depends on it.
  std::uint32_t min_resident_workgroups = 0;
  /// Bytes of shared memory each workgroup reserves at launch without using them (CUDA's
  /// dynamic shared memory, `sharedMemBytes` of cuLaunchKernel), 0 for none: they cap the
  /// workgroups an SM holds at once (occupancy), which evens out a grid's waves where the
  /// SMs would otherwise hold all but a small last wave (SplitK.h,
  /// even_waves_reserved_bytes; sized for an H100's 228 KiB an SM, as the fast schedules
  /// are tuned: the CUDA backend and the cost model size it again for the device they
  /// launch or model, ir/Occupancy.h). At most kMaxLaunchSharedBytes with the `.shared` the
  /// program declares. No result depends on it.
  std::uint32_t reserved_shared_bytes = 0;
  Node entry;                                             // a Block

  /// The buffer named `name`, or nullptr.
  const BufferDecl* find_buffer(std::string_view name) const;
  /// The buffers a caller supplies data for or reads results from: every buffer but
  /// scratch, in binding order. Two schedules of one op have equal caller buffers, so the
  /// same files feed either (a fast schedule may add scratch).
  std::vector<BufferDecl> caller_buffers() const;
  /// The workgroup array named `name`, or nullptr.
  const SharedDecl* find_shared(std::string_view name) const;
  /// Bytes of `.shared` the program declares: each array rounded up to kSharedAlignment.
  std::uint64_t static_shared_bytes() const;
  std::uint32_t invocations_per_workgroup() const {
    return workgroup_size[0] * workgroup_size[1] * workgroup_size[2];
  }
  /// Workgroups in the grid (CTAs of the launch).
  std::uint64_t workgroups() const {
    return std::uint64_t{workgroup_count[0]} * workgroup_count[1] * workgroup_count[2];
  }
};

}  // namespace quantc::ir
