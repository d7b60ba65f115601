#include "ir/ops/Int4Packed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/SplitK.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kInt4WorkgroupInvocations = 256;
constexpr std::uint32_t kInt4SubgroupsPerWorkgroup = kInt4WorkgroupInvocations / kSubgroupSize;
constexpr std::uint32_t kValuesPerWord = 8;
// Batches per subgroup in the batched ops: each unpacked weight word feeds this many
// accumulators, so weight traffic drops 4x while a lane holds only 4 partial sums.
constexpr std::uint32_t kBatchTile = 4;
constexpr std::uint32_t kMaxExactF32Index = 1u << 24;
// Batches per subgroup of the fast schedule when batch > 1 (see fast_batch_tile).
constexpr std::uint32_t kFastBatchTile = 2;

constexpr char kDotId[] = "vyre-libs::quant::int4_dot_i32";
constexpr char kDotScaledId[] = "vyre-libs::quant::int4_dot_f32_scaled";
constexpr char kMatvecId[] = "vyre-libs::quant::int4_matvec_f32_scaled";
constexpr char kBatchedMatvecId[] = "vyre-libs::quant::int4_batched_matvec_f32_scaled";
constexpr char kBatchedMatmulId[] = "vyre-libs::quant::int4_batched_matmul_f32_scaled";
constexpr char kTop1Id[] = "vyre-libs::quant::int4_batched_matmul_top1_f32_scaled";

/// Binds `word` to `<prefix>_word` (one load) and its first `values` signed nibbles to
/// lets `<prefix>0`, `<prefix>1`, ...
std::vector<Expr> unpack_word(Body& body, const Expr& word_value, std::uint32_t values, const std::string& prefix) {
  Expr word = body.let(prefix + "_word", word_value);
  std::vector<Expr> unpacked;
  for (std::uint32_t i = 0; i < values; ++i) {
    unpacked.push_back(body.let(fmt::format("{}{}", prefix, i), signed_nibble(word, i)));
  }
  return unpacked;
}

/// sum_i lhs_values[i] * nibble(rhs_word, i) over the first lhs_values.size() nibbles
/// (i32); binds the rhs word to the let `rhs_name` so it is loaded once.
Expr int4_word_dot(Body& body, const std::vector<Expr>& lhs_values, const Expr& rhs_word_value,
                   const std::string& rhs_name) {
  Expr rhs_word = body.let(rhs_name, rhs_word_value);
  Expr sum = lhs_values[0] * signed_nibble(rhs_word, 0);
  for (std::uint32_t i = 1; i < lhs_values.size(); ++i) sum = sum + lhs_values[i] * signed_nibble(rhs_word, i);
  return sum;
}

/// Emits the work for one packed word: `word_index` within the row and the number of
/// valid values in it (8, or cols%8 for a row's last, partial word).
using WordVisitor = std::function<void(Body&, const Expr& word_index, std::uint32_t values)>;

/// Walks a row's words the way one lane of a subgroup owns them: full words lane,
/// lane+32, lane+64, ... in increasing order, then the partial tail word (if cols%8 != 0)
/// on the lane that owns word index cols/8. Visiting in this order keeps every lane's
/// partial sum in increasing column order, the order the oracle reproduces.
void for_each_lane_word(Body& body, const Expr& lane, std::uint32_t cols, const WordVisitor& visit) {
  const std::uint32_t full_words = cols / kValuesPerWord;
  const std::uint32_t tail_values = cols % kValuesPerWord;
  if (full_words > 0) {
    body.loop("word_step", u32(0), u32(ceil_div(full_words, kSubgroupSize)), [&](Body& loop, Expr step) {
      Expr word = loop.let("word", step * double(kSubgroupSize) + lane);
      loop.if_then(word < double(full_words), [&](Body& in_range) { visit(in_range, word, kValuesPerWord); });
    });
  }
  if (tail_values > 0) {
    body.if_then(eq(lane, u32(full_words % kSubgroupSize)),
                 [&](Body& owner) { visit(owner, u32(full_words), tail_values); });
  }
}

void check_int4_dims(const char* op, std::uint32_t batch, std::uint32_t rows, std::uint32_t cols) {
  require_nonzero(op, "m", batch, "no activation vectors; pass m >= 1");
  require_nonzero(op, "n", rows, "empty output; pass n >= 1");
  require_nonzero(op, "k", cols, "empty reduction; pass k >= 1");
}

// --- dot products -----------------------------------------------------------------

/// The shared dot kernel: one subgroup sums lane partials, `finish` stores lane 0's result.
Program dot_program(const char* name, const char* op_id, std::uint32_t lane_count, bool scaled) {
  require_nonzero(name, "k", lane_count, "empty dot product; pass k >= 1");
  const std::uint32_t words = int4_packed_words(lane_count);
  ProgramBuilder program(name);
  BufferRef lhs = program.input("lhs", ScalarType::U32, words);
  BufferRef rhs = program.input("rhs", ScalarType::U32, words);
  BufferRef lhs_scale, rhs_scale;
  if (scaled) {
    lhs_scale = program.input("lhs_scale", ScalarType::F32, 1);
    rhs_scale = program.input("rhs_scale", ScalarType::F32, 1);
  }
  BufferRef out = program.output("out", scaled ? ScalarType::F32 : ScalarType::I32, 1);
  program.launch({kSubgroupSize, 1, 1}, {1, 1, 1});
  program.body([&](Body& body) {
    body.region(op_id, [&](Body& region) {
      Expr lane = region.let("lane", local_id(0));
      Expr partial = region.let("partial", i32(0));
      for_each_lane_word(region, lane, lane_count, [&](Body& word_body, const Expr& word, std::uint32_t values) {
        std::vector<Expr> lhs_values = unpack_word(word_body, lhs[word], values, "lhs_value");
        word_body.assign(partial, partial + int4_word_dot(word_body, lhs_values, rhs[word], "rhs_word"));
      });
      Expr total = region.let("total", subgroup_add(partial));
      region.if_then(eq(lane, u32(0)), [&](Body& leader) {
        if (scaled) {
          leader.store(out, u32(0), cast(ScalarType::F32, total) * (lhs_scale[0u] * rhs_scale[0u]));
        } else {
          leader.store(out, u32(0), total);
        }
      });
    });
  });
  return program.build();
}

