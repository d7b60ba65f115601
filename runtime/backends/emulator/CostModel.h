// The GPU cost model of `quantc profile`: from what the PTX emulator counted for one
// launch (LaunchCounters) and the launch's resources (KernelResources: threads per CTA,
// CTAs, registers per thread, shared memory per CTA), an estimate of the kernel's time
// on a datacenter GPU (DeviceSpec) and the limit that sets it. Any code holding the
// counters of a PTX launch can call it: `quantc profile`, a schedule chooser, a benchmark
// of hand-written CUDA kernels.
//
// The model. Units: seconds inside, microseconds (us) when printed; bytes; SM cycles.
//
//  1. Occupancy (CUDA Occupancy Calculator, the algorithm of the toolkit's
//     include/cuda_occupancy.h): CTAs per SM = the least of the limits from threads /
//     warps per SM, registers (allocated per warp, rounded up to 256 registers, in each
//     of the SM's 4 register-file sub-partitions), shared memory (static + dynamic + the
//     1 KB per CTA the driver reserves, rounded up to 128 bytes, against the largest
//     shared-memory carveout) and the maximum resident CTAs per SM. A launch that fits
//     no CTA on an SM cannot run: CostModelError.
//
//  2. Waves. CTAs are dealt to SMs in waves of (CTAs per SM x SMs); the last wave may be
//     partial. In a wave of n CTAs the busiest SM holds ceil(n / SMs) of them. Every CTA
//     is assumed to do the launch's average work (counters / CTAs); waves do not overlap.
//
//  3. Per wave, the largest of
//     - issue: for each pipe, the busiest SM's warp instructions on it / the pipe's
//       warp instructions per clock per SM (the Programming Guide's results per clock
//       per SM / 32 lanes); also all issued instructions / 4 (one per warp scheduler per
//       clock). Pipe::Move (mov, cvta) and ld.param issue nothing (ptxas removes moves
//       and folds parameters into constant-bank operands). Pipe::Emulated instructions
//       are charged as the subroutine's instructions on other pipes (subroutine_cost).
//       Loads/stores: max(LSU instructions / 1 per clock per SM, L1 wavefronts at one
//       128-byte line per clock per SM: the distinct lines each global request touches
//       (LaunchCounters::global_load_wavefronts; a warp reading 16 rows' sectors takes
//       16, a contiguous 512 bytes 4) + the shared-memory wavefronts (a 128-byte phase
//       each, more where lanes conflict in a bank: LaunchCounters::shared_load_wavefronts);
//     - DRAM bandwidth: the wave's share of the unique global sectors x 32 bytes / the
//       device's sustained DRAM bandwidth (peak x the fraction a device copy reaches;
//       every sector crosses DRAM once: perfect L2 reuse; a sector the launch writes
//       and then reads, such as split-K partial sums, crosses it once, as a write,
//       since the write-back L2 serves the read: LaunchCounters::unique_global_sectors_read);
//     - the warp's serial chain: each time a warp waits for its loads in flight (a load
//       batch, LaunchCounters::global_load_batches) it pays the latency of the slowest
//       level the batch reaches: loaded DRAM latency for a batch with a compulsory miss,
//       L2 or L1 hit latency otherwise; and each instruction it issues costs
//       warp_cycles_per_instruction (dependent-issue latency and the waits batches do not
//       count), fitted to kernels measured on an H200. The wave lasts at least the
//       average warp's chain. This is what bounds a batch-1 GEMV whose grid leaves SMs
//       with a few warps (measured: 0.2-0.6 waves, 4-30% achieved occupancy). For DRAM batches this is Little's law: the SMs keep resident warps x bytes
//       in flight per warp in flight, the achievable bandwidth is min(peak, bytes in
//       flight / latency), and bytes in flight per SM below bandwidth x latency / SMs
//       make the kernel latency-bound.
//     The modeled time is the sum over waves.
//
//  4. The limit: the largest of
//     - dram_bandwidth: unique sectors x 32 / bandwidth (memory_bound_seconds);
//     - latency: max(1, CTAs / CTA slots) x the average warp's serial chain;
//     - issue_<pipe> / issue_dispatch: the pipe's work spread evenly over all SMs;
//     - ctas: what the modeled time exceeds all three by: SMs idle for want of CTAs
//       (fewer CTAs than SMs, a partial last wave).
//
// What it leaves out (see README "quantc profile"): L1/L2 hit rates and L2 bandwidth
// (re-read data is free), register
// spills (reported, not timed), the shared FP32/INT32 datapath of sm_86/89, tensor
// cores, launch overhead (a few us per launch on the host), clock throttling. Counts are
// of PTX instructions, not of the SASS ptxas makes of them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Occupancy.h"
#include "ptx/InstructionTable.h"
#include "runtime/backends/emulator/Counters.h"

