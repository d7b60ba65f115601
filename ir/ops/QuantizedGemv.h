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
//    one vector load (u32x4 = 16 bytes); with two column lanes each packed row of the
//    subgroup's columns is one fully used 32-byte sector, with one (the default, see
//    GemvSchedule) half a sector whose other half the neighbouring subgroup reads;
//  - the other lane bits (32 / column_lanes "k-lanes") split the reduction by work unit:
//    k-lane j takes units j, j + k_lanes, ...; a unit is a whole group, or, when there
//    are fewer groups than k-lanes, a slice of one: S slices per group, S the largest
//    divisor of the group's packed rows with groups*S <= k_lanes and >= 2 rows per slice
//    (unit u = group u/S, rows (u%S)*rows/S ...), so all k-lanes work on short inputs;
//    inside a unit a lane walks its rows in batches of up to `rows_per_batch` whose loads
//    are issued before any use (loads in flight);
//  - per unit, sum_k x*q and sum_k x accumulate in f32 (fma), then
//    acc += scale * (sum x*q - zero_point * sum x): scale and zero point once per unit
//    (per group, or per slice: the expression is linear in the rows, so slicing changes
//    only the rounding, and each slice's sums are shorter than the group's);
//  - nibble -> f32 exactly: bitcast(0x4B000000 | q) - 2^23 (lop3 + one subtraction);
//  - the k-lanes' partial sums meet by a shuffle butterfly (xor column_lanes, ..., 16):
//    deterministic, no atomics; lanes with k-lane 0 add the bias and store their columns
//    with one vector store (f32x4; f16/bf16: two f16x2/bf16x2 stores of the sums rounded
//    once to the activation type);
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
/// The defaults are the fastest of a sweep on an H200 (bench/results/gpu-nvidia-h200.md,
/// "Schedule sweep"): column_lanes 1, 2, 4 x rows_per_batch 4, 8, 16 at the Llama shapes.
/// One column lane (a subgroup owns 4 columns, each 16-byte load is half a 32-byte
/// sector, the other half is the neighbouring subgroup's, mostly an L2 hit) beat two
/// lanes (whole sectors, half the subgroups) by 1.2-1.6x: at batch 1 these kernels are
/// bound by how many warps keep loads in flight, not by sector use. 4 rows per batch beat 8
/// by up to 1.2x (fewer registers).
struct GemvSchedule {
  std::uint32_t column_lanes = 1;      // lanes sharing one packed row of the subgroup's columns
  std::uint32_t columns_per_lane = 4;  // consecutive u32 words per lane and row (4 = a 16-byte load)
  std::uint32_t subgroups_per_workgroup = 2;
  std::uint32_t rows_per_batch = 4;    // packed rows (8 k each) whose loads are issued together
  std::uint32_t columns_per_subgroup() const { return column_lanes * columns_per_lane; }
  std::uint32_t k_lanes() const { return 32 / column_lanes; }
};
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
};

/// Why the fast schedule cannot run `gemv`, or nullopt when it can: out_dim must be a
/// multiple of the subgroup's columns (4 by default) and group_size a multiple of 8 (a packed word
/// never straddles two groups).
std::optional<std::string> nibble_gemv_unsupported(const NibbleGemv& gemv, const GemvSchedule& schedule = {});

/// The fast program. Buffers, in binding order, as the seed ops declare them (A = the
/// activation type): x A[in_dim], with a permuted input perm u32[in_dim], w
/// u32[in_dim/8*out_dim], then with sidecars scale f32[G*out_dim] and zero_point
/// u32[G*out_dim] (G = ceil(in_dim/group_size)), b
/// A[out_dim], out A[out_count]. Launch: subgroups_per_workgroup*32 invocations per workgroup,
/// ceil(out_dim / (columns_per_subgroup * subgroups_per_workgroup)) workgroups; a
/// permuted input with in_dim <= 12288 adds the shared array x_staged f32[in_dim].
/// Throws OpError with nibble_gemv_unsupported's reason when the schedule cannot run it.
Program nibble_gemv(const NibbleGemv& gemv, const GemvSchedule& schedule = {});

}  // namespace quantc::ir::ops
