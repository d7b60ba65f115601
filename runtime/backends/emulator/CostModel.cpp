#include "runtime/backends/emulator/CostModel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace quantc::runtime::emulator {

namespace {

using ptx::Pipe;

// ---- Sources -------------------------------------------------------------------------
// [CPG]   NVIDIA, CUDA C++ Programming Guide (12.x): section "Arithmetic Instructions"
//         (Performance Guidelines > Maximize Instruction Throughput), table "Throughput of
//         Native Arithmetic Instructions (Number of Results per Clock Cycle per
//         Multiprocessor)"; appendix "Compute Capabilities", table "Technical
//         Specifications per Compute Capability"; "Compute Capability 8.x > Shared Memory".
// [OCC]   CUDA Toolkit 13.0, include/cuda_occupancy.h (the CUDA Occupancy Calculator's
//         algorithm): cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor,
//         cudaOccSMemAllocationGranularity, cudaOccMaxBlocksPerSMRegsLimit,
//         cudaOccMaxBlocksPerSMSmemLimit; cudaDeviceProp::reservedSharedMemPerBlock.
// [H100W] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): "H100 SXM5" SM
//         count, figure "H100 Streaming Multiprocessor (SM)" (4 partitions, each one warp
//         scheduler dispatching 32 threads/clk, 8 LD/ST units).
// [H100D] NVIDIA H100 Tensor Core GPU datasheet, SXM column: FP32 67 TFLOPS, FP64 34
//         TFLOPS, GPU memory 80 GB, bandwidth 3.35 TB/s.
// [H200D] NVIDIA H200 Tensor Core GPU datasheet, SXM column: FP32 67 TFLOPS, 141 GB HBM3e,
//         4.8 TB/s.
// [A100W] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), table 1: 108 SMs,
//         boost clock 1410 MHz; figure "GA100 Streaming Multiprocessor (SM)".
// [A100D] NVIDIA A100 Tensor Core GPU datasheet, "A100 80GB SXM": 2,039 GB/s, FP32 19.5 TFLOPS.
// [L40SD] NVIDIA L40S datasheet: 18,176 CUDA cores, 142 RT cores, FP32 91.6 TFLOPS,
//         48 GB GDDR6, 864 GB/s.
// [ADAW]  NVIDIA Ada GPU Architecture whitepaper: 128 FP32 CUDA cores per SM, 4 partitions.
// [LAT]   Unloaded latencies by pointer chasing, in SM cycles, clocks unlocked:
//         github.com/markdewing/AI_kernels, latency/README.md ("Latency" table): L1 / L2 /
//         main memory: A100 SXM 39 / 210 / 550, H100 SXM 40 / 291 / 700, GH200 40 / 281 /
//         690, RTX 4090 (AD102, the L40S's die) 40 / 296 / 636. Of the same order as Luo
//         et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture" (IPDPS
//         2024, arXiv:2402.13499), memory-hierarchy latency section.
// [NVSE]  NVIDIA Nsight Visual Studio Edition, "Achieved IOPs": integer division and
//         modulo are "below 20 instructions on devices of compute capability 2.x and higher".

/// Loaded / unloaded DRAM latency. Under a bandwidth-saturating load requests queue in
/// the memory controllers and the latency a warp sees rises above the pointer-chase
/// figure; 1.5x is this model's assumption, to be replaced by calibration (Calibration).
constexpr double kLoadedLatencyFactor = 1.5;

/// [CPG] throughput table, columns 8.0, 8.9 and 9.0 (results per clock per SM).
/// LD/ST: 32 lanes per clock per SM (8 LD/ST units in each of 4 partitions [H100W],
/// [A100W], [ADAW]). L1: [CPG] "Shared memory has 32 banks ... Each bank has a bandwidth
/// of 32 bits per clock cycle" = 128 bytes per clock per SM, the unified L1/shared data
/// path that global loads share. Dispatch: 4 warp schedulers per SM, one warp
/// instruction per clock each [H100W], [A100W], [ADAW].
/// Tensor cores, dense f16/bf16 inputs with f32 accumulation, multiply-adds per clock per
/// SM: sm_80 1024 ([A100W]: 256 FP16 FMA per clock per Tensor Core, 4 per SM; 312 TFLOPS =
/// 108 SMs x 1.41 GHz x 2 x 1024); sm_89 512 ([L40SD]: 362 TFLOPS FP16 with FP32
/// accumulate = 142 SMs x 2.52 GHz x 2 x 506); sm_90 1024 for mma.sync: [H100D]'s 989
/// TFLOPS (2048 per SM and clock) needs wgmma, and Luo et al. [LAT] measured mma.sync on
/// Hopper well below wgmma, so this model keeps A100's per-SM rate until a GPU calibrates it.
constexpr ArithmeticThroughput kCc80{
    .fp32 = 64, .fp16 = 256, .fp64 = 32, .integer = 64, .integer_multiply = 64, .special = 16,
    .conversion = 16, .shuffle = 32, .load_store = 32, .l1_bytes_per_clock = 128, .dispatch = 4, .tensor_fma = 1024};
constexpr ArithmeticThroughput kCc89{
    .fp32 = 128, .fp16 = 128, .fp64 = 2, .integer = 64, .integer_multiply = 64, .special = 16,
    .conversion = 16, .shuffle = 32, .load_store = 32, .l1_bytes_per_clock = 128, .dispatch = 4, .tensor_fma = 512};
constexpr ArithmeticThroughput kCc90{
    .fp32 = 128, .fp16 = 256, .fp64 = 64, .integer = 64, .integer_multiply = 64, .special = 16,
    .conversion = 16, .shuffle = 32, .load_store = 32, .l1_bytes_per_clock = 128, .dispatch = 4, .tensor_fma = 1024};
/// Multiply-adds of one warp's mma.m16n8k16: 16 x 8 x 16.
constexpr double kMmaM16n8k16Fma = 16 * 8 * 16;

constexpr double kKiB = 1024;

/// Per compute capability [CPG] "Technical Specifications per Compute Capability" and [OCC]:
/// threads / warps / CTAs per SM, registers per SM and per CTA (64 K), 255 registers per
/// thread, 1024 threads per CTA, register allocation unit 256 per warp in 4 sub-partitions,
/// shared memory per SM / per CTA (opt-in), 1 KB reserved per CTA, 128-byte allocation unit.
/// The limits sm_80, sm_89 and sm_90 share; with_cc* add what differs.
DeviceSpec with_common_limits(DeviceSpec d) {
  d.max_threads_per_cta = 1024;
  d.registers_per_sm = 65536, d.max_registers_per_cta = 65536, d.max_registers_per_thread = 255;
  d.register_allocation_unit = 256, d.register_sub_partitions = 4;
  d.reserved_shared_bytes_per_cta = 1024, d.shared_allocation_unit = 128;
  return d;
}
DeviceSpec with_cc80(DeviceSpec d) {
  d = with_common_limits(d);
  d.compute_capability = 80;
  d.max_threads_per_sm = 2048, d.max_warps_per_sm = 64, d.max_ctas_per_sm = 32;
  d.shared_bytes_per_sm = 164 * 1024, d.max_shared_bytes_per_cta = 163 * 1024;
  d.throughput = kCc80;
  return d;
}
DeviceSpec with_cc89(DeviceSpec d) {
  d = with_common_limits(d);
  d.compute_capability = 89;
  d.max_threads_per_sm = 1536, d.max_warps_per_sm = 48, d.max_ctas_per_sm = 24;
  d.shared_bytes_per_sm = 100 * 1024, d.max_shared_bytes_per_cta = 99 * 1024;
  d.throughput = kCc89;
  return d;
}
DeviceSpec with_cc90(DeviceSpec d) {
  d = with_common_limits(d);
  d.compute_capability = 90;
  d.max_threads_per_sm = 2048, d.max_warps_per_sm = 64, d.max_ctas_per_sm = 32;
  d.shared_bytes_per_sm = 228 * 1024, d.max_shared_bytes_per_cta = 227 * 1024;
  d.throughput = kCc90;
  return d;
}

/// Latencies in SM cycles at `clock_hz` ([LAT]); only DRAM's is scaled to loaded.
DeviceSpec device(std::string_view key, std::string_view name, std::string_view memory, unsigned sms, double clock_hz,
                  double bandwidth, double dram_cycles, double l2_cycles, double l1_cycles) {
  DeviceSpec d;
  d.key = key;
  d.name = name;
  d.memory = memory;
  d.sms = sms;
  d.clock_hz = clock_hz;
  d.dram_bandwidth = bandwidth;
  d.dram_latency = kLoadedLatencyFactor * dram_cycles / clock_hz;
  d.l2_latency = l2_cycles / clock_hz;
  d.l1_latency = l1_cycles / clock_hz;
  return d;
}

DeviceSpec calibrated(DeviceSpec d, const Calibration& calibration) {
  d.calibration = calibration;
  return d;
}

/// Cycles per issued instruction of a warp's serial chain (DeviceSpec), fitted on an H200:
/// the value that minimizes the median |modeled / (measured - launch) - 1| over 144 kernels
/// of bench/results/gpu-nvidia-h200.md (the fast schedules at six shapes after the schedule
/// sweep, the seed schedules at the MiniLM shapes; launch ~3 us, later measured 3.33 us),
/// with the sustained bandwidth below fixed: 8 gave 19%, 4 gave 23%, 12 gave 26%, 0 (no
/// chain term) 38%; the model before this term, compared with the raw event times, 82%.
/// It is twice the ~4-cycle dependent-issue latency of an FMA because it also absorbs what
/// the chain waits for besides DRAM load batches (activation loads from L1/L2, shuffles,
/// the scoreboard): Nsight Compute measured 5-30 cycles per issued instruction per warp on
/// these kernels (bench/results/ncu/). Used for every sm_80-sm_90 device; measured on
/// sm_90 only.
constexpr double kWarpCyclesPerInstruction = 8.0;

/// A device-to-device copy's bytes read + written per second over the peak: H200 4,233 GB/s
/// of 4.8 TB/s (bench/results/gpu-nvidia-h200.md); H100 SXM about 3.0 TB/s of 3.35 (a copy
/// on an H100 80GB HBM3 machine of the same kind); A100 and L40S assumed 0.9, unmeasured.
DeviceSpec with_sustained(DeviceSpec d, double sustained_dram_fraction) {
  d.sustained_dram_fraction = sustained_dram_fraction;
  d.warp_cycles_per_instruction = kWarpCyclesPerInstruction;
  return d;
}

/// bench/results/gpu-nvidia-h200.md (2026-11-26). Before the serial-chain term (and the
/// sustained bandwidth) the model's median |error| was 81% over 192 kernels, 5-10x too fast
/// for the batch-1 GEMVs. After fitting warp_cycles_per_instruction to those measurements,
/// the fast schedules rerun on the same GPU (96 kernels, error against the measured time
/// minus the measured 3.33 us launch overhead): median |error| 31%, 23% at the Llama
/// shapes, in-sample. Out of sample, on the k-subgroup schedules of a second session
/// (launch 3.49 us) with the per-line L1 wavefronts: 42%, 36% at the Llama shapes.
/// Recorded here: the latest check (2026-11-28, the same kernels as those of the tensor-core
/// sessions), timed back to back in CUDA graphs as a decode step runs them (`quantc run
/// --timing back-to-back`), nothing subtracted: median |error| 38% over the 96 fast batch-1
/// kernels, 47% at the Llama shapes (the model too fast for the GEMVs, about 2x; within
/// 7-16% for the streaming quantizers), 29% at MiniLM's. The isolated times with the launch
/// subtracted gave 52% at the Llama shapes.
constexpr Calibration kH200Calibration{
    .measured_kernels = 96,
    .median_relative_error = 0.38,
    .note = "H200, 2026-11-28: median |error| 38% over the 96 fast batch-1 kernels timed back to back in CUDA "
            "graphs (47% at the Llama shapes, the model about 2x too fast for the GEMVs; 29% at MiniLM's), "
            "out of sample; isolated times minus the 3.5 us launch: 52% at the Llama shapes; see "
            "bench/results/gpu-nvidia-h200.md"};

std::vector<DeviceSpec> make_devices() {
  return {
      // 132 SMs [H100W]; 1.98 GHz = 67 TFLOPS FP32 [H100D] / (132 SMs x 128 lanes x 2 flops);
      // 3.35 TB/s [H100D]; DRAM 700 cycles [LAT] = 354 ns unloaded -> 530 ns loaded; L2 291, L1 40.
      with_sustained(with_cc90(device("h100_sxm", "NVIDIA H100 SXM5 80GB", "HBM3", 132, 1.98e9, 3.35e12, 700, 291, 40)),
                     3.0 / 3.35),
      // GH100 as in H100 SXM: 67 TFLOPS FP32 [H200D] gives the same 132 SMs at 1.98 GHz;
      // 4.8 TB/s [H200D]; latency as H100 SXM (GH200, the same die with HBM3, 690 [LAT]).
      calibrated(with_sustained(with_cc90(device("h200", "NVIDIA H200 SXM 141GB", "HBM3e", 132, 1.98e9, 4.8e12, 700,
                                                 291, 40)),
                                4233.0 / 4800.0),
                 kH200Calibration),
      // 108 SMs, 1410 MHz [A100W] (19.5 TFLOPS = 108 x 64 x 2 x 1.41 GHz [A100D]);
      // 2,039 GB/s [A100D]; DRAM 550 cycles [LAT] = 390 ns unloaded -> 585 ns loaded; L2 210, L1 39.
      with_sustained(with_cc80(device("a100", "NVIDIA A100 SXM4 80GB", "HBM2e", 108, 1.41e9, 2.039e12, 550, 210, 39)), 0.9),
      // 142 SMs = 18,176 CUDA cores / 128 per SM [L40SD], [ADAW]; 2.52 GHz = 91.6 TFLOPS
      // / (18,176 x 2) [L40SD]; 864 GB/s [L40SD]; DRAM 636 cycles (RTX 4090, AD102) [LAT]
      // = 252 ns unloaded -> 379 ns loaded; L2 296, L1 40.
      with_sustained(with_cc89(device("l40s", "NVIDIA L40S", "GDDR6", 142, 2.52e9, 864e9, 636, 296, 40)), 0.9),
  };
}

/// Subroutine expansions, warp instructions per pipe, approximating the fast path of
/// the SASS ptxas emits (CUDA 12/13). Slow paths (denormal or huge operands, division
/// by zero) are not counted.
///   div_rem_32  I2F.U32.RP + MUFU.RCP + F2I.FTZ.U32.TRUNC, then IMAD/IMAD.HI and
///               IADD3/ISETP/SEL/LOP3 corrections (IABS for signed): 16, matching [NVSE]'s
///               "below 20 instructions".
///   div_rem_64  the 64-bit version: reciprocal estimate, IMAD.WIDE/IMAD.HI chains over
///               32-bit halves, CALL/RET: about 57.
///   f32_div     div.rn.f32: MUFU.RCP, 4 FFMA Newton-Raphson/residual steps, FCHK, branch: 8.
///   f32_div_fast div.approx.f32 = MUFU.RCP + FMUL; div.full.f32 adds one fixup: 3.
///   f64_div     div.rn.f64 / rcp.rn.f64: MUFU.RCP64H, 8 DFMA/DMUL, checks and branch: 14.
///   f64_sqrt    sqrt.rn.f64: MUFU.RSQ64H, 8 DFMA/DMUL, checks and branch: 14.
/// Estimates to be checked against `cuobjdump -sass` where it is installed (it is not here).
std::array<double, ptx::kPipeCount> cost(std::initializer_list<std::pair<Pipe, double>> entries) {
  std::array<double, ptx::kPipeCount> result{};
  for (const auto& [pipe, count] : entries) result[static_cast<std::size_t>(pipe)] = count;
  return result;
}

const std::array<std::array<double, ptx::kPipeCount>, kSubroutineCount>& subroutine_costs() {
  static const std::array<std::array<double, ptx::kPipeCount>, kSubroutineCount> costs = [] {
    std::array<std::array<double, ptx::kPipeCount>, kSubroutineCount> c{};
    c[static_cast<std::size_t>(Subroutine::DivRem32)] =
        cost({{Pipe::Conversion, 2}, {Pipe::Special, 1}, {Pipe::IntegerMultiply, 5}, {Pipe::Integer, 8}});
    c[static_cast<std::size_t>(Subroutine::DivRem64)] = cost(
        {{Pipe::Conversion, 2}, {Pipe::Special, 1}, {Pipe::IntegerMultiply, 20}, {Pipe::Integer, 30}, {Pipe::Control, 4}});
    c[static_cast<std::size_t>(Subroutine::F32Div)] =
        cost({{Pipe::Special, 1}, {Pipe::Fp32, 5}, {Pipe::Integer, 1}, {Pipe::Control, 1}});
    c[static_cast<std::size_t>(Subroutine::F32DivFast)] = cost({{Pipe::Special, 1}, {Pipe::Fp32, 2}});
    c[static_cast<std::size_t>(Subroutine::F64Div)] =
        cost({{Pipe::Special, 1}, {Pipe::Fp64, 8}, {Pipe::Integer, 3}, {Pipe::Control, 2}});
    c[static_cast<std::size_t>(Subroutine::F64Sqrt)] =
        cost({{Pipe::Special, 1}, {Pipe::Fp64, 8}, {Pipe::Integer, 3}, {Pipe::Control, 2}});
    return c;
  }();
  return costs;
}

std::string si_bytes(double bytes) {
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.2f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::uint64_t divide_round_up(std::uint64_t x, std::uint64_t y) { return (x + y - 1) / y; }

}  // namespace

std::string DeviceSpec::arch() const { return fmt::format("sm_{}", compute_capability); }

ir::SmLimits DeviceSpec::sm_limits() const {
  ir::SmLimits sm;
  sm.sms = sms;
  sm.registers_per_sm = registers_per_sm;
  sm.register_unit = register_allocation_unit / 32;  // allocated per warp: a thread's share
  sm.max_threads_per_sm = max_threads_per_sm;
  sm.max_ctas_per_sm = max_ctas_per_sm;
  sm.shared_bytes_per_sm = shared_bytes_per_sm;
  sm.reserved_shared_bytes_per_cta = reserved_shared_bytes_per_cta;
  sm.shared_allocation_unit = shared_allocation_unit;
  sm.max_shared_bytes_per_cta = max_shared_bytes_per_cta;
  return sm;
}

std::uint32_t DynamicShared::on(const DeviceSpec& device, std::uint64_t ctas, std::uint32_t threads,
                                std::uint64_t static_shared_bytes, std::uint32_t registers) const {
  if (!even_waves) return bytes;
  return ir::even_waves_dynamic_shared_bytes(ctas, threads, static_shared_bytes, registers, device.sm_limits());
}

double DeviceSpec::warp_instructions_per_clock(Pipe pipe) const {
  const ArithmeticThroughput& t = throughput;
  switch (pipe) {
    case Pipe::Fp32: return t.fp32 / 32;
    case Pipe::Fp16: return t.fp16 / 64;
    case Pipe::Fp64: return t.fp64 / 32;
    case Pipe::Integer: return t.integer / 32;
    case Pipe::IntegerMultiply: return t.integer_multiply / 32;
    case Pipe::Special: return t.special / 32;
    case Pipe::Conversion: return t.conversion / 32;
    case Pipe::Shuffle: return t.shuffle / 32;
    case Pipe::Control: return t.dispatch;
    case Pipe::Tensor: return t.tensor_fma / kMmaM16n8k16Fma;
    case Pipe::Emulated:
    case Pipe::Move:
    case Pipe::Memory:
      return 0;
  }
  return 0;
}

const std::vector<DeviceSpec>& devices() {
  static const std::vector<DeviceSpec> table = make_devices();
  return table;
}

const DeviceSpec& find_device(std::string_view key) {
  for (const DeviceSpec& device : devices())
    if (device.key == key) return device;
  std::string keys;
  for (const DeviceSpec& device : devices()) keys += (keys.empty() ? "" : ", ") + std::string(device.key);
  throw CostModelError(fmt::format("unknown device '{}'; the modeled devices are: {}", key, keys));
}

const std::array<double, ptx::kPipeCount>& subroutine_cost(Subroutine subroutine) {
  return subroutine_costs()[static_cast<std::size_t>(subroutine)];
}

std::string_view to_string(OccupancyLimit limit) {
  switch (limit) {
    case OccupancyLimit::Warps: return "warps";
    case OccupancyLimit::Registers: return "registers";
    case OccupancyLimit::SharedMemory: return "shared_memory";
    case OccupancyLimit::CtaSlots: return "cta_slots";
  }
  return "?";
}

std::string_view pipe_key(Pipe pipe) {
  switch (pipe) {
    case Pipe::Fp32: return "fp32";
    case Pipe::Fp16: return "fp16";
    case Pipe::Fp64: return "fp64";
    case Pipe::Integer: return "integer";
    case Pipe::IntegerMultiply: return "integer_multiply";
    case Pipe::Special: return "special_function";
    case Pipe::Emulated: return "multi_instruction";
    case Pipe::Conversion: return "conversion";
    case Pipe::Move: return "move";
    case Pipe::Shuffle: return "shuffle";
    case Pipe::Memory: return "memory";
    case Pipe::Control: return "control";
    case Pipe::Tensor: return "tensor";
  }
  return "?";
}

Occupancy occupancy(const KernelResources& r, const DeviceSpec& d) {
  const std::string where = fmt::format("on {} ({})", d.key, d.arch());
  if (r.threads_per_cta == 0 || r.threads_per_cta > d.max_threads_per_cta)
    throw CostModelError(fmt::format("{} threads per CTA cannot launch {}: a CTA holds 1 to {} threads",
                                     r.threads_per_cta, where, d.max_threads_per_cta));
  if (r.registers_per_thread > d.max_registers_per_thread)
    throw CostModelError(fmt::format("{} registers per thread cannot launch {}: at most {} (ptxas never allocates more; "
                                     "check --registers)",
                                     r.registers_per_thread, where, d.max_registers_per_thread));
  Occupancy o;
  o.warps_per_cta = static_cast<unsigned>(divide_round_up(r.threads_per_cta, 32));
  o.ctas_by_warps = d.max_warps_per_sm / o.warps_per_cta;
  o.ctas_by_cta_slots = d.max_ctas_per_sm;

  // [OCC] cudaOccMaxBlocksPerSMRegsLimit: registers go to warps in allocation units, in
  // each sub-partition; the hardware checks the CTA's warps rounded up to the partitions.
  o.registers_per_warp = static_cast<std::uint32_t>(
      divide_round_up(std::uint64_t(r.registers_per_thread) * 32, d.register_allocation_unit) * d.register_allocation_unit);
  const std::uint64_t registers_per_cta = std::uint64_t(o.registers_per_warp) * o.warps_per_cta;
  const std::uint64_t registers_checked =
      std::uint64_t(o.registers_per_warp) * divide_round_up(o.warps_per_cta, d.register_sub_partitions) *
      d.register_sub_partitions;
  if (std::max(registers_per_cta, registers_checked) > d.max_registers_per_cta)
    throw CostModelError(fmt::format(
        "{} registers per thread x {} threads per CTA need {} registers, more than the {} a CTA may use {}; use fewer "
        "threads per CTA or fewer registers (.maxnreg / __launch_bounds__)",
        r.registers_per_thread, r.threads_per_cta, std::max(registers_per_cta, registers_checked),
        d.max_registers_per_cta, where));
  if (o.registers_per_warp == 0) {
    o.ctas_by_registers = std::numeric_limits<unsigned>::max();
  } else {
    const unsigned warps_per_partition = (d.registers_per_sm / d.register_sub_partitions) / o.registers_per_warp;
    o.ctas_by_registers = warps_per_partition * d.register_sub_partitions / o.warps_per_cta;
  }

  // [OCC] cudaOccMaxBlocksPerSMSmemLimit: shared + reserved, rounded to the allocation unit,
  // against the largest carveout (the driver picks a carveout that fits the CTAs).
  const std::uint64_t shared = std::uint64_t(r.shared_bytes_per_cta) + d.reserved_shared_bytes_per_cta;
  o.shared_bytes_allocated =
      static_cast<std::uint32_t>(divide_round_up(shared, d.shared_allocation_unit) * d.shared_allocation_unit);
  if (r.shared_bytes_per_cta > d.max_shared_bytes_per_cta)
    throw CostModelError(fmt::format("{} bytes of shared memory per CTA cannot launch {}: a CTA may use at most {} bytes",
                                     r.shared_bytes_per_cta, where, d.max_shared_bytes_per_cta));
  o.ctas_by_shared_memory = d.shared_bytes_per_sm / o.shared_bytes_allocated;

  o.ctas_per_sm = std::min({o.ctas_by_warps, o.ctas_by_registers, o.ctas_by_shared_memory, o.ctas_by_cta_slots});
  if (o.ctas_per_sm == o.ctas_by_warps) o.limit = OccupancyLimit::Warps;
  else if (o.ctas_per_sm == o.ctas_by_registers) o.limit = OccupancyLimit::Registers;
  else if (o.ctas_per_sm == o.ctas_by_shared_memory) o.limit = OccupancyLimit::SharedMemory;
  else o.limit = OccupancyLimit::CtaSlots;
  if (o.ctas_per_sm == 0)  // registers beyond the SM with a CTA within the per-CTA limit cannot happen; kept as a guard
    throw CostModelError(fmt::format("no CTA of {} threads, {} registers per thread and {} shared bytes fits an SM {}",
                                     r.threads_per_cta, r.registers_per_thread, r.shared_bytes_per_cta, where));
  o.resident_warps = o.ctas_per_sm * o.warps_per_cta;
  o.fraction = double(o.resident_warps) / double(d.max_warps_per_sm);
  return o;
}

double LaunchEstimate::hbm_fraction() const { return seconds > 0 ? memory_bound_seconds / seconds : 0.0; }

std::string LaunchEstimate::limit_key() const {
  switch (limit) {
    case Limit::DramBandwidth: return "dram_bandwidth";
    case Limit::Latency: return "latency";
    case Limit::Ctas: return "ctas";
    case Limit::Issue: return issue_pipe ? "issue_" + std::string(pipe_key(*issue_pipe)) : "issue_dispatch";
  }
  return "?";
}

std::string LaunchEstimate::limit_description() const {
  switch (limit) {
    case Limit::DramBandwidth: return "DRAM bandwidth";
    case Limit::Latency:
      return fmt::format("each warp's serial chain ({:.0f} instructions and {:.1f} waits on loads per warp; {} in flight "
                         "per SM, {} needed for DRAM bandwidth)",
                         instructions_per_warp, load_batches_per_warp, si_bytes(bytes_in_flight_per_sm),
                         si_bytes(bytes_in_flight_needed_per_sm));
    case Limit::Ctas: return "too few CTAs (idle SMs, partial last wave)";
    case Limit::Issue:
      return issue_pipe ? fmt::format("issue on the {} pipe", ptx::to_string(*issue_pipe))
                        : std::string("instruction dispatch (4 warp instructions per clock per SM)");
  }
  return "?";
}

LaunchEstimate estimate_launch(const LaunchCounters& c, const KernelResources& r, const DeviceSpec& d) {
  if (r.ctas == 0) throw CostModelError("a launch of 0 CTAs cannot be modeled; the grid needs at least one CTA");
  if (c.ctas != 0 && c.ctas != r.ctas)
    throw CostModelError(fmt::format("the counters are of a launch of {} CTAs but the resources name {} CTAs; pass the "
                                     "counters of the whole launch",
                                     c.ctas, r.ctas));
  LaunchEstimate e;
  e.occupancy = occupancy(r, d);
  const Occupancy& o = e.occupancy;
  e.cta_slots = std::uint64_t(o.ctas_per_sm) * d.sms;
  const std::uint64_t full_waves = r.ctas / e.cta_slots;
  const std::uint64_t remainder = r.ctas % e.cta_slots;
  e.waves = full_waves + (remainder ? 1 : 0);
  e.last_wave_ctas = remainder ? remainder : e.cta_slots;
  e.active_sms = static_cast<unsigned>(std::min<std::uint64_t>(d.sms, r.ctas));
  const double ctas = double(r.ctas);

  // Work per CTA, in SM cycles on each pipe.
  std::array<double, ptx::kPipeCount> counts{};
  for (std::size_t p = 0; p < ptx::kPipeCount; ++p) counts[p] = double(c.pipe_instructions[p]);
  for (std::size_t s = 0; s < kSubroutineCount; ++s) {
    const auto& expansion = subroutine_cost(static_cast<Subroutine>(s));
    for (std::size_t p = 0; p < ptx::kPipeCount; ++p) counts[p] += expansion[p] * double(c.subroutine_instructions[s]);
  }
  counts[static_cast<std::size_t>(Pipe::Emulated)] = 0;  // charged to the pipes above
  counts[static_cast<std::size_t>(Pipe::Move)] = 0;      // removed by ptxas
  const double lsu_instructions = double(c.pipe(Pipe::Memory)) - double(c.parameter_loads);
  counts[static_cast<std::size_t>(Pipe::Memory)] = lsu_instructions;
  double issued = 0;
  for (double count : counts) issued += count;

  std::array<double, ptx::kPipeCount> cycles_per_cta{};
  for (std::size_t p = 0; p < ptx::kPipeCount; ++p) {
    const auto pipe = static_cast<Pipe>(p);
    if (pipe == Pipe::Memory) {
      // One wavefront per clock: the 128-byte lines each global request touches, and the
      // shared-memory wavefronts (a phase of 128 bytes, more with bank conflicts).
      const double wavefronts = std::max(double(c.global_load_wavefronts + c.global_store_wavefronts),
                                         double(c.global_load_sectors + c.global_store_sectors) * 32 /
                                             d.throughput.l1_bytes_per_clock) +
                                double(c.shared_load_wavefronts + c.shared_store_wavefronts);
      cycles_per_cta[p] = std::max(lsu_instructions * 32 / d.throughput.load_store, wavefronts) / ctas;
    } else if (double rate = d.warp_instructions_per_clock(pipe); rate > 0) {
      cycles_per_cta[p] = counts[p] / rate / ctas;
    }
  }
  const double dispatch_cycles_per_cta = issued / d.throughput.dispatch / ctas;

  // Memory: DRAM bytes and the load round trips of each warp.
  e.dram_bytes = double(c.unique_global_sectors_read + c.unique_global_sectors_written) * 32;
  e.memory_bound_seconds = e.dram_bytes / d.dram_bandwidth;
  const double total_warps = ctas * o.warps_per_cta;
  e.load_batches_per_warp = double(c.global_load_batches) / total_warps;
  e.bytes_in_flight_per_warp =
      c.global_load_batches ? double(c.global_load_sectors) * 32 / double(c.global_load_batches) : 0.0;
  e.bytes_in_flight_per_sm = e.bytes_in_flight_per_warp * o.resident_warps;
  e.bytes_in_flight_needed_per_sm = d.dram_bandwidth * d.dram_latency / d.sms;
  e.instructions_per_warp = issued / total_warps;
  const double chain_seconds = (double(c.global_load_batches_dram) * d.dram_latency +
                                double(c.global_load_batches_l2) * d.l2_latency +
                                double(c.global_load_batches_l1) * d.l1_latency) /
                                   total_warps +
                               e.instructions_per_warp * d.warp_cycles_per_instruction / d.clock_hz;
  const double sustained_memory_seconds = e.memory_bound_seconds / d.sustained_dram_fraction;

  // The waves: full ones, then the partial last one.
  auto add_wave = [&](std::uint64_t wave_ctas, std::uint64_t count) {
    if (count == 0) return;
    const double busiest = double(divide_round_up(wave_ctas, d.sms));  // CTAs on the busiest SM
    double issue = dispatch_cycles_per_cta * busiest / d.clock_hz;
    e.dispatch_seconds += issue * double(count);
    for (std::size_t p = 0; p < ptx::kPipeCount; ++p) {
      const double pipe_seconds = cycles_per_cta[p] * busiest / d.clock_hz;
      e.pipe_seconds[p] += pipe_seconds * double(count);
      issue = std::max(issue, pipe_seconds);
    }
    const double dram = sustained_memory_seconds * double(wave_ctas) / ctas;
    e.issue_bound_seconds += issue * double(count);
    e.latency_bound_seconds += chain_seconds * double(count);
    e.seconds += std::max({issue, dram, chain_seconds}) * double(count);
  };
  add_wave(e.cta_slots, full_waves);
  add_wave(remainder, remainder ? 1 : 0);

  // The limit: each candidate with perfect balance over all SMs; "ctas" is the rest.
  const double sm_clock = double(d.sms) * d.clock_hz;
  e.limit_seconds.emplace_back("dram_bandwidth", sustained_memory_seconds);
  e.limit_seconds.emplace_back("latency", std::max(1.0, ctas / double(e.cta_slots)) * chain_seconds);
  for (std::size_t p = 0; p < ptx::kPipeCount; ++p) {
    if (cycles_per_cta[p] > 0)
      e.limit_seconds.emplace_back("issue_" + std::string(pipe_key(static_cast<Pipe>(p))), cycles_per_cta[p] * ctas / sm_clock);
  }
  e.limit_seconds.emplace_back("issue_dispatch", dispatch_cycles_per_cta * ctas / sm_clock);
  double explained = 0;
  for (const auto& [key, seconds] : e.limit_seconds) explained = std::max(explained, seconds);
  e.limit_seconds.emplace_back("ctas", std::max(0.0, e.seconds - explained));
  const auto largest = std::max_element(e.limit_seconds.begin(), e.limit_seconds.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string& key = largest->first;
  if (key == "dram_bandwidth") e.limit = Limit::DramBandwidth;
  else if (key == "latency") e.limit = Limit::Latency;
  else if (key == "ctas") e.limit = Limit::Ctas;
  else {
    e.limit = Limit::Issue;
    for (std::size_t p = 0; p < ptx::kPipeCount; ++p)
      if (key == "issue_" + std::string(pipe_key(static_cast<Pipe>(p)))) e.issue_pipe = static_cast<Pipe>(p);
  }
  return e;
}

}  // namespace quantc::runtime::emulator
