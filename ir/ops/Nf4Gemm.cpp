#include "ir/ops/Nf4Gemm.h"
#include "ir/ops/TensorGemm.h"

#include <fmt/format.h>

#include <limits>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/SplitK.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kNf4WorkgroupInvocations = 256;
constexpr std::uint32_t kBlockSize = 64;       // NF4 values per scale block along k
constexpr std::uint32_t kWordsPerBlock = 8;    // 64 nibbles = 32 bytes = 8 u32 words
constexpr std::uint32_t kMaxGridY = 65535;
constexpr const char* kSeedId = kNf4GemmId;

void check_dims(const char* op, std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  if (m == 0) throw OpError(fmt::format("Fix: {} m=0 is invalid: empty output; pass m > 0.", op));
  if (n == 0) throw OpError(fmt::format("Fix: {} n=0 is invalid: empty output; pass n > 0.", op));
  if (k == 0) throw OpError(fmt::format("Fix: {} k=0 is invalid: empty reduction; pass k > 0.", op));
  if (k % kBlockSize != 0) {
    throw OpError(fmt::format("Fix: {} k={} is not a multiple of 64 (the NF4 block size); pad k to {}.", op, k,
                              (k / kBlockSize + 1) * kBlockSize));
  }
  if (m > kMaxGridY) {
    throw OpError(fmt::format("Fix: {} m={} exceeds 65535 rows (the CUDA grid-y limit); split A into row batches.",
                              op, m));
  }
}

void check_count(const char* op, const char* what, std::uint64_t a, std::uint64_t b) {
  if (a * b > std::numeric_limits<std::uint32_t>::max()) {
    throw OpError(fmt::format("Fix: {} {} = {}*{} overflows u32 element counts; reduce dimensions.", op, what, a, b));
  }
}

/// Dequantized B value for `code` (u32 0..15) in a block with scale `scale`.
Expr dequantize(Nf4CodeBook code_book, const Expr& code, const Expr& scale) {
  return Lookup::make(ScalarType::F32, code_book_table(code_book), code) * scale;
}

/// acc + a * weight, in the accumulator's type (f64: exact product, one rounding).
Expr accumulate(const Expr& acc, const Expr& a, const Expr& weight) {
  if (acc.type() == ScalarType::F64) return fma(cast(ScalarType::F64, a), cast(ScalarType::F64, weight), acc);
  return fma(a, weight, acc);
}

Expr zero_accumulator(Nf4Accumulation accumulation) {
  return accumulation == Nf4Accumulation::F64 ? f64(0.0) : f32(0.0f);
}

/// The stored output: the f32 (or f64) sum rounded once to the activation type; with
/// f32 activations the seed's cast to f32.
Expr stored(ScalarType activation, const Expr& sum) {
  return activation == ScalarType::F32 ? cast(ScalarType::F32, sum) : narrow(activation, sum);
}

}  // namespace

Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation,
                 ScalarType activation, Nf4CodeBook code_book) {
  const char* op = "nf4_gemm";
  check_dims(op, m, n, k);
  check_count(op, "m*k", m, k);
  check_count(op, "m*n", m, n);
  check_count(op, "n*k/8", n, k / 8);
  const std::uint32_t blocks_per_column = k / kBlockSize;

  ProgramBuilder program(accumulation == Nf4Accumulation::F64 ? "nf4_gemm" : "nf4_gemm_f32_accumulate");
  BufferRef a = program.input("a", activation, m * k);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", activation, m * n);
  program.launch({kNf4WorkgroupInvocations, 1, 1}, {ceil_div(n, kNf4WorkgroupInvocations), m, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr column = region.let("column", invocation_id(0));
      Expr row = region.let("row", workgroup_id(1));
      region.if_then(column < n, [&](Body& then) {
        Expr acc = then.let("acc", zero_accumulator(accumulation));
        Expr a_row = then.let("a_row", row * k);
        then.loop("block", u32(0), u32(blocks_per_column), [&](Body& blocks, Expr block) {
          Expr block_index = blocks.let("block_index", column * blocks_per_column + block);
          Expr scale = blocks.let("scale", b_scales[block_index]);
          blocks.loop("word", u32(0), u32(kWordsPerBlock), [&](Body& words, Expr word) {
            Expr packed = words.let("packed", b_nf4[block_index * kWordsPerBlock + word]);
            Expr k_base = words.let("k_base", a_row + block * kBlockSize + word * kNibblesPerWord);
            words.loop("nibble", u32(0), u32(kNibblesPerWord), [&](Body& nibbles, Expr position) {
              Expr code = nibbles.let("code", nibble(packed, position));
              Expr weight = nibbles.let("weight", dequantize(code_book, code, scale));
              nibbles.assign(acc, accumulate(acc, widen(a[k_base + position]), weight));
            });
          });
        });
        then.store(c, row * n + column, stored(activation, acc));
      });
    });
  });
  return program.build();
}

Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k, ScalarType activation,
                           Nf4CodeBook code_book) {
  const char* op = "nf4_gemm_transpose";
  check_dims(op, m, n, k);
  check_count(op, "m*n", m, n);
  check_count(op, "m*k", m, k);
  check_count(op, "n*k/8", n, k / 8);
  const std::uint32_t blocks_per_column = k / kBlockSize;

  ProgramBuilder program("nf4_gemm_transpose");
  BufferRef a = program.input("a", activation, m * n);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", activation, m * k);
  program.launch({kNf4WorkgroupInvocations, 1, 1}, {ceil_div(k, kNf4WorkgroupInvocations), m, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr b_row = region.let("b_row", invocation_id(0));  // output column = row r of B
      Expr row = region.let("row", workgroup_id(1));
      region.if_then(b_row < k, [&](Body& then) {
        // The block, word and nibble of row r are the same in every column of B.
        Expr block = then.let("block", b_row / kBlockSize);
        Expr word_in_block = then.let("word_in_block", (b_row % kBlockSize) / kNibblesPerWord);
        Expr shift = then.let("shift", (b_row % kNibblesPerWord) * 4u);
        Expr a_row = then.let("a_row", row * n);
        Expr acc = then.let("acc", f64(0.0));
        then.loop("b_column", u32(0), u32(n), [&](Body& columns, Expr b_column) {
          Expr block_index = columns.let("block_index", b_column * blocks_per_column + block);
          Expr packed = columns.let("packed", b_nf4[block_index * kWordsPerBlock + word_in_block]);
          Expr code = columns.let("code", nibble_at_shift(packed, shift));
          Expr weight = columns.let("weight", dequantize(code_book, code, b_scales[block_index]));
          columns.assign(acc, accumulate(acc, widen(a[a_row + b_column]), weight));
        });
        then.store(c, row * k + b_row, stored(activation, acc));
      });
    });
  });
  return program.build();
}

