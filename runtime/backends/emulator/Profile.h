// `quantc profile`: the emulator's counters for one kernel launch, per kernel and per
// output element, with a roofline estimate for NVIDIA H100 SXM and H200.
//
// The model (an estimate for comparing kernels, not a measurement):
//  - memory-bound time = unique global bytes (read + written) / HBM bandwidth, i.e. every
//    byte crosses HBM exactly once (perfect L2 reuse, no sector over-fetch);
//  - issue-bound time  = warp instructions / (SMs x 4 warp schedulers x clock), i.e. one
//    warp instruction per scheduler per cycle, perfect occupancy and latency hiding;
//  - the estimate is the larger of the two, and that bound "dominates".
// Device figures: H100 SXM 3.35 TB/s, 132 SMs, 1.98 GHz boost; H200 4.8 TB/s, 132 SMs,
// 1.98 GHz boost (NVIDIA H100/H200 datasheets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator {

struct RooflineDevice {
  std::string name;
  double bandwidth_bytes_per_second = 0;
  unsigned streaming_multiprocessors = 0;
  unsigned schedulers_per_multiprocessor = 4;
  double clock_hz = 0;
};

/// H100 SXM and H200, in that order.
const std::vector<RooflineDevice>& roofline_devices();

struct RooflineEstimate {
  double memory_seconds = 0;  // unique global bytes / bandwidth
  double issue_seconds = 0;   // warp instructions / (SMs x schedulers x clock)
  bool memory_bound() const { return memory_seconds >= issue_seconds; }
  double seconds() const { return memory_bound() ? memory_seconds : issue_seconds; }
};

RooflineEstimate estimate_roofline(const LaunchCounters& counters, const RooflineDevice& device);

/// The profile report as text: the counters (totals, per output element when
/// `output_elements` > 0), coalescing, and the roofline estimate for each device with
/// the model's assumptions spelled out. `target` (e.g. "sm_90") is only printed.
std::string format_profile(const std::string& kernel_name, const std::string& target, const LaunchCounters& counters,
                           std::uint64_t output_elements);

/// Everything `quantc profile` prints for one kernel: runs `ptx_text` for `program` in
/// the emulator on runtime::random_buffers(program, seed) and formats the counters with
/// format_profile; output elements = the readable bytes of every written buffer divided
/// by its element size. Throws what run() throws (parse errors, out-of-bounds accesses...).
std::string profile_program(const ir::Program& program, const std::string& ptx_text, const std::string& target,
                            std::uint64_t seed = 1);

}  // namespace quantc::runtime::emulator