// --- row-per-subgroup products ----------------------------------------------------

struct RowSubgroupLayout {
  Expr lane, row, batch_begin;
};

/// Launch and index setup shared by the batched kernels: one subgroup per row, 8 rows
/// per workgroup along x, `tile` batches per workgroup along y.
RowSubgroupLayout row_subgroup_layout(Body& region, std::uint32_t tile) {
  Expr local = region.let("local", local_id(0));
  Expr subgroup = region.let("subgroup", local / double(kSubgroupSize));
  Expr lane = region.let("lane", local % double(kSubgroupSize));
  Expr row = region.let("row", workgroup_id(0) * double(kInt4SubgroupsPerWorkgroup) + subgroup);
  Expr batch_begin = region.let("batch_begin", workgroup_id(1) * double(tile));
  return {lane, row, batch_begin};
}

/// Float matvec for `batch` activation vectors (batch 1 is the plain matvec).
Program batched_matvec_program(const char* name, const char* op_id, std::uint32_t batch, std::uint32_t rows,
                               std::uint32_t cols, ScalarType activation) {
  check_int4_dims(name, batch, rows, cols);
  const std::uint32_t words_per_row = int4_packed_words(cols);
  const std::uint32_t weight_words = checked_count(name, "n*ceil(k/8)", rows, words_per_row);
  const std::uint32_t x_count = checked_count(name, "m*k", batch, cols);
  const std::uint32_t out_count = checked_count(name, "m*n", batch, rows);
  const std::uint32_t tile = std::min(batch, kBatchTile);
  const std::uint32_t batch_workgroups = ceil_div(batch, tile);
  require_grid_yz(name, "y (ceil(m/4))", batch_workgroups, "split the batch into launches of <= 262140");

  ProgramBuilder program(name);
  BufferRef weights = program.input("weights", ScalarType::U32, weight_words);
  BufferRef x = program.input("x", activation, x_count);
  BufferRef row_scales = program.input("row_scales", ScalarType::F32, rows);
  BufferRef out = program.output("out", activation, out_count);
  program.launch({kInt4WorkgroupInvocations, 1, 1}, {ceil_div(rows, kInt4SubgroupsPerWorkgroup), batch_workgroups, 1});
  program.body([&](Body& body) {
    body.region(op_id, [&](Body& region) {
      RowSubgroupLayout layout = row_subgroup_layout(region, tile);
      // The row is the same for all 32 lanes, so the subgroup_add below stays in
      // subgroup-uniform control flow.
      region.if_then(layout.row < double(rows), [&](Body& per_row) {
        std::vector<Expr> x_base, acc;
        for (std::uint32_t t = 0; t < tile; ++t) {
          // Batches past the end (last tile) read the last batch; their stores are skipped.
          Expr batch_index = min(layout.batch_begin + double(t), u32(batch - 1));
          x_base.push_back(per_row.let(fmt::format("x_base{}", t), batch_index * double(cols)));
          acc.push_back(per_row.let(fmt::format("acc{}", t), f32(0.0f)));
        }
        Expr weight_base = per_row.let("weight_base", layout.row * double(words_per_row));
        for_each_lane_word(per_row, layout.lane, cols, [&](Body& word_body, const Expr& word, std::uint32_t values) {
          std::vector<Expr> weight_values = unpack_word(word_body, weights[weight_base + word], values, "weight");
          Expr column_base = word_body.let("column_base", word * double(kValuesPerWord));
          for (std::uint32_t v = 0; v < values; ++v) {
            Expr weight = cast(ScalarType::F32, weight_values[v]);
            for (std::uint32_t t = 0; t < tile; ++t) {
              word_body.assign(acc[t], acc[t] + weight * widen(x[x_base[t] + column_base + double(v)]));
            }
          }
        });
        std::vector<Expr> sums;
        for (std::uint32_t t = 0; t < tile; ++t) sums.push_back(per_row.let(fmt::format("sum{}", t), subgroup_add(acc[t])));
        per_row.if_then(eq(layout.lane, u32(0)), [&](Body& leader) {
          Expr scale = leader.let("row_scale", row_scales[layout.row]);
          for (std::uint32_t t = 0; t < tile; ++t) {
            Expr batch_index = layout.batch_begin + double(t);
            leader.if_then(batch_index < double(batch), [&](Body& store) {
              store.store(out, batch_index * double(rows) + layout.row, narrow(activation, scale * sums[t]));
            });
          }
        });
      });
    });
  });
  return program.build();
}

// --- the fast row GEMV (schedule "fast") -------------------------------------------

/// Rows one subgroup owns; the x chunk a lane loads is reused for all of them.
constexpr std::uint32_t kFastRowsPerSubgroup = 4;
constexpr std::uint32_t kFastSubgroupsPerWorkgroup = 4;
/// Columns one lane reads per step: 4 packed words (16 bytes, 32 nibbles), 32 words apart.
constexpr std::uint32_t kFastLaneWords = 4;
constexpr std::uint32_t kFastLaneColumns = kFastLaneWords * kValuesPerWord;
/// Words of a row one subgroup reads per step (512 bytes).
constexpr std::uint32_t kFastSpanWords = kFastLaneWords * kSubgroupSize;
/// Most k-subgroups per row group. 8 would shorten the chain again at 11008 columns, but
/// its 256-invocation workgroups need a second, partial wave on the H100 model (76.8% of
/// peak against 89.6% with 4).
constexpr std::uint32_t kFastMaxKSubgroups = 4;

