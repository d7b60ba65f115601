// The PTX emulator's counters of one launch (runtime::emulator::launch/run return them;
// the backend interface reports them in RunReport::counters; Profile.h formats them).
// Kept apart from Emulator.h so that code reading a report needs no emulator.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/InstructionTable.h"

namespace quantc::runtime::emulator {

/// The multi-instruction PTX forms (ptx::Pipe::Emulated), by the SASS subroutine ptxas
/// expands them into; the cost model (CostModel.h) charges each to the pipes it runs on.
/// (enumerator, printed name)
#define QUANTC_SUBROUTINES(X)                                                     \
  X(DivRem32, "div_rem_32")         /* div/rem on 16/32-bit integers */           \
  X(DivRem64, "div_rem_64")         /* div/rem on 64-bit integers */              \
  X(F32Div, "f32_div")              /* div.rn/.rz/.rm/.rp.f32: IEEE-rounded */    \
  X(F32DivFast, "f32_div_fast")     /* div.approx.f32, div.full.f32 */            \
  X(F64Div, "f64_div")              /* div.f64, rcp.f64 */                        \
  X(F64Sqrt, "f64_sqrt")            /* sqrt.f64 */

enum class Subroutine : std::uint8_t {
#define QUANTC_ENUM(name, text) name,
  QUANTC_SUBROUTINES(QUANTC_ENUM)
#undef QUANTC_ENUM
};
#define QUANTC_COUNT(name, text) +1
inline constexpr unsigned kSubroutineCount = 0 QUANTC_SUBROUTINES(QUANTC_COUNT);
#undef QUANTC_COUNT
constexpr std::string_view to_string(Subroutine subroutine) {
  switch (subroutine) {
#define QUANTC_CASE(name, text) \
  case Subroutine::name:        \
    return text;
    QUANTC_SUBROUTINES(QUANTC_CASE)
#undef QUANTC_CASE
  }
  return "?";
}

/// Global-memory traffic of one buffer of a launch, counted per warp-level request as
/// Nsight Compute's memory tables do: a request that touches the buffer counts once for
/// it, with the buffer's sectors it touches and the bytes its active lanes asked for.
/// `bytes` ÷ (32 × `sectors`) is the request's sector efficiency (Nsight's "sector
/// utilization"): 1.0 when every byte of every fetched 32-byte sector is used.
struct BufferTraffic {
  std::string name;  // the launch's DeviceBuffer::name
  std::uint64_t load_requests = 0, load_sectors = 0, load_bytes = 0;
  std::uint64_t store_requests = 0, store_sectors = 0, store_bytes = 0;  // atomics count as loads and stores

