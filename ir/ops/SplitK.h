// Split-K across workgroups with a deterministic reduction, for the fast GEMVs whose
// output columns are too few to give every SM a CTA (a 4096-column INT4 layer has 64
// whole 32-byte sectors per weight row; 132 SMs want more CTAs than that).
//
// The reduction of each output is cut into `splits` parts, one per workgroup of a
// "unit" (the workgroups that share the same outputs). Each workgroup reduces its part,
// then the unit's workgroups meet through two scratch buffers (ir::BufferAccess::Scratch):
//  1. every workgroup stores its partial sums to `partials[split * outputs + output]`,
//     fences (fence.acq_rel.gpu) and draws a ticket: an atomic add on `arrivals[unit]`;
//  2. the workgroup that draws ticket splits - 1 is the last of its unit: it fences
//     again, adds the unit's partials in split order 0, 1, ..., splits - 1 (so the result
//     does not depend on which workgroup finished last: the same bits on every run, on
//     every backend), zeroes those partials and the unit's counter, and finishes the
//     outputs (scale, bias, store). Where SplitK::registers_in_flight allows, it loads
//     the partials of several splits before adding any, so that it waits on the L2 once
//     per batch rather than once per split: this reduction runs in the grid's tail, and
//     with one wait a split it took a third of an H200's stall samples in the tensor GEMM
//     at 16 splits (Nsight Compute).
// The scratch is therefore all zeros after every launch, as its contract requires. This
// is the "serial split-K with a semaphore" of CUTLASS and the CUDA samples' threadFence
// reduction, without float atomics. PTX ISA memory consistency model: the stores,
// release-ordered by the fence before the atomic, are visible to the last workgroup's
// loads after its own fence (the atomics form a release sequence on `arrivals[unit]`).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/Builder.h"
#include "ir/Occupancy.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// The scratch of one split-K reduction and its shape.
struct SplitK {
  std::uint32_t splits = 1;   // workgroups per unit (1: no meeting, finish at once)
  std::uint32_t outputs = 0;  // partial sums per split
  ScalarType element = ScalarType::F32;  // of the partial sums: f32 or f64
  BufferRef partials;         // scratch element[splits * outputs]
  BufferRef arrivals;         // scratch u32[units]
  /// The last workgroup loads registers_in_flight / (a lane's 32-bit registers of partial
  /// sums per split) splits at a time (at least one) before it adds them. 0 (one split at a
  /// time) by default: ptxas sizes a kernel by its largest live set, and where registers
  /// bind a GEMV's occupancy more in flight at the tail costs it a wave (dequant_matmul_nvfp4
  /// 4096x11008 with 16: 40 -> 48 registers, 8.6 -> 14.3 us on the H100 model). The ops
  /// whose GPU times said otherwise set their own.
  std::uint32_t registers_in_flight = 0;
  /// Partial sums moved per access: f32x4 (16 bytes), or one f64 (the IR has no f64
  /// vectors).
  std::uint32_t lanes() const { return element == ScalarType::F64 ? 1 : 4; }
};

/// Declares the two scratch buffers (`partials`, `arrivals`) when `splits` > 1, after
/// the program's other buffers. Partials of `element` (f32 or f64) move as f32x4 or
/// scalar f64 (SplitK::lanes()), so for f32 `outputs` must be a multiple of 4. Throws
/// OpError when a count exceeds u32.
SplitK declare_split_k(ProgramBuilder& program, std::uint32_t splits, std::uint32_t outputs, std::uint32_t units,
                       ScalarType element = ScalarType::F32);

