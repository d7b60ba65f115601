// Hand-written expert CUDA C++ baselines (bench/experts/*.cu) for three of quantc's ops at
// batch 1, run on the PTX emulator next to quantc's own kernel so a benchmark can report
// quantc ÷ expert from the same counters:
//
//   op                           expert kernel file             entries
//   linear_4bit_affine_grouped   linear_4bit_affine_grouped.cu  linear_4bit_affine_grouped_expert
//   nf4_gemm (m = 1)             nf4_gemm.cu                    nf4_gemv_expert_f64 (accumulate "f64",
//                                                               the default), nf4_gemv_expert_f32
//   dequant_matmul_int4 (m = 1)  dequant_matmul_int4.cu         dequant_matmul_int4_expert_{asymmetric,symmetric}
//
// Each kernel takes exactly quantc's buffers (the op's bindings, in order) plus scalar
// shape and tiling parameters; each .cu file's header documents its layout, launch and the
// techniques it uses (and where they come from).
//
// Flow of compare_with_expert(op, args):
//   1. the op constructor (ir::ops::OpRegistry) builds quantc's program: the buffer set
//      (runtime::random_buffers, uniform [-1, 1) floats, random words, zero points 0..15);
//   2. the reference interpreter runs the program: the oracle;
//   3. quantc's kernel: lower::compile for sm_90 (-O2), run on the emulator; its output must
//      equal the interpreter's bit for bit (quantc's own contract);
//   4. the expert kernel: `nvcc -ptx -arch=sm_90 -O3` of the .cu (cached in the build tree,
//      keyed by the source's SHA-256), launched through EmulatorBackend::launch_ptx with the
//      grid/block plan_expert_launch picks; its output must agree with the interpreter's
//      within the bound below;
//   5. both kernels' resources: threads per CTA, CTAs, registers and static shared bytes
//      from `ptxas -v --gpu-name sm_90` (0 when ptxas is absent), dynamic shared bytes.
//
// Correctness bounds (u = 2^-24, gamma(n) = n*u / (1 - n*u), K = the reduction length;
// M_j = the output's magnitude, sum over k of |each factor| of the term, computed in f64
// on the host from the buffers):
//   f32 accumulation (linear_4bit_affine_grouped, dequant_matmul_int4, nf4_gemm "f32"):
//     |expert_j - reference_j| <= 2 * gamma(K + 8) * M_j, with
//       affine:  M_j = |b_j| + sum_k |x_k| * |q - z| * |s|
//       dequant: M_j = sum_k |x_k| * (|q| + |z|) * |s|   (the expert factors z out of the sum)
//       nf4:     M_j = sum_k |a_k| * |NF4[code]| * |absmax|
//     i.e. each of the two results is within the classic recursive-summation bound
//     gamma(K + 8) * M_j (K terms, two roundings per term, a few tree levels) of the exact
//     sum, whatever the order of the sums.
//   f64 accumulation (nf4_gemm "f64"): both sums are f64 sums of the same exact products
//     (each within gamma64(K) * M_j of the exact sum, u64 = 2^-53), each rounded to f32 once:
//     |expert_j - reference_j| <= 2^-23 * |reference_j| + 4 * gamma64(K) * M_j + 2^-148,
//     in practice bit-identical; against nf4_gemm's fast schedule (its 32-term f32 partial
//     sums, ir/ops/Nf4Gemm.h) plus 34 * u * M_j.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/Registry.h"
#include "runtime/Buffers.h"
#include "runtime/backends/Backend.h"
#include "runtime/backends/emulator/CostModel.h"
#include "runtime/backends/emulator/Counters.h"

