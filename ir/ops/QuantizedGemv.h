// The fast batch-1 schedule of the 4-bit linear layers: a matrix-vector product that
// streams packed weights with coalesced 128-bit loads, decodes nibbles with the
// exponent-magic trick and factors the group's scale and zero point out of the sum.
//
// Weight layout (the linear_4bit layout, AutoGPTQ's `qweight`): `w` is u32 words, word
// `(k/8)*out_dim + i` holds the eight consecutive k of output column i, nibble k%8 at
// bits 4*(k%8); the output index i is fastest. Sidecars `[group, out_dim]`, output fastest.
//
// Schedule (per subgroup of 32 invocations; PTX: per warp):
//  - a subgroup owns `column_lanes * columns_per_lane` consecutive output columns; lane
//    l reads columns `column_lanes`-interleaved blocks of `columns_per_lane` words with
//    one vector load (u32x4 = 16 bytes); with two column lanes (the default from K = 512)
//    each packed row of the subgroup's columns is one fully used 32-byte sector;
//  - a workgroup holds `subgroups_per_workgroup` column subgroups times `k_subgroups`
//    k-subgroups: the k-subgroups of a column subgroup split its reduction. Each subgroup
//    has 32 / column_lanes k-lanes; the workgroup's K = k_subgroups * 32 / column_lanes
//    k-lanes split the reduction by work unit: k-lane j takes units j, j + K, ...; a unit
//    is a group's slice: S slices per group, S the divisor of the group's packed rows
//    (>= 2 rows per slice) that gives the busiest k-lane the fewest rows (unit u = group
//    u/S, the group's rows u%S, u%S + S, u%S + 2S, ...: the slices interleave, so the
//    k-lanes sharing a group read consecutive rows and a 128-byte line of x serves four
//    of them instead of one); inside a unit a lane walks its rows in batches of up to
//    `rows_per_batch` whose loads are issued before any use (loads in flight). Without
//    sidecars (linear_4bit) the k-lanes interleave rows instead: k-lane j takes packed
//    rows j, j + K, j + 2K, ... (ceil(rows/K) of them, rounded up to whole batches of up
//    to rows_per_batch that add at most an eighth; rows past the end are clamped and
//    their x counts as 0), so the k-lanes of a warp read consecutive rows and their x is
//    one contiguous span per request instead of 16 or 32 lines;
//  - per unit, sum_k x*q and sum_k x accumulate in f32 (fma), then
//    acc += scale * (sum x*q - zero_point * sum x): scale and zero point once per unit
//    (per group, or per slice: the expression is linear in the rows, so slicing changes
//    only the rounding, and each slice's sums are shorter than the group's);
//  - nibble -> f32 exactly, with no shift per nibble (Marlin's and TensorRT-LLM's lop3
//    dequantization): nibble e (e < 5) is bitcast(0x4B000000 | (word & 0xF << 4e)) - 2^23
//    = q * 16^e, and nibbles 5..7 the same from word >> 20 (one shift per word): one lop3
//    and one subtraction. The row's x values are multiplied by 16^-e once per lane and
//    row (shared by its columns) so that x * q is the same exact product; the powers of
//    two are exact unless |x| < 2^-110 turns subnormal;
//  - the k-lanes' partial sums meet by a shuffle butterfly within each subgroup (xor
//    column_lanes, ..., 16), then across k-subgroups in shared memory: k-subgroups 1..
//    store their sums (f32x4), a barrier, and k-subgroup 0 adds them in k-subgroup
//    order: deterministic, no atomics. Its lanes with k-lane 0 add the bias and store
//    their columns with one vector store (f32x4; f16/bf16: two f16x2/bf16x2 stores of the
//    sums rounded once to the activation type);
//  - f16/bf16 activations (ir/ops/Activation.h): a row's 8 x values are one 16-byte
//    u32x4 load (the f32 program's two f32x4 loads) and the 4 biases one u32x2 load, in
//    flight with the weights; each x value widens to f32 once per lane (f16: cvt; bf16:
//    shl/and), then the f32 arithmetic above runs unchanged;
//  - a permuted input (NibbleGemv::permuted_input, GPTQ act-order): packed row r's 8
//    activations are x[perm[8r + e]], not x[8r + e]. Where in_dim f32 values fit the
//    48 KiB of static shared memory (in_dim <= 12288), the workgroup first copies x into
//    a shared f32 array (each invocation 4 elements per 16-byte load, up to 8 loads in
//    flight before their stores; f16/bf16 widened exactly on the way), then a barrier.
//    The batch issues its weight loads and, per row, the row's 8 perm entries as two
//    u32x4 loads; then the 8 x gathers of each row, each once per lane and row as the
//    contiguous loads were (from shared memory, else from global memory, f16/bf16
//    widened there); then the arithmetic above, unchanged. Why shared: a warp's 32
//    gathered addresses are random, one L1 sector (wavefront) per lane from global
//    memory, but a few bank conflicts in shared memory; on the H100 cost model at 4096 x
//    4096 g128 (f32), before its recalibration to an H200, the global gathers made the
//    kernel issue-bound on the memory pipe, 5.66 us against 2.83 us without act_order,
//    the staged ones 3.03 us; on the recalibrated model (each warp's serial chain) the
//    staged kernel is 13.8 us against 11.3 us without act_order. The model leaves out
//    bank conflicts, and neither variant has been timed on a GPU.
//  - a batch (NibbleGemv::rows > 1): grid row r runs the GEMV above on x[r, :] into
//    out[r, :], the same program per row, so each row equals that row run alone bit for
//    bit; the rows' weight loads after the first are served by L2 (a GEMV a row: what
//    an f32 batch, or one for a GPU without tensor cores, runs instead of the tensor-core
//    GEMM of ir/ops/TensorGemm.h).
// Floating-point order differs from the seed's per-k order, so results agree with the
// seed program within the f32 accumulation bound, not bit for bit (tests/ops_linear).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/Program.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// Which program an op builds: `seed` (the seed document's loop, pinned by the goldens),
/// `fast` (the schedule below; OpError where it cannot run the shape) or `auto` (fast
/// where it can run, else seed). Ops take it as the spec parameter "schedule".
enum class KernelSchedule : std::uint8_t { Auto, Seed, Fast };

