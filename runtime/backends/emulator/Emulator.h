// The PTX emulator backend: runs PTX text on the CPU with the PTX ISA's SIMT
// semantics and counts what the kernel does.
//
// Execution model (PTX ISA 8.x, chapter 3 "Parallel Thread Execution Machine Model"):
// the grid's CTAs run one after another; a CTA's threads are split into warps of 32
// by linear thread index (x fastest, then y, then z); each warp executes one
// instruction at a time for its active lanes. Divergent branches are handled by
// minimum-PC scheduling: the warp always runs the group of threads with the lowest
// program counter, and groups that reach the same PC merge. For the structured,
// topologically laid out control flow that nvcc and quantc produce this reconverges at
// the immediate post-dominator, like a SIMT stack. `bar.sync` parks the arriving
// threads until every non-exited thread of the CTA has arrived.
//
// Errors (all RuntimeError, each naming the PTX line and instruction, the thread as
// ctaid=(x,y,z) tid=(x,y,z), and the address where one is involved):
//  - out-of-bounds or misaligned global/shared/local/param access;
//  - shfl.sync / vote.sync / bar.warp.sync executed by a set of threads different from
//    the non-exited threads named by the member mask, or reading an inactive lane;
//  - a kernel that exceeds LaunchOptions::max_warp_instructions (runaway loop).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ir/Program.h"
#include "runtime/Buffers.h"
#include "runtime/backends/emulator/Counters.h"
#include "runtime/backends/emulator/PtxModule.h"

namespace quantc::runtime::emulator {

/// A device allocation: `bytes` is the whole buffer; any access outside it is an
/// error. `name` only labels error messages.
struct DeviceBuffer {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

/// A kernel argument: a pointer to the start of device buffer `buffer` (an index into
/// the launch's buffer list) plus `byte_offset`, or a scalar whose low bytes are
/// copied into the parameter (its size comes from the kernel's `.param` declaration).
struct PointerArgument {
  std::size_t buffer = 0;
  std::uint64_t byte_offset = 0;
};
struct ScalarArgument {
  std::uint64_t bits = 0;
};
using KernelArgument = std::variant<PointerArgument, ScalarArgument>;

struct LaunchConfig {
  std::array<std::uint32_t, 3> grid{1, 1, 1};   // CTAs per dimension
  std::array<std::uint32_t, 3> block{1, 1, 1};  // threads per CTA per dimension
  std::uint32_t dynamic_shared_bytes = 0;       // size of the `.extern .shared` window
};

struct LaunchOptions {
  /// A launch issuing more warp instructions than this is stopped with an error.
  std::uint64_t max_warp_instructions = 1ull << 34;
  /// Called after each CTA with (CTAs done, CTAs in the grid), e.g. for a progress line.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

/// Runs `kernel_name` from `module` over `config`'s grid. `arguments` match the
/// kernel's `.param` list in order (a pointer parameter must be .u64/.b64). Global
/// addresses handed to the kernel are synthetic (buffer i lives at (i+1) << 32), so
/// pointers computed by a kernel can be checked against the buffer they belong to.
/// `buffers` are read and written in place. Throws RuntimeError for a missing kernel,
/// an argument/parameter mismatch, a block larger than .maxntid/1024 threads, and the
/// execution errors listed at the top of this file.
LaunchCounters launch(const Module& module, const std::string& kernel_name, const LaunchConfig& config,
                      std::vector<DeviceBuffer>& buffers, const std::vector<KernelArgument>& arguments,
                      const LaunchOptions& options = {});

/// quantc's calling convention: kernel `program.name`, one `.param .u64` pointer per
/// buffer in binding order, grid = program.workgroup_count, block =
/// program.workgroup_size. `buffers` must match the program (check_buffers); every
/// written buffer (BufferAccess other than ReadOnly) is copied back into `buffers`.
/// Throws PtxParseError for PTX outside the supported subset and RuntimeError as launch().
LaunchCounters run(const std::string& ptx_text, const ir::Program& program, BufferSet& buffers,
                   const LaunchOptions& options = {});

}  // namespace quantc::runtime::emulator
