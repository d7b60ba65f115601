#include "ir/ops/DequantMatmul.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "ir/Builder.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/SplitK.h"
#include "ir/ops/TensorGemm.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kDequantWorkgroupInvocations = 128;  // along n
constexpr std::uint32_t kMaxTileRows = 4;             // rows of out per invocation
constexpr std::uint32_t kNvfp4BlockSize = 16;

constexpr char kInt8Id[] = "rlx::dequant_matmul_int8";

std::vector<std::uint64_t> f32_table(const std::vector<float>& values) {
  std::vector<std::uint64_t> bits;
  for (float value : values) bits.push_back(Literal::f32(value).as<Literal>()->bits);
  return bits;
}

/// table[e] = 2^(e - bias - mantissa_bits) for e >= 1, and the subnormal step
/// 2^(1 - bias - mantissa_bits) for e = 0, so value = significand * table[e].
std::vector<std::uint64_t> fp8_exponent_table(int exponent_count, int bias, int mantissa_bits) {
  std::vector<float> values;
  for (int e = 0; e < exponent_count; ++e) values.push_back(std::ldexp(1.0f, std::max(e, 1) - bias - mantissa_bits));
  return f32_table(values);
}

struct MatmulDims {
  std::uint32_t m, k, n;
};

/// Checks shared by all four ops; returns the rows per invocation tile.
std::uint32_t check_matmul_dims(const char* op, const MatmulDims& dims) {
  require_nonzero(op, "m", dims.m, "no activation rows; pass m >= 1");
  require_nonzero(op, "k", dims.k, "empty reduction; pass k >= 1");
  require_nonzero(op, "n", dims.n, "no output columns; pass n >= 1");
  checked_count(op, "m*k (x elements)", dims.m, dims.k);
  checked_count(op, "k*n (weight elements)", dims.k, dims.n);
  checked_count(op, "m*n (out elements)", dims.m, dims.n);
  checked_count(op, "ceil(n/128)*128 (column invocations)", ceil_div(dims.n, kDequantWorkgroupInvocations),
                kDequantWorkgroupInvocations);
  const std::uint32_t tile = std::min(dims.m, kMaxTileRows);
  require_grid_yz(op, "y (ceil(m/4))", ceil_div(dims.m, tile), "split m into launches of <= 262140 rows");
  return tile;
}

/// How one op turns stored codes into the weight and the weight into a product.
struct WeightDecoder {
  std::uint32_t block_size = 0;  // k indices per sidecar block
  /// Once per invocation, before the k loop (e.g. the global scale).
  std::function<void(Body&, const Expr& column)> prologue = [](Body&, const Expr&) {};
  /// Once per block (loads that block's sidecars).
  std::function<void(Body&, const Expr& block, const Expr& column)> begin_block = [](Body&, const Expr&,
                                                                                    const Expr&) {};
  /// The weight w(p, column), called once per p and reused for every row of the tile.
  std::function<Expr(Body&, const Expr& p, const Expr& column)> weight;
  /// The term added to the accumulator.
  std::function<Expr(const Expr& x, const Expr& weight)> product = [](const Expr& x, const Expr& weight) {
    return x * weight;
  };
};

/// Launch and body of the tiled kernel described in DequantMatmul.h.
void emit_tiled_matmul(ProgramBuilder& program, const char* op_id, const MatmulDims& dims, std::uint32_t tile,
                       const BufferRef& x, const BufferRef& out, const WeightDecoder& decoder) {
  const bool partial_tile = dims.m % tile != 0;
  program.launch({kDequantWorkgroupInvocations, 1, 1},
                 {ceil_div(dims.n, kDequantWorkgroupInvocations), ceil_div(dims.m, tile), 1});
  program.body([&](Body& body) {
    body.region(op_id, [&](Body& region) {
      Expr column = region.let("column", invocation_id(0));
      Expr row_begin = region.let("row_begin", workgroup_id(1) * double(tile));
      region.if_then(column < double(dims.n), [&](Body& in_range) {
        std::vector<Expr> x_base, acc;
        for (std::uint32_t t = 0; t < tile; ++t) {
          Expr row = row_begin + double(t);
          if (partial_tile) row = min(row, u32(dims.m - 1));
          x_base.push_back(in_range.let(fmt::format("x_base{}", t), row * double(dims.k)));
          acc.push_back(in_range.let(fmt::format("acc{}", t), f32(0.0f)));
        }
        decoder.prologue(in_range, column);
        in_range.loop("block", u32(0), u32(ceil_div(dims.k, decoder.block_size)), [&](Body& block_body, Expr block) {
          decoder.begin_block(block_body, block, column);
          Expr k_begin = block_body.let("k_begin", block * double(decoder.block_size));
          // k_begin + min(block, k - k_begin) cannot wrap, unlike k_begin + block_size.
          Expr k_end = block_body.let("k_end", k_begin + min(u32(decoder.block_size), u32(dims.k) - k_begin));
          block_body.loop("p", k_begin, k_end, [&](Body& k_body, Expr p) {
            Expr weight = k_body.let("weight", decoder.weight(k_body, p, column));
            for (std::uint32_t t = 0; t < tile; ++t) {
              k_body.assign(acc[t], acc[t] + decoder.product(widen(x[x_base[t] + p]), weight));
            }
          });
        });
        for (std::uint32_t t = 0; t < tile; ++t) {
          Expr row = row_begin + double(t);
          auto store = [&](Body& target) {
            target.store(out, row * double(dims.n) + column, narrow(out.element, acc[t]));
          };
          if (partial_tile) {
            in_range.if_then(row < double(dims.m), store);
          } else {
            store(in_range);
          }
        }
      });
    });
  });
}


/// The shared INT8/INT4 block-affine program; `code` reads the integer code as f32.
/// Callers have run check_matmul_dims (which yields `tile`) and check_block_size.
Program block_affine_program(const char* name, const char* op_id, const MatmulDims& dims, std::uint32_t tile,
                             std::uint32_t block_size, BlockAffineMode mode, ScalarType weight_element,
                             std::uint32_t weight_count, ScalarType activation,
                             const std::function<Expr(Body&, const BufferRef&, const Expr& element)>& code) {
  const std::uint32_t blocks = ceil_div(dims.k, block_size);
  const std::uint32_t sidecar_count = checked_count(name, "ceil(k/block_size)*n (sidecar elements)", blocks, dims.n);

  ProgramBuilder program(name);
  BufferRef x = program.input("x", activation, dims.m * dims.k);
  BufferRef w = program.input("w", weight_element, weight_count);
  BufferRef scales = program.input("scales", ScalarType::F32, sidecar_count);
  BufferRef second;  // zero_points or offsets
  if (const char* sidecar = second_sidecar(mode)) second = program.input(sidecar, ScalarType::F32, sidecar_count);
  BufferRef out = program.output("out", activation, dims.m * dims.n);

  Expr block_scale, block_second;
  WeightDecoder decoder;
  decoder.block_size = block_size;
  decoder.begin_block = [&](Body& block_body, const Expr& block, const Expr& column) {
    Expr sidecar = block_body.let("sidecar", block * double(dims.n) + column);
    block_scale = block_body.let("block_scale", scales[sidecar]);
    if (mode == BlockAffineMode::ZeroPoint) block_second = block_body.let("block_zero_point", second[sidecar]);
    if (mode == BlockAffineMode::Offset) block_second = block_body.let("block_offset", second[sidecar]);
  };
  decoder.weight = [&](Body& k_body, const Expr& p, const Expr& column) {
    Expr value = k_body.let("code", code(k_body, w, p * double(dims.n) + column));
    switch (mode) {
      case BlockAffineMode::ZeroPoint: return (value - block_second) * block_scale;
      // The product rounds before the add, as ggml's q*d + m (DequantMatmul.h).
      case BlockAffineMode::Offset: return value * block_scale + block_second;
      case BlockAffineMode::Symmetric: break;
    }
    return value * block_scale;
  };
  emit_tiled_matmul(program, op_id, dims, tile, x, out, decoder);
  return program.build();
}

void check_block_size(const char* op, std::uint32_t block_size) {
  require_nonzero(op, "block_size", block_size, "every k-block needs at least one element; pass block_size >= 1");
}

// ---------------------------------------------------------------------------------
// The fast batch-1 schedule (see DequantMatmul.h, "Fast schedule").