/// Emits the meeting for a subgroup (the ticket is broadcast with a shuffle, so the
/// subgroup must be whole and its control uniform): a workgroup's only one, or each of a
/// workgroup's subgroups with a `drawer` and a unit of its own. Lanes where `owner`
/// holds own `values`: the partial sums of outputs `first, first + 1, ...` (`first` and
/// values.size() multiples of split_k.lanes()). `unit` and `split` are the
/// workgroup's (with a `drawer`, the subgroup's unit). `finish` runs in the last
/// workgroup of the unit, for the owner lanes, with the totals in the same order; with
/// splits == 1 it runs at once on `values`.
/// `vector_stride` (0: split_k.lanes(), contiguous): elements between a lane's
/// consecutive vectors of values, e.g. 32 lanes x 4 for a layout in which each vector
/// store of a subgroup covers 512 contiguous bytes rather than one line per lane.
/// `drawer` (default: local invocation 0) is the lane 0 that draws the ticket and resets
/// the arrivals: for a workgroup whose subgroups are units of their own, each one's lane 0.
void emit_split_k_meeting(Body& body, const SplitK& split_k, const Expr& owner, const Expr& first,
                          const std::vector<Expr>& values, const Expr& unit, const Expr& split,
                          const std::function<void(Body&, const std::vector<Expr>& totals)>& finish,
                          std::uint32_t vector_stride = 0, const Expr& drawer = Expr());

/// The splits for `units` units of work whose reduction has `chunks` chunks shared by
/// `lanes_per_split` lanes per workgroup: the fewest (a power of two) that give at least
/// kSplitKTargetWorkgroups workgroups, while every lane keeps at least one chunk.
std::uint32_t choose_splits(std::uint32_t units, std::uint32_t chunks, std::uint32_t lanes_per_split);

/// An op's registry buffers `buffers` followed by the entries of the two scratch buffers,
/// for ops whose fast schedule may split K: `partials` (`element`, `partials_count`
/// elements) and `arrivals` (u32, `units_count`), both noted as present only when the fast
/// schedule splits K.
std::vector<BufferSpec> with_split_k_buffers(std::vector<BufferSpec> buffers, ScalarType element,
                                             const std::string& partials_count, const std::string& units_count);

/// K split across the subgroups of one workgroup ("k-subgroups"): each subgroup reduces
/// its part of K for the same outputs, then they meet in shared memory, without atomics:
/// k-subgroups 1.. store their partial sums, a workgroup barrier, and k-subgroup 0 adds
/// them in k-subgroup order 1, 2, ... to its own (deterministic). Cheaper than the
/// workgroups' meeting above (no scratch, fence or ticket), and it multiplies the warps
/// in flight per output without more workgroups.
struct KSubgroupMeeting {
  std::uint32_t k_subgroups = 1;  // subgroups per output set (1: no meeting)
  std::uint32_t slots = 0;        // partial sums per k-subgroup (all the workgroup's outputs)
  ScalarType element = ScalarType::F32;  // f32 or f64
  BufferRef partials;             // shared element[k_subgroups * slots]; k-subgroup 0's part unused
  bool reused = false;            // partials is an array the reduction reads: a barrier first
};

/// Where an invocation sits in a workgroup of `column_subgroups` x `k_subgroups`
/// subgroups of 32, k-subgroup major (subgroup w of the workgroup is column subgroup
/// w % column_subgroups of k-subgroup w / column_subgroups): `local` its invocation index,
/// `lane` (0..31), its column subgroup and k-subgroup (literal 0 when there is one), and
/// `subgroup` = workgroup_id.x * column_subgroups + column subgroup, the index of the
/// output columns it works on. Lets "local", "column_subgroup", "k_subgroup", "subgroup",
/// "lane" in `body`, in that order.
struct WorkgroupSubgroup {
  Expr local, lane, column_subgroup, k_subgroup, subgroup;
};
WorkgroupSubgroup locate_subgroup(Body& body, std::uint32_t column_subgroups, std::uint32_t k_subgroups);

/// Declares the shared `k_partials` array when `k_subgroups` > 1, or, given `reuse` (a
/// shared array of `element` with at least k_subgroups * slots elements that the
/// reduction only reads), meets in that array after a barrier instead of declaring one.
KSubgroupMeeting declare_k_subgroup_meeting(ProgramBuilder& program, std::uint32_t k_subgroups, std::uint32_t slots,
                                            ScalarType element = ScalarType::F32, const BufferRef& reuse = {});