/// Batches per subgroup of the fast schedule: 1 for a matvec; for batch > 1 a tile of
/// kFastBatchTile activation vectors shares each decoded nibble.
std::uint32_t fast_batch_tile(std::uint32_t batch) { return batch == 1 ? 1 : std::min(batch, kFastBatchTile); }

/// Nibble `position` (0..4) of `source` as the exact f32 of its signed value q. The
/// constant D sets the f32 exponent of 2^(23-4p), so the mantissa bits 4p..4p+3 weigh
/// 1, 2, 4, 8, and flips the nibble's top bit: (source & M) ^ D (one lop3) is the float
/// 2^(23-4p) + (q+8) exactly, and subtracting 2^(23-4p) + 8 leaves q exactly.
Expr fast_signed_nibble(const Expr& source, std::uint32_t position) {
  const std::uint32_t mask = 0xFu << (4 * position);
  const std::uint32_t exponent = (150u - 4 * position) << 23;  // 2^(23-4p) as f32 bits
  const std::uint32_t flip = 0x8u << (4 * position);
  const float offset = std::ldexp(1.0f, 23 - 4 * static_cast<int>(position)) + 8.0f;
  return bitcast(ScalarType::F32, (source & u32(mask)) ^ u32(exponent | flip)) - f32(offset);
}

}  // namespace

std::optional<std::string> int4_row_gemv_unsupported(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols) {
  if (cols == 0 || cols % kFastLaneColumns != 0) {
    return fmt::format("k={} is not a multiple of 32 (a lane's 16-byte load of 4 words must start on a 16-byte "
                       "boundary of the row; pad the rows to a multiple of 32 values)",
                       cols);
  }
  if (batch == 0 || rows == 0) return fmt::format("m={} n={} is empty", batch, rows);
  const std::uint32_t tile = fast_batch_tile(batch);
  if (ceil_div(batch, tile) > 65535) {
    return fmt::format("m={} needs ceil(m/{})={} workgroups along y, over the CUDA limit of 65535", batch,
                       tile, ceil_div(batch, tile));
  }
  return std::nullopt;
}

std::uint32_t int4_row_gemv_k_subgroups(std::uint32_t cols) {
  return choose_k_subgroups(ceil_div(int4_packed_words(cols), kFastSpanWords), 1, 1, kFastMaxKSubgroups);
}