namespace {

constexpr std::uint32_t kHalfBlock = 32;        // codes per u32x4 load
constexpr std::uint32_t kWordsPerHalfBlock = 4;
/// Registers per thread the fast nf4_gemm_transpose asks for where that makes its grid one
/// wave (Program::min_resident_workgroups): ptxas fits it without spills at sm_80 and sm_90.
constexpr std::uint32_t kTransposeHintedRegisters = 64;

bool power_of_two(std::uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// kNf4Table[lane & 15] in every lane: the shuffle code book (built once per lane).
Expr code_book_register(Body& body, Nf4CodeBook code_book, const Expr& lane) {
  return body.let("code_book", Lookup::make(ScalarType::F32, code_book_table(code_book), lane & 15u));
}

/// f64 through a 32-bit shuffle: two halves.
Expr shuffle_f64(const Expr& value, const Expr& lane) {
  Expr halves = bitcast(Type(ScalarType::U32, 2), value);
  return bitcast(ScalarType::F64, make_vector({subgroup_shuffle(extract_lane(halves, 0), lane),
                                               subgroup_shuffle(extract_lane(halves, 1), lane)}));
}

Expr shuffle_any(const Expr& value, const Expr& lane) {
  return value.type() == ScalarType::F64 ? shuffle_f64(value, lane) : subgroup_shuffle(value, lane);
}

std::string fast_m_error(const char* op, std::uint32_t m) {
  return fmt::format(
      "Fix: {} m={} has no fast schedule: the fast program is the batch-1 GEMV (m == 1); use \"schedule\": \"seed\" "
      "(or \"auto\", which picks seed for m > 1).",
      op, m);
}

}  // namespace

Nf4GemvSchedule resolve_nf4_gemv_schedule(std::uint32_t n, std::uint32_t k, Nf4GemvSchedule split) {
  if (split.columns_per_lane == 0) split.columns_per_lane = k >= 1024 && n >= 2048 ? 4 : 2;
  if (split.k_subgroups == 0) {
    constexpr std::uint32_t kMaxKSubgroups = 4;  // 8 ran 1.1x slower than 4 at 11008x4096 on an H200
    split.k_subgroups = choose_k_subgroups(k / kHalfBlock, split.k_lanes, 2, kMaxKSubgroups);
  }
  return split;
}

namespace {

Program nf4_gemv_fast(std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation, const Nf4GemvSchedule& requested,
                      ScalarType activation, Nf4CodeBook code_book) {
  const char* op = "nf4_gemm";
  const Nf4GemvSchedule split = resolve_nf4_gemv_schedule(n, k, requested);
  if (!power_of_two(split.k_lanes) || split.k_lanes < 2 || split.k_lanes > kSubgroupSize ||
      split.columns_per_lane == 0 || split.columns_per_lane > 4 || split.rounds_per_batch == 0 ||
      split.subgroups_per_workgroup == 0 || split.subgroups_per_workgroup > 32) {
    throw OpError(fmt::format("Fix: {} fast split k_lanes={} columns_per_lane={} is invalid; k_lanes must be a power "
                              "of two in 2..32, columns_per_lane 1..4.",
                              op, split.k_lanes, split.columns_per_lane));
  }
  const bool f64_acc = accumulation == Nf4Accumulation::F64;
  const std::uint32_t blocks_per_column = k / kBlockSize;
  const std::uint32_t half_blocks = k / kHalfBlock;
  const std::uint32_t words_per_column = k / kNibblesPerWord;
  const std::uint32_t L = split.k_lanes, R = split.columns_per_lane;
  const std::uint32_t k_subgroups = split.k_subgroups;
  const std::uint32_t workgroup_k_lanes = L * k_subgroups;  // k-lanes of a column group in the workgroup
  const std::uint32_t rounds = ceil_div(half_blocks, workgroup_k_lanes);
  const std::uint32_t batch = std::min(split.rounds_per_batch, rounds);
  const std::uint32_t batches = ceil_div(rounds, batch);
  const bool partial = half_blocks % workgroup_k_lanes != 0 || rounds % batch != 0;
  const std::uint32_t subgroup_columns = split.columns_per_subgroup();
  const std::uint32_t subgroups = ceil_div(n, subgroup_columns);
  const std::uint32_t column_subgroups = split.subgroups_per_workgroup;  // per workgroup
  const std::uint32_t workgroup_size = column_subgroups * k_subgroups * kSubgroupSize;
  if (workgroup_size > kMaxWorkgroupInvocations) {
    throw OpError(fmt::format("Fix: {} fast split subgroups_per_workgroup={} k_subgroups={} exceeds {} invocations "
                              "per workgroup.",
                              op, column_subgroups, k_subgroups, kMaxWorkgroupInvocations));
  }

  const bool f32_activations = activation == ScalarType::F32;
  const ScalarType acc_type = f64_acc ? ScalarType::F64 : ScalarType::F32;
  ProgramBuilder program(f64_acc ? "nf4_gemm" : "nf4_gemm_f32_accumulate");
  BufferRef a = program.input("a", activation, k);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", activation, n);
  const KSubgroupMeeting meeting =
      declare_k_subgroup_meeting(program, k_subgroups, column_subgroups * subgroup_columns, acc_type);
  program.launch({workgroup_size, 1, 1}, {ceil_div(subgroups, column_subgroups), 1, 1});
  even_out_waves(program, kGemvLeastRegisters, kGemvLeastRegisters);
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      const WorkgroupSubgroup at = locate_subgroup(region, column_subgroups, k_subgroups);
      const Expr &lane = at.lane, &subgroup = at.subgroup;
      const Expr &column_subgroup = at.column_subgroup, &k_subgroup = at.k_subgroup;
      Expr k_lane = region.let("k_lane", lane % L);
      Expr workgroup_k_lane = k_subgroups == 1 ? k_lane : region.let("workgroup_k_lane", k_subgroup * L + k_lane);
      Expr slot = region.let("slot", (column_subgroup * (kSubgroupSize / L) + lane / L) * R);
      Expr first_column = region.let("first_column", subgroup * subgroup_columns + (lane / L) * R);
      std::vector<Expr> column, acc;
      for (std::uint32_t r = 0; r < R; ++r) {
        column.push_back(r == 0 ? first_column : first_column + r);
        acc.push_back(region.let(fmt::format("acc{}", r), f64_acc ? f64(0.0) : f32(0.0f)));
      }
      region.if_then(subgroup < subgroups, [&](Body& sg) {
        Expr book = code_book_register(sg, code_book, lane);
        std::vector<Expr> word_base, scale_base;
        for (std::uint32_t r = 0; r < R; ++r) {
          Expr clamped =
              n % subgroup_columns == 0 ? column[r] : sg.let(fmt::format("column{}", r), min(column[r], u32(n - 1)));
          word_base.push_back(sg.let(fmt::format("word_base{}", r), clamped * words_per_column));
          scale_base.push_back(sg.let(fmt::format("scale_base{}", r), clamped * blocks_per_column));
        }
        sg.loop("batch", u32(0), u32(batches), [&](Body& bb, Expr batch_index) {
          // Every load of the batch first: weights, scales and activations of `batch` half blocks.
          std::vector<Expr> valid, xs;
          std::vector<HalfWords> x_halves;  // f16/bf16: 8 activations per u32x4
          std::vector<std::vector<Expr>> words(batch), scales(batch);
          for (std::uint32_t i = 0; i < batch; ++i) {
            Expr hb = bb.let(fmt::format("half_block{}", i), (batch_index * batch + i) * workgroup_k_lanes + workgroup_k_lane);
            Expr ok;
            if (partial) {
              ok = bb.let(fmt::format("valid{}", i), hb < half_blocks);
              hb = bb.let(fmt::format("half_block_clamped{}", i), min(hb, u32(half_blocks - 1)));
            }
            valid.push_back(ok);
            for (std::uint32_t r = 0; r < R; ++r) {
              words[i].push_back(bb.let(fmt::format("words{}_{}", i, r),
                                        b_nf4.load(word_base[r] + hb * kWordsPerHalfBlock, 4)));
              scales[i].push_back(bb.let(fmt::format("scale{}_{}", i, r), b_scales[scale_base[r] + hb / 2u]));
            }
            if (!f32_activations) {
              for (std::uint32_t j = 0; j < kHalfBlock / 8; ++j) {
                x_halves.push_back(
                    load_half_words(bb, a, hb * kHalfBlock + 8 * j, 8, fmt::format("x_words{}_{}", i, j)));
              }
              continue;
            }
            for (std::uint32_t j = 0; j < kHalfBlock / 4; ++j) {
              xs.push_back(bb.let(fmt::format("x{}_{}", i, j), a.load(hb * kHalfBlock + 4 * j, 4)));
            }
          }
          // f16/bf16: each activation widened once, after every load of the batch.
          std::vector<Expr> widened;
          for (std::uint32_t i = 0; i < batch && !f32_activations; ++i) {
            for (std::uint32_t kk = 0; kk < kHalfBlock; ++kk) {
              const HalfWords& words = x_halves[i * (kHalfBlock / 8) + kk / 8];
              widened.push_back(bb.let(fmt::format("x{}_{}", i, kk), words.element(kk % 8)));
            }
          }
          for (std::uint32_t i = 0; i < batch; ++i) {
            for (std::uint32_t r = 0; r < R; ++r) {
              Expr p = bb.let(fmt::format("p{}_{}", i, r), f32(0.0f));
              for (std::uint32_t w = 0; w < kWordsPerHalfBlock; ++w) {
                Expr word = extract_lane(words[i][r], w);
                for (std::uint32_t e = 0; e < kNibblesPerWord; ++e) {
                  const std::uint32_t kk = w * kNibblesPerWord + e;
                  Expr x = f32_activations ? extract_lane(xs[i * (kHalfBlock / 4) + kk / 4], kk % 4)
                                           : widened[i * kHalfBlock + kk];
                  bb.assign(p, fma(x, shuffled_code(book, word, e), p));
                }
              }
              Expr sum = valid[i].defined() ? select(valid[i], p, f32(0.0f)) : p;
              if (f64_acc) {
                bb.assign(acc[r], fma(cast(ScalarType::F64, sum), cast(ScalarType::F64, scales[i][r]), acc[r]));
              } else {
                bb.assign(acc[r], fma(scales[i][r], sum, acc[r]));
              }
            }
          }
        });
        // The subgroup's k-lanes' sums: butterfly over the low lane bits.
        for (std::uint32_t r = 0; r < R; ++r) {
          for (std::uint32_t mask = 1; mask < L; mask *= 2) {
            sg.assign(acc[r], acc[r] + shuffle_any(acc[r], lane ^ u32(mask)));
          }
        }
      });
      // The workgroup's k-subgroups meet in shared memory (SplitK.h); k-subgroup 0 stores.
      Expr owner = logical_and(subgroup < subgroups, eq(k_lane, u32(0)));
      emit_k_subgroup_meeting(region, meeting, k_subgroup, owner, slot, acc);
      region.if_then(k_subgroups == 1 ? owner : logical_and(owner, eq(k_subgroup, u32(0))), [&](Body& leader) {
        for (std::uint32_t r = 0; r < R; ++r) {
          Expr value = !f32_activations ? narrow(activation, acc[r])  // from f32, or directly from f64
                       : f64_acc        ? cast(ScalarType::F32, acc[r])
                                        : acc[r];
          if (n % subgroup_columns == 0) {
            leader.store(c, column[r], value);
          } else {
            leader.if_then(column[r] < n, [&](Body& store) { store.store(c, column[r], value); });
          }
        }
      });
    });
  });
  return program.build();
}

