// Occupancy: how many workgroups (CTAs) of a program one multiprocessor (SM) holds at once,
// and the shared memory a launch reserves so that a grid's waves come out even. One
// definition for the schedules that plan for an H100 (ir/ops/SplitK.h), the CUDA backend,
// which sizes the reservation for the device it launches on, and the cost model, which
// sizes it for each modeled device. The limits follow the CUDA C++ Programming Guide
// ("Technical Specifications per Compute Capability"; "Shared Memory", the 1 KiB each CTA
// loses to the system) and the CUDA Occupancy Calculator's rounding of registers.
#pragma once

#include <cstdint>

namespace quantc::ir {

/// What one SM of a device holds at once, and its SM count.
struct SmLimits {
  std::uint32_t sms = 0;                         // SMs of the device
  std::uint32_t registers_per_sm = 0;            // 32-bit registers
  std::uint32_t register_unit = 8;               // registers a thread are allocated in units of this many
  std::uint32_t max_threads_per_sm = 0;
  std::uint32_t max_ctas_per_sm = 0;
  std::uint64_t shared_bytes_per_sm = 0;         // the largest shared-memory carveout
  std::uint64_t reserved_shared_bytes_per_cta = 0;  // the system's, per CTA (1 KiB from sm_80)
  std::uint64_t shared_allocation_unit = 128;    // bytes
  std::uint64_t max_shared_bytes_per_cta = 0;    // with the opt-in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
};

/// An H100 SXM's (sm_90): 132 SMs, 65536 registers, 2048 threads, 32 CTAs and 228 KiB of
/// shared memory an SM, 227 KiB a CTA. The device the fast schedules are tuned for.
inline constexpr SmLimits kH100SxmSm{132, 65536, 8, 2048, 32, 228 * 1024, 1024, 128, 227 * 1024};

/// CTAs of `threads` threads, `shared_bytes` of shared memory (static and dynamic) and
/// `registers` a thread (rounded up to the register unit) that one SM holds: the fewest of
/// its CTA slots, threads, registers and shared memory (each CTA's plus the system's). 0
/// where `threads` or `registers` is 0 or a CTA does not fit.
std::uint32_t resident_ctas(std::uint32_t threads, std::uint64_t shared_bytes, std::uint32_t registers,
                            const SmLimits& sm);

/// The dynamic shared memory that evens out the waves of a grid of `ctas` CTAs of
/// `threads` threads, `static_shared_bytes` of `.shared` and `registers` a thread on
/// `sm`'s device. Where an SM holds r0 (resident_ctas) and the grid takes W =
/// ceil(ctas / (sms r0)) >= 2 waves, r = ceil(ctas / (sms W)) CTAs an SM make the same W
/// waves nearly equal: the bytes that let an SM hold r (its shared memory over r, in
/// allocation units, less the system's and the `.shared`). 0 where the grid is one wave,
/// r is not below `most_resident` (0: r0; a plan that does not know its registers yet
/// passes what the fewest would allow), or the CTA's shared memory would pass
/// kMaxLaunchSharedBytes (ir/Program.h) or the device's opt-in limit.
std::uint32_t even_waves_dynamic_shared_bytes(std::uint64_t ctas, std::uint32_t threads,
                                              std::uint64_t static_shared_bytes, std::uint32_t registers,
                                              const SmLimits& sm, std::uint32_t most_resident = 0);

}  // namespace quantc::ir