namespace {

/// The fast program (see the header): the seed's checks and buffers, then the schedule.
Program fast_row_gemv_program(const char* name, const char* op_id, std::uint32_t batch, std::uint32_t rows,
                              std::uint32_t cols, ScalarType activation) {
  check_int4_dims(name, batch, rows, cols);
  const std::uint32_t words_per_row = int4_packed_words(cols);
  const std::uint32_t weight_words = checked_count(name, "n*ceil(k/8)", rows, words_per_row);
  const std::uint32_t x_count = checked_count(name, "m*k", batch, cols);
  const std::uint32_t out_count = checked_count(name, "m*n", batch, rows);
  require_grid_yz(name, "y (ceil(m/4))", ceil_div(batch, std::min(batch, kBatchTile)),
                  "split the batch into launches of <= 262140");
  if (auto reason = int4_row_gemv_unsupported(batch, rows, cols)) {
    throw OpError(fmt::format("Fix: {} has no fast schedule: {}; or use \"schedule\": \"seed\".", name, *reason));
  }
  const std::uint32_t tile = fast_batch_tile(batch);
  const std::uint32_t row_tile = kFastRowsPerSubgroup;
  const std::uint32_t k_subgroups = int4_row_gemv_k_subgroups(cols);
  const std::uint32_t spans = ceil_div(words_per_row, kFastSpanWords);  // a subgroup's step each
  const std::uint32_t full_spans = words_per_row / kFastSpanWords;
  const std::uint32_t steps = ceil_div(spans, k_subgroups);
  const std::uint32_t row_subgroups = std::max(1u, kFastSubgroupsPerWorkgroup / k_subgroups);  // per workgroup
  const std::uint32_t row_groups = ceil_div(rows, row_tile);
  const bool partial_rows = rows % row_tile != 0;

  const bool f32_activations = activation == ScalarType::F32;
  ProgramBuilder program(name);
  BufferRef weights = program.input("weights", ScalarType::U32, weight_words);
  BufferRef x = program.input("x", activation, x_count);
  BufferRef row_scales = program.input("row_scales", ScalarType::F32, rows);
  BufferRef out = program.output("out", activation, out_count);
  // A subgroup's partial sums per k-subgroup: row_tile rows x tile batches, row major.
  const std::uint32_t subgroup_sums = row_tile * tile;
  const KSubgroupMeeting meeting = declare_k_subgroup_meeting(program, k_subgroups, row_subgroups * subgroup_sums);
  program.launch({row_subgroups * k_subgroups * kSubgroupSize, 1, 1},
                 {ceil_div(row_groups, row_subgroups), ceil_div(batch, tile), 1});
  even_out_waves(program, kGemvLeastRegisters, kGemvLeastRegisters);
  program.body([&](Body& body) {
    body.region(op_id, [&](Body& region) {
      const WorkgroupSubgroup at = locate_subgroup(region, row_subgroups, k_subgroups);
      const Expr &lane = at.lane, &subgroup = at.subgroup, &k_subgroup = at.k_subgroup;
      // Row groups past the last (the last workgroup's extra subgroups) redo the last row
      // group and store nothing: every subgroup stays whole for the shuffles and reaches
      // the meeting's barrier.
      Expr row_group = row_groups % row_subgroups == 0 ? subgroup : min(subgroup, u32(row_groups - 1));
      Expr first_row = region.let("first_row", row_group * row_tile);
      Expr batch_begin = region.let("batch_begin", workgroup_id(1) * tile);
      std::vector<Expr> weight_base, scales, x_base;
      for (std::uint32_t r = 0; r < row_tile; ++r) {
        // Rows past the end (last row group) read the last row; their stores are skipped.
        Expr row = r == 0 ? first_row : first_row + r;
        if (partial_rows) row = region.let(fmt::format("row{}", r), min(row, u32(rows - 1)));
        weight_base.push_back(region.let(fmt::format("weight_base{}", r), row * words_per_row));
        // Loaded now, in flight with the first step's weights, used after the meeting.
        if (partial_rows) scales.push_back(region.let(fmt::format("scale{}", r), row_scales[row]));
      }
      if (!partial_rows) {
        Expr four = region.let("scales", row_scales.load(first_row, row_tile));
        for (std::uint32_t r = 0; r < row_tile; ++r) scales.push_back(extract_lane(four, r));
      }
      for (std::uint32_t b = 0; b < tile; ++b) {
        Expr batch_index = b == 0 ? batch_begin : batch_begin + b;
        if (batch % tile != 0) batch_index = min(batch_index, u32(batch - 1));
        x_base.push_back(region.let(fmt::format("x_base{}", b), batch_index * cols));
      }
      std::vector<Expr> acc;  // acc[r * tile + b]
      for (std::uint32_t r = 0; r < row_tile; ++r) {
        for (std::uint32_t b = 0; b < tile; ++b) acc.push_back(region.let(fmt::format("acc{}_{}", r, b), f32(0.0f)));
      }
      // One span: 128 consecutive words of each row (1024 columns); lane l takes words
      // l, l+32, l+64, l+96 of it, so each of the 16 word loads of a step reads 128
      // consecutive bytes (one line) and each x load 32 lanes x 16 bytes at a 32-byte
      // stride (8 lines), instead of every lane's 128 bytes of x apart (32 lines).
      // `last`: the partial last span (below).
      // The partial last span's words: a lane's word j lies wholly inside the row for j <
      // tail_words / 32, partly for j == tail_words / 32 (when tail_words % 32 != 0: each
      // lane checks it) and wholly past it beyond (not loaded at all: it would add only
      // fma(0, q, acc) = acc).
      const std::uint32_t tail_words = words_per_row - full_spans * kFastSpanWords;
      auto span_body = [&](Body& work, const Expr& span, bool last) {
        const std::uint32_t active = last ? ceil_div(tail_words, kSubgroupSize) : kFastLaneWords;
        const std::uint32_t checked_word = last && tail_words % kSubgroupSize != 0 ? tail_words / kSubgroupSize
                                                                                      : kFastLaneWords;
        Expr span_word = work.let("span_word", span * kFastSpanWords + lane);
        std::vector<Expr> word_index;
        Expr in_row;
        for (std::uint32_t j = 0; j < active; ++j) {
          Expr index = j == 0 ? span_word : span_word + j * kSubgroupSize;
          if (j == checked_word) {
            in_row = work.let(fmt::format("in_row{}", j), index < words_per_row);
            index = work.let(fmt::format("word_index{}", j), min(index, u32(words_per_row - 1)));
          }
          word_index.push_back(index);
        }
        // Every load of the step first (weights of all rows, x of all batches), then the math.
        std::vector<std::vector<Expr>> words(row_tile);  // words[r][j]
        for (std::uint32_t j = 0; j < active; ++j) {
          for (std::uint32_t r = 0; r < row_tile; ++r) {
            words[r].push_back(work.let(fmt::format("w{}_{}", r, j), weights[weight_base[r] + word_index[j]]));
          }
        }
        std::vector<Expr> x_fours;       // f32: [(b * active + j) * 2 + h], the word's x values 4h..4h+3
        std::vector<HalfWords> x_halves;  // f16/bf16: [b * active + j], the word's 8 x values
        for (std::uint32_t b = 0; b < tile; ++b) {
          for (std::uint32_t j = 0; j < active; ++j) {
            Expr first = work.let(fmt::format("x_first{}_{}", b, j), x_base[b] + word_index[j] * kValuesPerWord);
            if (!f32_activations) {
              x_halves.push_back(load_half_words(work, x, first, kValuesPerWord, fmt::format("x_words{}_{}", b, j)));
              continue;
            }
            for (std::uint32_t h = 0; h < 2; ++h) {
              x_fours.push_back(work.let(fmt::format("x{}_{}_half{}", b, j, h), x.load(h == 0 ? first : first + 4u, 4)));
            }
          }
        }
        // x values: f32 lanes are registers of their loads (used in place); f16/bf16 are
        // widened once per lane, after every load of the step; a checked word past the row
        // counts 0.
        std::vector<Expr> xs;  // [(b * active + j) * 8 + e]
        for (std::uint32_t b = 0; b < tile; ++b) {
          for (std::uint32_t j = 0; j < active; ++j) {
            const std::uint32_t word = b * active + j;
            for (std::uint32_t e = 0; e < kValuesPerWord; ++e) {
              Expr value = f32_activations ? extract_lane(x_fours[word * 2 + e / 4], e % 4)
                                           : x_halves[word].element(e);
              if (j == checked_word) value = select(in_row, value, f32(0.0f));
              if (j == checked_word || !f32_activations) value = work.let(fmt::format("x{}_{}_{}", b, j, e), value);
              xs.push_back(value);
            }
          }
        }
        for (std::uint32_t r = 0; r < row_tile; ++r) {
          for (std::uint32_t j = 0; j < active; ++j) {
            Expr high = work.let(fmt::format("w{}_{}_high", r, j), words[r][j] >> u32(16));
            for (std::uint32_t i = 0; i < kValuesPerWord; ++i) {
              Expr q = fast_signed_nibble(i < 5 ? words[r][j] : high, i < 5 ? i : i - 4);
              if (tile > 1) q = work.let(fmt::format("q{}_{}_{}", r, j, i), q);
              for (std::uint32_t b = 0; b < tile; ++b) {
                Expr& sum = acc[r * tile + b];
                work.assign(sum, fma(xs[(b * active + j) * kValuesPerWord + i], q, sum));
              }
            }
          }
        }
      };
      region.loop("step", u32(0), u32(steps), [&](Body& loop, Expr step) {
        Expr span = k_subgroups == 1 ? step : loop.let("span", step * k_subgroups + k_subgroup);
        if (full_spans == spans && spans % k_subgroups == 0) {
          span_body(loop, span, false);
          return;
        }
        loop.if_then(span < full_spans, [&](Body& full) { span_body(full, span, false); });
        if (full_spans != spans) {
          loop.if_then(eq(span, u32(full_spans)), [&](Body& last) { span_body(last, span, true); });
        }
      });
      // The lanes' partial sums: a butterfly (xor 16, 8, 4, 2, 1); every lane ends with the total.
      for (Expr& sum : acc) {
        for (std::uint32_t mask = kSubgroupSize / 2; mask >= 1; mask /= 2) {
          region.assign(sum, sum + subgroup_shuffle(sum, lane ^ u32(mask)));
        }
      }
      // The workgroup's k-subgroups meet in shared memory; lane 0 of k-subgroup 0 finishes.
      Expr owner = row_groups % row_subgroups == 0 ? eq(lane, u32(0)) : logical_and(subgroup < row_groups, eq(lane, u32(0)));
      emit_k_subgroup_meeting(region, meeting, k_subgroup, owner, at.column_subgroup * subgroup_sums, acc);
      region.if_then(k_subgroups == 1 ? owner : logical_and(owner, eq(k_subgroup, u32(0))), [&](Body& leader) {
        for (std::uint32_t b = 0; b < tile; ++b) {
          Expr batch_index = b == 0 ? batch_begin : batch_begin + b;
          auto store_batch = [&](Body& store) {
            Expr out_base = store.let(fmt::format("out_base{}", b), batch_index * rows + first_row);
            if (!partial_rows) {
              std::vector<Expr> lanes;
              for (std::uint32_t r = 0; r < row_tile; ++r) lanes.push_back(scales[r] * acc[r * tile + b]);
              if (f32_activations) {
                store.store(out, out_base, make_vector(lanes));
              } else {
                store_half_pairs(store, out, out_base, lanes);
              }
              return;
            }
            for (std::uint32_t r = 0; r < row_tile; ++r) {
              store.if_then(first_row + r < rows, [&](Body& in_range) {
                in_range.store(out, r == 0 ? out_base : out_base + r, narrow(activation, scales[r] * acc[r * tile + b]));
              });
            }
          };
          if (batch % tile == 0) {
            store_batch(leader);
          } else {
            leader.if_then(batch_index < batch, store_batch);
          }
        }
      });
    });
  });
  return program.build();
}

struct PackedMatmulBuffers {
  BufferRef weights, activations, row_scales, batch_scales;
};

PackedMatmulBuffers declare_packed_matmul_inputs(ProgramBuilder& program, const char* name, std::uint32_t batch,
                                                 std::uint32_t rows, std::uint32_t cols) {
  const std::uint32_t words_per_row = int4_packed_words(cols);
  const std::uint32_t weight_words = checked_count(name, "n*ceil(k/8)", rows, words_per_row);
  const std::uint32_t activation_words = checked_count(name, "m*ceil(k/8)", batch, words_per_row);
  return {program.input("weights", ScalarType::U32, weight_words),
          program.input("activations", ScalarType::U32, activation_words),
          program.input("row_scales", ScalarType::F32, rows), program.input("batch_scales", ScalarType::F32, batch)};
}

/// `better(a, b)`: (score_a, row_a) ranks above (score_b, row_b): numbers above NaN,
/// then the higher score, then (equal scores or both NaN) the lower row. A strict total
/// order on distinct rows, so the best pair does not depend on the combining order.
Expr ranks_above(const Expr& score_a, const Expr& row_a, const Expr& score_b, const Expr& row_b) {
  Expr a_is_number = eq(score_a, score_a);
  Expr b_is_number = eq(score_b, score_b);
  Expr tie = logical_or(eq(score_a, score_b), logical_and(!a_is_number, !b_is_number));
  return logical_or(logical_and(a_is_number, !b_is_number),
                    logical_or(score_a > score_b, logical_and(tie, row_a < row_b)));
}

}  // namespace