Program nf4_gemv_transpose_fast(std::uint32_t n, std::uint32_t k, const Nf4GemvTransposeSchedule& split,
                                ScalarType activation, Nf4CodeBook code_book) {
  const char* op = "nf4_gemm_transpose";
  const std::uint32_t O = split.output_lanes;
  if ((O != 1 && O != 2) || split.columns_per_batch == 0 || split.columns_per_chunk == 0 ||
      split.columns_per_chunk % split.columns_per_batch != 0 || split.subgroups_per_workgroup == 0 ||
      split.subgroups_per_workgroup > 32) {
    throw OpError(fmt::format("Fix: {} fast split output_lanes={} columns_per_batch={} columns_per_chunk={} is "
                              "invalid; output_lanes 1 or 2, the chunk a multiple of the batch.",
                              op, O, split.columns_per_batch, split.columns_per_chunk));
  }
  const std::uint32_t C = kSubgroupSize / O;  // c-lanes
  const std::uint32_t blocks_per_column = k / kBlockSize;
  const std::uint32_t words_per_column = k / kNibblesPerWord;
  const std::uint32_t groups = k / kHalfBlock;  // output groups of 32
  const std::uint32_t subgroups = ceil_div(groups, O);
  // Split the columns across workgroups too (SplitK.h) when the output groups alone give
  // too few warps; one subgroup per workgroup is the meeting's requirement. Then twice the
  // splits while the grid stays one wave at 64 registers a thread (kTargetSms x 32 warps,
  // asked for below; ptxas gives 72-80 unasked, and 64 without spills) and every c-lane
  // keeps two columns: more, shorter warps in the same wave. On the H100 model, us:
  // 4096x4096 5.1 -> 3.9, 11008x4096 11.1 -> 9.2 (32 -> 64 splits); not timed on a GPU.
  std::uint32_t splits = split.subgroups_per_workgroup == 1 ? choose_splits(subgroups, n, C) : 1;
  while (split.subgroups_per_workgroup == 1 &&
         std::uint64_t{subgroups} * splits * 2 <= one_wave_warps(kTransposeHintedRegisters) &&
         n >= 2 * C * splits * 2) {
    splits *= 2;
  }
  const std::uint32_t all_c_lanes = splits * C;
  const std::uint32_t rounds = ceil_div(n, all_c_lanes);  // columns per c-lane
  const std::uint32_t batch = std::min(split.columns_per_batch, rounds);
  const std::uint32_t batches = ceil_div(rounds, batch);
  const std::uint32_t chunk_batches = std::max(1u, split.columns_per_chunk / split.columns_per_batch);
  const std::uint32_t full_chunks = batches / chunk_batches, rest_batches = batches % chunk_batches;
  const bool partial_columns = n % all_c_lanes != 0 || rounds % batch != 0;
  const bool partial_groups = groups % O != 0;
  const std::uint32_t workgroup_size = split.subgroups_per_workgroup * kSubgroupSize;

  ProgramBuilder program("nf4_gemm_transpose");
  BufferRef a = program.input("a", activation, n);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", activation, k);
  SplitK split_k = declare_split_k(program, splits, k, subgroups, ScalarType::F64);
  // The tail loads 16 registers of partial sums at a time: 17.6 -> 14.2 us at 4096x4096 on
  // an H200 against one split at a time, ptxas's count unchanged (72).
  split_k.registers_in_flight = 16;
  program.launch({workgroup_size, 1, 1}, {ceil_div(subgroups, split.subgroups_per_workgroup), splits, 1});
  program.min_resident_workgroups(one_wave_resident_workgroups(
      program.workgroups(), program.invocations_per_workgroup(), program.static_shared_bytes(), kTransposeHintedRegisters));
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      Expr subgroup = region.let("subgroup", workgroup_id(0) * split.subgroups_per_workgroup + local / kSubgroupSize);
      Expr lane = region.let("lane", local % kSubgroupSize);
      region.if_then(subgroup < subgroups, [&](Body& sg) {
        Expr book = code_book_register(sg, code_book, lane);
        Expr c_lane = sg.let("c_lane", lane / O);
        Expr split_index = splits > 1 ? sg.let("split", workgroup_id(1)) : Expr();
        Expr first_c_lane = splits > 1 ? sg.let("first_c_lane", split_index * C + c_lane) : c_lane;
        Expr group = sg.let("group", O == 1 ? subgroup : subgroup * O + lane % O);
        Expr group_clamped = partial_groups ? sg.let("group_clamped", min(group, u32(groups - 1))) : group;
        Expr word_offset = sg.let("word_offset", group_clamped * kWordsPerHalfBlock);
        Expr block = sg.let("block", group_clamped / 2u);
        std::vector<Expr> acc, p;
        for (std::uint32_t o = 0; o < kHalfBlock; ++o) {
          acc.push_back(sg.let(fmt::format("acc{}", o), f64(0.0)));
          p.push_back(sg.let(fmt::format("p{}", o), f32(0.0f)));
        }
        auto emit_batch = [&](Body& bb, const Expr& batch_index) {
          std::vector<Expr> words, weight_scale;
          std::vector<Expr> col_values, scale_values, valid;
          for (std::uint32_t i = 0; i < batch; ++i) {
            Expr col = bb.let(fmt::format("column{}", i), (batch_index * batch + i) * all_c_lanes + first_c_lane);
            Expr ok;
            if (partial_columns) {
              ok = bb.let(fmt::format("valid{}", i), col < n);
              col = bb.let(fmt::format("column_clamped{}", i), min(col, u32(n - 1)));
            }
            valid.push_back(ok);
            words.push_back(bb.let(fmt::format("words{}", i), b_nf4.load(col * words_per_column + word_offset, 4)));
            col_values.push_back(bb.let(fmt::format("a{}", i), a[col]));
            scale_values.push_back(bb.let(fmt::format("scale{}", i), b_scales[col * blocks_per_column + block]));
          }
          for (std::uint32_t i = 0; i < batch; ++i) {
            Expr w = widen(col_values[i]) * scale_values[i];
            if (valid[i].defined()) w = select(valid[i], w, f32(0.0f));
            Expr weight = bb.let(fmt::format("weight{}", i), w);
            for (std::uint32_t wd = 0; wd < kWordsPerHalfBlock; ++wd) {
              Expr word = extract_lane(words[i], wd);
              for (std::uint32_t e = 0; e < kNibblesPerWord; ++e) {
                Expr& target = p[wd * kNibblesPerWord + e];
                bb.assign(target, fma(weight, shuffled_code(book, word, e), target));
              }
            }
          }
        };
        // A single chunk's partials are the f64 sums themselves: 0 + p = p exactly, as p,
        // summed by fma from +0, is never -0 (round to nearest gives +0 for x - x).
        const bool one_chunk = full_chunks + (rest_batches > 0 ? 1 : 0) == 1;
        auto flush = [&](Body& fb) {
          for (std::uint32_t o = 0; o < kHalfBlock; ++o) {
            fb.assign(acc[o], one_chunk ? cast(ScalarType::F64, p[o]) : acc[o] + cast(ScalarType::F64, p[o]));
            fb.assign(p[o], f32(0.0f));
          }
        };
        if (full_chunks > 0) {
          sg.loop("chunk", u32(0), u32(full_chunks), [&](Body& cb, Expr chunk) {
            cb.loop("batch", u32(0), u32(chunk_batches), [&](Body& bb, Expr b) { emit_batch(bb, chunk * chunk_batches + b); });
            flush(cb);
          });
        }
        if (rest_batches > 0) {
          sg.loop("rest_batch", u32(0), u32(rest_batches),
                  [&](Body& bb, Expr b) { emit_batch(bb, b + full_chunks * chunk_batches); });
          flush(sg);
        }
        // Reduce-scatter over the c-lane bits, highest first: at each level a lane keeps
        // the half of its values its bit selects, adds the partner's copy of that half
        // and sends the other half. At the end c-lane j holds outputs j*(32/C) ...
        std::vector<Expr> values = acc;
        for (std::uint32_t mask = kSubgroupSize / 2; mask >= O; mask /= 2) {
          Expr upper = sg.let(fmt::format("upper{}", mask), ne(lane & mask, u32(0)));
          const std::size_t half = values.size() / 2;
          std::vector<Expr> kept;
          for (std::size_t v = 0; v < half; ++v) {
            Expr send = select(upper, values[v], values[v + half]);
            Expr keep = select(upper, values[v + half], values[v]);
            kept.push_back(sg.let(fmt::format("sum{}_{}", mask, v), keep + shuffle_f64(send, lane ^ u32(mask))));
          }
          values = kept;
          if (mask == O) break;
        }
        // values: 32/C = O outputs per lane, outputs group*32 + c_lane*O + v; with split
        // columns the workgroups' f64 sums meet first, added in split order.
        Expr first = sg.let("output", group * kHalfBlock + c_lane * O);
        auto store_all = [&](Body& st, const std::vector<Expr>& sums) {
          if (O == 1) {
            st.store(c, first, stored(activation, sums[0]));
          } else {
            st.store(c, first, make_vector({stored(activation, sums[0]), stored(activation, sums[1])}));
          }
        };
        emit_split_k_meeting(sg, split_k, partial_groups ? group < groups : boolean(true), first, values,
                             workgroup_id(0), split_index, store_all);
      });
    });
  });
  return program.build();
}

}  // namespace

Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation,
                 KernelSchedule schedule, const Nf4GemvSchedule& split, ScalarType activation,
                 Nf4CodeBook code_book) {
  if (schedule == KernelSchedule::Seed || (schedule == KernelSchedule::Auto && m != 1)) {
    return nf4_gemm(m, n, k, accumulation, activation, code_book);
  }
  const char* op = "nf4_gemm";
  check_dims(op, m, n, k);
  check_count(op, "m*k", m, k);
  check_count(op, "m*n", m, n);
  check_count(op, "n*k/8", n, k / 8);
  if (m != 1) {
    // Batches: the tensor-core GEMM (ir/ops/TensorGemm.h, sm_80+), which sums in f32.
    if (accumulation == Nf4Accumulation::F64) {
      throw OpError(fmt::format("Fix: {} m={} runs on the tensor cores, which sum in f32, but \"accumulate\" is "
                                "\"f64\"; set \"accumulate\": \"f32\", or \"schedule\": \"seed\" (or \"auto\", "
                                "which picks seed for m > 1).",
                                op, m));
    }
    TensorGemmShape shape{TensorWeights::Nf4, m, k, n, 64, BlockAffineMode::Symmetric, activation};
    shape.code_book = code_book == Nf4CodeBook::Nf4 ? kNf4Table : kBnbFp4Table;
    return fast_tensor_gemm(shape);
  }
  return nf4_gemv_fast(n, k, accumulation, split, activation, code_book);
}

Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k, KernelSchedule schedule,
                           const Nf4GemvTransposeSchedule& split, ScalarType activation, Nf4CodeBook code_book) {
  if (schedule == KernelSchedule::Seed || (schedule == KernelSchedule::Auto && m != 1)) {
    return nf4_gemm_transpose(m, n, k, activation, code_book);
  }
  const char* op = "nf4_gemm_transpose";
  check_dims(op, m, n, k);
  check_count(op, "m*n", m, n);
  check_count(op, "m*k", m, k);
  check_count(op, "n*k/8", n, k / 8);
  if (m != 1) throw OpError(fast_m_error(op, m));
  return nf4_gemv_transpose_fast(n, k, split, activation, code_book);
}