namespace quantc::runtime::emulator {

/// A launch the model cannot estimate: invalid resources, or a launch the device would
/// refuse (too many threads, registers or shared memory per CTA for it). The message
/// names the value, the device's limit and the fix.
class CostModelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Native arithmetic throughput of one compute capability, in results per clock per SM
/// (per lane-operation: a warp instruction on all 32 lanes is 32 results), as the CUDA
/// C++ Programming Guide lists it (section "Arithmetic Instructions", table
/// "Throughput of Native Arithmetic Instructions"), plus the load/store path.
struct ArithmeticThroughput {
  double fp32 = 0;              // 32-bit floating-point add, multiply, multiply-add
  double fp16 = 0;              // 16-bit floating-point add, multiply, multiply-add (a .f16x2 lane = 2 results)
  double fp64 = 0;              // 64-bit floating-point add, multiply, multiply-add
  double integer = 0;           // 32-bit integer add/subtract, shift, compare/min/max, bitwise AND/OR/XOR
  double integer_multiply = 0;  // 32-bit integer multiply, multiply-add
  double special = 0;           // 32-bit floating-point reciprocal, rsqrt, log2, exp2, sine, cosine (MUFU)
  double conversion = 0;        // "all other type conversions" (int <-> float, float <-> float, 64-bit)
  double shuffle = 0;           // warp shuffle
  double load_store = 0;        // lanes of load/store per clock per SM (LD/ST units): 32 = one warp instruction
  double l1_bytes_per_clock = 0;  // L1/shared data path bytes per clock per SM: 32 banks x 4 bytes
  double dispatch = 0;          // warp instructions issued per clock per SM: one per warp scheduler
  double tensor_fma = 0;        // dense f16/bf16 tensor-core multiply-adds (f32 accumulate) per clock per SM
};

/// Where the model's error against measured GPU times is recorded, per device: empty for
/// a device nobody has measured. The H200's comes from bench/gpu/run.sh
/// (bench/results/gpu-nvidia-h200.md): CUDA-event times of single launches after an L2
/// flush, against this model's modeled_us for the same PTX.
struct Calibration {
  unsigned measured_kernels = 0;               // kernels timed on the device (CUDA events, median of >= 100)
  std::optional<double> median_relative_error;  // median |modeled - measured| / measured
  std::string_view note = "not calibrated: no GPU measurement has been recorded yet";
};

/// One modeled GPU: what the model needs, with the source of every figure in
/// CostModel.cpp next to its value.
struct DeviceSpec {
  std::string_view key;       // "h100_sxm", "h200", "a100", "l40s": what --device takes
  std::string_view name;      // "NVIDIA H100 SXM5 80GB"
  int compute_capability = 0; // major * 10 + minor: 90, 89, 80
  unsigned sms = 0;           // streaming multiprocessors
  double clock_hz = 0;        // boost clock of the SMs
  double dram_bandwidth = 0;  // peak DRAM bandwidth, bytes per second
  /// Fraction of the peak a streaming kernel sustains: a device-to-device copy's bytes read
  /// + written per second over the peak, measured (H100, H200) or assumed (the others).
  double sustained_dram_fraction = 1;
  /// Cycles a warp's serial chain spends per issued instruction, on top of its load
  /// latencies: dependent-issue latency plus the L1/L2 and shuffle waits that load batches
  /// do not count. Fitted to measured kernels (CostModel.cpp), not a hardware constant.
  double warp_cycles_per_instruction = 0;
  double dram_latency = 0;    // loaded DRAM latency, seconds
  double l2_latency = 0;      // L2 hit latency, seconds
  double l1_latency = 0;      // L1 hit latency, seconds
  std::string_view memory;    // "HBM3"
  unsigned max_threads_per_sm = 0;
  unsigned max_warps_per_sm = 0;
  unsigned max_ctas_per_sm = 0;
  unsigned max_threads_per_cta = 0;
  unsigned registers_per_sm = 0;          // 32-bit registers
  unsigned max_registers_per_cta = 0;
  unsigned max_registers_per_thread = 0;
  unsigned register_allocation_unit = 0;  // registers, allocated per warp
  unsigned register_sub_partitions = 0;   // register-file partitions (one per warp scheduler)
  std::uint32_t shared_bytes_per_sm = 0;       // largest shared-memory carveout
  std::uint32_t max_shared_bytes_per_cta = 0;  // with the opt-in attribute (cudaFuncAttributeMaxDynamicSharedMemorySize)
  std::uint32_t reserved_shared_bytes_per_cta = 0;  // the driver's, per CTA
  std::uint32_t shared_allocation_unit = 0;    // bytes
  ArithmeticThroughput throughput;             // of its compute capability
  Calibration calibration;