std::uint32_t int4_packed_words(std::uint32_t values) { return ceil_div(values, kValuesPerWord); }

Program int4_dot_i32(std::uint32_t lane_count) { return dot_program("int4_dot_i32", kDotId, lane_count, false); }

Program int4_dot_f32_scaled(std::uint32_t lane_count) {
  return dot_program("int4_dot_f32_scaled", kDotScaledId, lane_count, true);
}

Program int4_matvec_f32_scaled(std::uint32_t rows, std::uint32_t cols, ScalarType activation) {
  return batched_matvec_program("int4_matvec_f32_scaled", kMatvecId, 1, rows, cols, activation);
}

Program int4_batched_matvec_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                                       ScalarType activation) {
  return batched_matvec_program("int4_batched_matvec_f32_scaled", kBatchedMatvecId, batch, rows, cols, activation);
}

Program int4_matvec_f32_scaled(std::uint32_t rows, std::uint32_t cols, KernelSchedule schedule,
                               ScalarType activation) {
  if (schedule == KernelSchedule::Seed || (schedule == KernelSchedule::Auto && int4_row_gemv_unsupported(1, rows, cols))) {
    return int4_matvec_f32_scaled(rows, cols, activation);
  }
  return fast_row_gemv_program("int4_matvec_f32_scaled", kMatvecId, 1, rows, cols, activation);
}