/// The "schedule" parameter (choices auto, seed, fast; default auto).
ParamSpec schedule_param();
/// The parameter's value in `args` (Auto when absent).
KernelSchedule schedule_of(const OpArgs& args);
/// `args` with "schedule" set to `schedule` (for registry test shapes).
OpArgs scheduled(OpArgs args, const char* schedule);

/// Work split of the fast GEMV (see the file comment). Sizes in elements/invocations.
/// The defaults come from sweeps on an H200 (bench/results/gpu-nvidia-h200.md, "Schedule
/// sweep" and "Splitting K across the subgroups of a workgroup"): at batch 1 these
/// kernels are bound by how many warps keep loads in flight and by each warp's serial
/// chain, so K is split across k_subgroups warps of a workgroup (1.3-2.2x faster at the
/// Llama shapes than one subgroup per column block); with that split, two column lanes
/// (whole 32-byte sectors, a quarter of the L1 wavefronts of one lane) beat one and four.
/// 4 rows per batch beat 8 by up to 1.2x (fewer registers).
struct GemvSchedule {
  /// Lanes sharing one packed row of the subgroup's columns; 0 chooses: 2 where out_dim is
  /// a multiple of 8 and in_dim >= 512 (enough rows for two k-subgroups of 16 k-lanes),
  /// else 1 (32 k-lanes: a shallow K gets the shortest rows per lane).
  std::uint32_t column_lanes = 0;
  std::uint32_t columns_per_lane = 4;  // consecutive u32 words per lane and row (4 = a 16-byte load)
  std::uint32_t subgroups_per_workgroup = 2;  // column subgroups per workgroup
  /// Packed rows (8 k each) whose loads are issued together: 6 lets linear_4bit's 11
  /// interleaved rows per k-lane at 11008x4096 wait twice instead of three times.
  std::uint32_t rows_per_batch = 6;
  /// Subgroups of a workgroup that split the reduction of the same columns (each with
  /// its own k-lanes), meeting in shared memory; 0 chooses (resolve_gemv_schedule).
  std::uint32_t k_subgroups = 0;
  /// Of a resolved schedule (resolve_gemv_schedule), where column_lanes is set.
  std::uint32_t columns_per_subgroup() const { return column_lanes * columns_per_lane; }
  std::uint32_t k_lanes() const { return 32 / column_lanes; }
};
/// Most k-subgroups per workgroup: with 2 column subgroups, 512 invocations.
inline constexpr std::uint32_t kMaxGemvKSubgroups = 8;

