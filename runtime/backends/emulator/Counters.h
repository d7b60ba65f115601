// The PTX emulator's counters of one launch (runtime::emulator::launch/run return them;
// the backend interface reports them in RunReport::counters; Profile.h formats them).
// Kept apart from Emulator.h so that code reading a report needs no emulator.
#pragma once

#include <array>
#include <cstdint>

#include "ptx/InstructionTable.h"

namespace quantc::runtime::emulator {

/// What one launch executed. "Warp instruction" = one instruction issued for one warp
/// (whatever its active mask); "request" = one warp-level global ld/st instruction;
/// a sector is an aligned 32-byte chunk of global memory (Nsight Compute's
/// l1tex__t_sectors / l1tex__t_requests measure).
struct LaunchCounters {
  std::uint64_t warp_instructions = 0;
  /// Warp instructions by the pipe their instruction-table row names (ptx::Pipe).
  std::array<std::uint64_t, ptx::kPipeCount> pipe_instructions{};
  std::uint64_t thread_instructions = 0;      // sum over warp instructions of active lanes
  std::uint64_t global_load_requests = 0;
  std::uint64_t global_store_requests = 0;    // atomics count as loads and stores
  std::uint64_t global_load_sectors = 0;      // summed over requests
  std::uint64_t global_store_sectors = 0;
  std::uint64_t shared_load_requests = 0;
  std::uint64_t shared_store_requests = 0;
  std::uint64_t unique_global_bytes_read = 0;     // distinct bytes, over all buffers
  std::uint64_t unique_global_bytes_written = 0;
  std::uint64_t barriers = 0;                 // CTA-wide barrier releases
  std::uint64_t ctas = 0;
  std::uint64_t threads = 0;                  // launched threads, all CTAs

  std::uint64_t pipe(ptx::Pipe pipe) const { return pipe_instructions[static_cast<std::size_t>(pipe)]; }
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
  thread_instructions += o.thread_instructions;
  global_load_requests += o.global_load_requests;
  global_store_requests += o.global_store_requests;
  global_load_sectors += o.global_load_sectors;
  global_store_sectors += o.global_store_sectors;
  shared_load_requests += o.shared_load_requests;
  shared_store_requests += o.shared_store_requests;
  unique_global_bytes_read += o.unique_global_bytes_read;
  unique_global_bytes_written += o.unique_global_bytes_written;
  barriers += o.barriers;
  ctas += o.ctas;
  threads += o.threads;
  return *this;
}

}  // namespace quantc::runtime::emulator