namespace {
OpArgs shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) { return OpArgs::dims({{"m", m}, {"n", n}, {"k", k}}); }
OpArgs shape(std::uint32_t m, std::uint32_t n, std::uint32_t k, const char* accumulate) {
  OpArgs args = shape(m, n, k);
  args.set("accumulate", std::string(accumulate));
  return args;
}

OpArgs with_quant_type(OpArgs args, const char* quant_type) {
  args.set("quant_type", std::string(quant_type));
  return args;
}

Nf4CodeBook code_book_of(const OpArgs& args) {
  return args.has("quant_type") && args.choice("quant_type") == "fp4" ? Nf4CodeBook::BnbFp4 : Nf4CodeBook::Nf4;
}

Nf4Accumulation parse_accumulation(const std::string& text) {
  if (text == "f64") return Nf4Accumulation::F64;
  if (text == "f32") return Nf4Accumulation::F32;
  throw OpError(fmt::format("Fix: nf4_gemm accumulate=\"{}\" is not supported; use \"f64\" or \"f32\".", text));
}
}  // namespace


std::vector<std::uint64_t> code_book_table(Nf4CodeBook code_book) {
  return f32_lookup_table(code_book == Nf4CodeBook::Nf4 ? kNf4Table : kBnbFp4Table);
}