  /// Requested bytes per byte of the sectors the requests touch (0 without requests).
  double load_sector_efficiency() const { return load_sectors ? double(load_bytes) / (32.0 * double(load_sectors)) : 0.0; }
  double store_sector_efficiency() const {
    return store_sectors ? double(store_bytes) / (32.0 * double(store_sectors)) : 0.0;
  }
  BufferTraffic& operator+=(const BufferTraffic& other);
};

inline BufferTraffic& BufferTraffic::operator+=(const BufferTraffic& o) {
  if (name.empty()) name = o.name;
  load_requests += o.load_requests, load_sectors += o.load_sectors, load_bytes += o.load_bytes;
  store_requests += o.store_requests, store_sectors += o.store_sectors, store_bytes += o.store_bytes;
  return *this;
}

/// A PTX instruction whose shared-memory requests met bank conflicts (what Nsight Compute's
/// source view shows per instruction): its source line and text, and over the launch its
/// requests that conflicted, their wavefronts and the wavefronts beyond one a phase.
struct SharedConflictSite {
  std::uint32_t line = 0;  // 1-based line of the PTX module
  std::string instruction;
  std::uint64_t requests = 0, wavefronts = 0, bank_conflicts = 0;
};

/// The sites LaunchCounters keeps: the most bank conflicts first (then the earlier line).
inline constexpr std::size_t kSharedConflictSites = 5;
inline void keep_most_conflicted(std::vector<SharedConflictSite>& sites) {
  std::stable_sort(sites.begin(), sites.end(), [](const SharedConflictSite& a, const SharedConflictSite& b) {
    return a.bank_conflicts != b.bank_conflicts ? a.bank_conflicts > b.bank_conflicts : a.line < b.line;
  });
  if (sites.size() > kSharedConflictSites) sites.resize(kSharedConflictSites);
}

/// What one launch executed. "Warp instruction" = one instruction issued for one warp
/// (whatever its active mask); "request" = one warp-level global ld/st instruction;
/// a sector is an aligned 32-byte chunk of global memory (Nsight Compute's
/// l1tex__t_sectors / l1tex__t_requests measure).
struct LaunchCounters {
  std::uint64_t warp_instructions = 0;
  /// Warp instructions by the pipe their instruction-table row names (ptx::Pipe), except
  /// integer-to-integer cvt: Move when it is a truncation or a 32 -> 64-bit zero extension
  /// (no SASS instruction), else Integer.
  std::array<std::uint64_t, ptx::kPipeCount> pipe_instructions{};
  /// The Pipe::Emulated warp instructions by subroutine (they sum to pipe(Emulated)).
  std::array<std::uint64_t, kSubroutineCount> subroutine_instructions{};
  /// Warp-level `ld.param` (part of pipe(Memory)): ptxas folds kernel parameters into
  /// constant-bank operands, so they issue nothing on the GPU.
  std::uint64_t parameter_loads = 0;
  std::uint64_t thread_instructions = 0;      // sum over warp instructions of active lanes
  std::uint64_t global_load_requests = 0;
  std::uint64_t global_store_requests = 0;    // atomics count as loads and stores
  std::uint64_t global_load_sectors = 0;      // summed over requests
  std::uint64_t global_store_sectors = 0;
  /// L1 wavefronts of the global requests: the distinct 128-byte lines each touches,
  /// summed over requests (a request's lines pass the L1 one per clock: 16 sectors in 16
  /// rows take 16 wavefronts, 16 contiguous sectors 4).
  std::uint64_t global_load_wavefronts = 0;
  std::uint64_t global_store_wavefronts = 0;
  std::uint64_t shared_load_requests = 0;
  std::uint64_t shared_store_requests = 0;
  /// Shared-memory wavefronts (Nsight Compute's l1tex__data_pipe_lsu_wavefronts_mem_shared),
  /// summed over requests. A request's lanes are served in phases of 128 bytes: lanes of
  /// 4-byte (or narrower) accesses all in one phase, of 8-byte accesses 16 a phase, of
  /// 16-byte accesses 8 a phase (ldmatrix: one phase a matrix, its 8 rows of 16 bytes).
  /// A phase takes as many wavefronts as the most distinct 4-byte words it reads in one
  /// of the 32 banks (bank = byte offset / 4 mod 32; lanes reading the same word share
  /// it: a broadcast). So a conflict-free request takes one wavefront a phase.
  std::uint64_t shared_load_wavefronts = 0;
  std::uint64_t shared_store_wavefronts = 0;
  /// The wavefronts beyond one a phase (Nsight Compute's shared bank conflicts).
  std::uint64_t shared_bank_conflicts = 0;
  /// The instructions with the most bank conflicts (kSharedConflictSites at most, most
  /// first); summed counters (operator+=) keep the most of both sides.
  std::vector<SharedConflictSite> shared_conflict_sites;
  std::uint64_t unique_global_bytes_read = 0;     // distinct bytes, over all buffers
  std::uint64_t unique_global_bytes_written = 0;
  /// Distinct aligned 32-byte sectors, over all buffers (each starts sector-aligned), that
  /// DRAM moves when every sector crosses it once: read = holding a byte read before the
  /// launch wrote it (a sector the launch wrote and then reads, such as split-K partial
  /// sums, is read from the write-back L2 and crosses DRAM once, when written back);
  /// written = holding a byte written.
  std::uint64_t unique_global_sectors_read = 0;
  std::uint64_t unique_global_sectors_written = 0;
  /// Memory-level parallelism of global loads. A warp's "load batch" is the run of
  /// global load requests it issues before its first instruction that reads or writes
  /// the destination register of a load still in flight (where a GPU warp stalls on
  /// its scoreboard); the batch then ends and every load issued so far counts as
  /// arrived. A warp that exits with loads in flight ends a batch too. A
  /// cp.async.wait_group that lands copies ends one as well, unless every group it lands
  /// was committed before the warp's previous such batch began (a pipeline's later stages,
  /// in flight during it: a ring of R stages refilled a stage at a time ends one every
  /// R - 1 stages; Warp::async_round_trips). So
  /// global_load_requests / global_load_batches = independent loads in flight per warp,
  /// and 32 x global_load_sectors / global_load_batches = bytes in flight per warp.
  /// Measured on PTX order: ptxas may hoist loads further, so this is a lower bound.
  std::uint64_t global_load_batches = 0;
  /// The batches by where their slowest request finds its data, with caches that never
  /// evict: DRAM when a sector was never touched by the launch before (a compulsory
  /// miss: the sectors DRAM moves once), else L2 when a sector was not loaded by this
  /// CTA since the launch last stored to it, else L1. They sum to global_load_batches.
  std::uint64_t global_load_batches_dram = 0;
  std::uint64_t global_load_batches_l2 = 0;
  std::uint64_t global_load_batches_l1 = 0;
  std::uint64_t barriers = 0;                 // CTA-wide barrier releases
  /// Per buffer of the launch, in the launch's buffer order (quantc: binding order).
  std::vector<BufferTraffic> buffers;
  std::uint64_t ctas = 0;
  std::uint64_t threads = 0;                  // launched threads, all CTAs