/// What the nibble GEMV computes: out[i] = b[i] + sum_k x[k] * ((q[k,i] - z[g,i]) * s[g,i])
/// with g = k / group_size; without sidecars, out[i] = b[i] + sum_k x[k] * q[k,i].
struct NibbleGemv {
  std::string program_name;  // the op's name
  std::string region_id;     // the op's seed id, for the Region node
  std::uint32_t in_dim = 0;
  std::uint32_t out_dim = 0;
  /// k per scale/zero-point group; 0 means no sidecars (the reduction is still split in
  /// blocks of kUngroupedRows packed rows for the k-lanes).
  std::uint32_t group_size = 0;
  /// Elements of `out` (>= out_dim): the seed op's buffer size, so that both schedules
  /// declare identical buffers; elements past out_dim are a trimmed output range.
  std::uint32_t out_count = 0;
  /// Element type of x, b and out (ir/ops/Activation.h): f32, f16 or bf16.
  ScalarType activation = ScalarType::F32;
  /// The activations are read through a permutation: a u32 buffer `perm` [in_dim]
  /// follows x, and input feature k of the weights multiplies x[perm[k]] (every perm
  /// value must be < in_dim; linear_4bit_affine_grouped's "act_order").
  bool permuted_input = false;
  /// Rows of x (a batch): x A[rows, in_dim] and out A[rows, out_dim], row-major, feature
  /// fastest; out_count must then be rows * out_dim.
  std::uint32_t rows = 1;
};

/// Why the fast schedule cannot run `gemv`, or nullopt when it can: out_dim must be a
/// multiple of the subgroup's columns (4 by default) and group_size a multiple of 8 (a packed word
/// never straddles two groups).
std::optional<std::string> nibble_gemv_unsupported(const NibbleGemv& gemv, const GemvSchedule& schedule = {});

/// `schedule` with the choices left to the GEMV made for `gemv`: column_lanes (see the
/// field) and k_subgroups, when 0, the largest power of two up to kMaxGemvKSubgroups (half
/// that for a permuted input gathered from global memory, whose registers ptxas would
/// spill at 512 invocations) that leaves every k-lane of the workgroup at least two packed
/// rows (in_dim/8 >= 2 * k_subgroups * k_lanes).
GemvSchedule resolve_gemv_schedule(const NibbleGemv& gemv, GemvSchedule schedule = {});

/// The fast program. Buffers, in binding order, as the seed ops declare them (A = the
/// activation type): x A[rows*in_dim], with a permuted input perm u32[in_dim], w
/// u32[in_dim/8*out_dim], then with sidecars scale f32[G*out_dim] and zero_point
/// u32[G*out_dim] (G = ceil(in_dim/group_size)), b
/// A[out_dim], out A[out_count]. Launch: subgroups_per_workgroup * k_subgroups * 32
/// invocations per workgroup (resolve_gemv_schedule), ceil(out_dim /
/// (columns_per_subgroup * subgroups_per_workgroup)) x rows workgroups; a permuted input with
/// in_dim <= 12288 adds the shared array x_staged f32[in_dim], and k_subgroups > 1 the
/// shared array k_partials f32[k_subgroups * subgroups_per_workgroup * columns_per_subgroup]
/// (with x_staged the k-subgroups meet in it instead, after a barrier, where it has room).
/// Throws OpError with nibble_gemv_unsupported's reason when the schedule cannot run it.
Program nibble_gemv(const NibbleGemv& gemv, const GemvSchedule& schedule = {});

}  // namespace quantc::ir::ops
