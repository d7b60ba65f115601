#include "ir/ops/TensorGemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "ir/Builder.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Linear4Bit.h"
#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/SplitK.h"
#include "ir/ops/TensorDecode.h"

namespace quantc::ir::ops {

namespace {

constexpr std::uint32_t kTileRows = 16;     // an m-tile: mma's M
constexpr std::uint32_t kStepRows = 16;     // a k-step: mma's K
constexpr std::uint32_t kMmaColumns = 8;    // mma's N
constexpr std::uint32_t kTiles = 4;         // mma tiles per subgroup: 32 columns, 16 bytes of a weight row
constexpr std::uint32_t kTileColumns = kTiles * kMmaColumns;
/// k-steps of a block emitted as straight-line code (more stay a loop).
constexpr std::uint32_t kUnrolledSteps = 16;
/// cp.async groups a part's staging is split into, at most (pipeline_stages).
constexpr std::uint32_t kMaxPipelineStages = 4;
/// Elements of padding after each x tile row (16 bytes): TensorGemmSplit::x_pitch.
constexpr std::uint32_t kXRowPadding = 8;
/// The 128 bytes of the 32 shared-memory banks, in 16-bit elements. GPTQ's x tile rows
/// start half of it apart modulo it: rows + 0 or + 32 elements (TensorGemmSplit::x_pitch).
constexpr std::uint32_t kBankElements = 64;
constexpr std::uint32_t kMaxXRowPadding = kBankElements / 2;
/// m-tiles a subgroup multiplies with each decoded weight fragment (m > 16: two).
constexpr std::uint32_t kMaxMTiles = 2;
std::uint32_t m_tiles_of(std::uint32_t m) { return std::min(kMaxMTiles, ceil_div(m, kTileRows)); }
/// The staging limit: the IR's 48 KiB of static shared memory per workgroup.
constexpr std::uint32_t kMaxStagedBytes = 48 * 1024;
/// Registers per thread a one-wave request (Program::min_resident_workgroups) leaves at
/// least, where a lane accumulates one m-tile's rows g (m <= 8).
constexpr std::uint32_t kLeastHintedRegisters = 64;
/// Registers per thread ptxas gives a lane holding four elements of one m-tile (m = 9..16)
/// unasked (78-80 at the Llama shapes): tensor_gemm asks for 64 where that runs the grid
/// in fewer waves than these would (tight_registers).
constexpr std::uint32_t kFourElementRegisters = 80;
/// Splits of K whose partial sums a split-K tail still loads one split at a time (each an
/// L2 round trip of the last workgroup of a tile): the tail of 43 splits at 11008x4096
/// (m = 64) ran 2.2x slower so on an H200 than two at a time, which the cost model's
/// average chain does not see.
constexpr std::uint32_t kMostOneSplitTailSplits = 8;
/// Subgroups of a workgroup (column subgroups x k-subgroups), at most: 256 invocations.
constexpr std::uint32_t kMaxWorkgroupSubgroups = 8;
/// Shared memory of an H100 SM that workgroups can use: 228 KiB less 1 KiB a workgroup.
constexpr std::uint32_t kSharedBytesPerSm = 200 * 1024;
/// The staging a split aims to stay within (more splits where blocks allow): 16 KiB keeps
/// 14 one-warp workgroups per H100 SM, and each warp's chain short.
constexpr std::uint32_t kPreferredStagedBytes = 16 * 1024;
/// The preferred rows of a workgroup's k-subgroups together where the grid takes several
/// waves: 2 int4 parts, 4 parts of the other formats (FormatTraits::preferred_part_rows).
constexpr std::uint32_t kMultiWaveWorkgroupRows = 512;
/// Shared memory an int4 block's sidecars take: both of them counted, 32 columns of f32 each.
constexpr std::uint32_t kSidecarBytesPerBlock = 2 * kTileColumns * 4;
/// NVFP4's rows per scale.
constexpr std::uint32_t kNvfp4ScaleRows = 16;
/// Shared memory of a 16-row scale block of the 32 columns: 32 E4M3 bytes as staged, and
/// their B factors (decode_nvfp4_scale_word: 8 column groups x 4 tiles x one u32).
constexpr std::uint32_t kNvfp4ScaleBlockBytes = kTileColumns + kTileColumns * 4;
/// NF4's rows per scale block.
constexpr std::uint32_t kNf4BlockRows = 64;
/// GPTQ's rows per u32 word, and a span: the 32 rows of a word of each of a lane group's
/// four lanes, two mma k-steps (gptq_span).
constexpr std::uint32_t kGptqWordRows = 8;
constexpr std::uint32_t kGptqSpanRows = 32;

/// What the schedule needs of a weight format, one row per TensorWeights.
struct FormatTraits {
  const char* op;       // the op, in error messages
  const char* program;  // the program's name: the seed's
  const char* region;   // the op id of its region
  /// Bytes of a subgroup's weight row (its 32 columns): 16 of nibbles, 32 of FP8 bytes.
  std::uint32_t weight_row_bytes;
  /// The weight rows a part aims to stay within: short warps' chains, so that a grid of
  /// several waves loses little to its last one (int4 4096x11008 at m = 2: 9.2 us, 12.7
  /// with parts of 512 rows). The other formats decode a pair of codes in 3-5 instructions
  /// against int4's 2.25 (TensorDecode.h), so their parts hold half the rows for the same
  /// chain (NVFP4 4096x4096 at m = 2: 3.2 us, 4.8 with 256 rows).
  std::uint32_t preferred_part_rows;
  /// The weight rows a part aims to stay within at m <= 8 where a grid of such parts still
  /// fits one wave at the hinted registers (tensor_gemm_split): more, shorter warps in the
  /// same wave (not act-order's, which would gather x more often). GPTQ 128 (4096x4096 at
  /// m = 2: 3.34 -> 3.20 us, m = 4: 3.37 -> 3.26); the
  /// others keep preferred_part_rows (int4 at 128: m = 2 3.20 -> 3.24).
  std::uint32_t one_wave_part_rows;
  /// The schedule's blocks: 0 for the op's block_size (int4's sidecar blocks), else NF4's
  /// scale blocks or the staging blocks of NVFP4 and FP8 (64 rows, which only size the parts).
  std::uint32_t block_rows;
  /// Shared memory of a weight row's scales (NVFP4: its share of the scale blocks) and of a
  /// block's f32 sidecars (int4: both, counted for every mode; NF4: its scales).
  std::uint32_t scale_bytes_per_row, sidecar_bytes_per_block;
  /// Whether each block's mma sums fold into f32 accumulators with its sidecars (int4,
  /// NF4), rather than running over the whole part (scales in B or per column).
  bool folds_blocks;
  /// Column subgroups that copy each other's weight rows (column pairs, tensor_gemm_split;
  /// 1: none): 2 for the row-major nibbles of int4 and NVFP4, whose 16 bytes a weight row
  /// of one column tile are half a 32-byte sector; the pair's lanes copy both halves of each
  /// row in one request (stage_rows), which halves the weight loads' sectors and 128-byte
  /// lines (the memory pipe's wavefronts).
  std::uint32_t column_subgroups;
  /// The pairs are taken at m <= 8 and at m > paired_above_m (tensor_gemm_split).
  std::uint32_t paired_above_m;
  /// Two column subgroups share one copied x tile, each copying its own weight rows, at
  /// m > x_shared_above_m (kNeverSharedX: not at all; tensor_gemm_split): NF4 from m = 9,
  /// GPTQ from m = 17, where the x tile (16 or 32 rows) is several times a subgroup's
  /// weight tile.
  std::uint32_t x_shared_above_m;
  /// The largest m at which a grid of several waves takes a ring of stages instead
  /// (ring_split, tensor_gemm_split; 0: never). Not NVFP4 nor NF4: their decoding's longer
  /// chains made the ring's fewer, longer warps latency-bound on the H100 model (11008x4096
  /// at m = 2: NVFP4 10.7 -> 16.6 us, NF4 9.5 -> 12.3).
  std::uint32_t ring_most_m;
  /// The ring at m > 16 (two m-tiles a subgroup; ring_split): its slots and the most column
  /// subgroups sharing each x slot (whose 32 rows take four times a column tile's weights).
  /// int4 and GPTQ, which fold each block into f32 accumulators beside its mma sums (64 f32
  /// a lane), run at ptxas's 128 registers in workgroups of four column subgroups over two
  /// slots (double buffering: three would pass 48 KiB); with two column subgroups over three
  /// slots their 146-172 registers left too few warps for the one wave (H100 model, us,
  /// 4096x4096 at m = 64: int4 11.3 whole parts, 12.4 three slots, 7.9 two; GPTQ 11.4,
  /// 14.5, 9.2). FP8, whose sums run over the part, keeps three slots of two (m = 64:
  /// 12.7, 10.8 three slots, 11.6 two of four).
  std::uint32_t wide_ring_slots, wide_ring_column_subgroups;
};

/// FormatTraits::x_shared_above_m of the formats whose x tiles are never shared this way.
constexpr std::uint32_t kNeverSharedX = ~0u;

const FormatTraits& traits_of(TensorWeights weights) {
  static const FormatTraits kTraits[] = {
      {"dequant_matmul_int4", "dequant_matmul_int4", kDequantMatmulInt4Id, 16, 256, 256, 0, 0, kSidecarBytesPerBlock, true, 2,
       32, kNeverSharedX, 64, 2, 4},
      {"dequant_matmul_nvfp4", "dequant_matmul_nvfp4", kDequantMatmulNvfp4Id, 16, 128, 128, 64,
       kNvfp4ScaleBlockBytes / kNvfp4ScaleRows, 0, false, 2, 8, kNeverSharedX, 0, 0, 0},
      {"dequant_matmul_fp8", "dequant_matmul_fp8", kDequantMatmulFp8Id, 32, 128, 128, 64, 0, 0, false, 1, 0,
       kNeverSharedX, 64, 3, 2},
      {"nf4_gemm", "nf4_gemm_f32_accumulate", kNf4GemmId, 16, 128, 128, kNf4BlockRows, 0, kSidecarBytesPerBlock / 2, true, 1,
       0, 8, 0, 0, 0},
      {"linear_4bit_affine_grouped", "linear_4bit_affine_grouped", kLinear4BitAffineGroupedId, 16, 256, 128, 0, 0,
       kSidecarBytesPerBlock, true, 1, 0, 16, 64, 2, 4},
  };
  return kTraits[static_cast<std::size_t>(weights)];
}


/// The work split (file comment): M = m_tiles * 16 rows by 32 columns per workgroup
/// ("unit": column_tiles x row_tiles of them), and K in `splits` splits of
/// `blocks_per_split` whole blocks staged in shared memory.
struct TensorGemmSplit {
  TensorWeights weights = TensorWeights::Int4;
  std::uint32_t m = 0;
  std::uint32_t weight_row_bytes() const { return traits_of(weights).weight_row_bytes; }
  std::uint32_t m_tiles = 1, column_tiles = 0, row_tiles = 0;
  std::uint32_t blocks = 0, parts = 1, blocks_per_split = 1, block_size = 16;
  /// Subgroups of a workgroup, each with its own part of K ("k-subgroups", SplitK.h): they
  /// meet in shared memory, so only parts / k_subgroups splits move through the scratch.
  std::uint32_t k_subgroups = 1;
  /// Subgroups of a workgroup on adjacent column tiles of the same part ("column
  /// subgroups"), sharing one x tile a k-subgroup: GPTQ act-order's, whose gather through
  /// perm (gather_x_rows) is the costliest staging, so that each part's x is gathered once
  /// per column_subgroups column tiles rather than once per tile; int4's and NVFP4's pairs
  /// (FormatTraits::column_subgroups), which copy each other's weight rows. Subgroup w of a
  /// workgroup is column subgroup w % column_subgroups of k-subgroup w / column_subgroups.
  std::uint32_t column_subgroups = 1;
  std::uint32_t subgroups() const { return column_subgroups * k_subgroups; }  // per workgroup
  /// Whether x is gathered through GPTQ act-order's perm (gather_x_rows) rather than copied.
  bool gathered_x = false;
  /// Invocations that copy a k-subgroup's x tile together (stage_rows): the column
  /// subgroups sharing it, where x is copied; one subgroup's where it is gathered.
  std::uint32_t x_copiers() const { return kSubgroupSize * (gathered_x ? 1 : column_subgroups); }
  std::uint32_t splits() const { return parts / k_subgroups; }  // workgroups per tile
  std::uint32_t tile_rows() const { return m_tiles * kTileRows; }
  /// Rows of the x tile a subgroup stages: only the rows below m where one row tile
  /// covers m (ldmatrix reads of the tile rows past them are clamped to the last).
  std::uint32_t x_tile_rows() const { return row_tiles == 1 ? std::min(m, tile_rows()) : tile_rows(); }
  std::uint32_t units() const { return column_tiles * row_tiles; }
  std::uint32_t rows() const { return blocks_per_split * block_size; }  // weight rows of a part
  /// A ring of stages (0: none, the part staged whole): `ring_slots` slots of `slot_blocks`
  /// blocks each, which the part's stages walk through, a consumed slot refilled with the
  /// stage ring_slots later while the next ones are multiplied, so that the staging holds
  /// ring_slots * slot_blocks blocks however long the part (fewer splits where x tiles are
  /// large).
  std::uint32_t ring_slots = 0, slot_blocks = 0;
  std::uint32_t ring_stages() const { return ring_slots == 0 ? 1 : blocks_per_split / slot_blocks; }
  /// Weight rows the tiles hold at once: the ring's slots, or the whole part.
  std::uint32_t staged_rows() const { return ring_slots == 0 ? rows() : ring_slots * slot_blocks * block_size; }
  /// Elements from one x tile row to the next: the staged rows and 8 more (16 bytes). A
  /// part's rows are a multiple of 16, so without the 8 the 8 rows of one ldmatrix matrix
  /// would share banks (8-way conflicts, as Nsight Compute measured on an H200); with them
  /// each row starts 16 bytes further round the 128 bytes of the banks. GPTQ's lanes read
  /// their A fragments with 16-byte loads instead, 8 lanes a phase covering 64 bytes of
  /// rows g and g + 1: its rows start 64 bytes apart modulo 128 (0 or 32 more elements; a
  /// part's rows are a multiple of 32), so that each phase is conflict-free.
  std::uint32_t x_pitch() const {
    if (!lane_loaded_x()) return staged_rows() + kXRowPadding;
    return staged_rows() + (kBankElements / 2 - staged_rows() % kBankElements) % kBankElements;
  }
  /// Whether lanes load their A fragments with 16-byte loads (GPTQ, NF4) rather than ldmatrix.
  bool lane_loaded_x() const { return weights == TensorWeights::Gptq || weights == TensorWeights::Nf4; }
  /// Whether the column subgroups are int4's or NVFP4's pairs (FormatTraits::column_subgroups),
  /// which copy the shared x tile and each other's weight rows together, rather than GPTQ
  /// act-order's, which gather x (gather_x_rows) and copy their own weight rows.
  bool paired_columns() const { return column_subgroups > 1 && traits_of(weights).column_subgroups > 1; }
  /// Shared memory the x tile's padding takes (x_pitch), and the most it takes at any rows.
  std::uint32_t x_padding_bytes() const { return x_tile_rows() * (x_pitch() - staged_rows()) * 2; }
  std::uint32_t most_x_padding_bytes() const {
    return x_tile_rows() * (lane_loaded_x() ? kMaxXRowPadding : kXRowPadding) * 2;
  }
  /// Elements of a lane's mma tile that can hold rows below m: 2 (rows g only) where one
  /// m-tile holds m <= 8 rows, else 4; elements 2 and 3 (row g + 8) are then never folded,
  /// met or stored.
  std::uint32_t elements() const { return row_tiles == 1 && m <= 8 ? 2 : 4; }
  /// Partial sums a lane carries to the meetings: 4 tiles x m-tiles x elements.
  std::uint32_t met_per_lane() const { return m_tiles * kTiles * elements(); }
  /// Words from one NF4 tile column to the next: its staged rows / 2 bytes of codes, and 16 bytes
  /// more where that is an even number of 16-byte chunks. An ldmatrix matrix reads the 8
  /// columns at consecutive tile positions (nf4_tile_position), so with an odd number of
  /// 16-byte chunks between them its 8 rows lie in 8 distinct 16-byte slots of the 128
  /// bytes of the banks (a multiple of 64 bytes apart, 8 rows take 4 or 8 wavefronts).
  std::uint32_t nf4_column_words() const { return staged_rows() / 8 + (staged_rows() / 32 % 2 == 0 ? 4 : 0); }
  /// Words of a subgroup's weight tile: NF4's 32 columns, or staged rows x weight_row_bytes.
  std::uint32_t weight_tile_words() const {
    return weights == TensorWeights::Nf4 ? kTileColumns * nf4_column_words() : staged_rows() * weight_row_bytes() / 4;
  }
  /// Whether the k-subgroups' meeting fits the weight tiles it reuses (else an array of its own).
  bool meeting_in_weight_tile() const { return weight_tile_words() >= kSubgroupSize * met_per_lane(); }
  /// Shared memory of the meeting a k-subgroup adds beyond its staging.
  std::uint32_t meeting_bytes() const { return meeting_in_weight_tile() ? 0 : kSubgroupSize * met_per_lane() * 4; }
};

/// Shared memory a weight row takes: its W bytes, 2 bytes of each x tile row and its
/// scales' share.
std::uint32_t staged_bytes_per_row(const TensorGemmSplit& split) {
  return split.weight_row_bytes() + split.x_tile_rows() * 2 + traits_of(split.weights).scale_bytes_per_row;
}

/// Shared memory of one x tile: x_tile_rows rows of x_pitch 16-bit elements.
std::uint32_t x_tile_bytes(const TensorGemmSplit& split) { return split.x_tile_rows() * split.x_pitch() * 2; }

/// Shared memory a subgroup stages for its own column tile: its weight tile and its
/// blocks' sidecars or scales (everything but the x tile).
std::uint32_t column_staged_bytes(const TensorGemmSplit& split) {
  const FormatTraits& format = traits_of(split.weights);
  return split.weight_tile_words() * 4 + split.rows() * format.scale_bytes_per_row +
         split.blocks_per_split * format.sidecar_bytes_per_block;
}

/// Shared memory one subgroup stages: its part's weight rows and x tile columns, and its
/// blocks' sidecars or scales.
std::uint32_t staged_bytes(const TensorGemmSplit& split) { return column_staged_bytes(split) + x_tile_bytes(split); }

/// Shared memory a workgroup takes: per k-subgroup one x tile, and per column subgroup of
/// it the rest of a subgroup's staging and, where k-subgroups meet, its part of the
/// meeting where the weight tiles cannot hold it.
std::uint32_t workgroup_bytes(const TensorGemmSplit& split) {
  const std::uint32_t meeting = split.k_subgroups > 1 ? split.meeting_bytes() : 0;
  const std::uint32_t per_column = column_staged_bytes(split) + meeting;
  return split.k_subgroups * (split.column_subgroups * per_column + x_tile_bytes(split));
}

/// The rows of m and a one-block part of K (what the staging of a block depends on).
TensorGemmSplit block_split(TensorWeights weights, std::uint32_t m, std::uint32_t block_size) {
  TensorGemmSplit split;
  split.weights = weights;
  split.m = m;
  split.m_tiles = m_tiles_of(m);
  split.row_tiles = ceil_div(m, split.tile_rows());
  split.block_size = block_size;
  return split;
}

/// Whether stage_rows copies a stage of `stage_rows` rows by straight-line copies: its x
/// rows' 16-byte chunks fill or divide the invocations that copy them (else a loop copies
/// a whole part in one stage).
bool copies_stage_in_line(const TensorGemmSplit& split, std::uint32_t stage_rows) {
  const std::uint32_t row_chunks = stage_rows / 8, copiers = split.x_copiers();
  return row_chunks % copiers == 0 || copiers % row_chunks == 0;
}

/// The workgroups of `split`'s grid over those kTargetSms SMs hold at once at `registers` a
/// thread (resident_workgroups): at most 1 where the grid fits one wave; infinite where an
/// SM holds none.
double wave_fill(const TensorGemmSplit& split, std::uint32_t registers) {
  const std::uint64_t workgroups = std::uint64_t{split.units()} / split.column_subgroups * split.splits();
  const std::uint32_t resident = resident_workgroups(kSubgroupSize * split.subgroups(), workgroup_bytes(split), registers);
  if (resident == 0) return std::numeric_limits<double>::infinity();
  return double(workgroups) / double(std::uint64_t{kTargetSms} * resident);
}
bool one_wave_at(const TensorGemmSplit& split, std::uint32_t registers) { return wave_fill(split, registers) <= 1.0; }

/// The least wave_fill of a ring's grid at m > 16 (tensor_gemm_split): a ring whose K is
/// too short for more splits leaves SMs' warps idle, and its fewer warps' chains, each of
/// 64 rows, grow with their parts (H100 model, 4096x4096 at m = 32, four column subgroups
/// over two slots: 256 workgroups of 396, int4 8.2 us whole parts, 8.4 ring; GPTQ 6.2,
/// 9.8). Not at m <= 16, whose shorter chains gain still (11008x4096 at m = 2, 688 of
/// 1056 workgroups: int4 9.0 -> 8.7).
constexpr double kRingLeastWaveFill = 0.75;

/// Registers a thread the ring's grid is sized for where a lane holds four elements of one
/// m-tile (m = 9..16; at m <= 8 kLeastHintedRegisters): ptxas gave rings 122-130 at the
/// Llama shapes, and tensor_gemm asks for no more where that makes the grid one wave.
constexpr std::uint32_t kRingFourElementRegisters = 128;
/// The registers a thread `split`'s grid is sized for where it is a ring (ring_split), or
/// one of two elements a lane (m <= 8: kLeastHintedRegisters).
std::uint32_t hinted_registers(const TensorGemmSplit& split) {
  return split.elements() == 2 ? kLeastHintedRegisters : kRingFourElementRegisters;
}
/// A ring's slots, and the weight rows of one slot (whole blocks, at least one) where a
/// lane holds two elements of its m-tile (m <= 8) and four (m = 9..16): 16 x rows make a
/// slot twice as large, so halving it keeps as many workgroups an SM (FP8 on the H100
/// model, m = 16: 4096x11008 18.0 -> 16.6 us, 11008x4096 17.8 -> 16.6; at m = 8 64 rows
/// lost, 15.7 -> 16.2). Only the formats of 64-row blocks (FP8) can take 64.
constexpr std::uint32_t kRingSlots = 3;
constexpr std::uint32_t kRingSlotRows = 128;
constexpr std::uint32_t kRingFourElementSlotRows = 64;

/// The ring split (TensorGemmSplit::ring_slots): two column subgroups (int4's pairs; FP8's
/// and GPTQ's sharing x) a workgroup of one k-subgroup, kRingSlots slots of kRingSlotRows
/// rows (kRingFourElementSlotRows at m = 9..16; whole blocks); at m > 16 the format's
/// FormatTraits::wide_ring_slots and up to wide_ring_column_subgroups (the most, a power of
/// two, dividing the column tiles). K takes the most splits whose grid still fits one wave
/// of the workgroups an SM holds (resident_workgroups: shared memory, and the registers
/// the grid is sized for), each part more stages than slots; parts of ceil(blocks /
/// splits) blocks in whole slots, the last shorter where they do not divide. nullopt where
/// the format or m takes no ring (FormatTraits::ring_most_m), for GPTQ act-order (whose
/// gather stages a whole part), where k is not whole blocks of whole slots, where a slot's
/// x rows are not copied in line (copies_stage_in_line), or where no part would have more
/// stages than slots.
std::optional<TensorGemmSplit> ring_split(TensorWeights weights, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                          std::uint32_t block_size, bool gathered_x) {
  const FormatTraits& format = traits_of(weights);
  if (m > format.ring_most_m || gathered_x || k % block_size != 0) return std::nullopt;
  TensorGemmSplit split = block_split(weights, m, block_size);
  split.column_tiles = n / kTileColumns;
  split.blocks = k / block_size;
  split.slot_blocks = std::max(1u, (split.elements() == 2 ? kRingSlotRows : kRingFourElementSlotRows) / block_size);
  const bool wide = split.m_tiles > 1;
  split.ring_slots = wide ? format.wide_ring_slots : kRingSlots;
  const std::uint32_t most_column_subgroups = wide ? format.wide_ring_column_subgroups : 2;
  while (2 * split.column_subgroups <= most_column_subgroups && split.column_tiles % (2 * split.column_subgroups) == 0) {
    split.column_subgroups *= 2;
  }
  if (split.blocks % split.slot_blocks != 0 || !copies_stage_in_line(split, split.slot_blocks * block_size)) {
    return std::nullopt;
  }
  const std::uint32_t slots = split.blocks / split.slot_blocks;  // of K
  const std::uint32_t registers = hinted_registers(split);
  for (std::uint32_t splits = slots / (split.ring_slots + 1); splits >= 1; --splits) {
    TensorGemmSplit candidate = split;
    candidate.blocks_per_split = ceil_div(slots, splits) * split.slot_blocks;
    candidate.parts = ceil_div(split.blocks, candidate.blocks_per_split);
    if (workgroup_bytes(candidate) <= kMaxStagedBytes && one_wave_at(candidate, registers)) return candidate;
  }
  return std::nullopt;
}

/// The fewest parts of K (a power of two) that give kSplitKTargetWorkgroups subgroups
/// while every part keeps two blocks (SplitK.h's rule), then more while a part's staging
/// passes kPreferredStagedBytes or its rows FormatTraits::preferred_part_rows (at m <= 8
/// one_wave_part_rows where that grid still fits one wave) and blocks allow; no part is
/// left empty. Where x is gathered (`gathered_x`: GPTQ act-order), then as many column
/// subgroups (a power of two dividing the column tiles) as fit kMaxStagedBytes: each
/// doubling halves the gathers; NF4's and GPTQ's two sharing x, int4's and NVFP4's
/// column pairs, below. Then as many
/// k-subgroups per workgroup (a power of two; kMaxWorkgroupSubgroups subgroups at most,
/// column subgroups included) as divide the parts with all their stagings (and their
/// meeting, where the weight tiles cannot hold it) within kMaxStagedBytes: every halving of
/// the splits halves the partial sums that cross DRAM.
TensorGemmSplit whole_part_split(TensorWeights weights, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                 std::uint32_t block_size, bool gathered_x) {
  TensorGemmSplit split = block_split(weights, m, block_size);
  split.column_tiles = n / kTileColumns;
  split.gathered_x = gathered_x;
  split.blocks = ceil_div(k, block_size);
  split.parts = choose_splits(split.units(), split.blocks, 1);
  split.blocks_per_split = ceil_div(split.blocks, split.parts);
  const FormatTraits& format = traits_of(weights);
  auto with_part_rows = [&split](std::uint32_t part_rows) {
    TensorGemmSplit parted = split;
    while ((staged_bytes(parted) > kPreferredStagedBytes || parted.rows() > part_rows) &&
           parted.blocks_per_split > 1) {
      parted.parts *= 2;
      parted.blocks_per_split = ceil_div(parted.blocks, parted.parts);
    }
    parted.parts = ceil_div(parted.blocks, parted.blocks_per_split);
    return parted;
  };
  const TensorGemmSplit preferred = with_part_rows(format.preferred_part_rows);
  const TensorGemmSplit shorter = with_part_rows(format.one_wave_part_rows);
  // A one-wave grid at m <= 8 runs its subgroups at kLeastHintedRegisters (the
  // .minnctapersm request below): as many as 65536 / (64 x 32) = 32 warps an SM. Not where
  // x is gathered, which shorter parts gather more often (act-order at 4096x4096, m = 8:
  // 4.2 -> 4.6 us).
  constexpr std::uint64_t kOneWaveHintedSubgroups = one_wave_warps(kLeastHintedRegisters);
  split = split.elements() == 2 && !gathered_x &&
                  std::uint64_t{shorter.units()} * shorter.parts <= kOneWaveHintedSubgroups
              ? shorter
              : preferred;
  // Column subgroups first, as many as fit up to `most`.
  auto with_column_subgroups = [](TensorGemmSplit wider, std::uint32_t most) {
    while (2 * wider.column_subgroups <= most && wider.column_tiles % (2 * wider.column_subgroups) == 0) {
      TensorGemmSplit doubled = wider;
      doubled.column_subgroups *= 2;
      if (workgroup_bytes(doubled) > kMaxStagedBytes) break;
      wider = doubled;
    }
    return wider;
  };
  // Then k-subgroups. More than kMultiWaveWorkgroupRows of preferred parts only where the
  // grid's stagings fit the SMs at once (one wave): bigger workgroups of a grid of several
  // waves leave a partial last wave that costs a whole warp chain (the cost model's waves
  // do not overlap).
  auto one_wave = [](const TensorGemmSplit& candidate) {
    const std::uint64_t grid_bytes = std::uint64_t{candidate.units()} * candidate.parts * workgroup_bytes(candidate) /
                                     candidate.column_subgroups;
    return grid_bytes <= std::uint64_t{kTargetSms} * kSharedBytesPerSm;
  };
  auto with_k_subgroups = [&format, &one_wave](TensorGemmSplit wider) {
    const std::uint32_t most = one_wave(wider) ? kMaxWorkgroupSubgroups
                                               : kMultiWaveWorkgroupRows / format.preferred_part_rows;
    while (wider.k_subgroups < most && 2 * wider.subgroups() <= kMaxWorkgroupSubgroups &&
           wider.parts % (2 * wider.k_subgroups) == 0) {
      TensorGemmSplit doubled = wider;
      doubled.k_subgroups *= 2;
      if (workgroup_bytes(doubled) > kMaxStagedBytes) break;
      wider = doubled;
    }
    return wider;
  };
  // GPTQ without act-order takes the same column subgroups, sharing one copied x tile, at
  // m <= 8 where the grid takes several waves: fewer splits, so fewer partial sums cross
  // DRAM. On the H100 model, us: 11008x4096 m = 2 9.4 -> 9.0, m = 8 13.4 -> 10.4;
  // 4096x11008 m = 8 12.5 -> 10.4. Not at 4096x4096 (one wave; m = 8: 3.4 -> 3.9) nor at
  // m >= 16 (m = 32: 21.1 -> 25.9).
  const bool gptq_shares_x = weights == TensorWeights::Gptq && split.elements() == 2 && !one_wave(split);
  if (gathered_x || gptq_shares_x) return with_k_subgroups(with_column_subgroups(split, kMaxWorkgroupSubgroups));
  // NF4's and GPTQ's two column subgroups sharing x (FormatTraits::x_shared_above_m), where
  // the x tile is several times a subgroup's weight tile: half the x copies a column tile,
  // and twice the subgroups a workgroup. On the H100 model, us: NF4 at 4096x4096 m = 12
  // 6.8 -> 6.6, m = 32 12.0 -> 8.0, m = 64 22.9 -> 15.3, at 11008x4096 m = 16 14.9 -> 12.4,
  // at 4096x11008 m = 64 53.4 -> 41.9; GPTQ at 4096x4096 m = 32 9.1 -> 6.2, m = 64 17.0
  // -> 11.4, at 4096x11008 m = 32 21.1 -> 18.7. Not GPTQ at m = 16 (4096x11008 11.7 ->
  // 13.7), nor FP8 (4096x4096 m = 64 12.7 -> 14.3), nor four (NF4 at 4096x4096 m = 64:
  // 15.4, twice the splits).
  if (m > format.x_shared_above_m) return with_k_subgroups(with_column_subgroups(split, 2));
  const TensorGemmSplit one_column = with_k_subgroups(split);  // one column tile a workgroup
  // Int4's and NVFP4's column pairs (FormatTraits::column_subgroups) where the workgroup has
  // k-subgroups without them, at m <= 8 (a lane holds one m-tile's rows g; the weights are
  // most of the staging) and at m > FormatTraits::paired_above_m. On the H100 model, us:
  // NVFP4 at 4096x4096 m = 2-8 3.8-4.2 -> 3.2-3.5, m = 32 10.1 -> 6.8, m = 64 15.9 -> 12.9,
  // at 4096x11008 m = 64 38.2 -> 35.5 (slower by 8% at 11008x4096 m = 16, by 1.4% at
  // m = 32 of both 11008 shapes: the last of fewer, larger waves); int4 at 4096x11008 m = 8
  // 12.1 -> 9.5, m = 64 31.6 -> 25.6, not at m = 16-32 (4096x11008 m = 16: 11.3 -> 13.3).
  // Not for one-subgroup workgroups (int4 at 11008x4096 m = 2: 9.0 -> 9.9).
  const bool pairs_pay = split.elements() == 2 || m > format.paired_above_m;
  if (format.column_subgroups == 1 || one_column.k_subgroups == 1 || !pairs_pay) return one_column;
  return with_k_subgroups(with_column_subgroups(split, format.column_subgroups));
}

/// The split of the tensor-core GEMM: ring_split where whole_part_split's grid takes
/// several waves (at the registers tensor_gemm asks for at m <= 8, else ptxas's 80) and
/// the ring's one wave has fewer splits, so that fewer partial sums cross DRAM, or at
/// m <= 8 as many (both then run at the 64 registers asked for; at m = 9..16 the ring's
/// 107-168 against 64-80 lose: FP8 4096x4096 at m = 16 7.8 -> 9.5 us), and at m > 16
/// where it fills kRingLeastWaveFill of that wave; else whole_part_split. On the H100
/// model, us, at m = 2, 8, 16: int4 11008x4096 9.0, 10.4, 12.8 -> 8.7, 9.3, 9.9,
/// 4096x11008 8.9, 9.5, 11.3 -> 8.7, 9.4, 10.0; FP8 11008x4096 17.7, 17.0, 20.6 -> 15.2,
/// 15.7, 16.6, 4096x11008 17.5, 16.1, 17.6 -> 15.2, 15.7, 16.6; GPTQ 4096x11008 9.0,
/// 10.4, 11.7 -> 8.7, 9.4, 11.4; at m = 32 and 64, README "Tensor cores". NVFP4 in slots
/// of 64 rows gained at 11008x4096 (m = 2: 10.7 -> 9.7 us) but lost at 4096x11008 (9.7 ->
/// 11.2).
TensorGemmSplit tensor_gemm_split(TensorWeights weights, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                  std::uint32_t block_size, bool gathered_x) {
  const TensorGemmSplit whole = whole_part_split(weights, m, k, n, block_size, gathered_x);
  const std::uint32_t registers = whole.elements() == 2 ? kLeastHintedRegisters : kFourElementRegisters;
  if (one_wave_at(whole, registers)) return whole;
  const std::optional<TensorGemmSplit> ring = ring_split(weights, m, k, n, block_size, gathered_x);
  if (!ring || (ring->m_tiles > 1 && wave_fill(*ring, hinted_registers(*ring)) < kRingLeastWaveFill)) return whole;
  return ring->splits() < whole.splits() || (ring->splits() == whole.splits() && whole.elements() == 2) ? *ring : whole;
}

/// What stage_rows copies from and to, and the split's place.
struct Staging {
  BufferRef w_tile, x_tile, w, x;
  Expr lane, k_start, split_rows, first_row, first_column;
  /// The invocation's place among the column subgroups that share the x tile (lane for one).
  Expr x_lane;
  Expr w_base, x_base;  // the subgroup's first element of w_tile and x_tile
  /// Where the column subgroups sharing the x tile copy each other's weight rows (int4's and
  /// NVFP4's pairs, FormatTraits::column_subgroups): their first column, and the first word
  /// of the first one's weight tile (the others' follow, weight_tile_words apart).
  Expr shared_first_column, shared_w_base;
  /// Weight rows of one pipeline stage (pipeline_stages): the part's, or whole blocks of it.
  std::uint32_t stage_rows = 0;
  /// Appended to the names of the copies' address registers: a ring sets up each round's
  /// beside the prologue's.
  std::string names_suffix;
  std::string name(const char* base) const { return base + names_suffix; }
};

/// Emits into `body` the cp.async copies of pipeline stage `stage`: rows [stage * stage_rows,
/// (stage + 1) * stage_rows) of the part from Staging::k_start, into the tiles' stage
/// `slot` (a ring's slot: stage modulo the slots; else the stage). Their address registers
/// are set up once, before any stage, so that every stage's copies are those registers plus
/// immediates (a ring's next round's too).
using StageCopies = std::function<void(Body& body, std::uint32_t slot, std::uint32_t stage)>;

Expr plus(const Expr& base, std::uint32_t offset) { return offset == 0 ? base : base + u32(offset); }

/// Which lanes copy which of a column-major tile's 32 columns, each `pieces` copies long
/// (NF4's codes and scales): where `pieces` divides 32, `pieces` consecutive lanes share a
/// column (lane l: column l / pieces, piece l % pieces; 32 / pieces columns a copy), so a
/// warp's request touches 32 / pieces lines of 128 bytes rather than 32 (the L1
/// wavefronts the memory pipe issues); else lane l takes column l and walks its pieces.
struct ColumnLanes {
  std::uint32_t lanes_per_column = 1;
  std::uint32_t columns_per_copy = kSubgroupSize;
  Expr column, piece;  // the lane's column of the tile and its first piece
};

ColumnLanes column_lanes(Body& region, const Expr& lane, std::uint32_t pieces, const std::string& column_name,
                         const std::string& piece_name) {
  ColumnLanes lanes;
  if (kSubgroupSize % pieces != 0) {
    lanes.column = lane;
    lanes.piece = u32(0);
    return lanes;
  }
  lanes.lanes_per_column = pieces;
  lanes.columns_per_copy = kSubgroupSize / pieces;
  lanes.column = pieces == 1 ? lane : region.let(column_name, lane / pieces);
  lanes.piece = pieces == 1 ? u32(0) : region.let(piece_name, lane % pieces);
  return lanes;
}

/// Where FP8's weight tile holds 16-byte half `half` of row `row` (32 bytes a row), in
/// words: row r's halves swap where bit 2 of r is set, so that the 8 consecutive rows of
/// one half that an ldmatrix matrix reads (rows 8i .. 8i + 7) lie in 8 distinct 16-byte
/// slots of the 128 bytes of the banks, not two rows a slot (2-way conflicts).
Expr fp8_tile_words(const Expr& row, const Expr& half) { return row * 8u + (half ^ ((row >> 2u) & 1u)) * 4u; }

/// The tile position of NF4 column c (0..31): (c % 4) * 8 + c / 4, so that the columns
/// 4r + i (r = 0..7) of ldmatrix matrix i are positions 8i .. 8i + 7 (w_lane: lane l's
/// column 4 (l % 8) + l / 8 is at position l).
Expr nf4_tile_position(const Expr& column) { return (column % 4u) * 8u + column / 4u; }

/// The cp.async copies (16 bytes each) of a split's weight rows (the subgroup's 32 columns:
/// 16 bytes of nibbles, 32 of FP8 bytes) and of its x rows into the tiles, a stage at a time
/// (StageCopies). Where the split is whole (not the ragged last one), they are straight-line
/// code whose two addresses are each a per-lane register plus an immediate ("[%r+imm]",
/// "[%rd+imm]"): one instruction per copy instead of a loop's index arithmetic. x rows at or
/// past m are not copied where that is known per copy or per lane: their tile rows hold
/// stale values, whose mma rows (D row r depends on A row r only) are never stored.
/// Otherwise (a ragged split, or x rows whose 16-byte chunks neither fill nor divide a
/// subgroup's 32; one stage then) a loop copies every chunk, rows past m copying row m - 1.
/// NF4's weights are column-major (ir/ops/Nf4Gemm.h: a column's codes k-contiguous, two a
/// byte), so a stage's codes of a column are stage_rows / 2 contiguous bytes, C =
/// stage_rows / 32 chunks of 16, into the tile column at nf4_tile_position(c) x
/// nf4_column_words, the lanes sharing columns as column_lanes says. Chunks past a ragged
/// last part's rows are skipped.
StageCopies stage_columns(Body& region, const Staging& at, const TensorGemmSplit& split, std::uint32_t k, bool ragged) {
  const std::uint32_t rows = at.stage_rows, chunks = rows / 32;
  const ColumnLanes lanes = column_lanes(region, at.lane, chunks, at.name("w_column"), at.name("w_chunk"));
  const std::uint32_t lanes_per_column = lanes.lanes_per_column, columns_per_copy = lanes.columns_per_copy;
  const Expr column = lanes.column, chunk = lanes.piece;
  const std::uint32_t column_words = split.nf4_column_words();
  // Copy c's columns c * columns_per_copy + column sit at nf4_tile_position(column) +
  // c * columns_per_copy / 4 (an immediate): columns_per_copy is 32 / chunks, and NF4's
  // parts hold at most 128 rows (FormatTraits::preferred_part_rows; one block is 64).
  if (columns_per_copy % 4 != 0)
    throw std::logic_error(fmt::format("NF4 stage of {} rows copies {} columns at once, not a multiple of 4", rows,
                                       columns_per_copy));
  Expr destination = region.let(at.name("w_destination"), at.w_base + nf4_tile_position(column) * column_words + chunk * 4u);
  Expr source = region.let(at.name("w_source"), (at.first_column + column) * (k / 8) + at.k_start / 8u + chunk * 4u);
  return [at, ragged, lanes_per_column, columns_per_copy, chunk, column_words, destination, source, rows, chunks,
          k](Body& body, std::uint32_t slot, std::uint32_t stage) {
    for (std::uint32_t c = 0; c * columns_per_copy < kTileColumns; ++c) {
      for (std::uint32_t step = 0; step < chunks / lanes_per_column; ++step) {
        const std::uint32_t from = c * columns_per_copy * (k / 8) + 4 * step + stage * rows / 8;
        const std::uint32_t to = c * columns_per_copy / 4 * column_words + 4 * step + slot * rows / 8;
        auto copy = [&, to, from](Body& copying) {
          copying.async_copy(at.w_tile, plus(destination, to), at.w, plus(source, from), 16);
        };
        if (!ragged) copy(body);
        else if (lanes_per_column == 1) body.if_then(u32(32 * step) < at.split_rows, copy);
        else body.if_then(chunk * 32u < at.split_rows, copy);
      }
    }
  };
}

/// GPTQ's weights are u32 words of 8 rows of one column, [k/8, n] (ir/ops/Linear4Bit.h),
/// so a part's word rows of the subgroup's 32 columns are 128 contiguous bytes each, 8
/// chunks of 16: lane l copies chunk l % 8 of word row l / 8, four word rows (32 rows) a
/// copy. In the tile, word row r's chunk c lies at chunk c ^ 2 (r % 4) of its 128 bytes, so
/// that the 16-byte loads of a span (lane (g, t): chunk g of word row t) fall in distinct
/// banks within each quarter-warp; copies past a ragged last part's rows are skipped.
StageCopies stage_word_rows(Body& region, const Staging& at, std::uint32_t n, bool ragged) {
  const std::uint32_t copies = at.stage_rows / kGptqSpanRows, stage_word_rows = at.stage_rows / kGptqWordRows;
  Expr word_row = region.let(at.name("w_word_row"), at.lane / 8u);
  Expr chunk = region.let(at.name("w_chunk"), at.lane % 8u);
  Expr destination = region.let(at.name("w_destination"), at.w_base + word_row * kTileColumns + (chunk ^ (word_row * 2u)) * 4u);
  Expr source = region.let(at.name("w_source"), (at.k_start / kGptqWordRows + word_row) * n + at.first_column + chunk * 4u);
  return [at, ragged, copies, stage_word_rows, destination, source, n](Body& body, std::uint32_t slot,
                                                                       std::uint32_t stage) {
    for (std::uint32_t c = 0; c < copies; ++c) {
      const std::uint32_t to = slot * stage_word_rows + 4 * c, from = stage * stage_word_rows + 4 * c;
      auto copy = [&, to, from](Body& copying) {
        copying.async_copy(at.w_tile, plus(destination, to * kTileColumns), at.w, plus(source, from * n), 16);
      };
      if (ragged) body.if_then(u32(kGptqSpanRows * c) < at.split_rows, copy);
      else copy(body);
    }
  };
}

/// GPTQ act-order: the part's x tile gathered through perm (ir/ops/Linear4Bit.h),
/// x_tile[r][c] = x[first_row + r][perm[k_start + c]], by the L = 32 * column_subgroups
/// invocations that share the tile: invocation i (Staging::x_lane) takes the column pairs
/// 2i, 2i + 2L, ..: per pair one 8-byte load of perm and, per tile row, two 2-byte loads of
/// x and one 4-byte store; tile rows past m read row m - 1, and pairs past a ragged last
/// part's rows are skipped. Plain loads and stores: the staging's first barrier covers them.
void gather_x_rows(Body& region, const Staging& at, const BufferRef& perm, const TensorGemmSplit& split,
                   std::uint32_t m, std::uint32_t k, bool ragged) {
  const std::uint32_t rows = split.rows(), x_rows = split.x_tile_rows();
  std::vector<Expr> row_starts;  // x's first element of each tile row
  for (std::uint32_t r = 0; r < x_rows; ++r) {
    Expr row = plus(at.first_row, r);
    if (split.row_tiles > 1 && m % split.tile_rows() != 0) row = min(row, u32(m - 1));
    row_starts.push_back(region.let(fmt::format("gather_row{}", r), row * k));
  }
  const std::uint32_t lanes = kSubgroupSize * split.column_subgroups;
  for (std::uint32_t c = 0; c * 2 * lanes < rows; ++c) {
    Expr column = region.let(fmt::format("gather_column{}", c), plus(at.x_lane * 2u, c * 2 * lanes));
    auto gather = [&, c](Body& body) {
      Expr features = body.let(fmt::format("gather_perm{}", c), perm.load(at.k_start + column, 2));
      for (std::uint32_t r = 0; r < x_rows; ++r) {
        Expr pair = make_vector({at.x[row_starts[r] + extract_lane(features, 0)], at.x[row_starts[r] + extract_lane(features, 1)]});
        body.store(at.x_tile, at.x_base + plus(column, r * split.x_pitch()), pair);
      }
    };
    if (ragged) region.if_then(column < at.split_rows, gather);
    else if ((c + 1) * 2 * lanes > rows) region.if_then(column < u32(rows), gather);
    else gather(region);
  }
}

/// Where a column pair's 16-byte copy of weight row `row` (of the part) of its column tile
/// `column_tile` goes in w_tile and comes from in w (row_bytes a row of W): stage_rows.
struct PairedCopy {
  Expr destination, source;
};
PairedCopy paired_copy(const Staging& at, const TensorGemmSplit& split, const Expr& row, const Expr& column_tile,
                       std::uint32_t row_bytes) {
  return {at.shared_w_base + column_tile * split.weight_tile_words() + row * 4u,
          (at.k_start + row) * row_bytes + at.shared_first_column / 2u + column_tile * 16u};
}

/// The stages' copies of the part's weights and x rows into the tiles (above), each a
/// StageCopies to call per stage; `copy_x` false leaves x to gather_x_rows.
std::vector<StageCopies> stage_rows(Body& region, const Staging& at, const TensorGemmSplit& split, std::uint32_t m,
                                    std::uint32_t k, std::uint32_t n, bool ragged, bool copy_x) {
  std::vector<StageCopies> stages;
  const bool column_major = split.weights == TensorWeights::Nf4, word_rows = split.weights == TensorWeights::Gptq;
  if (column_major) stages.push_back(stage_columns(region, at, split, k, ragged));
  if (word_rows) stages.push_back(stage_word_rows(region, at, n, ragged));
  const bool byte_rows = !column_major && !word_rows;  // 16 or 32 bytes of a weight row, n fastest
  const std::uint32_t rows = at.stage_rows, x_rows = split.x_tile_rows();
  const bool bytes = split.weights == TensorWeights::Fp8;
  const std::uint32_t row_bytes = bytes ? n : n / 2;  // of a row of W
  const std::uint32_t weight_chunks = split.weight_row_bytes() / 16;  // 16-byte chunks of a subgroup's weight row
  const std::uint32_t chunk_rows = kSubgroupSize / weight_chunks;    // weight rows a subgroup copies at once
  const std::uint32_t row_words = split.weight_row_bytes() / 4;      // of the tile
  const Expr first_byte = bytes ? at.first_column : at.first_column / 2u;
  const std::uint32_t row_chunks = rows / 8;  // 16-byte chunks of one x row
  const Expr lane = at.lane;
  // The column subgroups sharing the x tile copy its rows together, and where a weight row
  // of a column tile is one chunk (int4, NVFP4) each other's weight rows: invocation i of
  // the L = 32 * column_subgroups (Staging::x_lane) copies row i / column_subgroups of
  // column tile i % column_subgroups, so that a request reads whole sectors.
  const bool shared_w = split.paired_columns();
  const std::uint32_t column_subgroups = shared_w ? split.column_subgroups : 1;
  const std::uint32_t lanes = split.x_copiers();
  const Expr copier = lanes == kSubgroupSize ? lane : at.x_lane;
  // Whether x rows past m must be tested at run time (only the last row tile has them).
  const bool test_rows = split.row_tiles > 1 && m % split.tile_rows() != 0;
  if (!ragged && (row_chunks % lanes == 0 || lanes % row_chunks == 0)) {
    // Lane l copies chunk l % weight_chunks of row l / weight_chunks, chunk_rows rows at once.
    if (byte_rows) {
      Expr w_column_tile = shared_w ? region.let(at.name("w_column_tile"), copier % column_subgroups) : Expr();
      Expr w_row = shared_w ? region.let(at.name("w_row"), copier / column_subgroups) : lane;
      const PairedCopy paired = shared_w ? paired_copy(at, split, w_row, w_column_tile, row_bytes) : PairedCopy{};
      Expr w_destination =
          shared_w            ? region.let(at.name("w_destination"), paired.destination)
          : weight_chunks == 1 ? region.let(at.name("w_destination"), at.w_base + lane * 4u)
                               : region.let(at.name("w_destination"), at.w_base + fp8_tile_words(lane / 2u, lane % 2u));
      Expr w_source = shared_w ? region.let(at.name("w_source"), paired.source)
                      : weight_chunks == 1
                          ? region.let(at.name("w_source"), (at.k_start + lane) * row_bytes + first_byte)
                          : region.let(at.name("w_source"), (at.k_start + lane / weight_chunks) * row_bytes + first_byte +
                                                       (lane % weight_chunks) * 16u);
      // Stages start at multiples of 16 rows, which keep fp8_tile_words' swaps.
      // A copy's rows past the stage's (a stage shorter than a copy) are skipped: by the
      // copier's row (shared copies) or its lane's (chunks of a row are consecutive lanes).
      Expr copy_row = shared_w ? w_row : lane;
      const std::uint32_t row_copiers = shared_w ? 1 : weight_chunks;
      stages.push_back([at, rows, chunk_rows, row_bytes, row_words, row_copiers, copy_row, w_destination,
                        w_source](Body& body, std::uint32_t slot, std::uint32_t stage) {
        for (std::uint32_t c = 0; c * chunk_rows < rows; ++c) {
          // The copy's first row in the tile and in the part.
          const std::uint32_t to = slot * rows + c * chunk_rows, from = stage * rows + c * chunk_rows;
          auto copy = [&, to, from](Body& copying) {
            copying.async_copy(at.w_tile, plus(w_destination, to * row_words), at.w, plus(w_source, from * row_bytes), 16);
          };
          if ((c + 1) * chunk_rows <= rows) copy(body);
          else body.if_then(copy_row < u32((rows - c * chunk_rows) * row_copiers), copy);
        }
      });
    }
    if (!copy_x) return stages;
    // x: a copy covers `rows_per_copy` tile rows (row_chunks divides L = lanes) or an
    // L-chunk stretch of one row (L divides row_chunks).
    const std::uint32_t rows_per_copy = std::max(1u, lanes / row_chunks);
    const std::uint32_t copies_per_row = std::max(1u, row_chunks / lanes);
    Expr lane_row = rows_per_copy > 1 ? region.let(at.name("x_lane_row"), copier / row_chunks) : u32(0);
    Expr lane_column = region.let(at.name("x_lane_column"), (rows_per_copy > 1 ? copier % row_chunks : copier) * 8u);
    Expr x_destination = region.let(at.name("x_destination"), at.x_base + lane_row * split.x_pitch() + lane_column);
    Expr x_source = region.let(at.name("x_source"), (at.first_row + lane_row) * k + at.k_start + lane_column);
    const std::uint32_t pitch = split.x_pitch();
    stages.push_back([at, rows, x_rows, rows_per_copy, copies_per_row, lanes, lane_row, x_destination, x_source,
                      pitch, test_rows, m, k](Body& body, std::uint32_t slot, std::uint32_t stage) {
      for (std::uint32_t tile_row = 0; tile_row < x_rows; tile_row += rows_per_copy) {
        for (std::uint32_t c = 0; c < copies_per_row; ++c) {
          // The copy's first column in the tile and in the part.
          const std::uint32_t to = slot * rows + c * lanes * 8, from = stage * rows + c * lanes * 8;
          auto copy = [&, tile_row, to, from](Body& copying) {
            copying.async_copy(at.x_tile, plus(x_destination, tile_row * pitch + to), at.x,
                               plus(x_source, tile_row * k + from), 16);
          };
          if (test_rows || tile_row + rows_per_copy > x_rows) {
            body.if_then(at.first_row + lane_row + u32(tile_row) < u32(m), copy);
          } else {
            copy(body);
          }
        }
      }
    });
    return stages;
  }
  if (rows != split.rows()) throw std::logic_error("a ragged or loop-copied part is staged in one stage");
  stages.push_back([at, split, rows, x_rows, row_chunks, byte_rows, copy_x, weight_chunks, row_bytes, first_byte, lane,
                    column_subgroups, lanes, shared_w, copier, m, k](Body& region, std::uint32_t, std::uint32_t) {
    if (shared_w) region.loop("w_copy", u32(0), u32(ceil_div(rows, kSubgroupSize)), [&](Body& loop, Expr c) {
      Expr chunk = loop.let("w_chunk", c * lanes + copier);
      Expr row = loop.let("copy_row", chunk / column_subgroups);
      Expr column_tile = loop.let("w_column_tile", chunk % column_subgroups);
      loop.if_then(row < at.split_rows, [&](Body& copy) {
        const PairedCopy paired = paired_copy(at, split, row, column_tile, row_bytes);
        copy.async_copy(at.w_tile, paired.destination, at.w, paired.source, 16);
      });
    });
    else if (byte_rows) region.loop("w_copy", u32(0), u32(ceil_div(rows * weight_chunks, kSubgroupSize)), [&](Body& loop, Expr c) {
      Expr chunk = loop.let(weight_chunks == 1 ? "copy_row" : "w_chunk", c * kSubgroupSize + lane);
      Expr row = weight_chunks == 1 ? chunk : loop.let("copy_row", chunk / weight_chunks);
      loop.if_then(row < at.split_rows, [&](Body& copy) {
        Expr source = (at.k_start + row) * row_bytes + first_byte;
        if (weight_chunks > 1) source = source + (chunk % weight_chunks) * 16u;
        Expr destination = weight_chunks == 1 ? chunk * 4u : fp8_tile_words(row, chunk % 2u);
        copy.async_copy(at.w_tile, at.w_base + destination, at.w, source, 16);
      });
    });
    if (copy_x) region.loop("x_copy", u32(0), u32(ceil_div(x_rows * row_chunks, lanes)), [&](Body& loop, Expr c) {
      Expr chunk = loop.let("chunk", c * lanes + copier);
      Expr tile_row = loop.let("tile_row", chunk / row_chunks);
      Expr column = loop.let("chunk_column", (chunk % row_chunks) * 8u);
      Expr source_row = m % split.tile_rows() == 0 ? at.first_row + tile_row : min(at.first_row + tile_row, u32(m - 1));
      loop.if_then(logical_and(tile_row < x_rows, column < at.split_rows), [&](Body& copy) {
        copy.async_copy(at.x_tile, at.x_base + tile_row * split.x_pitch() + column, at.x, source_row * k + at.k_start + column,
                        16);
      });
    });
  });
  return stages;
}

/// Stages of the part's cp.async pipeline: its blocks in up to kMaxPipelineStages groups of
/// equally many, each waited for just before its blocks' k-steps, so that a subgroup
/// computes its first blocks while the later ones are still in flight. One stage where the
/// part is ragged (the last, where k % rows != 0), where a stage's x rows are copied by a
/// loop (stage_rows), for NF4 (its columns' codes of a part, at most 64 bytes, lie in one
/// 128-byte line each, which stages would split into two requests' wavefronts), and where
/// a workgroup is one subgroup: measured on an H200 (bench/results/gpu-nvidia-h200.md),
/// stages gained 1-5% with k-subgroups (int4 and GPTQ at m = 2, GPTQ at m = 16) and lost
/// up to 19% without them (int4 at 11008x4096, m = 8, 43 one-subgroup splits).
std::uint32_t pipeline_stages(const TensorGemmSplit& split, bool ragged) {
  if (split.ring_slots != 0) return split.ring_slots;  // the prologue fills every slot
  if (ragged || split.weights == TensorWeights::Nf4 || split.subgroups() == 1) return 1;
  const std::uint32_t blocks = split.blocks_per_split;
  std::uint32_t stages = std::min(blocks, kMaxPipelineStages);
  while (blocks % stages != 0) --stages;
  return copies_stage_in_line(split, split.rows() / stages) ? stages : 1;
}

/// The rows of the schedule's blocks (FormatTraits::block_rows).
std::uint32_t schedule_block_size(const TensorGemmShape& shape) {
  const std::uint32_t rows = traits_of(shape.weights).block_rows;
  return rows == 0 ? shape.block_size : rows;
}

}  // namespace

std::optional<std::string> tensor_gemm_unsupported(const TensorGemmShape& shape) {
  const TensorWeights weights = shape.weights;
  const std::uint32_t m = shape.m, k = shape.k, n = shape.n, block_size = shape.block_size;
  const ScalarType activation = shape.activation;
  if (activation != ScalarType::F16 && activation != ScalarType::BF16) {
    return fmt::format("activation {} is not f16 or bf16 (the tensor cores take 16-bit inputs; rounding f32 "
                       "activations would leave the f32 bound)",
                       to_string(activation));
  }
  if (n % kTileColumns != 0) return fmt::format("n={} is not a multiple of {} (a subgroup's columns)", n, kTileColumns);
  if (k % kStepRows != 0) return fmt::format("k={} is not a multiple of {} (mma's K)", k, kStepRows);
  if (weights == TensorWeights::Nf4 && k % kNf4BlockRows != 0) {
    return fmt::format("k={} is not a multiple of {} (NF4's blocks)", k, kNf4BlockRows);
  }
  const bool gptq = weights == TensorWeights::Gptq;
  if (gptq && k % kGptqSpanRows != 0) {
    return fmt::format("k={} is not a multiple of {} (a lane group's four words of 8 rows: two mma steps)", k,
                       kGptqSpanRows);
  }
  if (weights != TensorWeights::Int4 && !gptq) return std::nullopt;  // 64-row blocks fit every m
  const char* block_name = gptq ? "group_size" : "block_size";
  const std::uint32_t block_multiple = gptq ? kGptqSpanRows : kStepRows;
  if (block_size % block_multiple != 0) {
    return fmt::format("{}={} is not a multiple of {} (a block folds whole mma steps{})", block_name, block_size,
                       block_multiple, gptq ? " of whole words" : "");
  }
  const TensorGemmSplit one_block = block_split(weights, m, block_size);
  if (staged_bytes(one_block) > kMaxStagedBytes) {
    const std::uint32_t most = (kMaxStagedBytes - kSidecarBytesPerBlock - one_block.most_x_padding_bytes()) /
                               staged_bytes_per_row(one_block);
    return fmt::format("{}={} is above {} at m={} (a block's rows are staged in 48 KiB of shared memory)", block_name,
                       block_size, most / block_multiple * block_multiple, m);
  }
  return std::nullopt;
}

Program tensor_gemm(const TensorGemmShape& shape) {
  const bool nvfp4 = shape.weights == TensorWeights::Nvfp4, fp8 = shape.weights == TensorWeights::Fp8;
  const bool nf4 = shape.weights == TensorWeights::Nf4, gptq = shape.weights == TensorWeights::Gptq;
  const bool e4m3 = fp8 && shape.fp8_format == Fp8Format::E4M3;
  const FormatTraits& format = traits_of(shape.weights);
  const char* name = format.op;
  if (auto reason = tensor_gemm_unsupported(shape)) {
    throw OpError(fmt::format("Fix: {} has no tensor-core schedule: {}", name, *reason));
  }
  const std::uint32_t m = shape.m, k = shape.k, n = shape.n;
  // GPTQ's zero points are int4's ZeroPoint mode: w = (q - z) * s per group.
  const BlockAffineMode mode = shape.weights == TensorWeights::Int4 ? shape.mode
                               : gptq                               ? BlockAffineMode::ZeroPoint
                                                                    : BlockAffineMode::Symmetric;
  const ScalarType activation = shape.activation;
  const bool whole_part_sums = !format.folds_blocks;
  const std::uint32_t block_size = schedule_block_size(shape);
  const TensorGemmSplit split = tensor_gemm_split(shape.weights, m, k, n, block_size, gptq && shape.act_order);
  const std::uint32_t blocks = split.blocks;
  const std::uint32_t block_steps = block_size / kStepRows;
  const std::uint32_t sidecar_count =
      nvfp4 ? checked_count(name, "ceil(k/16)*n (scale bytes)", ceil_div(k, kNvfp4ScaleRows), n)
      : fp8 ? n
      : nf4 ? checked_count(name, "n*k/64 (scales)", n, k / kNf4BlockRows)
            : checked_count(name, "ceil(k/block_size)*n (sidecar elements)", blocks, n);
  const std::uint32_t rows = split.rows();  // the last split may have fewer
  const std::uint32_t m_tiles = split.m_tiles;  // per subgroup, sharing each decoded B
  const std::uint32_t tile_rows = split.tile_rows();
  const std::uint32_t x_tile_rows = split.x_tile_rows();
  const std::uint32_t column_tiles = split.column_tiles;
  const bool with_sums = mode != BlockAffineMode::Symmetric;
  const ScalarType input = activation;
  const std::uint32_t sums_per_lane = m_tiles * kTiles * 4;  // m-tiles x 4 tiles x 4 elements
  const std::uint32_t elements = split.elements();  // per tile: e = 0 .. elements - 1
  const std::uint32_t met_per_lane = split.met_per_lane();

  // The seed's names and binding order: nf4_gemm's a, b_nf4 (u32 words), b_scales and c (its
  // f32 program's name); linear_4bit_affine_grouped's x, perm, w (u32 words), scale,
  // zero_point (u32) and b.
  ProgramBuilder program(format.program);
  BufferRef x = program.input(nf4 ? "a" : "x", activation, m * k);
  BufferRef perm;
  if (gptq && shape.act_order) perm = program.input("perm", ScalarType::U32, k);
  BufferRef w = nf4    ? program.input("b_nf4", ScalarType::U32, checked_count(name, "n*k/8", n, k / 8))
                : gptq ? program.input("w", ScalarType::U32, checked_count(name, "k/8*n", k / kGptqWordRows, n))
                : fp8  ? program.input("w", ScalarType::U8, checked_count(name, "k*n (weight bytes)", k, n))
                       : program.input("w", ScalarType::U8, ceil_div(k * n, 2));
  BufferRef scales = program.input(nf4 ? "b_scales" : gptq ? "scale" : "scales", nvfp4 ? ScalarType::U8 : ScalarType::F32,
                                   sidecar_count);
  BufferRef second, global_scale, bias;
  if (gptq) second = program.input("zero_point", ScalarType::U32, sidecar_count);
  else if (const char* sidecar = second_sidecar(mode)) second = program.input(sidecar, ScalarType::F32, sidecar_count);
  if (nvfp4) global_scale = program.input("global_scale", ScalarType::F32, 1);
  if (gptq) bias = program.input("b", activation, n);
  BufferRef out = program.output(nf4 ? "c" : "out", activation, m * n);
  SplitK split_k = declare_split_k(
      program, split.splits(), checked_count(name, "units*32*sums", split.units(), kSubgroupSize * met_per_lane),
      split.units());
  // Per k-subgroup: its part's rows of W (the 32 columns: 16 or 32 bytes; f32-typed, read
  // as raw words, so that the k-subgroups' meeting can reuse them), of x (the m-tile's
  // rows) and its blocks' sidecars of the 32 columns (128 bytes a block each).
  const std::uint32_t k_subgroups = split.k_subgroups, column_subgroups = split.column_subgroups;
  const std::uint32_t subgroups = split.subgroups();  // per workgroup, each with its own weight tiles
  const std::uint32_t w_tile_words = split.weight_tile_words();
  BufferRef w_tile = program.shared("w_tile", ScalarType::F32, subgroups * w_tile_words);
  BufferRef x_tile = program.shared("x_tile", activation, k_subgroups * x_tile_rows * split.x_pitch());
  // int4: the blocks' sidecars (32 f32 a block each); NVFP4: the scale blocks' E4M3
  // bytes (8 words a block) and their B factors (32 words a block: decode_nvfp4_scale_word).
  const std::uint32_t scale_blocks = rows / kNvfp4ScaleRows;  // NVFP4's, of a part
  const std::uint32_t sidecar_tile = nvfp4 ? scale_blocks * kTileColumns / 4 : split.blocks_per_split * kTileColumns;
  BufferRef scale_tile;
  if (!fp8) {
    scale_tile = program.shared(nvfp4 ? "scale_code_tile" : "scale_tile", nvfp4 ? ScalarType::U32 : ScalarType::F32,
                                subgroups * sidecar_tile);
  }
  BufferRef second_tile, factor_tile;
  if (with_sums) second_tile = program.shared("second_tile", second.element, subgroups * sidecar_tile);
  const std::uint32_t factor_words = scale_blocks * kTileColumns;
  if (nvfp4) factor_tile = program.shared("scale_factor_tile", ScalarType::U32, subgroups * factor_words);
  // NF4: the code book's 16-bit pieces (code_pieces), looked up by shuffles (nf4_step).
  const CodePieces pieces = nf4 ? code_pieces(shape.code_book, input) : CodePieces{};
  const KSubgroupMeeting meeting =
      declare_k_subgroup_meeting(program, k_subgroups, column_subgroups * kSubgroupSize * met_per_lane, ScalarType::F32,
                                 split.meeting_in_weight_tile() ? w_tile : BufferRef{});
  program.launch({kSubgroupSize * subgroups, 1, 1}, {column_tiles / column_subgroups, split.row_tiles, split.splits()});
  // One wave where the registers allow (SplitK.h). Where a lane holds two elements of one
  // m-tile (m <= 8), ptxas's 62-99 registers fit 64 without spills. With four (m = 9..16),
  // NVFP4's and FP8's 78-80 (their mma sums run over the whole part: no f32 accumulators
  // beside them) fit 64 where the tail's reduction loads one split at a time (below), so
  // such a grid asks for 64 where that takes it fewer waves than 80 would (NVFP4 on the
  // H100 model, m = 16: 4096x4096 two waves to one, 6.0 -> 3.9 us; 4096x11008 four to
  // three, 12.1 -> 11.2) and its splits are few (kMostOneSplitTailSplits); elsewhere the
  // one-split tail costs more than it saves. So do NF4's with f16 activations, whose codes
  // are two pieces (ptxas at 64: no spills at the Llama shapes but 4 bytes at 4096x4096,
  // m = 12; H100 model at m = 16: 4096x4096 two waves to one, 6.6 -> 3.9 us, 4096x11008
  // 13.2 -> 11.5). Not NF4 with bf16 (three pieces: 48-52 bytes spilled), int4 or GPTQ
  // (f32 accumulators beside the mma sums), nor two m-tiles (m > 16: 32 sums a lane).
  const bool sums_fit_64_registers = !format.folds_blocks || (nf4 && pieces.count == 2);
  const std::uint32_t tight_resident =
      split.ring_slots == 0 && sums_fit_64_registers && split.m_tiles == 1 && split.elements() == 4 &&
              split.splits() <= kMostOneSplitTailSplits
          ? fewer_waves_resident_workgroups(program.workgroups(), program.invocations_per_workgroup(),
                                            program.static_shared_bytes(), kFourElementRegisters, kLeastHintedRegisters)
          : 0;
  const bool tight_registers = tight_resident != 0;  // 64 registers asked for at m = 9..16
  if (split.elements() == 2 || split.ring_slots != 0) {
    const std::uint32_t registers = hinted_registers(split);
    program.min_resident_workgroups(one_wave_resident_workgroups(
        program.workgroups(), program.invocations_per_workgroup(), program.static_shared_bytes(), registers));
  } else if (tight_registers) {
    program.min_resident_workgroups(tight_resident);
  }
  // Even waves where the grid takes several with a short last one (SplitK.h): the waves of
  // 64 registers, which ptxas gives or fits everywhere but NF4 at m = 9..16 (NF4 at
  // 11008x4096, m = 16: 72 unasked, 7 an SM, three waves; sized at 80, four: 12.4 -> 14.0
  // us).
  even_out_waves(program, kLeastHintedRegisters,
                 split.elements() == 2 || tight_registers ? kLeastHintedRegisters : kFourElementRegisters);
  // The tail's reduction loads two splits' partial sums at a time (64 registers at m > 16,
  // where a lane carries 32 a split): measured on an H200, 2.2x faster than one split at a
  // time at 11008x4096 m = 64 (43 splits) and 1.1-1.2x at m = 32 and 64 elsewhere. More
  // splits at once at m <= 16 cost registers (8 at once: 62 -> 130 for NF4 at 11008x4096
  // m = 2, half the workgroups an SM on the H100 model); under the 64-register request at
  // m = 9..16 one split at a time (two spill at 64 registers: NVFP4 at 4096x4096, m = 16,
  // 44 bytes).
  split_k.registers_in_flight = (tight_registers ? 1 : 2) * met_per_lane;
  program.body([&](Body& body) {
    body.region(format.region, [&](Body& region) {
      Expr local = subgroups == 1 ? Expr() : region.let("local", local_id(0));
      Expr lane = subgroups == 1 ? region.let("lane", local_id(0)) : region.let("lane", local % kSubgroupSize);
      // Subgroup w: column subgroup w % column_subgroups of k-subgroup w / column_subgroups.
      Expr subgroup = subgroups == 1 ? u32(0) : region.let("subgroup", local / kSubgroupSize);
      Expr k_subgroup = k_subgroups == 1             ? u32(0)
                        : column_subgroups == 1      ? subgroup
                                                     : region.let("k_subgroup", subgroup / column_subgroups);
      Expr column_subgroup = column_subgroups == 1   ? u32(0)
                             : k_subgroups == 1      ? subgroup
                                                     : region.let("column_subgroup", subgroup % column_subgroups);
      Expr group = region.let("group", lane / 4u);   // mma's groupID
      Expr thread = region.let("thread", lane % 4u);  // threadID_in_group
      Expr column_tile = column_subgroups == 1
                             ? workgroup_id(0)
                             : region.let("column_tile", workgroup_id(0) * column_subgroups + column_subgroup);
      Expr first_column = region.let("first_column", column_tile * kTileColumns);
      Expr first_row = region.let("first_row", workgroup_id(1) * tile_rows);
      Expr split_index = split.splits() > 1 ? region.let("split", workgroup_id(2)) : u32(0);
      Expr part = k_subgroups == 1 ? split_index : region.let("part", split_index * k_subgroups + k_subgroup);
      Expr first_block = region.let("first_block", part * split.blocks_per_split);
      Expr k_start = region.let("k_start", first_block * block_size);
      // Rows of this part: `rows` but in the last part what remains of k.
      // A ring's last part may hold fewer blocks (whole slots of them): it copies and
      // multiplies only its own stages (part_stages), so its copies never pass k.
      const bool ring = split.ring_slots != 0;
      const bool ragged = !ring && split.parts * rows != k;
      Expr split_rows = ragged ? region.let("split_rows", min(u32(rows), u32(k) - k_start)) : u32(rows);
      const std::uint32_t ring_stages = split.ring_stages();
      const bool short_last_part = ring && split.parts * rows != k;
      Expr part_stages = !ring            ? Expr()
                         : short_last_part ? region.let("part_stages", min(u32(ring_stages), (u32(blocks) - first_block) /
                                                                                                 u32(split.slot_blocks)))
                                           : u32(ring_stages);
      // Stage the part's weights and activations with cp.async (16 bytes each), one group.
      // This subgroup's first element of each of its own tiles, and its k-subgroup's of x_tile.
      auto tile_base = [&](const char* tile, std::uint32_t size) {
        return subgroups == 1 ? u32(0) : region.let(fmt::format("{}_base", tile), subgroup * size);
      };
      Expr w_base = tile_base("w", w_tile_words);
      Expr x_base = k_subgroups == 1 ? u32(0) : region.let("x_base", k_subgroup * (x_tile_rows * split.x_pitch()));
      Expr x_lane = column_subgroups == 1 ? lane : region.let("x_lane", column_subgroup * kSubgroupSize + lane);
      Expr sidecar_base = fp8 ? Expr() : tile_base("sidecar", sidecar_tile);
      // The pipeline's stages (pipeline_stages): the first cp.async group also holds the
      // part's sidecars or scales, each later one only its blocks' weight and x rows.
      const std::uint32_t stages = pipeline_stages(split, ragged);
      // Column subgroups that copy each other's weight rows (FormatTraits::column_subgroups).
      const bool shared_w_copies = split.paired_columns();
      Expr shared_first_column = !shared_w_copies ? Expr()
                                 : region.let("shared_first_column", workgroup_id(0) * (column_subgroups * kTileColumns));
      Expr shared_w_base = !shared_w_copies ? Expr()
                           : k_subgroups == 1 ? u32(0)
                                              : region.let("shared_w_base", k_subgroup * (column_subgroups * w_tile_words));
      const Staging staging{w_tile,    x_tile,       w,      x,      lane,   k_start,             split_rows,
                            first_row, first_column, x_lane, w_base, x_base, shared_first_column, shared_w_base,
                            split.staged_rows() / stages,     ""};
      const std::vector<StageCopies> stage_copies = stage_rows(region, staging, split, m, k, n, ragged, perm.name.empty());
      if (nf4) {
        // NF4's scales are column-major too (b_scales[column * blocks + block]), into
        // scale_tile[block][column] as int4's sidecars lie, 4 bytes a copy, a block a piece
        // of column_lanes. Blocks past the last are skipped.
        const std::uint32_t part_blocks = split.blocks_per_split;
        const ColumnLanes lanes = column_lanes(region, lane, part_blocks, "scale_column", "scale_block");
        const std::uint32_t lanes_per_column = lanes.lanes_per_column, columns_per_copy = lanes.columns_per_copy;
        const Expr &scale_column = lanes.column, &scale_block = lanes.piece;
        Expr scale_to = region.let("scale_to", sidecar_base + scale_block * kTileColumns + scale_column);
        Expr scale_from = region.let("scale_from", (first_column + scale_column) * blocks + first_block + scale_block);
        for (std::uint32_t c = 0; c * columns_per_copy < kTileColumns; ++c) {
          for (std::uint32_t b = 0; b < part_blocks / lanes_per_column; ++b) {
            const std::uint32_t to = b * kTileColumns + c * columns_per_copy;
            const std::uint32_t from = c * columns_per_copy * blocks + b;
            region.if_then(first_block + scale_block + u32(b) < u32(blocks), [&, to, from](Body& copy) {
              copy.async_copy(scale_tile, plus(scale_to, to), scales, plus(scale_from, from), 4);
            });
          }
        }
      }
      // NF4's code book in registers: lane l holds code l % 16's pieces, two a word (the even
      // piece in the low half), so a shuffle from lane q gives code q % 16's (nf4_step).
      std::vector<Expr> code_words;
      for (std::uint32_t p = 0; p < pieces.count; p += 2) {
        code_words.push_back(region.let(fmt::format("code_pieces{}", p / 2), code_piece_pair(pieces, p, lane & 15u)));
      }
      // Sidecars, 16 bytes a copy: int4's 8 a block (32 columns of f32), NVFP4's 2 a scale
      // block (32 E4M3 bytes); blocks past the last skipped.
      const std::uint32_t chunks_per_block = nvfp4 ? kTileColumns / 16 : kTileColumns / 4;
      const std::uint32_t sidecar_chunks = (nvfp4 ? scale_blocks : split.blocks_per_split) * chunks_per_block;
      const std::uint32_t last_block = nvfp4 ? k / kNvfp4ScaleRows : blocks;
      Expr first_sidecar_block = nvfp4 ? region.let("first_scale_block", k_start / kNvfp4ScaleRows) : first_block;
      if (!fp8 && !nf4) region.loop("sidecar_copy", u32(0), u32(ceil_div(sidecar_chunks, kSubgroupSize)), [&](Body& loop, Expr c) {
        Expr chunk = loop.let("sidecar_chunk", c * kSubgroupSize + lane);
        Expr chunk_block = loop.let("chunk_block", first_sidecar_block + chunk / chunks_per_block);
        loop.if_then(logical_and(chunk < sidecar_chunks, chunk_block < last_block), [&](Body& copy) {
          const std::uint32_t chunk_elements = nvfp4 ? 16 : 4;
          Expr from = copy.let("sidecar_from", chunk_block * n + first_column + (chunk % chunks_per_block) * chunk_elements);
          Expr to = subgroups == 1 ? chunk * 4u : copy.let("sidecar_to", sidecar_base + chunk * 4u);
          copy.async_copy(scale_tile, to, scales, from, 16);
          if (with_sums) copy.async_copy(second_tile, to, second, from, 16);
        });
      });
      for (std::uint32_t stage = 0; stage < stages; ++stage) {
        auto copy = [&](Body& body) {
          for (const StageCopies& copies : stage_copies) copies(body, stage, stage);
        };
        if (short_last_part) region.if_then(u32(stage) < part_stages, copy);
        else copy(region);
        region.async_commit();
      }
      if (!perm.name.empty()) gather_x_rows(region, staging, perm, split, m, k, ragged);
      region.async_wait(stages - 1);
      region.barrier();  // every lane's copies of the first stage are in the tiles
      // NVFP4: each scale word (a block's 4 columns 4g .. 4g + 3) becomes the B factors of
      // the four tiles, once a part, at factor_tile[block][g][j] (one 16-byte load a k-step).
      Expr factor_base = nvfp4 ? tile_base("factor", factor_words) : Expr();
      if (nvfp4) {
        const std::uint32_t words = scale_blocks * kTileColumns / 4;
        Expr part_words = ragged ? region.let("scale_words", split_rows / kNvfp4ScaleRows * (kTileColumns / 4)) : u32(words);
        region.loop("scale_decode", u32(0), u32(ceil_div(words, kSubgroupSize)), [&](Body& loop, Expr c) {
          Expr word = loop.let("scale_word", c * kSubgroupSize + lane);
          loop.if_then(word < part_words, [&](Body& decode) {
            Expr codes = decode.let("scale_codes", scale_tile[sidecar_base + word]);
            const std::array<Expr, 4> factors = decode_nvfp4_scale_word(decode, input, codes, "scale_factor");
            decode.store(factor_tile, factor_base + word * 4u, make_vector({factors[0], factors[1], factors[2], factors[3]}));
          });
        });
        region.barrier();  // the factors are in the tile
      }

      // ldmatrix.trans rows of B. Nibbles: lane l names weight row l of a pair of k-steps
      // (matrix i = rows 8i .. 8i + 7; 4 words a row), giving lane (g, t) half-word g of rows
      // 2t, 2t + 1 of each matrix (decode_int4_row_pair). FP8: lane l names 16-byte half l / 16 of
      // row 8 ((l / 8) % 2) + l % 8 of a k-step (8 words a row; matrices: half 0 rows 0-7,
      // 8-15, half 1 rows 0-7, 8-15; the halves of rows with bit 2 set swapped in the tile:
      // fp8_tile_words), decode_fp8_step.
      // NF4 (column-major tile, non-transposed ldmatrix): lane l names column 4 (l % 8) +
      // l / 8 of a 32-row span (matrix i = tile i: mma column g of tile j is column 4g + j,
      // as int4's), giving lane (g, t) its column's rows 8t .. 8t + 7 of the span: the k-steps
      // run over a permutation of k (nf4_step).
      Expr matrix = region.let("matrix", lane / 8u);
      // GPTQ (word-row tile, plain 16-byte loads): lane (g, t) reads chunk g of word row t of a
      // span (stage_word_rows' swizzle), the words of its columns 4g + j, j = 0 .. 3, whose
      // nibbles are rows 8t .. 8t + 7 (gptq_span).
      Expr w_lane = fp8    ? region.let("w_lane", w_base + fp8_tile_words((matrix & 1u) * 8u + lane % 8u, lane / 16u))
                    : nf4  ? region.let("w_lane", w_base + lane * split.nf4_column_words())
                    : gptq ? region.let("w_lane", w_base + thread * kTileColumns + (group ^ (thread * 2u)) * 4u)
                           : region.let("w_lane", w_base + lane * 4u);
      // ldmatrix rows of A: lane 8i + r names row r of matrix i (rows 0-7 / 8-15, k 0-7 / 8-15)
      // of m-tile mt, clamped to the staged rows (the rows past m are never stored).
      Expr a_tile_row = region.let("a_tile_row", (matrix & 1u) * 8u + lane % 8u);
      std::vector<Expr> a_row_start;
      for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
        Expr row = plus(a_tile_row, mt * kTileRows);
        if (mt * kTileRows + kTileRows > x_tile_rows) row = min(row, u32(x_tile_rows - 1));
        a_row_start.push_back(region.let(fmt::format("a_row_start{}", mt), x_base + row * split.x_pitch() + (matrix / 2u) * 8u));
      }
      // NF4's and GPTQ's A rows g and g + 8 of each m-tile (clamped as above), from column 8t
      // of a span: a lane loads its fragments itself (nf4_step's and gptq_span's permutations of k).
      std::vector<Expr> a_lane_rows;  // [mt * 2 + half]
      for (std::uint32_t v = 0; v < 2 * m_tiles && (nf4 || gptq); ++v) {
        Expr row = plus(group, (v / 2) * kTileRows + (v % 2) * 8);
        if ((v / 2) * kTileRows + (v % 2) * 8 + 8 > x_tile_rows) row = min(row, u32(x_tile_rows - 1));
        a_lane_rows.push_back(region.let(fmt::format("a_lane_row{}_{}", v / 2, v % 2), x_base + row * split.x_pitch() + thread * 8u));
      }
      // int4 and NF4 fold each block's mma sums into f32 accumulators with its sidecars;
      // NVFP4's scales are in B and FP8's per column, so their mma sums run over the whole part.
      // sums[mt * kTiles + j]: m-tile mt, 8-column tile j.
      const Expr zero4 = make_vector({f32(0.0f), f32(0.0f), f32(0.0f), f32(0.0f)});
      std::vector<Expr> acc, part_sums;
      for (std::uint32_t v = 0; v < sums_per_lane && !whole_part_sums; ++v) {
        acc.push_back(region.let(fmt::format("acc{}", v), f32(0.0f)));
      }
      for (std::uint32_t v = 0; v < m_tiles * kTiles && whole_part_sums; ++v) {
        part_sums.push_back(region.let(fmt::format("sum{}_{}", v / kTiles, v % kTiles), zero4));
      }
      // E4M3: per 16-byte half h of the lane's B rows, NaN codes seen (fp8_nan_bytes).
      std::array<Expr, 2> nan_bytes;
      for (std::uint32_t h = 0; h < 2 && e4m3; ++h) nan_bytes[h] = region.let(fmt::format("nan_bytes{}", h), u32(0));
      Expr factor_lane = nvfp4 ? region.let("factor_lane", factor_base + group * 4u) : Expr();
      // Block `local_block` of the part, staged at block `tile_block` of the tiles (the same
      // but in a ring, whose slots hold a few of the part's blocks at a time).
      auto run_block = [&](Body& loop, const Expr& local_block, const Expr& tile_block) {
        Expr block = loop.let("block", first_block + local_block);
        loop.if_then(block < blocks, [&](Body& owned) {  // subgroup-uniform
          // x_sums[mt]: the m-tile's sums of x (zero points, offsets).
          std::vector<Expr> sums = part_sums, x_sums;
          for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
            for (std::uint32_t j = 0; j < kTiles && !whole_part_sums; ++j) {
              sums.push_back(owned.let(fmt::format("block_sum{}_{}", mt, j), zero4));
            }
            if (with_sums) x_sums.push_back(owned.let(fmt::format("x_sum{}", mt), zero4));
          }
          // The block's k-steps, unrolled where a block has at most kUnrolledSteps of them:
          // every address is then a per-block register plus an immediate. A ragged last
          // block (k % block_size != 0) tests each step against its step count.
          Expr steps = k % block_size == 0 ? u32(block_steps)
                                           : owned.let("steps", min(u32(block_steps), u32(k / kStepRows) - block * block_steps));
          std::vector<Expr> a_block;
          for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
            a_block.push_back(owned.let(fmt::format("a_block{}", mt), a_row_start[mt] + tile_block * block_size));
          }
          const std::uint32_t row_words = split.weight_row_bytes() / 4;
          // NF4: a block is 32 bytes of each tile column, and its x from a_lane_rows.
          Expr w_block = owned.let("w_block", w_lane + tile_block * (nf4 ? block_size / 8 : block_size * row_words));
          std::vector<Expr> a_lane_block;
          for (std::uint32_t v = 0; v < a_lane_rows.size(); ++v) {
            a_lane_block.push_back(owned.let(fmt::format("a_lane_block{}_{}", v / 2, v % 2), a_lane_rows[v] + tile_block * block_size));
          }
          // NVFP4: the block's B factors of the lane's columns, 32 words a k-step.
          Expr factor_block =
              nvfp4 ? owned.let("factor_block", factor_lane + local_block * (block_steps * kTileColumns)) : Expr();
          // base + scale * k_offset; a single immediate for an unrolled step.
          auto at = [&](const Expr& base, std::uint32_t scale, const Expr& k_offset) {
            if (const auto* literal = k_offset.as<Literal>()) return plus(base, scale * std::uint32_t(literal->bits));
            return base + (scale == 1 ? k_offset : k_offset * scale);
          };
          // The B registers of `step_count` (1 or 2) k-steps from k_offset: ldmatrix.x2/x4.trans,
          // nibbles two registers a step (rows 2t, 2t + 1 and 2t + 8, 2t + 9), FP8 four.
          const std::uint32_t step_registers = fp8 ? 4 : 2;
          auto load_b = [&](Body& step_body, const Expr& k_offset, std::uint32_t step_count, const std::string& suffix) {
            if (nf4) {  // a 32-row span: k_offset / 8 words into each tile column
              const Expr address = plus(w_block, std::uint32_t(k_offset.as<Literal>()->bits) / 8);
              return step_body.let("b_codes" + suffix, subgroup_load_matrix(w_tile, address, 4));
            }
            if (gptq) {  // a 32-row span: 4 word rows of 32 words
              return step_body.let("b_words" + suffix,
                                   bitcast(Type(ScalarType::U32, 4), w_tile.load(at(w_block, 4, k_offset), 4)));
            }
            return step_body.let("b_halves" + suffix, subgroup_load_matrix(w_tile, at(w_block, row_words, k_offset),
                                                                           step_registers * step_count, true));
          };
          // NF4: the k-steps of a 32-row span run over k in the order that puts rows 8t + 4s ..
          // 8t + 4s + 3 at mma rows 2t, 2t + 1, 2t + 8, 2t + 9 of step s, so that a lane's
          // ldmatrix register of a tile holds its B codes (bytes 2s, 2s + 1: two codes each)
          // and its A pairs of a span are one 16-byte load per row. A byte's two codes give each
          // piece's B pair (code_pieces); the pieces' mmas add into the same sums.
          // NF4's and GPTQ's A of a 32-row span from k_offset: per row g and g + 8 of each m-tile
          // ([mt * 2 + half]), x[row][8t .. 8t + 7] as 4 words, one 16-byte load.
          auto span_x_words = [&](Body& span_body, const Expr& k_offset, const std::string& suffix) {
            std::vector<Expr> words;
            for (std::uint32_t v = 0; v < a_lane_block.size(); ++v) {
              words.push_back(span_body.let(fmt::format("a_words{}_{}{}", v / 2, v % 2, suffix),
                                            x_tile.load_words(at(a_lane_block[v], 1, k_offset), 4)));
            }
            return words;
          };
          std::vector<Expr> nf4_span_x;  // a span's x words of the lane's rows (nf4_step)
          auto nf4_step = [&](Body& step_body, std::uint32_t k_offset, const Expr& loaded, std::uint32_t s,
                              const std::string& suffix) {
            // A: x[8t + 4s .. 8t + 4s + 3] of rows g and g + 8, words 2s and 2s + 1 of one 16-byte
            // load per row and span (loaded at s = 0, kept for s = 1).
            if (s == 0) nf4_span_x = span_x_words(step_body, u32(k_offset / 32 * 32), suffix);
            std::vector<Expr> a;
            for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
              const Expr &low = nf4_span_x[2 * mt], &high = nf4_span_x[2 * mt + 1];
              a.push_back(make_vector({extract_lane(low, 2 * s), extract_lane(high, 2 * s), extract_lane(low, 2 * s + 1),
                                       extract_lane(high, 2 * s + 1)}));
            }
            // The code at bit `bit` of `codes` by shuffles from the lane of that number:
            // shfl.sync.idx reads lane bits 4..0, and bit 4 (the next code's lowest) only picks
            // the copy in lanes 16..31, so the lane needs no mask. A byte's two codes then give,
            // per piece p, the B register half-pair (the low code's piece in the low half) by
            // one prmt.
            auto entry = [&](const Expr& codes, std::uint32_t bit) {
              const Expr source = (bit == 0 ? codes : codes >> u32(bit)) & 31u;
              std::vector<Expr> words;
              for (const Expr& word : code_words) words.push_back(subgroup_shuffle(word, source));
              return words;
            };
            auto piece_words = [&](const Expr& codes, std::uint32_t byte, const std::string& name) {
              const std::vector<Expr> low = entry(codes, 8 * byte), high = entry(codes, 8 * byte + 4);
              std::vector<Expr> low_words, high_words, words;
              for (std::uint32_t q = 0; q < low.size(); ++q) {
                low_words.push_back(step_body.let(fmt::format("{}_low{}", name, q), low[q]));
                high_words.push_back(step_body.let(fmt::format("{}_high{}", name, q), high[q]));
              }
              for (std::uint32_t p = 0; p < pieces.count; ++p) {
                words.push_back(permute(low_words[p / 2], high_words[p / 2], u32(p % 2 == 0 ? 0x5410u : 0x7632u)));
              }
              return words;
            };
            for (std::uint32_t j = 0; j < kTiles; ++j) {
              Expr codes = extract_lane(loaded, j);
              const std::vector<Expr> rows_low = piece_words(codes, 2 * s, fmt::format("entry{}_{}{}", j, 2 * s, suffix));
              const std::vector<Expr> rows_high = piece_words(codes, 2 * s + 1, fmt::format("entry{}_{}{}", j, 2 * s + 1, suffix));
              for (std::uint32_t p = 0; p < pieces.count; ++p) {
                Expr b = make_vector({rows_low[p], rows_high[p]});
                for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                  Expr& sum = sums[mt * kTiles + j];
                  step_body.assign(sum, subgroup_mma(input, a[mt], b, sum));
                }
              }
            }
          };
          // GPTQ: a 32-row span from k_offset. Lane (g, t)'s word of tile j holds its column's
          // rows 8t .. 8t + 7 (nibble i: row 8t + i), which decode_int4_row_pair pairs as
          // nibbles (i, i + 4). Step s puts rows 8t + 2s, 8t + 2s + 4 at mma rows 2t, 2t + 1
          // and rows 8t + 2s + 1, 8t + 2s + 5 at 2t + 8, 2t + 9 (pairs 2s, 2s + 1), and A the
          // same rows of x: one 16-byte load of x[8t .. 8t + 7] per row, a prmt per register.
          auto gptq_span = [&](Body& span_body, const Expr& k_offset, const Expr& words, const std::string& suffix) {
            std::vector<std::array<Expr, 4>> pairs;  // [j][i]: nibbles i, i + 4 of tile j's word
            for (std::uint32_t j = 0; j < kTiles; ++j) {
              pairs.push_back(decode_int4_row_pair(span_body, input, extract_lane(words, j), fmt::format("rows{}{}", j, suffix)));
            }
            const std::vector<Expr> x_words = span_x_words(span_body, k_offset, suffix);
            for (std::uint32_t step = 0; step < 2; ++step) {
              const std::string step_suffix = fmt::format("{}_{}", suffix, step);
              std::vector<Expr> a;
              for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                // x[8t + 2s], x[8t + 2s + 4] are the low halves of words s and s + 2; the odd rows the high.
                auto pick = [&](std::uint32_t v, std::uint32_t selector) {
                  return permute(extract_lane(x_words[v], step), extract_lane(x_words[v], step + 2), u32(selector));
                };
                a.push_back(span_body.let(fmt::format("a{}{}", mt, step_suffix),
                                          make_vector({pick(2 * mt, 0x5410u), pick(2 * mt + 1, 0x5410u),
                                                       pick(2 * mt, 0x7632u), pick(2 * mt + 1, 0x7632u)})));
              }
              for (std::uint32_t j = 0; j < kTiles; ++j) {
                Expr b = span_body.let(fmt::format("b{}{}", j, step_suffix),
                                       make_vector({pairs[j][2 * step], pairs[j][2 * step + 1]}));
                for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                  Expr& sum = sums[mt * kTiles + j];
                  span_body.assign(sum, subgroup_mma(input, a[mt], b, sum));
                }
              }
              const Expr ones = u32(half_ones(input));
              for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                span_body.assign(x_sums[mt], subgroup_mma(input, a[mt], make_vector({ones, ones}), x_sums[mt]));
              }
            }
          };
          // One 16-row k-step at a_block + k_offset (x tile) with its B registers `regs`
          // (step_registers of them: the first of `loaded` from `first`).
          auto k_step = [&](Body& step_body, const Expr& k_offset, const Expr& loaded, std::uint32_t first,
                            const std::string& suffix) {
            if (nf4) return nf4_step(step_body, std::uint32_t(k_offset.as<Literal>()->bits), loaded, first / 2, suffix);
            std::vector<Expr> a;
            for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
              a.push_back(step_body.let(fmt::format("a{}{}", mt, suffix),
                                        subgroup_load_matrix(x_tile, at(a_block[mt], 1, k_offset), 4)));
            }
            // B: rows 2t, 2t+1 give b0 of all four tiles, rows 2t+8, 2t+9 b1.
            std::array<Expr, 4> low_rows, high_rows, b_registers;
            const Expr low_halves = extract_lane(loaded, first), high_halves = extract_lane(loaded, first + 1);
            if (fp8) {
              const std::array<Expr, 4> regs = {low_halves, high_halves, extract_lane(loaded, first + 2),
                                                extract_lane(loaded, first + 3)};
              b_registers = decode_fp8_step(input, shape.fp8_format, regs);
              for (std::uint32_t h = 0; h < 2 && e4m3; ++h) {
                step_body.assign(nan_bytes[h],
                                 nan_bytes[h] | fp8_nan_bytes(regs[2 * h]) | fp8_nan_bytes(regs[2 * h + 1]));
              }
            } else if (nvfp4) {
              Expr loaded = step_body.let("scale_factors" + suffix,
                                          factor_tile.load(at(factor_block, kTileColumns / kStepRows, k_offset), 4));
              const std::array<Expr, 4> factors = {extract_lane(loaded, 0), extract_lane(loaded, 1),
                                                   extract_lane(loaded, 2), extract_lane(loaded, 3)};
              low_rows = decode_nvfp4_row_pair(input, low_halves, factors);
              high_rows = decode_nvfp4_row_pair(input, high_halves, factors);
            } else {
              low_rows = decode_int4_row_pair(step_body, input, low_halves, "rows_low" + suffix);
              high_rows = decode_int4_row_pair(step_body, input, high_halves, "rows_high" + suffix);
            }
            for (std::uint32_t j = 0; j < kTiles; ++j) {
              Expr b = step_body.let(fmt::format("b{}{}", j, suffix),
                                     fp8 ? b_registers[j] : make_vector({low_rows[j], high_rows[j]}));
              for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                Expr& sum = sums[mt * kTiles + j];
                step_body.assign(sum, subgroup_mma(input, a[mt], b, sum));
              }
            }
            if (with_sums) {
              const Expr ones = u32(half_ones(input));
              for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
                step_body.assign(x_sums[mt], subgroup_mma(input, a[mt], make_vector({ones, ones}), x_sums[mt]));
              }
            }
          };
          if (block_steps <= kUnrolledSteps) {
            // Pairs of steps share one ldmatrix.x4.trans, an odd last step takes an x2; a
            // ragged last block (k % block_size != 0) tests each step (x2) against its count.
            const bool whole = k % block_size == 0;
            for (std::uint32_t step = 0; step < block_steps;) {
              const std::uint32_t count = gptq || (whole && step + 1 < block_steps && !fp8) ? 2 : 1;
              auto run = [&, step, count](Body& step_body) {
                Expr b = load_b(step_body, u32(step * kStepRows), count, fmt::format("_step{}", step));
                if (gptq) return gptq_span(step_body, u32(step * kStepRows), b, fmt::format("_span{}", step / 2));
                for (std::uint32_t i = 0; i < count; ++i) {
                  k_step(step_body, u32((step + i) * kStepRows), b, step_registers * i, fmt::format("_step{}", step + i));
                }
              };
              if (whole) run(owned);
              else owned.if_then(u32(step) < steps, run);
              step += count;
            }
          } else if (gptq) {
            owned.loop("span", u32(0), steps / 2u, [&](Body& span_body, Expr span) {
              Expr k_offset = span_body.let("span_k", span * kGptqSpanRows);
              gptq_span(span_body, k_offset, load_b(span_body, k_offset, 2, ""), "");
            });
          } else {
            owned.loop("step", u32(0), steps, [&](Body& step_body, Expr step) {
              Expr b = load_b(step_body, step * kStepRows, 1, "");
              k_step(step_body, step * kStepRows, b, 0, "");
            });
          }
          if (whole_part_sums) return;
          // Fold the block: element e of tile j is (row g + 8 (e >> 1), column 8t + 4 (e & 1) + j)
          // (decode_int4_row_pair's interleave): the lane's columns are 8t .. 8t + 7, whose
          // sidecars are two 16-byte loads each.
          const Expr sidecar = owned.let("sidecar", sidecar_base + local_block * kTileColumns + thread * 8u);
          const std::array<Expr, 2> s = {owned.let("s_low", scale_tile.load(sidecar, 4)),
                                         owned.let("s_high", scale_tile.load(sidecar + 4u, 4))};
          std::array<Expr, 2> seconds;
          if (with_sums) {  // GPTQ's zero points are u32
            auto second_of = [&](const Expr& loaded) { return gptq ? cast(Type(ScalarType::F32, 4), loaded) : loaded; };
            seconds = {owned.let("second_low", second_of(second_tile.load(sidecar, 4))),
                       owned.let("second_high", second_of(second_tile.load(sidecar + 4u, 4)))};
          }
          for (std::uint32_t j = 0; j < kTiles; ++j) {
            for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
              for (std::uint32_t e = 0; e < elements; ++e) {
                Expr& total = acc[(mt * kTiles + j) * 4 + e];
                Expr d = extract_lane(sums[mt * kTiles + j], e);
                Expr scale = extract_lane(s[e & 1], j);
                switch (mode) {
                  case BlockAffineMode::Symmetric: owned.assign(total, fma(scale, d, total)); break;
                  case BlockAffineMode::ZeroPoint:
                    owned.assign(total, fma(scale, fma(-extract_lane(seconds[e & 1], j), extract_lane(x_sums[mt], e), d), total));
                    break;
                  case BlockAffineMode::Offset:
                    owned.assign(total, fma(extract_lane(seconds[e & 1], j), extract_lane(x_sums[mt], e), fma(scale, d, total)));
                    break;
                }
              }
            }
          }
        });
      };
      // Each stage's blocks once its copies have landed (the first stage's: above; a ring's
      // stages: below).
      const std::uint32_t stage_blocks = split.blocks_per_split / stages;
      for (std::uint32_t stage = 0; stage < stages && !ring; ++stage) {
        if (stage > 0) {
          region.async_wait(stages - 1 - stage);
          region.barrier();
        }
        region.loop("local_block", u32(stage * stage_blocks), u32((stage + 1) * stage_blocks),
                    [&](Body& loop, Expr local_block) { run_block(loop, local_block, local_block); });
      }
      // A ring (TensorGemmSplit::ring_slots, R slots): stage j is multiplied from slot j % R
      // once its copies have landed (wait_group R - 2: the refills of the slots before it,
      // at most R - 2, may still fly) and the barrier has seen every subgroup past stage j - 1,
      // whose slot then takes stage j - 1 + R. The prologue above landed stage 0. Every
      // stage but the first commits one group, empty past the part's last stage, so that
      // the wait count stays R - 2. A round is R stages, the slots in order; its copies, and
      // the next round's, come from the registers of its first row plus immediates. Waits
      // and barriers are the workgroup's (every round, every slot); the copies and products
      // of stages past a subgroup's part are skipped.
      if (ring) {
        const std::uint32_t slots = split.ring_slots, slot_blocks = split.slot_blocks;
        const std::uint32_t rounds = ceil_div(ring_stages, slots), slot_rows = slot_blocks * block_size;
        region.loop("ring_round", u32(0), u32(rounds), [&](Body& round_body, Expr round) {
          Staging from = staging;
          from.names_suffix = "_round";
          from.k_start = round_body.let("k_start_round", k_start + round * (slots * slot_rows));
          const std::vector<StageCopies> round_copies = stage_rows(round_body, from, split, m, k, n, false, true);
          // The copies of the round's stage `round_stage` (R and more: the next round's) into
          // its slot, where the part has that stage.
          auto refill = [&](Body& body, std::uint32_t round_stage) {
            body.if_then(plus(round * slots, round_stage) < part_stages, [&](Body& copying) {
              for (const StageCopies& copy : round_copies) copy(copying, round_stage % slots, round_stage);
            });
          };
          auto land = [&](Body& body) {
            body.async_wait(slots - 2);
            body.barrier();
          };
          for (std::uint32_t slot = 0; slot < slots; ++slot) {
            Expr stage = plus(round * slots, slot);
            if (slot == 0) {
              round_body.if_then(round > 0u, [&](Body& later) {
                land(later);
                refill(later, slots - 1);
                later.async_commit();
              });
            } else {
              land(round_body);
              refill(round_body, slots + slot - 1);
              round_body.async_commit();
            }
            auto multiply = [&](Body& body) {
              body.loop("slot_block", u32(0), u32(slot_blocks), [&](Body& loop, Expr b) {
                Expr tile_block = slot == 0 ? b : loop.let("tile_block", b + slot * slot_blocks);
                run_block(loop, loop.let("local_block", round * (slots * slot_blocks) + tile_block), tile_block);
              });
            };
            if (short_last_part || ring_stages % slots != 0) round_body.if_then(stage < part_stages, multiply);
            else multiply(round_body);
          }
        });
      }
      // The k-subgroups, then the splits meet (SplitK.h); lanes whose row g is past m own
      // nothing (their sums are of rows past m), so at m < 16 only the rows below m move
      // through the partials.
      Expr unit = region.let("unit", workgroup_id(1) * column_tiles + column_tile);
      Expr owner = m % tile_rows == 0 ? boolean(true) : region.let("owner", first_row + group < m);
      // E4M3: whether each of the lane's output columns met a NaN code. Byte j = 2h + e of
      // `nan_columns` flags B column 16h + 2g + e over the lane's rows, then over its group's
      // four lanes; output column 16h + 4t + 2c + e (decode_fp8_step) is B column g' = 2t + c's.
      std::array<Expr, 2> nan_columns;
      if (e4m3) {
        auto rows_folded = [&](const Expr& bytes) { return (bytes | (bytes >> 16u)) & u32(0x8080u); };
        Expr flags = region.let("nan_columns", rows_folded(nan_bytes[0]) | (rows_folded(nan_bytes[1]) << 16u));
        region.assign(flags, flags | subgroup_shuffle(flags, lane ^ 1u));
        region.assign(flags, flags | subgroup_shuffle(flags, lane ^ 2u));
        for (std::uint32_t c = 0; c < 2; ++c) {
          nan_columns[c] = region.let(fmt::format("nan_columns{}", c), subgroup_shuffle(flags, thread * 8u + 4u * c));
        }
      }
      std::vector<Expr> met;  // acc[(mt * 4 + j) * 4 + e] for e < elements, in that order
      for (std::uint32_t v = 0; v < sums_per_lane; ++v) {
        if (v % 4 >= elements) continue;
        if (!whole_part_sums) {
          met.push_back(acc[v]);
          continue;
        }
        Expr sum = extract_lane(part_sums[v / 4], v % 4);
        if (e4m3) {
          const std::uint32_t j = v / 4 % kTiles, c = v % 2;
          sum = select(ne(nan_columns[c] & u32(0x80u << (8 * j)), u32(0)), bitcast(ScalarType::F32, u32(0x7FC00000u)), sum);
        }
        met.push_back(region.let(fmt::format("acc{}", v), sum));
      }
      // The k-subgroups meet in shared memory (reusing the weight tiles, after a barrier),
      // lane-interleaved by f32x4 so that each access is conflict-free; k-subgroup 0, one
      // whole subgroup as the splits' meeting needs, goes on.
      const Expr met_first = column_subgroups == 1 ? lane * 4u : column_subgroup * (kSubgroupSize * met_per_lane) + lane * 4u;
      emit_k_subgroup_meeting(region, meeting, k_subgroup, owner, met_first, met, kSubgroupSize * 4);
      // The last split of the unit stores the rows below m: per row the lane's columns in
      // runs of consecutive ones, one vector store a run. Nibbles: one run of eight,
      // 8t .. 8t + 7 (tile j's element e at 8t + 4e + j); FP8: two of four, 16h + 4t ..
      // 16h + 4t + 3 (tile 2h + e's element c at 16h + 4t + 2c + e).
      // The sums are of the decoders' values (TensorDecode.h): the power of two they hold is
      // undone (exact), then NVFP4's global scale or FP8's column scale applies (one rounding).
      const double decoded_scale = nvfp4 ? kNvfp4DecodedScale : e4m3 ? kE4m3DecodedScale : nf4 ? pieces.scale : 1.0;
      auto store_outputs = [&](Body& store_body, const std::vector<Expr>& met_totals) {
        std::vector<Expr> totals = met_totals;
        Expr global = nvfp4 ? store_body.let("global", global_scale[0u]) : Expr();
        for (Expr& total : totals) {
          if (decoded_scale != 1.0) total = total * (1.0 / decoded_scale);
          if (nvfp4) total = total * global;
        }
        const std::uint32_t runs = fp8 ? 2 : 1, run_words = 4 / runs;
        for (std::uint32_t r = 0; r < runs; ++r) {
          Expr column = store_body.let(r == 0 ? "column" : fmt::format("column{}", r),
                                       fp8 ? first_column + thread * 4u + 16u * r : first_column + thread * 8u);
          Expr column_scales = fp8 ? store_body.let(fmt::format("column_scales{}", r), scales.load(column, 4)) : Expr();
          // GPTQ adds b to the sums: the run's 8 values as 4 words, a pair each.
          Expr column_bias = gptq ? store_body.let("column_bias", bias.load_words(column, 4)) : Expr();
          for (std::uint32_t mt = 0; mt < m_tiles; ++mt) {
            for (std::uint32_t h = 0; h < elements / 2; ++h) {
              const std::string row_name = runs == 1 ? fmt::format("out_row{}_{}", mt, h) : fmt::format("out_row{}_{}_{}", mt, h, r);
              Expr row = store_body.let(row_name, first_row + group + (8u * h + kTileRows * mt));
              // Word w holds the run's columns 2w, 2w + 1: tiles j, j + 1 of element c.
              std::vector<Expr> words;
              for (std::uint32_t w = 0; w < run_words; ++w) {
                const std::uint32_t c = fp8 ? w : w / 2, j = fp8 ? 2 * r : (w % 2) * 2;
                auto total = [&](std::uint32_t tile) {
                  const Expr& value = totals[(mt * kTiles + tile) * elements + 2 * h + c];
                  if (gptq) {
                    const std::uint32_t offset = 4 * c + tile;  // within the run
                    Expr pair = bitcast(Type(activation, 2), extract_lane(column_bias, offset / 2));
                    return cast(ScalarType::F32, extract_lane(pair, offset % 2)) + value;
                  }
                  return fp8 ? value * extract_lane(column_scales, 2 * c + tile % 2) : value;
                };
                words.push_back(bitcast(ScalarType::U32, cast(Type(activation, 2), make_vector({total(j), total(j + 1)}))));
              }
              auto put = [&](Body& b) { b.store_words(out, row * n + column, make_vector(words)); };
              if (m % tile_rows != 0) store_body.if_then(row < m, put);
              else put(store_body);
            }
          }
        }
      };
      // Lane-interleaved partials: vector c of lane l at unit * 32 * met + 128 c + 4 l, so
      // each f32x4 store and load of the subgroup covers 512 contiguous bytes.
      auto meet_splits = [&](Body& meet) {
        // Each column subgroup is a unit of its own: its lane 0 draws its ticket.
        emit_split_k_meeting(meet, split_k, owner, unit * (kSubgroupSize * met_per_lane) + lane * 4u, met, unit,
                             split_index, store_outputs, kSubgroupSize * 4,
                             column_subgroups == 1 ? Expr() : eq(lane, u32(0)));
      };
      if (k_subgroups == 1) meet_splits(region);
      else region.if_then(eq(k_subgroup, u32(0)), meet_splits);
    });
  });
  return program.build();
}

Program fast_tensor_gemm(const TensorGemmShape& shape) {
  if (auto reason = tensor_gemm_unsupported(shape)) {
    throw OpError(fmt::format("Fix: {} has no fast schedule: m={} > 1 runs on the tensor cores, but {}; use "
                              "\"schedule\": \"seed\" (or \"auto\").",
                              traits_of(shape.weights).op, shape.m, *reason));
  }
  return tensor_gemm(shape);
}

}  // namespace quantc::ir::ops