Program int4_batched_matvec_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols,
                                       KernelSchedule schedule, ScalarType activation) {
  if (schedule == KernelSchedule::Seed ||
      (schedule == KernelSchedule::Auto && int4_row_gemv_unsupported(batch, rows, cols))) {
    return int4_batched_matvec_f32_scaled(batch, rows, cols, activation);
  }
  return fast_row_gemv_program("int4_batched_matvec_f32_scaled", kBatchedMatvecId, batch, rows, cols, activation);
}

Program int4_batched_matmul_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols) {
  const char* name = "int4_batched_matmul_f32_scaled";
  check_int4_dims(name, batch, rows, cols);
  const std::uint32_t words_per_row = int4_packed_words(cols);
  const std::uint32_t out_count = checked_count(name, "m*n", batch, rows);
  const std::uint32_t tile = std::min(batch, kBatchTile);
  const std::uint32_t batch_workgroups = ceil_div(batch, tile);
  require_grid_yz(name, "y (ceil(m/4))", batch_workgroups, "split the batch into launches of <= 262140");

  ProgramBuilder program(name);
  PackedMatmulBuffers in = declare_packed_matmul_inputs(program, name, batch, rows, cols);
  BufferRef out = program.output("out", ScalarType::F32, out_count);
  program.launch({kInt4WorkgroupInvocations, 1, 1}, {ceil_div(rows, kInt4SubgroupsPerWorkgroup), batch_workgroups, 1});
  program.body([&](Body& body) {
    body.region(kBatchedMatmulId, [&](Body& region) {
      RowSubgroupLayout layout = row_subgroup_layout(region, tile);
      region.if_then(layout.row < double(rows), [&](Body& per_row) {
        std::vector<Expr> activation_base, partial;
        for (std::uint32_t t = 0; t < tile; ++t) {
          Expr batch_index = min(layout.batch_begin + double(t), u32(batch - 1));
          activation_base.push_back(
              per_row.let(fmt::format("activation_base{}", t), batch_index * double(words_per_row)));
          partial.push_back(per_row.let(fmt::format("partial{}", t), i32(0)));
        }
        Expr weight_base = per_row.let("weight_base", layout.row * double(words_per_row));
        for_each_lane_word(per_row, layout.lane, cols, [&](Body& word_body, const Expr& word, std::uint32_t values) {
          std::vector<Expr> weight_values = unpack_word(word_body, in.weights[weight_base + word], values, "weight");
          for (std::uint32_t t = 0; t < tile; ++t) {
            Expr dot = int4_word_dot(word_body, weight_values, in.activations[activation_base[t] + word],
                                     fmt::format("activation_word{}", t));
            word_body.assign(partial[t], partial[t] + dot);
          }
        });
        std::vector<Expr> dots;
        for (std::uint32_t t = 0; t < tile; ++t) {
          dots.push_back(per_row.let(fmt::format("dot{}", t), subgroup_add(partial[t])));
        }
        per_row.if_then(eq(layout.lane, u32(0)), [&](Body& leader) {
          Expr row_scale = leader.let("row_scale", in.row_scales[layout.row]);
          for (std::uint32_t t = 0; t < tile; ++t) {
            Expr batch_index = layout.batch_begin + double(t);
            leader.if_then(batch_index < double(batch), [&](Body& store) {
              store.store(out, batch_index * double(rows) + layout.row,
                          (cast(ScalarType::F32, dots[t]) * row_scale) * in.batch_scales[batch_index]);
            });
          }
        });
      });
    });
  });
  return program.build();
}