/// Emits the meeting at workgroup level (every invocation reaches it: it holds a barrier).
/// Lanes where `owner` holds own `values` (Vars of the meeting's element), the partial
/// sums of slots `first, first + 1, ...`; with f32 and values.size() a multiple of 4,
/// `first` and the meeting's slots must be multiples of 4 (f32x4 stores and loads: the
/// IR verifier rejects an alignment it cannot prove). Afterwards the owner lanes of
/// k-subgroup 0 hold the totals in `values`; the caller finishes where
/// logical_and(owner, eq(k_subgroup, 0)). `vector_stride` (0: the vector width, values
/// contiguous) puts each further vector of values that many slots on: first = lane * 4
/// with 32 * 4 lets a subgroup's f32x4 accesses cover 512 contiguous bytes, one
/// conflict-free shared-memory phase per 8 lanes, where first = lane * values.size()
/// puts lanes values.size() * 4 bytes apart, 4-way bank conflicts at 16 values. With one
/// k-subgroup nothing is emitted.
void emit_k_subgroup_meeting(Body& body, const KSubgroupMeeting& meeting, const Expr& k_subgroup, const Expr& owner,
                             const Expr& first, const std::vector<Expr>& values, std::uint32_t vector_stride = 0);

/// The k-subgroups for a reduction of `chunks` work units shared by `lanes_per_subgroup`
/// k-lanes per subgroup: the largest power of two up to `most` that leaves every k-lane
/// of the workgroup at least `chunks_per_lane` units (chunks >= k_subgroups *
/// lanes_per_subgroup * chunks_per_lane). The fast GEMVs' one rule: more, shorter warps
/// in flight while each still has work.
std::uint32_t choose_k_subgroups(std::uint64_t chunks, std::uint32_t lanes_per_subgroup, std::uint32_t chunks_per_lane,
                                 std::uint32_t most);

/// Workgroups (of one warp each) the split-K GEMVs aim for: about 16 per SM of a 132-SM
/// H100/H200. Measured on an H200 (bench/results/gpu-nvidia-h200.md, "Schedule sweep"),
/// 2048 beat 256 by 1.3-3.7x on every split-K GEMV at the Llama shapes: with 1-2 warps
/// per SM each warp's serial chain of loads and arithmetic sets the time. Past this,
/// more splits cost more partial sums than they save (nf4_gemm_transpose at 100000: 4-7x slower).
inline constexpr std::uint32_t kSplitKTargetWorkgroups = 2048;

/// SMs of an H100 SXM / H200, the devices the fast schedules are tuned for.
inline constexpr std::uint32_t kTargetSms = kH100SxmSm.sms;
/// 32-bit registers of one of their SMs.
inline constexpr std::uint32_t kRegistersPerSm = kH100SxmSm.registers_per_sm;

/// Warps kTargetSms SMs hold at once where each thread keeps `registers`: a grid of at
/// most this many warps is one wave at that register count.
constexpr std::uint64_t one_wave_warps(std::uint32_t registers) {
  return std::uint64_t{kTargetSms} * (kRegistersPerSm / (registers * kSubgroupSize));
}

/// `k_subgroups` halved while the grid's warps, `warps_per_k_subgroup` times the
/// k-subgroups, exceed one wave (kTargetSms x `resident_warps_per_sm`, the warps an SM
/// holds of this program) and halving brings them within it: one wave of longer warps
/// instead of a full wave and a short one, which costs each of its warps' whole serial
/// chain of loads while most SMs idle (the cost model charges every wave the longest of
/// its issue, DRAM and chain times: CostModel.h). Unchanged where even one k-subgroup
/// per workgroup would not fit one wave (the waves are then many and even).
std::uint32_t fit_k_subgroups_to_one_wave(std::uint32_t k_subgroups, std::uint64_t warps_per_k_subgroup,
                                          std::uint32_t resident_warps_per_sm);

/// The Program::min_resident_workgroups that lets a grid of `workgroups` workgroups of
/// `invocations` invocations and `shared_bytes` bytes of shared memory each run as one
/// wave on kTargetSms SMs: ceil(workgroups / kTargetSms), where that is 2 or more and an
/// H100 SM can hold that many (32 CTAs, 2048 threads, 228 KiB of shared memory less 1 KiB
/// a workgroup, and each thread at least `least_registers` of the 65536 registers, in
/// ptxas's units of 8: what the program needs without spilling); else 0, no request. One
/// wave of workgroups instead of a full wave and a partial one, whose warps' whole serial
/// chains add to the time while most SMs idle (CostModel.h charges each wave its longest
/// chain).
std::uint32_t one_wave_resident_workgroups(std::uint64_t workgroups, std::uint32_t invocations,
                                           std::uint64_t shared_bytes, std::uint32_t least_registers);