constexpr std::uint32_t kSectorBytes = 32;  // a warp reads one 32-byte sector of every row
/// Bytes of a row a lane loads: one u32. The 8 lanes of a sector are its column lanes, the
/// warp's other 4 lanes k-lanes. On the H100 model u32 lanes beat u32x2 and u32x4 (16-byte
/// lanes: 16-32 sums per lane, 128-254 registers, 12-16 warps per SM) at every Llama and
/// MiniLM shape, for int4 4096x4096 19.9 -> 6.0 us and nvfp4 23.5 -> 6.8 us, int8 a tie
/// with u32x2 (bench/results/kernels.md).
constexpr std::uint32_t kLaneBytes = 4;
constexpr std::uint32_t kColumnLanes = kSectorBytes / kLaneBytes;
constexpr std::uint32_t kKLanes = kSubgroupSize / kColumnLanes;

/// Rows per chunk of the int8/int4 fast GEMVs: a slice of a bigger block (e.g. 2 of a
/// 64-row block), so that blocks do not cap how many k-lanes share K. 32 beat 16 and 64 on
/// an H200 (bench/results/gpu-nvidia-h200.md, "Splitting K across the subgroups of a
/// workgroup"): 64-row chunks left each lane 128 rows at 4096x11008.
constexpr std::uint32_t kBlockAffineChunkRows = 32;
/// The shortest chunk shorten_chunks makes.
constexpr std::uint32_t kMinChunkRows = 16;

/// Most k-subgroups of the fp8 fast GEMV. With 16-byte lanes an H200 ran fp8 1.3x slower
/// with 2 or 4 than with 1 (bench/results/gpu-nvidia-h200.md, "Splitting K across the
/// subgroups of a workgroup"); with one word per lane the H100 model puts 2 at 89.6% of
/// HBM at all three Llama shapes (1: 8.1 / 15.4 / 20.4 us at 4096x4096 / 4096x11008 /
/// 11008x4096 with u32x2 lanes, 2: 5.8 / 15.3 / 15.2 us). Not yet measured on a GPU.
constexpr std::uint32_t kFp8MaxKSubgroups = 2;

/// What one op contributes to the shared fast program.
struct FastGemv {
  const char* name = nullptr;
  const char* op_id = nullptr;
  std::uint32_t k = 0, n = 0;
  std::uint32_t columns_per_byte = 1;  // 1 (int8, fp8) or 2 (int4, nvfp4)
  /// Rows sharing one sidecar entry (0: no per-block sidecars; fp8).
  std::uint32_t block_rows = 0;
  /// Rows a k-lane takes at a time: whole blocks (a multiple of block_rows), or a slice of
/// one (a divisor of block_rows).
  std::uint32_t chunk_rows = 0;
  std::uint32_t max_batch_rows = 32;   // weight rows whose loads are issued together
  /// Most subgroups per workgroup splitting the chunks of the same columns (SplitK.h).
  std::uint32_t max_k_subgroups = 4;
  bool needs_x_sum = false;            // asymmetric: sum x per block for the zero point
  BufferRef x, w, out;
  /// Once per invocation before the k loop (loads of per-column or global scales).
  std::function<void(Body&, const Expr& column)> prologue = [](Body&, const Expr&) {};
  /// Per block: loads (only loads: they fly with the batch's rows) the lane's sidecars
  /// of block `block` into slot `slot` (0 .. blocks per batch - 1).
  std::function<void(Body&, const Expr& block, const Expr& column, std::uint32_t slot)> begin_block =
      [](Body&, const Expr&, const Expr&, std::uint32_t) {};
  /// The f32 values of a lane's word of a row, in column order (4 for one byte per
  /// column, 8 for nibbles); lets go in `body`.
  std::function<std::vector<Expr>(Body&, const Expr& word)> decode;
  /// Per block: folds the block's dot products (and x sum) into the accumulators.
  std::function<void(Body&, std::vector<Expr>& acc, const std::vector<Expr>& dot, const Expr& x_sum,
                     std::uint32_t slot)>
      end_block;
  /// After the k loop, before the butterfly (e.g. NaN flags into the accumulators).
  std::function<void(Body&, std::vector<Expr>& acc)> before_reduce = [](Body&, std::vector<Expr>&) {};
  /// The stored value of column `c` (0..lane columns-1) from its reduced accumulator.
  std::function<Expr(Body&, unsigned c, const Expr& acc, const Expr& stored_column)> finish =
      [](Body&, unsigned, const Expr& acc, const Expr&) { return acc; };
};

std::uint32_t lane_columns(const FastGemv& g) { return kLaneBytes * g.columns_per_byte; }

/// The largest divisor of `rows` not above `limit`: batches never straddle chunks.
std::uint32_t divisor_at_most(std::uint32_t rows, std::uint32_t limit) {
  for (std::uint32_t d = std::min(rows, limit); d > 1; --d) {
    if (rows % d == 0) return d;
  }
  return 1;
}

/// Why the fast schedule cannot run, or nullopt.
std::optional<std::string> fast_unsupported(const char* name, std::uint32_t m, std::uint32_t n,
                                            std::uint32_t columns_per_byte) {
  if (m != 1) {
    return fmt::format("m={} is not 1 (the fast schedule is the batch-1 GEMV; batches use the seed's row tiles)", m);
  }
  const std::uint32_t multiple = kLaneBytes * columns_per_byte;
  if (n % multiple != 0) {
    return fmt::format("n={} is not a multiple of {} (each lane loads one 4-byte word = {} columns of a weight row, "
                       "4-byte aligned); pad n to a multiple of {}",
                       n, multiple, multiple, multiple);
  }
  (void)name;
  return std::nullopt;
}

[[noreturn]] void throw_fast_unsupported(const char* name, const std::string& reason) {
  throw OpError(fmt::format("Fix: {} has no fast schedule: {}; use \"schedule\": \"seed\" (or \"auto\").", name, reason));
}

/// How a fast GEMV splits K: `chunks` of chunk_rows rows over the k-lanes of k_subgroups
/// subgroups per workgroup and `splits` workgroups per sector column (`subgroups` of them).
struct KSplit {
  std::uint32_t chunks = 0, subgroups = 0, k_subgroups = 1, splits = 1;
  std::uint32_t all_k_lanes() const { return splits * k_subgroups * kKLanes; }
};

KSplit k_split(const FastGemv& g) {
  KSplit split;
  split.chunks = ceil_div(g.k, g.chunk_rows);
  split.subgroups = ceil_div(g.n, kColumnLanes * lane_columns(g));
  // K split across the subgroups of a workgroup (SplitK.h), then across workgroups where
  // the sectors alone still give too few workgroups.
  split.k_subgroups = choose_k_subgroups(split.chunks, kKLanes, 2, g.max_k_subgroups);
  split.splits = choose_splits(split.subgroups, split.chunks, kKLanes * split.k_subgroups);
  return split;
}

/// Halves g.chunk_rows, down to kMinChunkRows, while the split is exhausted: every k-lane
/// already has a single chunk and twice the splits would still stay within
/// kSplitKTargetWorkgroups (a few sector columns and a short K: 4096 x 4096 int4 has 64
/// columns of sectors, 128 chunks of 32 rows and 128 k-lanes in 512 workgroups). Shorter
/// chunks then give more workgroups, each warp a shorter chain (on the H100 model int4
/// 4096x4096 5.4 -> 3.7 us); where K is long enough for two chunks per k-lane they only
/// add partial sums.
/// Also, exhausted or not, while the grid has fewer workgroups than the SMs (MiniLM's
/// shapes: 6-24 columns of sectors) and the shorter chunks either split K across more
/// workgroups or, for the nibble formats, add k-subgroups. An H200, back to back in CUDA
/// graphs (bench/results/gpu-nvidia-h200.md, "Shorter chunks at MiniLM's shapes"):
///  - more workgroups (1536 x 384: 12-48 -> 24-96) paid for every format: int4 16.0 -> 5.8
///    us, int8 10.3 -> 6.6, fp8 10.6 -> 6.3, nvfp4 12.0 -> 7.0;
///  - more k-subgroups on the same workgroups (384 x 384, 384 x 1536) paid 13-16% for int4
///    and nvfp4, whose lanes sum 8 columns (two per byte), twice the chain per chunk of
///    int8's and fp8's 4; for int8 and fp8 they cost 9-31%, so those keep their chunks.
void shorten_chunks(FastGemv& g) {
  while (g.chunk_rows % 2 == 0 && g.chunk_rows / 2 >= kMinChunkRows) {
    const KSplit split = k_split(g);
    const std::uint64_t workgroups = std::uint64_t{split.subgroups} * split.splits;
    if (2 * workgroups > kSplitKTargetWorkgroups) return;
    if (split.chunks > split.all_k_lanes()) {
      if (workgroups >= kTargetSms) return;
      FastGemv shorter = g;
      shorter.chunk_rows /= 2;
      const KSplit next = k_split(shorter);
      const bool more_workgroups = std::uint64_t{next.subgroups} * next.splits > workgroups;
      const bool more_nibble_k_subgroups = g.columns_per_byte == 2 && next.k_subgroups > split.k_subgroups;
      if (!more_workgroups && !more_nibble_k_subgroups) return;
    }
    g.chunk_rows /= 2;
  }
}