Program int4_batched_matmul_top1_f32_scaled(std::uint32_t batch, std::uint32_t rows, std::uint32_t cols) {
  const char* name = "int4_batched_matmul_top1_f32_scaled";
  check_int4_dims(name, batch, rows, cols);
  if (rows > kMaxExactF32Index) {
    throw OpError(fmt::format("Fix: {} n={} exceeds 16777216: row indices are returned as f32 and would not "
                              "be exact; split the rows into chunks of <= 16777216.",
                              name, rows));
  }
  const std::uint32_t words_per_row = int4_packed_words(cols);
  const std::uint32_t full_words = cols / kValuesPerWord;
  const std::uint32_t tail_values = cols % kValuesPerWord;
  const std::uint32_t out_count = checked_count(name, "2*m", 2, batch);

  ProgramBuilder program(name);
  PackedMatmulBuffers in = declare_packed_matmul_inputs(program, name, batch, rows, cols);
  BufferRef out = program.output("out", ScalarType::F32, out_count);
  program.launch({kInt4WorkgroupInvocations, 1, 1}, {ceil_div(batch, kInt4SubgroupsPerWorkgroup), 1, 1});
  program.body([&](Body& body) {
    body.region(kTop1Id, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      Expr lane = region.let("lane", local % double(kSubgroupSize));
      Expr batch_index =
          region.let("batch_index", workgroup_id(0) * double(kInt4SubgroupsPerWorkgroup) + local / double(kSubgroupSize));
      // Uniform per subgroup: the shuffles below run with all 32 lanes active.
      region.if_then(batch_index < double(batch), [&](Body& per_batch) {
        Expr best_score = per_batch.let("best_score", f32(std::numeric_limits<float>::quiet_NaN()));
        Expr best_row = per_batch.let("best_row", u32(0xFFFFFFFFu));  // ranks below every real row
        Expr batch_scale = per_batch.let("batch_scale", in.batch_scales[batch_index]);
        Expr activation_base = per_batch.let("activation_base", batch_index * double(words_per_row));
        per_batch.loop("row_step", u32(0), u32(ceil_div(rows, kSubgroupSize)), [&](Body& rows_loop, Expr step) {
          Expr row = rows_loop.let("row", step * double(kSubgroupSize) + lane);
          rows_loop.if_then(row < double(rows), [&](Body& per_row) {
            Expr weight_base = per_row.let("weight_base", row * double(words_per_row));
            Expr dot = per_row.let("dot", i32(0));
            auto add_word = [&](Body& word_body, const Expr& word, std::uint32_t values) {
              std::vector<Expr> weight_values =
                  unpack_word(word_body, in.weights[weight_base + word], values, "weight");
              word_body.assign(dot, dot + int4_word_dot(word_body, weight_values, in.activations[activation_base + word],
                                                          "activation_word"));
            };
            if (full_words > 0) {
              per_row.loop("word", u32(0), u32(full_words),
                           [&](Body& words_loop, Expr word) { add_word(words_loop, word, kValuesPerWord); });
            }
            if (tail_values > 0) add_word(per_row, u32(full_words), tail_values);
            Expr score = per_row.let("score", (cast(ScalarType::F32, dot) * in.row_scales[row]) * batch_scale);
            Expr take = per_row.let("take", ranks_above(score, row, best_score, best_row));
            per_row.assign(best_score, select(take, score, best_score));
            per_row.assign(best_row, select(take, row, best_row));
          });
        });
        for (std::uint32_t offset = kSubgroupSize / 2; offset >= 1; offset /= 2) {
          Expr partner = lane ^ double(offset);
          Expr other_score = per_batch.let(fmt::format("other_score{}", offset), subgroup_shuffle(best_score, partner));
          Expr other_row = per_batch.let(fmt::format("other_row{}", offset), subgroup_shuffle(best_row, partner));
          Expr take = per_batch.let(fmt::format("take{}", offset), ranks_above(other_score, other_row, best_score, best_row));
          per_batch.assign(best_score, select(take, other_score, best_score));
          per_batch.assign(best_row, select(take, other_row, best_row));
        }
        per_batch.if_then(eq(lane, u32(0)), [&](Body& leader) {
          leader.store(out, batch_index, best_score);
          leader.store(out, batch_index + double(batch), cast(ScalarType::F32, best_row));
        });
      });
    });
  });
  return program.build();
}

namespace {

}  // namespace