  std::string arch() const;  // "sm_90"
  /// The limits above as ir::SmLimits (ir/Occupancy.h): what a launch's even-waves
  /// reservation is sized by on this device.
  ir::SmLimits sm_limits() const;
  /// Warp instructions per clock per SM on `pipe` (throughput / 32 lanes; fp16 / 64 since a
  /// lane of an f16x2 instruction makes two results; Control at the dispatch rate).
  /// 0 for Pipe::Move (free), Pipe::Emulated (charged to other pipes) and Pipe::Memory
  /// (modeled from requests and sectors).
  double warp_instructions_per_clock(ptx::Pipe pipe) const;
};

/// The dynamic shared memory of a launch: a count of bytes (a PTX launch's), or a program's
/// even-waves reservation (Program::reserved_shared_bytes, `bytes` its H100 plan), which
/// each modeled device gets sized for itself from its SM limits and the kernel's registers
/// there, as the CUDA backend sizes it for the device it launches on (ir/Occupancy.h).
struct DynamicShared {
  std::uint32_t bytes = 0;
  bool even_waves = false;
  DynamicShared(std::uint32_t fixed_bytes = 0) : bytes(fixed_bytes) {}  // NOLINT: a count converts
  static DynamicShared even_waves_plan(std::uint32_t planned_bytes) {
    DynamicShared shared(planned_bytes);
    shared.even_waves = planned_bytes != 0;
    return shared;
  }
  /// The bytes a CTA gets on `device` in a launch of `ctas` CTAs of `threads` threads,
  /// `static_shared_bytes` of `.shared` and `registers` a thread: `bytes`, or for an
  /// even-waves plan ir::even_waves_dynamic_shared_bytes with the device's sm_limits().
  std::uint32_t on(const DeviceSpec& device, std::uint64_t ctas, std::uint32_t threads,
                   std::uint64_t static_shared_bytes, std::uint32_t registers) const;
};

/// The modeled devices in a fixed order: h100_sxm, h200, a100, l40s.
const std::vector<DeviceSpec>& devices();
/// The device whose key is `key`; throws CostModelError naming the key and listing the keys.
const DeviceSpec& find_device(std::string_view key);

/// Warp instructions per pipe that one warp instruction of `subroutine` expands into
/// (its SASS fast path; see CostModel.cpp for each sequence).
const std::array<double, ptx::kPipeCount>& subroutine_cost(Subroutine subroutine);

/// What a launch asks of each SM.
struct KernelResources {
  std::uint32_t threads_per_cta = 0;       // block size (x * y * z)
  std::uint64_t ctas = 0;                  // grid size (x * y * z)
  std::uint32_t registers_per_thread = 0;  // as ptxas allocated them (`ptxas -v` "Used N registers")
  std::uint32_t shared_bytes_per_cta = 0;  // static + dynamic .shared bytes, without the driver's reserved 1 KB
};

/// Which resource bounds CTAs per SM.
enum class OccupancyLimit : std::uint8_t { Warps, Registers, SharedMemory, CtaSlots };
std::string_view to_string(OccupancyLimit limit);  // "warps", "registers", "shared_memory", "cta_slots"

struct Occupancy {
  unsigned ctas_per_sm = 0;     // resident CTAs per SM: the least of the four limits below
  unsigned warps_per_cta = 0;
  unsigned resident_warps = 0;  // per SM: ctas_per_sm x warps_per_cta
  double fraction = 0;          // resident_warps / max warps per SM
  OccupancyLimit limit = OccupancyLimit::Warps;  // the first limit (in enum order) equal to ctas_per_sm
  unsigned ctas_by_warps = 0;
  unsigned ctas_by_registers = 0;     // UINT32_MAX-like large value when registers do not bound it
  unsigned ctas_by_shared_memory = 0;
  unsigned ctas_by_cta_slots = 0;
  std::uint32_t registers_per_warp = 0;     // allocated: registers x 32 rounded up to the allocation unit
  std::uint32_t shared_bytes_allocated = 0; // per CTA: shared + reserved, rounded up to the allocation unit
};

/// CTAs per SM for `resources` on `device`. Throws CostModelError for threads_per_cta
/// of 0 or above the device's per-CTA maximum, more registers per thread than it has,
/// registers x threads above its per-CTA register file, shared memory above its per-CTA
/// maximum; each message names the value, the limit and what to change.
Occupancy occupancy(const KernelResources& resources, const DeviceSpec& device);

/// The limits the model names.
enum class Limit : std::uint8_t { DramBandwidth, Latency, Issue, Ctas };

/// The model's estimate of one launch on one device. Times in seconds.
struct LaunchEstimate {
  Occupancy occupancy;
  std::uint64_t cta_slots = 0;   // CTAs resident at once on the whole GPU: ctas_per_sm x SMs
  std::uint64_t waves = 0;       // ceil(CTAs / cta_slots)
  std::uint64_t last_wave_ctas = 0;
  unsigned active_sms = 0;       // SMs with a CTA in the first wave
  double dram_bytes = 0;         // unique global sectors x 32
  double memory_bound_seconds = 0;   // dram_bytes / peak DRAM bandwidth (the modeled time is at least
                                     // dram_bytes / (sustained fraction x peak))
  double latency_bound_seconds = 0;  // sum over waves of the average warp's serial chain (below)
  double instructions_per_warp = 0;  // issued warp instructions / warps: the chain's instructions
  std::array<double, ptx::kPipeCount> pipe_seconds{};  // per pipe, the busiest SM, summed over waves
  double dispatch_seconds = 0;       // the same for all issued instructions at the dispatch rate
  double issue_bound_seconds = 0;    // sum over waves of the busiest SM's largest pipe / dispatch time
  double seconds = 0;                // the modeled time: sum over waves of max(issue, DRAM, latency)
  double load_batches_per_warp = 0;
  double bytes_in_flight_per_warp = 0;  // 32 x global load sectors / load batches
  double bytes_in_flight_per_sm = 0;    // ... x resident warps of a full SM
  double bytes_in_flight_needed_per_sm = 0;  // bandwidth x latency / SMs (Little's law)
  /// The candidates of the limit (see the top of this file), seconds, keyed by
  /// limit_key(): dram_bandwidth, latency, issue_<pipe>..., issue_dispatch, ctas.
  std::vector<std::pair<std::string, double>> limit_seconds;
  Limit limit = Limit::DramBandwidth;
  std::optional<ptx::Pipe> issue_pipe;  // Limit::Issue: the pipe; nullopt: dispatch

  /// memory_bound_seconds / seconds: the fraction of peak DRAM bandwidth the modeled
  /// time uses (0 when the modeled time is 0).
  double hbm_fraction() const;
  /// "dram_bandwidth", "latency", "issue_<pipe>" (pipe_key), "issue_dispatch" or "ctas".
  std::string limit_key() const;
  /// The same in words: "DRAM bandwidth", "load latency (... in flight per SM, ... needed)",
  /// "issue on the fp32 pipe", ...
  std::string limit_description() const;
};

/// The snake_case key of a pipe in JSON and limit keys: fp32, fp16, fp64, integer,
/// integer_multiply, special_function, multi_instruction, conversion, move, shuffle,
/// memory, control.
std::string_view pipe_key(ptx::Pipe pipe);

/// Estimates one launch: `counters` are the whole launch's (every CTA), `resources` its
/// shape and resources. Throws CostModelError as occupancy() does, for a launch of 0
/// CTAs, and when counters.ctas is set (nonzero) and differs from resources.ctas.
LaunchEstimate estimate_launch(const LaunchCounters& counters, const KernelResources& resources,
                               const DeviceSpec& device);

}  // namespace quantc::runtime::emulator