void emit_fast_gemv(ProgramBuilder& program, FastGemv g) {
  shorten_chunks(g);
  const std::uint32_t columns = lane_columns(g);
  // kColumnLanes lanes share each 32-byte sector of a row: a warp owns one sector of every row.
  const std::uint32_t warp_columns = kColumnLanes * columns;
  const std::uint32_t row_bytes = g.n / g.columns_per_byte;
  const KSplit split = k_split(g);
  const std::uint32_t chunks = split.chunks, subgroups = split.subgroups;
  const std::uint32_t k_subgroups = split.k_subgroups, splits = split.splits;
  const std::uint32_t all_k_lanes = split.all_k_lanes();
  const std::uint32_t rounds = ceil_div(chunks, all_k_lanes);
  // A batch is either a divisor of a block (big blocks) or whole blocks (small blocks).
  const std::uint32_t block = g.block_rows ? g.block_rows : g.chunk_rows;
  // A chunk is whole blocks, or a slice of one block (chunk_rows divides block_rows):
  // then each slice folds its own sums into the accumulators with the block's sidecars.
  const bool sliced = g.chunk_rows < block;
  const std::uint32_t batch =
      sliced ? divisor_at_most(g.chunk_rows, g.max_batch_rows)
      : block >= g.max_batch_rows || g.chunk_rows % block != 0
          ? divisor_at_most(block, g.max_batch_rows)
          : block * divisor_at_most(g.chunk_rows / block, g.max_batch_rows / block);
  const std::uint32_t blocks_per_batch = batch > block ? batch / block : 1;
  // Batches per group: a group is one block, one slice, or one batch of blocks.
  const std::uint32_t group_rows = batch > block ? batch : sliced ? g.chunk_rows : block;
  const std::uint32_t batches_per_block = group_rows / batch;
  const std::uint32_t block_groups = g.chunk_rows / group_rows;  // per chunk
  const std::uint32_t blocks = ceil_div(g.k, block);
  const bool partial_rows = g.k % g.chunk_rows != 0;
  const bool vector_x = batch % 4 == 0 && g.chunk_rows % 4 == 0 && block % 4 == 0 && g.k % 4 == 0;
  const bool partial_columns = g.n % warp_columns != 0;
  const bool f32_activations = g.x.element == ScalarType::F32;
  const SplitK split_k = declare_split_k(program, splits, g.n, subgroups);
  const KSubgroupMeeting meeting = declare_k_subgroup_meeting(program, k_subgroups, warp_columns);
  program.launch({k_subgroups * kSubgroupSize, 1, 1}, {subgroups, splits, 1});
  even_out_waves(program, kGemvLeastRegisters, kGemvLeastRegisters);
  program.body([&](Body& body) {
    body.region(g.op_id, [&](Body& region) {
      Expr local = k_subgroups == 1 ? Expr() : region.let("local", local_id(0));
      Expr lane = k_subgroups == 1 ? region.let("lane", local_id(0)) : region.let("lane", local % kSubgroupSize);
      Expr k_subgroup = k_subgroups == 1 ? u32(0) : region.let("k_subgroup", local / kSubgroupSize);
      Expr k_lane = region.let("k_lane", lane / kColumnLanes);
      Expr split = splits > 1 ? region.let("split", workgroup_id(1)) : Expr();
      // The workgroup's k-lanes: k_subgroups subgroups of kKLanes; then the splits.
      Expr workgroup_k_lane = k_subgroups == 1 ? k_lane : region.let("workgroup_k_lane", k_subgroup * kKLanes + k_lane);
      Expr first_k_lane = splits > 1 ? region.let("first_k_lane", split * (k_subgroups * kKLanes) + workgroup_k_lane)
                                     : workgroup_k_lane;
      Expr stored_byte = region.let("column_byte", workgroup_id(0) * kSectorBytes + (lane % kColumnLanes) * kLaneBytes);
      // Lanes past n (the last subgroup of a partial tile) reload the last valid columns
      // and skip their stores, so that every lane runs the same loop (uniform shuffles).
      Expr column_byte = partial_columns ? region.let("load_byte", min(stored_byte, u32(row_bytes - kLaneBytes)))
                                         : stored_byte;
      Expr stored_column = g.columns_per_byte == 1 ? stored_byte : region.let("column", stored_byte * g.columns_per_byte);
      Expr column = !partial_columns ? stored_column
                    : g.columns_per_byte == 1 ? column_byte
                                              : region.let("load_column", column_byte * g.columns_per_byte);
      std::vector<Expr> acc;
      for (std::uint32_t c = 0; c < columns; ++c) acc.push_back(region.let(fmt::format("acc{}", c), f32(0.0f)));
      g.prologue(region, column);
      region.loop("round", u32(0), u32(rounds), [&](Body& round_body, Expr round) {
        Expr chunk = round_body.let("chunk", round * all_k_lanes + first_k_lane);
        round_body.if_then(chunk < chunks, [&](Body& in_chunk) {
          Expr chunk_row = in_chunk.let("chunk_row", chunk * g.chunk_rows);
          in_chunk.loop("group", u32(0), u32(block_groups), [&](Body& group_body, Expr group) {
            // One block (batches inside it) or one batch of blocks_per_batch blocks.
            Expr group_row = block_groups == 1 ? chunk_row : group_body.let("group_row", chunk_row + group * group_rows);
            std::vector<Expr> block_valid(blocks_per_batch);
            std::vector<Expr> block_index(blocks_per_batch);
            auto begin_blocks = [&](Body& b) {  // sidecar loads only: they fly with the rows
              if (!g.block_rows) return;
              for (std::uint32_t slot = 0; slot < blocks_per_batch; ++slot) {
                Expr index = b.let(fmt::format("block{}", slot),
                                   sliced ? chunk / (block / g.chunk_rows)
                                          : chunk * (g.chunk_rows / block) + group * blocks_per_batch + slot);
                if (partial_rows && blocks_per_batch > 1) {
                  block_valid[slot] = b.let(fmt::format("block_valid{}", slot), index < blocks);
                  index = b.let(fmt::format("load_block{}", slot), min(index, u32(blocks - 1)));
                }
                block_index[slot] = index;
                g.begin_block(b, index, column, slot);
              }
            };
            std::vector<std::vector<Expr>> dots(blocks_per_batch);
            std::vector<Expr> x_sums(blocks_per_batch);
            auto start_dots = [&](Body& b, std::uint32_t slot) {
              dots[slot].clear();
              for (std::uint32_t c = 0; c < columns; ++c) {
                dots[slot].push_back(g.block_rows ? b.let(fmt::format("dot{}_{}", slot, c), f32(0.0f)) : acc[c]);
              }
              if (g.needs_x_sum) x_sums[slot] = b.let(fmt::format("x_sum{}", slot), f32(0.0f));
            };
            auto finish_block = [&](Body& b, std::uint32_t slot) {
              if (!g.block_rows) return;
              if (block_valid[slot].defined()) {
                // A block wholly past k (in the last batch) adds nothing, not even 0 * its scale.
                b.if_then(block_valid[slot], [&](Body& valid_body) {
                  g.end_block(valid_body, acc, dots[slot], x_sums[slot], slot);
                });
                return;
              }
              g.end_block(b, acc, dots[slot], x_sums[slot], slot);
            };
            if (batch <= block) begin_blocks(group_body);
            if (batch <= block) start_dots(group_body, 0);
            group_body.loop("batch", u32(0), u32(batches_per_block), [&](Body& batch_body, Expr batch_index) {
              Expr first_row = batches_per_block == 1 ? group_row : batch_body.let("first_row", group_row + batch_index * batch);
              // Every load of the batch first (bytes in flight), then the arithmetic.
              std::vector<Expr> words, valid, x_vectors;
              // The batch's first word; row r's is row_bytes * r further (no clamped rows).
              Expr batch_word = partial_rows ? Expr() : batch_body.let("batch_word", first_row * row_bytes + column_byte);
              for (std::uint32_t r = 0; r < batch; ++r) {
                Expr row = r == 0 ? first_row : first_row + r;
                Expr in_range;
                if (partial_rows) {
                  in_range = batch_body.let(fmt::format("row_valid{}", r), row < g.k);
                  row = batch_body.let(fmt::format("row{}", r), min(row, u32(g.k - 1)));
                }
                valid.push_back(in_range);
                Expr at = partial_rows ? row * row_bytes + column_byte : r == 0 ? batch_word : batch_word + r * row_bytes;
                Expr loaded = g.w.load_words(at, 1);
                // Rows past k read code 0 (value +0 in every format), so NaN codes of the
                // clamped row cannot leak into the sum.
                if (in_range.defined()) loaded = select(in_range, loaded, u32(0));
                words.push_back(batch_body.let(fmt::format("words{}", r), loaded));
              }
              if (batch > block) begin_blocks(batch_body);  // the batch's blocks' sidecars, also in flight
              std::vector<HalfWords> x_halves;  // f16/bf16: 4 x values per u32x2
              if (vector_x) {
                for (std::uint32_t r = 0; r < batch; r += 4) {
                  Expr row = r == 0 ? first_row : first_row + r;
                  if (partial_rows) row = min(row, u32(g.k - 4));
                  if (f32_activations) {
                    x_vectors.push_back(batch_body.let(fmt::format("x_vec{}", r / 4), g.x.load(row, 4)));
                  } else {
                    x_halves.push_back(load_half_words(batch_body, g.x, row, 4, fmt::format("x_vec{}", r / 4)));
                  }
                }
              }
              std::vector<Expr> xs;
              for (std::uint32_t r = 0; r < batch; ++r) {
                Expr xr;
                if (vector_x) {
                  xr = f32_activations ? extract_lane(x_vectors[r / 4], r % 4) : x_halves[r / 4].element(r % 4);
                } else {
                  Expr row = r == 0 ? first_row : first_row + r;
                  xr = widen(g.x[partial_rows ? min(row, u32(g.k - 1)) : row]);
                }
                if (valid[r].defined()) xr = select(valid[r], xr, f32(0.0f));
                xs.push_back(batch_body.let(fmt::format("x{}", r), xr));
              }
              for (std::uint32_t r = 0; r < batch; ++r) {
                const std::uint32_t slot = batch > block ? r / block : 0;
                if (batch > block && r % block == 0) start_dots(batch_body, slot);
                if (g.needs_x_sum) batch_body.assign(x_sums[slot], x_sums[slot] + xs[r]);
                std::vector<Expr> values = g.decode(batch_body, words[r]);
                for (std::size_t c = 0; c < values.size(); ++c) {
                  batch_body.assign(dots[slot][c], fma(xs[r], values[c], dots[slot][c]));
                }
                if (batch > block && r % block == block - 1) finish_block(batch_body, slot);
              }
            });
            if (batch <= block) finish_block(group_body, 0);
          });
        });
      });
      g.before_reduce(region, acc);
      // The k-lanes' partial sums: a butterfly over the lane bits above the column lanes.
      for (std::uint32_t c = 0; c < columns; ++c) {
        for (std::uint32_t mask = kColumnLanes; mask < kSubgroupSize; mask *= 2) {
          region.assign(acc[c], acc[c] + subgroup_shuffle(acc[c], lane ^ u32(mask)));
        }
      }
      Expr leader = eq(k_lane, u32(0));
      if (partial_columns) leader = logical_and(leader, stored_column < g.n);
      // The workgroup's k-subgroups meet in shared memory; k-subgroup 0 (one whole
      // subgroup, as the workgroups' meeting needs) goes on with the totals.
      emit_k_subgroup_meeting(region, meeting, k_subgroup, leader, (lane % kColumnLanes) * columns, acc);
      auto meet_splits = [&](Body& b) {
        emit_split_k_meeting(b, split_k, leader, stored_column, acc, workgroup_id(0), split,
                             [&](Body& store_body, const std::vector<Expr>& totals) {
                               for (std::uint32_t c = 0; c < columns; c += 4) {
                                 std::vector<Expr> lanes;
                                 for (std::uint32_t l = 0; l < 4; ++l)
                                   lanes.push_back(g.finish(store_body, c + l, totals[c + l], stored_column));
                                 Expr at = c == 0 ? stored_column : stored_column + c;
                                 if (f32_activations) {
                                   store_body.store(g.out, at, make_vector(lanes));
                                 } else {
                                   store_half_pairs(store_body, g.out, at, lanes);
                                 }
                               }
                             });
      };
      if (k_subgroups == 1) {
        meet_splits(region);
      } else {
        region.if_then(eq(k_subgroup, u32(0)), meet_splits);
      }
    });
  });
}