std::vector<OpInfo> int4_packed_ops() {
  const std::string seed = "vyre-libs-0.6.2 quant::int4";
  const std::string packing = "8 signed nibbles per u32, value i at bits 4i..4i+3; a row of k values is ceil(k/8) words";
  ParamSpec dot_k{"k", ParamType::U32, "INT4 values in each operand (the seed's lane_count)", "", "> 0", {},
                       {"lane_count"}};
  ParamSpec m{"m", ParamType::U32, "activation vectors (the seed's batch)", "", "> 0, ceil(m/4) <= 65535", {},
                  {"batch"}};
  ParamSpec n{"n", ParamType::U32, "weight rows, the outputs per activation vector (the seed's rows)", "", "> 0",
                 {}, {"rows"}};
  ParamSpec k{"k", ParamType::U32, "values per row, the reduction length (the seed's cols)", "", "> 0", {},
                 {"cols"}};
  ParamSpec top1_n = n;
  top1_n.constraint = "> 0, <= 16777216";
  ParamSpec top1_m = m;
  top1_m.constraint = "> 0";
  const BufferSpec weights{"weights", "weight", ScalarType::U32, "n * ceil(k/8)", {"n", "ceil(k/8)"}};
  const BufferSpec row_scales{"row_scales", "sidecar", ScalarType::F32, "n"};
  const BufferSpec activations{"activations", "input", ScalarType::U32, "m * ceil(k/8)", {"m", "ceil(k/8)"}};
  const BufferSpec batch_scales{"batch_scales", "sidecar", ScalarType::F32, "m"};

  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "int4_dot_i32",
      .summary = "out[0] = sum_i lhs[i] * rhs[i] over packed signed INT4 values, as i32",
      .layout = packing,
      .seed = seed,
      .params = {dot_k},
      .buffers = {{"lhs", "input", ScalarType::U32, "ceil(k/8)"},
                  {"rhs", "input", ScalarType::U32, "ceil(k/8)"},
                  {"out", "output", ScalarType::I32, "1"}},
      .build = [](const OpArgs& args) { return int4_dot_i32(args.u32("k")); },
      .test_shapes = {OpArgs::dims({{"k", 8}}), OpArgs::dims({{"k", 9}}), OpArgs::dims({{"k", 300}})},
  });
  ops.push_back(OpInfo{
      .name = "int4_dot_f32_scaled",
      .summary = "out[0] = f32(int4 dot) * (lhs_scale[0] * rhs_scale[0])",
      .layout = packing,
      .seed = seed,
      .params = {dot_k},
      .buffers = {{"lhs", "input", ScalarType::U32, "ceil(k/8)"},
                  {"rhs", "input", ScalarType::U32, "ceil(k/8)"},
                  {"lhs_scale", "sidecar", ScalarType::F32, "1"},
                  {"rhs_scale", "sidecar", ScalarType::F32, "1"},
                  {"out", "output", ScalarType::F32, "1"}},
      .build = [](const OpArgs& args) { return int4_dot_f32_scaled(args.u32("k")); },
      .test_shapes = {OpArgs::dims({{"k", 8}}), OpArgs::dims({{"k", 7}}), OpArgs::dims({{"k", 264}})},
  });
  ops.push_back(OpInfo{
      .name = "int4_matvec_f32_scaled",
      .summary = "out[r] = row_scales[r] * sum_c w[r][c] * x[c]",
      .layout = packing + "; one subgroup per row",
      .seed = seed,
      .params = {n, k, schedule_param(), activation_param()},
      .buffers = {weights,
                  activation_buffer("x", "input", "k"),
                  row_scales,
                  activation_buffer("out", "output", "n")},
      .build =
          [](const OpArgs& args) {
            return int4_matvec_f32_scaled(args.u32("n"), args.u32("k"), schedule_of(args), activation_of(args));
          },
      .test_shapes = {scheduled(OpArgs::dims({{"n", 2}, {"k", 8}}), "seed"),
                      scheduled(OpArgs::dims({{"n", 3}, {"k", 9}}), "seed"),
                      scheduled(OpArgs::dims({{"n", 9}, {"k", 263}}), "seed"),
                      scheduled(OpArgs::dims({{"n", 8}, {"k", 64}}), "fast"),
                      scheduled(OpArgs::dims({{"n", 5}, {"k", 1056}}), "fast"),
                      scheduled(OpArgs::dims({{"n", 6}, {"k", 3104}}), "fast"),  // 4 k-subgroups
                      activated(scheduled(OpArgs::dims({{"n", 3}, {"k", 41}}), "seed"), "f16"),
                      activated(scheduled(OpArgs::dims({{"n", 3}, {"k", 41}}), "seed"), "bf16"),
                      activated(scheduled(OpArgs::dims({{"n", 8}, {"k", 96}}), "fast"), "f16"),
                      activated(scheduled(OpArgs::dims({{"n", 5}, {"k", 64}}), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "int4_batched_matvec_f32_scaled",
      .summary = "out[b, r] = row_scales[r] * sum_c w[r][c] * x[b, c]",
      .layout = packing + "; x [m, k], out [m, n] (n fastest); subgroup per row x 4 activation vectors",
      .seed = seed,
      .params = {m, n, k, schedule_param(), activation_param()},
      .buffers = {weights,
                  activation_buffer("x", "input", "m * k", {"m", "k"}),
                  row_scales,
                  activation_buffer("out", "output", "m * n", {"m", "n"})},
      .build =
          [](const OpArgs& args) {
            return int4_batched_matvec_f32_scaled(args.u32("m"), args.u32("n"), args.u32("k"),
                                                  schedule_of(args), activation_of(args));
          },
      .test_shapes = {scheduled(OpArgs::dims({{"m", 2}, {"n", 2}, {"k", 8}}), "seed"),
                      scheduled(OpArgs::dims({{"m", 2}, {"n", 3}, {"k", 9}}), "seed"),
                      scheduled(OpArgs::dims({{"m", 5}, {"n", 9}, {"k", 71}}), "seed"),
                      scheduled(OpArgs::dims({{"m", 1}, {"n", 4}, {"k", 64}}), "fast"),
                      scheduled(OpArgs::dims({{"m", 3}, {"n", 6}, {"k", 1056}}), "fast"),
                      scheduled(OpArgs::dims({{"m", 3}, {"n", 5}, {"k", 3104}}), "fast"),
                      activated(scheduled(OpArgs::dims({{"m", 5}, {"n", 3}, {"k", 17}}), "seed"), "f16"),
                      activated(scheduled(OpArgs::dims({{"m", 5}, {"n", 3}, {"k", 17}}), "seed"), "bf16"),
                      activated(scheduled(OpArgs::dims({{"m", 3}, {"n", 8}, {"k", 64}}), "fast"), "f16"),
                      activated(scheduled(OpArgs::dims({{"m", 2}, {"n", 6}, {"k", 96}}), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "int4_batched_matmul_f32_scaled",
      .summary = "out[b, r] = (f32(dot_i32(w[r], a[b])) * row_scales[r]) * batch_scales[b]",
      .layout = packing + " (weights and activations); out [m, n] (n fastest)",
      .seed = seed,
      .params = {m, n, k},
      .buffers = {weights, activations, row_scales, batch_scales,
                  {"out", "output", ScalarType::F32, "m * n", {"m", "n"}}},
      .build =
          [](const OpArgs& args) {
            return int4_batched_matmul_f32_scaled(args.u32("m"), args.u32("n"), args.u32("k"));
          },
      .test_shapes = {OpArgs::dims({{"m", 2}, {"n", 2}, {"k", 8}}), OpArgs::dims({{"m", 2}, {"n", 3}, {"k", 9}}),
                      OpArgs::dims({{"m", 6}, {"n", 10}, {"k", 300}})},
  });
  ops.push_back(OpInfo{
      .name = "int4_batched_matmul_top1_f32_scaled",
      .summary = "per batch the best row of int4_batched_matmul_f32_scaled (ties -> lowest row); "
                 "out = batch scores then batch row indices as f32",
      .layout = packing + " (weights and activations); one subgroup per activation vector",
      .seed = seed,
      .params = {top1_m, top1_n, k},
      .buffers = {weights, activations, row_scales, batch_scales,
                  {"out", "output", ScalarType::F32, "2 * m", {"2", "m"}}},
      .build =
          [](const OpArgs& args) {
            return int4_batched_matmul_top1_f32_scaled(args.u32("m"), args.u32("n"), args.u32("k"));
          },
      .test_shapes = {OpArgs::dims({{"m", 2}, {"n", 2}, {"k", 8}}), OpArgs::dims({{"m", 2}, {"n", 3}, {"k", 9}}),
                      OpArgs::dims({{"m", 9}, {"n", 70}, {"k", 17}})},
  });
  return ops;
}

}  // namespace quantc::ir::ops