/// The Program::reserved_shared_bytes that evens out the waves of a grid of `workgroups`
/// workgroups of `invocations` invocations and `shared_bytes` bytes of `.shared` each on
/// kTargetSms SMs at `registers` a thread: where the SMs hold `resident` of them
/// (resident_workgroups) and the grid takes W >= 2 waves with a short last one, the
/// dynamic shared memory that lets an SM hold only r = ceil(workgroups / (W kTargetSms))
/// (228 KiB over r, in 128-byte allocation units, less the driver's 1 KiB and the
/// `.shared`), so that the W waves are nearly equal. The cost model charges each wave the
/// longest of its issue, DRAM and chain times (CostModel.h): a short last wave costs its
/// warps' whole serial chain while most SMs idle, equal waves each take their share of the
/// DRAM time (NVFP4 11008x4096 at m = 2 on the H100 model: 2752 workgroups, 10 an SM, waves
/// of 1320, 1320 and 112: 11.3 us; 7 an SM, 924, 924 and 904: 8.9). The reservation only
/// caps residency (even_out_waves also asks ptxas to fit r): where fewer registers than
/// `registers` would let an SM hold more than r it holds r, so a grid is never given more
/// waves than `registers` takes it in. 0 where the grid is one wave, no SM could hold more
/// than r whatever the registers, or the reservation would pass kMaxLaunchSharedBytes with
/// the `.shared` (r < 4). The plan on an H100 (ir/Occupancy.h,
/// even_waves_dynamic_shared_bytes with kH100SxmSm): a nonzero reservation asks for even
/// waves, and the CUDA backend and the cost model size it again for the device they launch
/// or model, from the kernel's registers.
std::uint32_t even_waves_reserved_bytes(std::uint64_t workgroups, std::uint32_t invocations, std::uint64_t shared_bytes,
                                        std::uint32_t registers);

/// Evens out the waves of `program`'s grid as launched so far (its workgroups, invocations
/// and `.shared`): where even_waves_reserved_bytes at `least_registers` reserves shared
/// memory, sets Program::reserved_shared_bytes, and asks ptxas to fit the even count
/// (min_resident_workgroups) where that leaves a thread `expected_registers`, so that
/// registers do not leave the waves uneven. The waves are those at `least_registers`: a
/// grid that fewer registers would fit in fewer waves is kept in as many, so pass the
/// fewest the program can get (a GEMV's 32, at which an SM holds all the warps it can).
void even_out_waves(ProgramBuilder& program, std::uint32_t least_registers, std::uint32_t expected_registers);
/// The fewest registers a thread the fast GEMVs get from ptxas (32 at the Llama shapes):
/// what they even out their waves at.
inline constexpr std::uint32_t kGemvLeastRegisters = 32;

/// Workgroups of `invocations` invocations and `shared_bytes` bytes of shared memory each
/// that an H100 SM holds at `registers` a thread (ir::resident_ctas with kH100SxmSm: the
/// fewest of its 32 CTA slots, 2048 threads, 65536 registers rounded to ptxas's units of 8,
/// and 228 KiB of shared memory less 1 KiB a workgroup). 0 for no invocations or registers.
std::uint32_t resident_workgroups(std::uint32_t invocations, std::uint64_t shared_bytes, std::uint32_t registers);

/// The Program::min_resident_workgroups that `least_registers` a thread allow
/// (resident_workgroups), where that runs a grid of `workgroups` in fewer waves on
/// kTargetSms SMs than ptxas's `unasked_registers` would; else 0, no request. The
/// one-wave request generalized to grids of several waves: each wave's longest serial
/// chain adds to the time (CostModel.h), so one wave fewer saves a whole chain.
std::uint32_t fewer_waves_resident_workgroups(std::uint64_t workgroups, std::uint32_t invocations,
                                              std::uint64_t shared_bytes, std::uint32_t unasked_registers,
                                              std::uint32_t least_registers);

}  // namespace quantc::ir::ops