/// The int8/int4 fast program: buffers as block_affine_program declares them.
Program block_affine_fast(const char* name, const char* op_id, std::uint32_t k, std::uint32_t n,
                          std::uint32_t block_size, BlockAffineMode mode, ScalarType weight_element,
                          std::uint32_t weight_count, std::uint32_t columns_per_byte, ScalarType activation) {
  const bool asymmetric = mode == BlockAffineMode::ZeroPoint, offset = mode == BlockAffineMode::Offset;
  const std::uint32_t blocks = ceil_div(k, block_size);
  const std::uint32_t sidecar_count = blocks * n;  // checked by the caller
  ProgramBuilder program(name);
  FastGemv g;
  g.name = name;
  g.op_id = op_id;
  g.k = k;
  g.n = n;
  g.columns_per_byte = columns_per_byte;
  g.block_rows = block_size;
  g.chunk_rows = divisor_at_most(block_size, kBlockAffineChunkRows);
  g.max_batch_rows = 32;
  g.needs_x_sum = asymmetric || offset;
  g.x = program.input("x", activation, k);
  g.w = program.input("w", weight_element, weight_count);
  BufferRef scales = program.input("scales", ScalarType::F32, sidecar_count);
  BufferRef second;  // zero_points or offsets
  const char* second_name = second_sidecar(mode);
  if (second_name) second = program.input(second_name, ScalarType::F32, sidecar_count);
  g.out = program.output("out", activation, n);
  const std::uint32_t columns = lane_columns(g);
  std::vector<std::vector<Expr>> block_scales(32), block_seconds(32);
  g.begin_block = [&](Body& body, const Expr& block, const Expr& column, std::uint32_t slot) {
    // The block's sidecars load first, in flight with its first batch of rows.
    Expr sidecar = body.let(fmt::format("sidecar{}", slot), block * n + column);
    block_scales[slot].clear();
    block_seconds[slot].clear();
    for (std::uint32_t q = 0; q < columns / 4; ++q) {
      Expr at = q == 0 ? sidecar : sidecar + 4 * q;
      block_scales[slot].push_back(body.let(fmt::format("scales{}_{}", slot, q), scales.load(at, 4)));
      if (second_name) {
        block_seconds[slot].push_back(body.let(fmt::format("{}{}_{}", second_name, slot, q), second.load(at, 4)));
      }
    }
  };
  g.decode = [&](Body&, const Expr& word) {
    return columns_per_byte == 1 ? decode_int8_word(word) : decode_uint4_word(word);
  };
  g.end_block = [&](Body& body, std::vector<Expr>& acc, const std::vector<Expr>& dot, const Expr& x_sum,
                    std::uint32_t slot) {
    // acc += s * (sum x*q - z * sum x): the scale and zero point once per block; in the
    // offset mode acc += s * (sum x*q) + o * (sum x), the scale and offset once per block.
    for (std::uint32_t c = 0; c < columns; ++c) {
      Expr s = extract_lane(block_scales[slot][c / 4], c % 4);
      if (offset) {
        body.assign(acc[c], fma(s, dot[c], acc[c]));
        body.assign(acc[c], fma(extract_lane(block_seconds[slot][c / 4], c % 4), x_sum, acc[c]));
        continue;
      }
      Expr centred = asymmetric ? fma(-extract_lane(block_seconds[slot][c / 4], c % 4), x_sum, dot[c]) : dot[c];
      body.assign(acc[c], fma(s, centred, acc[c]));
    }
  };
  emit_fast_gemv(program, g);
  return program.build();
}