  std::uint64_t pipe(ptx::Pipe pipe) const { return pipe_instructions[static_cast<std::size_t>(pipe)]; }
  std::uint64_t subroutine(Subroutine subroutine) const {
    return subroutine_instructions[static_cast<std::size_t>(subroutine)];
  }
  double sectors_per_load_request() const {
    return global_load_requests ? double(global_load_sectors) / double(global_load_requests) : 0.0;
  }
  double sectors_per_store_request() const {
    return global_store_requests ? double(global_store_sectors) / double(global_store_requests) : 0.0;
  }
  LaunchCounters& operator+=(const LaunchCounters& other);
};

inline LaunchCounters& LaunchCounters::operator+=(const LaunchCounters& o) {
  warp_instructions += o.warp_instructions;
  for (std::size_t i = 0; i < pipe_instructions.size(); ++i) pipe_instructions[i] += o.pipe_instructions[i];
  for (std::size_t i = 0; i < subroutine_instructions.size(); ++i) subroutine_instructions[i] += o.subroutine_instructions[i];
  parameter_loads += o.parameter_loads;
  thread_instructions += o.thread_instructions;
  global_load_requests += o.global_load_requests;
  global_store_requests += o.global_store_requests;
  global_load_sectors += o.global_load_sectors;
  global_store_sectors += o.global_store_sectors;
  global_load_wavefronts += o.global_load_wavefronts;
  global_store_wavefronts += o.global_store_wavefronts;
  shared_load_requests += o.shared_load_requests;
  shared_store_requests += o.shared_store_requests;
  shared_load_wavefronts += o.shared_load_wavefronts;
  shared_store_wavefronts += o.shared_store_wavefronts;
  shared_bank_conflicts += o.shared_bank_conflicts;
  shared_conflict_sites.insert(shared_conflict_sites.end(), o.shared_conflict_sites.begin(), o.shared_conflict_sites.end());
  keep_most_conflicted(shared_conflict_sites);
  unique_global_bytes_read += o.unique_global_bytes_read;
  unique_global_bytes_written += o.unique_global_bytes_written;
  unique_global_sectors_read += o.unique_global_sectors_read;
  unique_global_sectors_written += o.unique_global_sectors_written;
  global_load_batches += o.global_load_batches;
  global_load_batches_dram += o.global_load_batches_dram;
  global_load_batches_l2 += o.global_load_batches_l2;
  global_load_batches_l1 += o.global_load_batches_l1;
  barriers += o.barriers;
  if (buffers.size() < o.buffers.size()) buffers.resize(o.buffers.size());
  for (std::size_t i = 0; i < o.buffers.size(); ++i) buffers[i] += o.buffers[i];
  ctas += o.ctas;
  threads += o.threads;
  return *this;
}

}  // namespace quantc::runtime::emulator