namespace quantc::bench {

/// Raised for an op or shape the expert kernels do not cover (the message names the
/// offending parameter and value), a missing or failing nvcc (with its log), an emulator
/// error, and — from compare_with_expert — a result outside the stated bound.
class ExpertError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The ops with an expert kernel: linear_4bit_affine_grouped, nf4_gemm, dequant_matmul_int4.
const std::vector<std::string>& expert_ops();

/// The op's parameters for a batch-1 layer with `in_dim` inputs (K, the reduction) and
/// `out_dim` outputs (N), with the group size quantc's shipped specs use: affine
/// group_size 64 with the seed schedule; nf4_gemm m = 1 with the seed schedule (block 64 is fixed; accumulate
/// left at its default "f64"); dequant_matmul_int4 m = 1, block_size 64, asymmetric. Throws ExpertError for an
/// op outside expert_ops().
ir::ops::OpArgs batch1_args(const std::string& op, std::uint32_t in_dim, std::uint32_t out_dim);

/// A short label for a case: "in×out" plus the parameters that are not the shape
/// ("g64", plus the schedule when args name one: "g64 seed"; "f32", "sym").
std::string case_label(const std::string& op, const ir::ops::OpArgs& args);

/// How the expert kernel is launched for one case.
struct ExpertLaunch {
  std::string source;  // the .cu file name in bench/experts/
  runtime::PtxLaunch launch;  // entry, grid, block, dynamic shared bytes, arguments (buffers
                              // in the op's binding order, then the scalars); `ptx` left empty
};

/// The launch for `program` (built by the op's constructor from `args`): entry, tiling
/// (chosen to fill 132 SMs where the layout allows it, see the .cu headers) and
/// arguments. Throws ExpertError naming the value for what the kernels do not cover:
/// linear_4bit_affine_grouped with group_size % 8 != 0 or out_dim % 4 != 0;
/// nf4_gemm or dequant_matmul_int4 with m != 1; dequant_matmul_int4 with n % 32 != 0;
/// activations that need more than 227 KiB of shared memory (the sm_90 limit).
ExpertLaunch plan_expert_launch(const std::string& op, const ir::ops::OpArgs& args, const ir::Program& program);

struct ExpertOptions {
  std::string nvcc = QUANTC_EXPERT_NVCC;        // the CUDA toolkit's nvcc (found by CMake)
  std::filesystem::path sources = QUANTC_EXPERT_SOURCES;   // bench/experts/
  std::filesystem::path cache = QUANTC_EXPERT_PTX_CACHE;   // PTX cache in the build tree
  std::string arch = "sm_90";
  std::uint64_t seed = 1;                       // runtime::random_buffers seed
  unsigned interpreter_threads = 2;             // host threads of the reference interpreter
  bool resources = true;                        // run ptxas -v for registers and shared bytes
};

/// The PTX of bench/experts/<source> from `nvcc -ptx -arch=<arch> -O3`, cached as
/// <cache>/<stem>.<arch>.<sha256 of source and flags, 16 digits>.ptx (written atomically).
/// Throws ExpertError when nvcc is missing (naming the path tried) or fails (with its log).
std::string expert_ptx(const std::string& source, const ExpertOptions& options = {});

/// Resources of one kernel.
struct KernelResources {
  std::uint32_t threads_per_cta = 0;
  std::uint64_t ctas = 0;
  int registers = 0;                   // per thread, ptxas -v for sm_90; 0 when ptxas is absent
  int static_shared_bytes = 0;         // ptxas -v "bytes smem"
  /// A launch's bytes, or quantc's even-waves plan, sized for each modeled device.
  runtime::emulator::DynamicShared dynamic_shared;
};

/// How one kernel's outputs compare with the interpreter's.
struct AccuracyCheck {
  std::uint64_t outputs = 0;
  std::uint64_t bit_identical = 0;
  double max_abs_error = 0;     // max |result - reference|
  double max_bound_ratio = 0;   // max |result - reference| / bound (the check passes at <= 1)
  double max_error_in_units = 0;  // max |result - reference| / (2^-24 * M_j): the error in f32
                                  // roundings of the output's magnitude M_j
  std::string bound;            // the bound's formula, for messages and reports
  bool passed() const { return max_bound_ratio <= 1.0; }
};

/// One kernel's launch on the emulator.
struct KernelRun {
  std::string name;   // "quantc" or "expert"
  std::string entry;  // the PTX entry
  runtime::emulator::LaunchCounters counters;
  KernelResources resources;
  AccuracyCheck accuracy;
};

/// quantc's kernel and the expert's on the same random buffers, both checked against the
/// interpreter (quantc bit for bit, the expert within the bound at the top of this file).
struct Comparison {
  std::string op;
  ir::ops::OpArgs args;
  std::uint64_t packed_weight_bytes = 0;  // the quantized weight buffer's bytes (w / b_nf4)
  KernelRun quantc;
  KernelRun expert;
};

/// Runs the flow at the top of this file. Throws ExpertError when quantc's kernel differs
/// from the interpreter or the expert's result is outside the bound (the message names the
/// op, the shape, the worst output, both values and the bound), plus what plan_expert_launch,
/// expert_ptx and the emulator throw.
Comparison compare_with_expert(const std::string& op, const ir::ops::OpArgs& args, const ExpertOptions& options = {});

/// Only the expert half: runs the expert kernel and checks it against the interpreter
/// (for tests, which need no quantc kernel or ptxas). Throws as compare_with_expert.
KernelRun run_expert(const std::string& op, const ir::ops::OpArgs& args, const ExpertOptions& options = {});

}  // namespace quantc::bench