Program fp8_fast(std::uint32_t k, std::uint32_t n, Fp8Format format, ScalarType activation) {
  const char* name = "dequant_matmul_fp8";
  ProgramBuilder program(name);
  FastGemv g;
  g.name = name;
  g.op_id = kDequantMatmulFp8Id;
  g.k = k;
  g.n = n;
  g.columns_per_byte = 1;
  g.block_rows = 0;
  g.chunk_rows = std::min<std::uint32_t>(32, k);
  g.max_batch_rows = 32;
  g.max_k_subgroups = kFp8MaxKSubgroups;
  g.x = program.input("x", activation, k);
  g.w = program.input("w", ScalarType::U8, k * n);
  BufferRef scales = program.input("scales", ScalarType::F32, n);
  g.out = program.output("out", activation, n);
  const std::uint32_t columns = lane_columns(g);
  const bool e4m3 = format == Fp8Format::E4M3;
  Expr nan_flags;  // bit 7 of byte c: column c met a NaN code
  g.prologue = [&](Body& body, const Expr&) {
    if (e4m3) nan_flags = body.let("nan_bytes", u32(0));
  };
  g.decode = [&](Body& body, const Expr& word) {
    std::vector<Expr> values;
    if (e4m3) body.assign(nan_flags, nan_flags | fp8_e4m3_nan_bytes(word));
    for (unsigned i = 0; i < 4; ++i) values.push_back(decode_fp8_byte(format, word, i));
    return values;
  };
  g.before_reduce = [&](Body& body, std::vector<Expr>& acc) {
    if (!e4m3) return;
    // A NaN code makes its column's sum NaN; the butterfly carries it to the leader.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::uint32_t c = 0; c < columns; ++c) {
      Expr flagged = ne(nan_flags & u32(0x80u << (8 * c)), u32(0));
      body.assign(acc[c], select(flagged, f32(nan), acc[c]));
    }
  };
  std::vector<Expr> column_scales;
  g.finish = [&](Body& body, unsigned c, const Expr& acc, const Expr& column) {
    // The seed's (x * w) * s with the scale factored out of the column's sum.
    if (c % 4 == 0) {
      column_scales.push_back(
          body.let(fmt::format("column_scales{}", c / 4), scales.load(c == 0 ? column : column + c, 4)));
    }
    return acc * extract_lane(column_scales[c / 4], c % 4);
  };
  emit_fast_gemv(program, g);
  return program.build();
}

Program nvfp4_fast(std::uint32_t k, std::uint32_t n, std::uint32_t scale_count, ScalarType activation) {
  const char* name = "dequant_matmul_nvfp4";
  ProgramBuilder program(name);
  FastGemv g;
  g.name = name;
  g.op_id = kDequantMatmulNvfp4Id;
  g.k = k;
  g.n = n;
  g.columns_per_byte = 2;
  g.block_rows = kNvfp4BlockSize;
  g.chunk_rows = 2 * kNvfp4BlockSize;
  g.max_batch_rows = 2 * kNvfp4BlockSize;
  g.x = program.input("x", activation, k);
  g.w = program.input("w", ScalarType::U8, ceil_div(k * n, 2));
  BufferRef scales = program.input("scales", ScalarType::U8, scale_count);
  BufferRef global_scale = program.input("global_scale", ScalarType::F32, 1);
  g.out = program.output("out", activation, n);
  const std::uint32_t columns = lane_columns(g);
  Expr global;
  std::vector<Expr> nan_flags;
  g.prologue = [&](Body& body, const Expr&) {
    global = body.let("global", global_scale[0u]);
    for (std::uint32_t q = 0; q < columns / 4; ++q) nan_flags.push_back(body.let(fmt::format("nan_bytes{}", q), u32(0)));
  };
  std::vector<Expr> scale_words(8);
  g.begin_block = [&](Body& body, const Expr& block, const Expr& column, std::uint32_t slot) {
    // The lane's scale bytes, one per column: one 8-byte load at byte block*n + column.
    Expr at = body.let(fmt::format("scale_byte{}", slot), block * n + column);
    scale_words[slot] = body.let(fmt::format("scale_codes{}", slot), scales.load_words(at, columns / 4));
  };
  g.decode = [&](Body&, const Expr& word) { return decode_fp4_e2m1_word_x2(word); };
  g.end_block = [&](Body& body, std::vector<Expr>& acc, const std::vector<Expr>& dot, const Expr&, std::uint32_t slot) {
    // acc += (scale / 2) * sum x * (2 * e2m1): the block scale once per block and column;
    // halving the decoded E4M3 scale is exact (2^119 instead of 2^120: its smallest value
    // 2^-9 stays normal). NaN scale codes are flagged per column (before_reduce).
    for (std::uint32_t q = 0; q < columns / 4; ++q) {
      Expr code_word = body.let(fmt::format("scale_word{}_{}", slot, q), extract_lane(scale_words[slot], q));
      body.assign(nan_flags[q], nan_flags[q] | fp8_e4m3_nan_bytes(code_word));
      for (std::uint32_t i = 0; i < 4; ++i) {
        const std::uint32_t c = 4 * q + i;
        Expr half_scale = decode_fp8_byte(Fp8Format::E4M3, code_word, i, -1);
        body.assign(acc[c], fma(half_scale, dot[c], acc[c]));
      }
    }
  };
  g.before_reduce = [&](Body& body, std::vector<Expr>& acc) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::uint32_t c = 0; c < columns; ++c) {
      Expr flagged = ne(nan_flags[c / 4] & u32(0x80u << (8 * (c % 4))), u32(0));
      body.assign(acc[c], select(flagged, f32(nan), acc[c]));
    }
  };
  g.finish = [&](Body&, unsigned, const Expr& acc, const Expr&) { return acc * global; };
  emit_fast_gemv(program, g);
  return program.build();
}

}  // namespace

std::string_view to_string(Fp8Format format) { return format == Fp8Format::E4M3 ? "e4m3" : "e5m2"; }

std::optional<Fp8Format> parse_fp8_format(std::string_view text) {
  if (text == "e4m3") return Fp8Format::E4M3;
  if (text == "e5m2") return Fp8Format::E5M2;
  return std::nullopt;
}

Expr decode_fp8(Body& body, Fp8Format format, const Expr& code, const std::string& prefix) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const bool e4m3 = format == Fp8Format::E4M3;
  const double mantissa_bits = e4m3 ? 3 : 2;
  const std::uint32_t exponent_mask = e4m3 ? 15 : 31;
  Expr exponent = body.let(prefix + "_exponent", (code >> mantissa_bits) & double(exponent_mask));
  Expr mantissa = body.let(prefix + "_mantissa", code & double((1u << int(mantissa_bits)) - 1));
  // The implicit leading 1 of normal numbers, as an integer significand.
  Expr significand = mantissa + select(ne(exponent, u32(0)), u32(1u << int(mantissa_bits)), u32(0));
  Expr finite = body.let(prefix + "_finite",
                         cast(ScalarType::F32, significand) *
                             Lookup::make(ScalarType::F32,
                                          e4m3 ? fp8_exponent_table(16, 7, 3) : fp8_exponent_table(32, 15, 2),
                                          exponent));
  Expr sign = select(ne(code & 128.0, u32(0)), f32(-1.0f), f32(1.0f));
  if (e4m3) {
    // S.1111.111 is the only NaN; E4M3 spends the other exponent-15 codes on 256..448.
    return select(eq(code & 127.0, u32(127)), f32(nan), finite * sign);
  }
  Expr special = select(eq(mantissa, u32(0)), f32(std::numeric_limits<float>::infinity()), f32(nan));
  return select(eq(exponent, u32(31)), special, finite) * sign;
}

Expr decode_fp4_e2m1(Expr code) {
  static const std::vector<float> kValues = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  return Lookup::make(ScalarType::F32, f32_table(kValues), std::move(code));
}

std::vector<Expr> decode_int8_word(const Expr& word) {
  // XOR 0x80 per byte turns each signed q into the unsigned q + 128; prmt places it under
  // the 0x4B exponent byte: bitcast(0x4B0000xx) = 2^23 + q + 128 exactly.
  Expr biased = word ^ u32(0x80808080u);
  std::vector<Expr> values;
  for (unsigned i = 0; i < 4; ++i) {
    Expr bits = permute(biased, u32(kMagicBits), u32(0x7440u | i));
    values.push_back(bitcast(ScalarType::F32, bits) - f32(kMagic + 128.0f));
  }
  return values;
}

std::vector<Expr> decode_uint4_word(const Expr& word) {
  std::vector<Expr> values;
  for (unsigned i = 0; i < 8; ++i) {
    Expr shifted = i == 0 ? word : word >> u32(4 * i);
    values.push_back(bitcast(ScalarType::F32, (shifted & u32(0xF)) | u32(kMagicBits)) - f32(kMagic));
  }
  return values;
}

Expr decode_fp8_byte(Fp8Format format, const Expr& word, unsigned index, int scale_exponent) {
  const bool e4m3 = format == Fp8Format::E4M3;
  // Byte `index` into bits 31..24, zeros below (prmt from word and a zero word).
  Expr top = permute(word, u32(0), u32((index << 12) | 0x0444u));
  // An arithmetic shift copies the sign over the bits the mask clears: sign at bit 31,
  // exponent and mantissa at the top of the f32 exponent/mantissa fields.
  Expr shifted = bitcast(ScalarType::U32, bitcast(ScalarType::I32, top) >> i32(e4m3 ? 4 : 3));
  Expr bits = shifted & u32(e4m3 ? 0x87F00000u : 0x8FE00000u);
  if (!e4m3) {
    // Exponent 31: infinity (mantissa 0) or NaN, with the sign kept.
    bits = select(eq(bits & u32(0x0F800000u), u32(0x0F800000u)), bits | u32(0x7F800000u), bits);
  }
  return bitcast(ScalarType::F32, bits) * f32(std::ldexp(1.0f, (e4m3 ? 120 : 112) + scale_exponent));
}

