// What a caller needs to launch a compiled kernel without reading its IR: the entry
// name, the grid and CTA shape, shared memory, and each `.param` with the buffer it
// points to. The same record is printed in the PTX module's header comment (every
// kernel quantc emits carries it) and written as JSON by `quantc emit --metadata`
// (lower/driver/KernelMetadataJson.h), like the `.json` Triton keeps beside each kernel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Program.h"

namespace quantc::lower {

struct KernelMetadata {
  /// One kernel parameter: a `.param .u64` holding a global-memory pointer to `count`
  /// elements of `element` (`bytes` = count × element size), in binding order.
  struct Parameter {
    std::string param;  // the PTX `.param` name, "<entry>_param_<binding>"
    ir::BufferDecl buffer;
  };
  std::string entry;                    // `.visible .entry` name (= the program's name)
  std::string target;                   // e.g. "sm_90"
  std::array<std::uint32_t, 3> grid{};  // CTAs per axis (x fastest): cuLaunchKernel's gridDim
  std::array<std::uint32_t, 3> block{};  // threads per CTA per axis: blockDim (= .maxntid)
  std::uint64_t static_shared_bytes = 0;  // `.shared` the module declares
  /// sharedMemBytes to pass at launch: Program::reserved_shared_bytes, an even-waves plan for
  /// an H100 SXM (another device: ir::even_waves_dynamic_shared_bytes with its limits).
  std::uint64_t dynamic_shared_bytes = 0;
  /// CTAs per SM the kernel asks ptxas to fit (`.minnctapersm`, Program::min_resident_workgroups), 0: none.
  std::uint32_t min_ctas_per_sm = 0;
  std::vector<Parameter> parameters;

  /// The metadata of `program` (after or before the pass pipeline: no pass changes the
  /// buffers, the launch shape or the shared arrays) compiled for `target`.
  static KernelMetadata of(const ir::Program& program, const std::string& target);

  /// The module header comment's lines (without "// "): the generator line, the launch
  /// shape, one line per parameter.
  std::vector<std::string> comment_lines() const;
};

/// The `.param` name of the buffer with `binding` in the kernel `entry`.
std::string parameter_name(const std::string& entry, std::uint32_t binding);

}  // namespace quantc::lower