std::vector<OpInfo> nf4_gemm_ops() {
  const std::string seed = "aprender-gpu-0.31.2 nf4_gemm (trueno#108, C-NF4-003)";
  ParamSpec m{"m", ParamType::U32, "rows of A and C", "", "> 0, <= 65535", {}};
  ParamSpec n{"n", ParamType::U32, "columns of B (and of C for nf4_gemm; the reduction for the transpose)", "",
              "> 0", {}};
  ParamSpec k{"k", ParamType::U32, "rows of B (the reduction for nf4_gemm; columns of C for the transpose)", "",
              "> 0, multiple of 64", {}};
  ParamSpec accumulate{"accumulate", ParamType::Choice,
                       "dot-product accumulator: f64 (seed, GH-561) or f32 fma (faster, error grows with k)",
                       "\"f64\"", "", {"f64", "f32"}};
  ParamSpec quant_type{"quant_type", ParamType::Choice,
                       "B's code book: nf4 (the seed's NF4 table) or fp4 (bitsandbytes' FP4: 0, 1/192, 2/3, 1, 1/3, "
                       "1/2, 1/6, 1/4 and their negations; code bit 3 the sign)",
                       "\"nf4\"", "", {"nf4", "fp4"}};
  const std::string layout = "B k x n in 64-row blocks, column-major block order: b_scales[col*(k/64)+block], "
                             "b_nf4 bytes (col*(k/64)+block)*32 + t, low nibble first (read as u32 words)";
  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "nf4_gemm",
      .summary = "C[m,n] = A[m,k] @ dequant(B_nf4[k,n]), NF4 code book in registers",
      .layout = layout + "; A, C row-major; one invocation per output",
      .seed = seed,
      .params = {m, n, k, accumulate, quant_type, schedule_param(), activation_param()},
      .buffers = with_split_k_buffers({activation_buffer("a", "input", "m*k", {"m", "k"}),
                               {"b_nf4", "weight", ScalarType::U32, "n*k/8", {"n", "k/8"}},
                               {"b_scales", "sidecar", ScalarType::F32, "n*k/64", {"n", "k/64"}},
                               activation_buffer("c", "output", "m*n", {"m", "n"})},
                              ScalarType::F32, "splits * 16 * n * M/16 * ceil(m/M) (m > 1)",
                              "n/32 * ceil(m/M) (m > 1: the tensor-core GEMM, M = 16 for m <= 16, else 32)"),
      .build = [](const OpArgs& args) {
        Nf4Accumulation accumulation =
            args.has("accumulate") ? parse_accumulation(args.choice("accumulate")) : Nf4Accumulation::F64;
        return nf4_gemm(args.u32("m"), args.u32("n"), args.u32("k"), accumulation, schedule_of(args), {},
                        activation_of(args), code_book_of(args));
      },
      .test_shapes = {scheduled(shape(1, 1, 64, "f64"), "seed"), scheduled(shape(3, 33, 128, "f64"), "seed"),
                      scheduled(shape(2, 5, 192, "f32"), "seed"), scheduled(shape(1, 300, 64, "f64"), "seed"),
                      scheduled(shape(1, 8, 192, "f64"), "fast"), scheduled(shape(1, 5, 1024, "f32"), "fast"),
                      scheduled(shape(1, 12, 64, "f64"), "fast"),
                      // half blocks split across 2 and 4 subgroups of a workgroup, and 4 columns per
                      // lane (resolve_nf4_gemv_schedule)
                      scheduled(shape(1, 8, 2048, "f64"), "fast"), scheduled(shape(1, 6, 4096, "f32"), "fast"),
                      scheduled(shape(1, 2056, 2048, "f64"), "fast"),
                      activated(scheduled(shape(2, 5, 128, "f64"), "seed"), "f16"),
                      activated(scheduled(shape(2, 5, 128, "f32"), "seed"), "bf16"),
                      activated(scheduled(shape(2, 5, 128, "f32"), "seed"), "f16"),
                      activated(scheduled(shape(2, 5, 128, "f64"), "seed"), "bf16"),
                      activated(scheduled(shape(1, 12, 192, "f64"), "fast"), "f16"),
                      activated(scheduled(shape(1, 12, 192, "f64"), "fast"), "bf16"),
                      activated(scheduled(shape(1, 5, 128, "f32"), "fast"), "f16"),
                      activated(scheduled(shape(1, 5, 128, "f32"), "fast"), "bf16"),
                      // bitsandbytes FP4 codes: the seed's loop and the fast GEMV (f64 and f32)
                      with_quant_type(scheduled(shape(2, 5, 128, "f64"), "seed"), "fp4"),
                      with_quant_type(scheduled(shape(1, 12, 192, "f64"), "fast"), "fp4"),
                      with_quant_type(scheduled(shape(1, 6, 4096, "f32"), "fast"), "fp4")},
  });
  ops.push_back(OpInfo{
      .name = "nf4_gemm_transpose",
      .summary = "C[m,k] = A[m,n] @ dequant(B_nf4[k,n])^T (backward pass), f64 accumulation",
      .layout = layout + "; A, C row-major; one invocation per output",
      .seed = seed,
      .params = {m, n, k, quant_type, schedule_param(), activation_param()},
      .buffers = with_split_k_buffers({activation_buffer("a", "input", "m*n", {"m", "n"}),
                               {"b_nf4", "weight", ScalarType::U32, "n*k/8", {"n", "k/8"}},
                               {"b_scales", "sidecar", ScalarType::F32, "n*k/64", {"n", "k/64"}},
                               activation_buffer("c", "output", "m*k", {"m", "k"})},
                              ScalarType::F64, "splits*k", "k/64"),
      .build =
          [](const OpArgs& args) {
            return nf4_gemm_transpose(args.u32("m"), args.u32("n"), args.u32("k"), schedule_of(args), {},
                                      activation_of(args), code_book_of(args));
          },
      .test_shapes = {scheduled(shape(1, 1, 64), "seed"), scheduled(shape(3, 33, 128), "seed"),
                      scheduled(shape(2, 3, 320), "seed"), scheduled(shape(1, 40, 128), "fast"),
                      scheduled(shape(1, 3, 320), "fast"), activated(scheduled(shape(2, 3, 128), "seed"), "f16"),
                      activated(scheduled(shape(2, 3, 128), "seed"), "bf16"),
                      activated(scheduled(shape(1, 40, 128), "fast"), "f16"),
                      activated(scheduled(shape(1, 3, 320), "fast"), "bf16"),
                      with_quant_type(scheduled(shape(2, 3, 128), "seed"), "fp4"),
                      with_quant_type(scheduled(shape(1, 40, 128), "fast"), "fp4")},
  });
  return ops;
}

}  // namespace quantc::ir::ops