Expr fp8_e4m3_nan_bytes(const Expr& word) {
  // A byte whose low 7 bits are all ones carries into bit 7 when 1 is added to them.
  return ((word & u32(0x7F7F7F7Fu)) + u32(0x01010101u)) & u32(0x80808080u);
}

std::vector<Expr> decode_fp4_e2m1_word_x2(const Expr& word) {
  // Code books of 128 + 2*|v| and 128 - 2*|v| (|v| = 0 0.5 1 1.5 2 3 4 6) as bytes of two
  // words each: one prmt looks four codes up (selector nibbles = the magnitude bits).
  const std::uint32_t plus_low = 0x83828180u, plus_high = 0x8C888684u;
  const std::uint32_t minus_low = 0x7D7E7F80u, minus_high = 0x74787A7Cu;
  Expr magnitudes = word & u32(0x77777777u);
  Expr magnitudes_high = magnitudes >> u32(16);
  // Byte masks 0xFF where the code's sign bit (nibble bit 3) is set: prmt replicates the
  // top bit of a byte; the sign bits of codes 1, 3 (5, 7) are bits 7, 15 (23, 31) of the
  // word, those of codes 0, 2 (4, 6) the same bits of word << 4.
  Expr shifted = word << u32(4);
  std::array<Expr, 2> signs = {permute(shifted, word, u32(0xD9C8u)), permute(shifted, word, u32(0xFBEAu))};
  // biased = plus, or minus where the sign is set: plus ^ ((plus ^ minus) & signs), with
  // plus ^ minus looked up from the XOR of the two books (one lop3).
  std::array<Expr, 2> biased;
  for (unsigned half = 0; half < 2; ++half) {
    Expr selector = half == 0 ? magnitudes : magnitudes_high;
    Expr plus = permute(u32(plus_low), u32(plus_high), selector);
    Expr flip = permute(u32(plus_low ^ minus_low), u32(plus_high ^ minus_high), selector);
    biased[half] = (flip & signs[half]) ^ plus;
  }
  std::vector<Expr> values;
  for (unsigned i = 0; i < 8; ++i) {
    Expr bits = permute(biased[i / 4], u32(kMagicBits), u32(0x7440u | (i % 4)));
    values.push_back(bitcast(ScalarType::F32, bits) - f32(kMagic + 128.0f));
  }
  return values;
}

namespace {
BlockAffineMode mode_of(bool asymmetric) {
  return asymmetric ? BlockAffineMode::ZeroPoint : BlockAffineMode::Symmetric;
}

Program int8_seed(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size, BlockAffineMode mode,
                  ScalarType activation) {
  const char* name = "dequant_matmul_int8";
  check_block_size(name, block_size);
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  return block_affine_program(name, kInt8Id, dims, tile, block_size, mode, ScalarType::I8, k * n, activation,
                              [](Body&, const BufferRef& w, const Expr& element) {
                                return cast(ScalarType::F32, w[element]);
                              });
}

Program int4_seed(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size, BlockAffineMode mode,
                  ScalarType activation) {
  const char* name = "dequant_matmul_int4";
  check_block_size(name, block_size);
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  return block_affine_program(name, kDequantMatmulInt4Id, dims, tile, block_size, mode, ScalarType::U8, ceil_div(k * n, 2),
                              activation, [](Body& body, const BufferRef& w, const Expr& element) {
                                return cast(ScalarType::F32, byte_buffer_nibble(body, w, element));
                              });
}
}  // namespace

const char* second_sidecar(BlockAffineMode mode) {
  switch (mode) {
    case BlockAffineMode::ZeroPoint: return "zero_points";
    case BlockAffineMode::Offset: return "offsets";
    case BlockAffineMode::Symmetric: break;
  }
  return nullptr;
}

std::string_view to_string(BlockAffineMode mode) {
  switch (mode) {
    case BlockAffineMode::ZeroPoint: return "asymmetric";
    case BlockAffineMode::Offset: return "offset";
    case BlockAffineMode::Symmetric: break;
  }
  return "symmetric";
}

Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, ScalarType activation) {
  return int8_seed(m, k, n, block_size, mode_of(asymmetric), activation);
}

Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, ScalarType activation) {
  return int4_seed(m, k, n, block_size, mode_of(asymmetric), activation);
}

Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format,
                          ScalarType activation) {
  const char* name = "dequant_matmul_fp8";
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  ProgramBuilder program(name);
  BufferRef x = program.input("x", activation, m * k);
  BufferRef w = program.input("w", ScalarType::U8, k * n);
  BufferRef scales = program.input("scales", ScalarType::F32, n);
  BufferRef out = program.output("out", activation, m * n);

  Expr column_scale;
  WeightDecoder decoder;
  decoder.block_size = k;  // one block: the per-column scale is loaded once
  decoder.prologue = [&](Body& body, const Expr& column) { column_scale = body.let("column_scale", scales[column]); };
  decoder.weight = [&](Body& k_body, const Expr& p, const Expr& column) {
    Expr code = k_body.let("code", cast(ScalarType::U32, w[p * double(n) + column]));
    return decode_fp8(k_body, format, code, "fp8");
  };
  // The seed multiplies the scale in after the activation: (x * w) * s.
  decoder.product = [&](const Expr& x_value, const Expr& weight) { return (x_value * weight) * column_scale; };
  emit_tiled_matmul(program, kDequantMatmulFp8Id, dims, tile, x, out, decoder);
  return program.build();
}

Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n, ScalarType activation) {
  const char* name = "dequant_matmul_nvfp4";
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  const std::uint32_t blocks = ceil_div(k, kNvfp4BlockSize);
  const std::uint32_t scale_count = checked_count(name, "ceil(k/16)*n (scale bytes)", blocks, n);
  ProgramBuilder program(name);
  BufferRef x = program.input("x", activation, m * k);
  BufferRef w = program.input("w", ScalarType::U8, ceil_div(k * n, 2));
  BufferRef scales = program.input("scales", ScalarType::U8, scale_count);
  BufferRef global_scale = program.input("global_scale", ScalarType::F32, 1);
  BufferRef out = program.output("out", activation, m * n);

  Expr global, block_scale;
  WeightDecoder decoder;
  decoder.block_size = kNvfp4BlockSize;
  decoder.prologue = [&](Body& body, const Expr&) { global = body.let("global", global_scale[0u]); };
  decoder.begin_block = [&](Body& block_body, const Expr& block, const Expr& column) {
    Expr scale_code = block_body.let("scale_code", cast(ScalarType::U32, scales[block * double(n) + column]));
    block_scale = block_body.let("block_scale", decode_fp8(block_body, Fp8Format::E4M3, scale_code, "scale"));
  };
  decoder.weight = [&](Body& k_body, const Expr& p, const Expr& column) {
    Expr code = k_body.let("code", byte_buffer_nibble(k_body, w, p * double(n) + column));
    return (decode_fp4_e2m1(code) * block_scale) * global;
  };
  emit_tiled_matmul(program, kDequantMatmulNvfp4Id, dims, tile, x, out, decoder);
  return program.build();
}


Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           BlockAffineMode mode, KernelSchedule schedule, ScalarType activation) {
  const char* name = "dequant_matmul_int8";
  if (schedule == KernelSchedule::Seed) return int8_seed(m, k, n, block_size, mode, activation);
  check_block_size(name, block_size);  // the seed's errors first, for every schedule
  check_matmul_dims(name, {m, k, n});
  checked_count(name, "ceil(k/block_size)*n (sidecar elements)", ceil_div(k, block_size), n);
  auto reason = fast_unsupported(name, m, n, 1);
  if (reason && schedule == KernelSchedule::Auto) return int8_seed(m, k, n, block_size, mode, activation);
  if (reason) throw_fast_unsupported(name, *reason);
  return block_affine_fast(name, kInt8Id, k, n, block_size, mode, ScalarType::I8, k * n, 1, activation);
}

Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           BlockAffineMode mode, KernelSchedule schedule, ScalarType activation) {
  const char* name = "dequant_matmul_int4";
  if (schedule == KernelSchedule::Seed) return int4_seed(m, k, n, block_size, mode, activation);
  check_block_size(name, block_size);
  check_matmul_dims(name, {m, k, n});
  checked_count(name, "ceil(k/block_size)*n (sidecar elements)", ceil_div(k, block_size), n);
  if (m > 1) {
    // Batches: "fast" is the tensor-core GEMM (ir/ops/TensorGemm.h, sm_80+). "auto" keeps the
    // seed, which every target runs: op constructors do not know the target (build_program,
    // ir/ops/Spec.h, takes "fast" instead for a program built for sm_80+).
    if (schedule == KernelSchedule::Auto) return int4_seed(m, k, n, block_size, mode, activation);
    return fast_tensor_gemm({TensorWeights::Int4, m, k, n, block_size, mode, activation});
  }
  auto reason = fast_unsupported(name, m, n, 2);
  if (reason && schedule == KernelSchedule::Auto) return int4_seed(m, k, n, block_size, mode, activation);
  if (reason) throw_fast_unsupported(name, *reason);
  return block_affine_fast(name, kDequantMatmulInt4Id, k, n, block_size, mode, ScalarType::U8, ceil_div(k * n, 2), 2,
                           activation);
}

Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, KernelSchedule schedule, ScalarType activation) {
  return dequant_matmul_int8(m, k, n, block_size, mode_of(asymmetric), schedule, activation);
}

Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric, KernelSchedule schedule, ScalarType activation) {
  return dequant_matmul_int4(m, k, n, block_size, mode_of(asymmetric), schedule, activation);
}

Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format,
                          KernelSchedule schedule, ScalarType activation) {
  const char* name = "dequant_matmul_fp8";
  if (schedule == KernelSchedule::Seed) return dequant_matmul_fp8(m, k, n, format, activation);
  check_matmul_dims(name, {m, k, n});
  if (m > 1) {
    // Batches: as dequant_matmul_int4.
    if (schedule == KernelSchedule::Auto) return dequant_matmul_fp8(m, k, n, format, activation);
    TensorGemmShape shape{TensorWeights::Fp8, m, k, n, 16, BlockAffineMode::Symmetric, activation};
    shape.fp8_format = format;
    return fast_tensor_gemm(shape);
  }
  auto reason = fast_unsupported(name, m, n, 1);
  if (reason && schedule == KernelSchedule::Auto) return dequant_matmul_fp8(m, k, n, format, activation);
  if (reason) throw_fast_unsupported(name, *reason);
  return fp8_fast(k, n, format, activation);
}

Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n, KernelSchedule schedule,
                            ScalarType activation) {
  const char* name = "dequant_matmul_nvfp4";
  if (schedule == KernelSchedule::Seed) return dequant_matmul_nvfp4(m, k, n, activation);
  check_matmul_dims(name, {m, k, n});
  const std::uint32_t scale_count =
      checked_count(name, "ceil(k/16)*n (scale bytes)", ceil_div(k, kNvfp4BlockSize), n);
  if (m > 1) {
    // Batches: as dequant_matmul_int4.
    if (schedule == KernelSchedule::Auto) return dequant_matmul_nvfp4(m, k, n, activation);
    return fast_tensor_gemm({TensorWeights::Nvfp4, m, k, n, kNvfp4BlockSize, BlockAffineMode::Symmetric,
                                       activation});
  }
  auto reason = fast_unsupported(name, m, n, 2);
  if (reason && schedule == KernelSchedule::Auto) return dequant_matmul_nvfp4(m, k, n, activation);
  if (reason) throw_fast_unsupported(name, *reason);
  return nvfp4_fast(k, n, scale_count, activation);
}

namespace {
OpArgs dims_shape(std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  return OpArgs::dims({{"m", m}, {"k", k}, {"n", n}});
}
OpArgs block_shape(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size, bool asymmetric) {
  OpArgs args = dims_shape(m, k, n);
  args.set("block_size", block_size);
  args.set("asymmetric", asymmetric);
  return args;
}
/// block_shape in the offset mode (w = q * s + o).
OpArgs offset_shape(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size) {
  OpArgs args = block_shape(m, k, n, block_size, false);
  args.set("offset", true);
  return args;
}
OpArgs fp8_shape(std::uint32_t m, std::uint32_t k, std::uint32_t n, const char* format) {
  OpArgs args = dims_shape(m, k, n);
  args.set("format", std::string(format));
  return args;
}

/// The weight mode of an int8/int4 spec: "asymmetric" and "offset" (both default false).
BlockAffineMode block_mode_arg(const char* op, const OpArgs& args) {
  const bool asymmetric = args.has("asymmetric") && args.boolean("asymmetric");
  const bool offset = args.has("offset") && args.boolean("offset");
  if (asymmetric && offset) {
    throw OpError(fmt::format("Fix: {} \"asymmetric\": true and \"offset\": true are exclusive: asymmetric "
                              "subtracts a zero point before the scale ((q - z) * s, buffer zero_points), offset "
                              "adds one after it (q * s + o, buffer offsets); set one of them to false.",
                              op));
  }
  return offset ? BlockAffineMode::Offset : mode_of(asymmetric);
}

Fp8Format fp8_format_arg(const OpArgs& args) {
  const std::string& text = args.choice("format");
  if (auto format = parse_fp8_format(text)) return *format;
  throw OpError(fmt::format("Fix: dequant_matmul_fp8 format=\"{}\" is unknown; use \"e4m3\" or \"e5m2\".", text));
}
}  // namespace

namespace {
/// `buffers` followed by the fast GEMV's split-K scratch entries (SplitK.h): f32
/// partials for `splits * n` outputs (the tensor-core GEMM's `partials` where given), one
/// counter per warp of columns.
std::vector<BufferSpec> with_split_k(std::vector<BufferSpec> buffers, const std::string& units,
                                     const std::string& partials = "splits * n") {
  return with_split_k_buffers(std::move(buffers), ScalarType::F32, partials, units);
}
}  // namespace

std::vector<OpInfo> dequant_matmul_ops() {
  const std::string seed = "rlx-cpu thunk.rs dequant_matmul_*";
  const std::string layout = "x [m, k], W [k, n], out [m, n], all row-major; invocation = 1 column x 4 rows";
  ParamSpec m{"m", ParamType::U32, "activation rows", "", "> 0, ceil(m/4) <= 65535", {}};
  ParamSpec k{"k", ParamType::U32, "reduction length", "", "> 0", {}};
  ParamSpec n{"n", ParamType::U32, "output columns", "", "> 0", {}};
  ParamSpec block_size{"block_size", ParamType::U32, "consecutive k sharing one scale and zero point or offset", "",
                       "> 0", {}};
  ParamSpec asymmetric{"asymmetric", ParamType::Bool, "subtract a per-block f32 zero point: w = (q - z) * s", "false",
                       "not with offset", {}};
  ParamSpec offset{"offset", ParamType::Bool,
                   "add a per-block f32 offset after the scale: w = q * s + o (GGUF Q4_1, Q4_K, Q5_K)", "false",
                   "not with asymmetric", {}};
  ParamSpec format{"format", ParamType::Choice, "FP8 encoding of W", "\"e4m3\"", "", {"e4m3", "e5m2"}};
  const std::string sidecar_count = "ceil(k/block_size) * n";
  const BufferSpec x = activation_buffer("x", "input", "m * k", {"m", "k"});
  const BufferSpec out = activation_buffer("out", "output", "m * n", {"m", "n"});
  const BufferSpec scales{"scales", "sidecar", ScalarType::F32, sidecar_count, {"ceil(k/block_size)", "n"}};
  const BufferSpec zero_points{"zero_points", "sidecar", ScalarType::F32, sidecar_count + " (asymmetric only)",
                                {"ceil(k/block_size)", "n"}};
  const BufferSpec offsets{"offsets", "sidecar", ScalarType::F32, sidecar_count + " (offset only)",
                           {"ceil(k/block_size)", "n"}};

  auto build_block = [](const char* op, Program (*constructor)(std::uint32_t, std::uint32_t, std::uint32_t,
                                                                std::uint32_t, BlockAffineMode, KernelSchedule,
                                                                ScalarType)) {
    return [op, constructor](const OpArgs& args) {
      return constructor(args.u32("m"), args.u32("k"), args.u32("n"), args.u32("block_size"), block_mode_arg(op, args),
                         schedule_of(args), activation_of(args));
    };
  };
  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "dequant_matmul_int8",
      .summary = "out = x @ ((f32(W) - zero_point) * scale) or x @ (f32(W) * scale + offset), W i8 with per-block "
                 "sidecars",
      .layout = layout + "; W i8 element p*n + j; sidecars [ceil(k/block_size), n]",
      .seed = seed,
      .params = {m, k, n, block_size, asymmetric, offset, schedule_param(), activation_param()},
      .buffers = with_split_k(
          {x, {"w", "weight", ScalarType::I8, "k * n", {"k", "n"}}, scales, zero_points, offsets, out}, "ceil(n/32)"),
      .build = build_block("dequant_matmul_int8", dequant_matmul_int8),
      .test_shapes = {scheduled(block_shape(1, 8, 4, 4, false), "seed"), scheduled(block_shape(3, 20, 9, 8, true), "seed"),
                      scheduled(block_shape(5, 64, 33, 32, true), "seed"),
                      scheduled(block_shape(4, 7, 130, 3, false), "seed"),
                      scheduled(block_shape(1, 64, 32, 32, true), "fast"),
                      scheduled(block_shape(1, 37, 48, 16, false), "fast"),
                      // 4 k-subgroups x split-K over 4 workgroups of 16-row blocks, and over 8 of
                      // 32-row slices of 64-row blocks; n % 32 != 0 (a partial last warp)
                      scheduled(block_shape(1, 1024, 32, 16, true), "fast"),
                      scheduled(block_shape(1, 2048, 32, 64, true), "fast"),
                      scheduled(block_shape(1, 70, 20, 32, true), "fast"),
                      activated(scheduled(block_shape(3, 20, 9, 8, true), "seed"), "f16"),
                      activated(scheduled(block_shape(3, 20, 9, 8, true), "seed"), "bf16"),
                      activated(scheduled(block_shape(1, 37, 48, 16, false), "fast"), "f16"),
                      activated(scheduled(block_shape(1, 64, 32, 32, true), "fast"), "bf16"),
                      // the offset mode (GGUF Q5_K): a partial last block and row tile; the GEMV
                      scheduled(offset_shape(3, 20, 9, 8), "seed"), scheduled(offset_shape(1, 64, 32, 32), "fast"),
                      activated(scheduled(offset_shape(1, 64, 32, 32), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_int4",
      .summary = "out = x @ ((f32(W4) - zero_point) * scale) or x @ (f32(W4) * scale + offset), unsigned nibbles "
                 "with per-block sidecars",
      .layout = layout + "; element p*n + j is nibble (low first) of byte (p*n + j)/2",
      .seed = seed,
      .params = {m, k, n, block_size, asymmetric, offset, schedule_param(), activation_param()},
      .buffers = with_split_k(
          {x, {"w", "weight", ScalarType::U8, "ceil(k*n / 2)", {"k", "n/2"}}, scales, zero_points, offsets, out},
          "ceil(n/64) (m == 1), n/32 * ceil(m/M) (m > 1: the tensor-core GEMM, M = 16 for m <= 16, else 32)",
          "splits * n (m == 1), splits * 16 * n * M/16 * ceil(m/M) (m > 1)"),
      .build = build_block("dequant_matmul_int4", dequant_matmul_int4),
      .test_shapes = {scheduled(block_shape(1, 8, 4, 4, false), "seed"), scheduled(block_shape(3, 20, 9, 8, true), "seed"),
                      scheduled(block_shape(5, 64, 33, 32, true), "seed"),
                      scheduled(block_shape(2, 9, 7, 5, false), "seed"),
                      scheduled(block_shape(1, 64, 64, 32, true), "fast"),
                      scheduled(block_shape(1, 37, 96, 16, false), "fast"),
                      // 4 k-subgroups x split-K over 8 workgroups, a partial last block and a partial
                      // last warp; 4 k-subgroups x 32 workgroups; n % 64 == 40
                      scheduled(block_shape(1, 2050, 96, 16, false), "fast"),
                      scheduled(block_shape(1, 8192, 64, 16, true), "fast"),
                      scheduled(block_shape(1, 300, 40, 64, false), "fast"),
                      activated(scheduled(block_shape(2, 9, 7, 5, false), "seed"), "f16"),
                      activated(scheduled(block_shape(2, 9, 7, 5, false), "seed"), "bf16"),
                      activated(scheduled(block_shape(1, 64, 64, 32, true), "fast"), "f16"),
                      activated(scheduled(block_shape(1, 37, 96, 16, false), "fast"), "bf16"),
                      // the offset mode (GGUF Q4_1, Q4_K): a partial last block and row tile, Q4_K's
                      // sub-block of 32 with odd n, the GEMV, and split-K over 2 workgroups with a
                      // partial last block
                      scheduled(offset_shape(3, 20, 9, 8), "seed"), scheduled(offset_shape(2, 64, 33, 32), "seed"),
                      scheduled(offset_shape(1, 64, 64, 32), "fast"), scheduled(offset_shape(1, 1040, 64, 32), "fast"),
                      activated(scheduled(offset_shape(3, 20, 9, 8), "seed"), "f16"),
                      activated(scheduled(offset_shape(1, 64, 64, 32), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_fp8",
      .summary = "out[i, j] = sum_p (x[i, p] * fp8(W[p, j])) * scales[j] (OCP E4M3 or E5M2)",
      .layout = layout + "; W u8 codes element p*n + j; scales [n]",
      .seed = seed,
      .params = {m, k, n, format, schedule_param(), activation_param()},
      .buffers = with_split_k({x, {"w", "weight", ScalarType::U8, "k * n", {"k", "n"}},
                               {"scales", "sidecar", ScalarType::F32, "n"}, out},
                              "ceil(n/32) (m == 1), n/32 * ceil(m/M) (m > 1: the tensor-core GEMM, M = 16 for m <= 16, else 32)",
                              "splits * n (m == 1), splits * 16 * n * M/16 * ceil(m/M) (m > 1)"),
      .build =
          [](const OpArgs& args) {
            return dequant_matmul_fp8(args.u32("m"), args.u32("k"), args.u32("n"), fp8_format_arg(args),
                                      schedule_of(args), activation_of(args));
          },
      .test_shapes = {scheduled(fp8_shape(1, 8, 4, "e4m3"), "seed"), scheduled(fp8_shape(3, 9, 7, "e5m2"), "seed"),
                      scheduled(fp8_shape(6, 33, 129, "e4m3"), "seed"), scheduled(fp8_shape(2, 16, 9, "e5m2"), "seed"),
                      scheduled(fp8_shape(1, 40, 32, "e4m3"), "fast"), scheduled(fp8_shape(1, 33, 48, "e5m2"), "fast"),
                      scheduled(fp8_shape(1, 2048, 32, "e4m3"), "fast"),  // 2 k-subgroups x split-K over 8 workgroups
                      scheduled(fp8_shape(1, 90, 12, "e4m3"), "fast"),    // n % 32 != 0
                      activated(scheduled(fp8_shape(3, 9, 7, "e5m2"), "seed"), "f16"),
                      activated(scheduled(fp8_shape(2, 16, 9, "e4m3"), "seed"), "bf16"),
                      activated(scheduled(fp8_shape(1, 40, 32, "e4m3"), "fast"), "f16"),
                      activated(scheduled(fp8_shape(1, 33, 48, "e5m2"), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_nvfp4",
      .summary = "out = x @ (e2m1(W4) * e4m3(block scale) * global_scale), 16-element k blocks",
      .layout = layout + "; W nibbles as int4; scales u8 [ceil(k/16), n]; global_scale [1]",
      .seed = seed,
      .params = {m, k, n, schedule_param(), activation_param()},
      .buffers = with_split_k({x,
                               {"w", "weight", ScalarType::U8, "ceil(k*n / 2)", {"k", "n/2"}},
                               {"scales", "sidecar", ScalarType::U8, "ceil(k/16) * n", {"ceil(k/16)", "n"}},
                               {"global_scale", "sidecar", ScalarType::F32, "1"},
                               out},
                              "ceil(n/64) (m == 1), n/32 * ceil(m/M) (m > 1: the tensor-core GEMM, M = 16 for m <= 16, else 32)",
                              "splits * n (m == 1), splits * 16 * n * M/16 * ceil(m/M) (m > 1)"),
      .build =
          [](const OpArgs& args) {
            return dequant_matmul_nvfp4(args.u32("m"), args.u32("k"), args.u32("n"), schedule_of(args),
                                        activation_of(args));
          },
      .test_shapes = {scheduled(dims_shape(1, 16, 4), "seed"), scheduled(dims_shape(3, 20, 9), "seed"),
                      scheduled(dims_shape(5, 64, 33), "seed"), scheduled(dims_shape(2, 7, 3), "seed"),
                      scheduled(dims_shape(1, 32, 64), "fast"), scheduled(dims_shape(1, 23, 96), "fast"),
                      scheduled(dims_shape(1, 4100, 64), "fast"),  // 4 k-subgroups x 8 workgroups, partial rows
                      scheduled(dims_shape(1, 8192, 64), "fast"),  // 4 k-subgroups x 16 workgroups
                      scheduled(dims_shape(1, 100, 24), "fast"),   // n % 64 != 0
                      activated(scheduled(dims_shape(3, 20, 9), "seed"), "f16"),
                      activated(scheduled(dims_shape(3, 20, 9), "seed"), "bf16"),
                      activated(scheduled(dims_shape(1, 23, 96), "fast"), "f16"),
                      activated(scheduled(dims_shape(1, 32, 64), "fast"), "bf16")},
  });
  return ops;
}

}  // namespace quantc::ir::ops
