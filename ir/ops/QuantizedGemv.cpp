#include "ir/ops/QuantizedGemv.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

#include "ir/Builder.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/Registry.h"
#include "ir/ops/SplitK.h"

namespace quantc::ir::ops {
namespace {

/// Packed rows per reduction block when the op has no groups (64 k).
constexpr std::uint32_t kUngroupedRows = 8;
/// Fewest packed rows in a group slice (see slices_per_group).
constexpr std::uint32_t kMinSliceRows = 2;
/// The largest x a permuted-input GEMV stages in shared memory (as f32, so in_dim <=
/// 12288): the static .shared limit of one CTA. Larger inputs gather from global memory.
constexpr std::uint64_t kMaxStagedXBytes = kMaxStaticSharedBytes;
/// Staging loads (4 elements each) a lane issues before their shared-memory stores.
constexpr std::uint32_t kStageChunks = 8;

std::uint32_t rows_per_group(const NibbleGemv& gemv) {
  return gemv.group_size == 0 ? kUngroupedRows : gemv.group_size / kNibblesPerWord;
}

/// The largest divisor of `rows` not above `limit`: batches never straddle groups.
std::uint32_t batch_rows(std::uint32_t rows, std::uint32_t limit) {
  for (std::uint32_t batch = std::min(rows, limit); batch > 1; --batch) {
    if (rows % batch == 0) return batch;
  }
  return 1;
}

/// Slices per group: the divisor of `group_rows` (slices have equal rows, at least
/// `min_rows` each) that gives the fewest packed rows to the busiest of `k_lanes` k-lanes,
/// ceil(groups * slices / k_lanes) * group_rows / slices; the fewest slices among equals
/// (each slice costs its sidecar loads and one scale-and-zero-point step).
std::uint32_t slices_per_group(std::uint32_t groups, std::uint32_t group_rows, std::uint32_t k_lanes,
                               std::uint32_t min_rows) {
  std::uint32_t best = 1;
  std::uint64_t best_rows = std::uint64_t{ceil_div(groups, k_lanes)} * group_rows;
  for (std::uint32_t slices = 2; slices <= group_rows / min_rows; ++slices) {
    if (group_rows % slices != 0) continue;
    const std::uint64_t lane_rows = std::uint64_t{ceil_div(groups * slices, k_lanes)} * (group_rows / slices);
    if (lane_rows < best_rows) best = slices, best_rows = lane_rows;
  }
  return best;
}

/// Nibbles 0..4 of a word are decoded in place and 5..7 from the word shifted right by 20,
/// so nibble e sits at bit 4 * nibble_position(e) of its source.
std::uint32_t nibble_position(std::uint32_t index) { return index < 5 ? index : index - 5; }

/// Nibble `index` of `word` times 16^nibble_position(index), as an exact f32:
/// bitcast(2^23 | (source & 0xF << 4p)) - 2^23 with source = word or `high` = word >> 20
/// (one lop3 and one subtraction; q * 16^p < 2^20 is an integer f32 holds exactly). The
/// caller multiplies x by 16^-p instead, so x * q is the same exact product with no shift
/// per nibble.
Expr scaled_nibble_value(const Expr& word, const Expr& high, std::uint32_t index) {
  const std::uint32_t position = nibble_position(index);
  const Expr& source = index < 5 ? word : high;
  return bitcast(ScalarType::F32, (source & u32(0xFu << (4 * position))) | u32(kMagicBits)) - f32(kMagic);
}

/// 16^-p as an f32 (a power of two: multiplying by it is exact for normal x).
float nibble_position_scale(std::uint32_t index) { return std::ldexp(1.0f, -4 * static_cast<int>(nibble_position(index))); }

}  // namespace

ParamSpec schedule_param() {
  return ParamSpec{"schedule", ParamType::Choice,
                   "which program: seed (the seed's loop), fast (coalesced 128-bit loads, split reduction), auto "
                   "(fast where the shape allows)",
                   "\"auto\"", "", {"auto", "seed", "fast"}};
}

KernelSchedule schedule_of(const OpArgs& args) {
  if (!args.has("schedule")) return KernelSchedule::Auto;
  const std::string& value = args.choice("schedule");
  return value == "seed" ? KernelSchedule::Seed : value == "fast" ? KernelSchedule::Fast : KernelSchedule::Auto;
}

OpArgs scheduled(OpArgs args, const char* schedule) {
  args.set("schedule", std::string(schedule));
  return args;
}

std::optional<std::string> nibble_gemv_unsupported(const NibbleGemv& gemv, const GemvSchedule& requested) {
  const GemvSchedule schedule = resolve_gemv_schedule(gemv, requested);
  if (kSubgroupSize % schedule.column_lanes != 0 || schedule.columns_per_lane != 4 ||
      schedule.subgroups_per_workgroup == 0 || schedule.rows_per_batch == 0) {
    return fmt::format("schedule column_lanes={} columns_per_lane={} is not a 16-byte-per-lane split of a subgroup",
                       schedule.column_lanes, schedule.columns_per_lane);
  }
  if (std::uint64_t{schedule.subgroups_per_workgroup} * schedule.k_subgroups * kSubgroupSize >
      kMaxWorkgroupInvocations) {
    return fmt::format("schedule subgroups_per_workgroup={} k_subgroups={} exceeds {} invocations per workgroup",
                       schedule.subgroups_per_workgroup, schedule.k_subgroups, kMaxWorkgroupInvocations);
  }
  if (gemv.in_dim == 0 || gemv.in_dim % kNibblesPerWord != 0) {
    return fmt::format("k={} is not a positive multiple of 8", gemv.in_dim);
  }
  if (gemv.out_dim == 0 || gemv.out_dim % schedule.columns_per_subgroup() != 0) {
    return fmt::format("n={} is not a multiple of {} (the columns one subgroup loads)", gemv.out_dim,
                       schedule.columns_per_subgroup());
  }
  if (gemv.group_size % kNibblesPerWord != 0) {
    return fmt::format("group_size={} is not a multiple of 8 (a packed word would straddle two groups)",
                       gemv.group_size);
  }
  if (gemv.rows == 0 || (gemv.rows > 1 && std::uint64_t{gemv.rows} * gemv.out_dim != gemv.out_count)) {
    return fmt::format("rows={} with out_count={} is not a batch of rows x n={} outputs", gemv.rows,
                       gemv.out_count, gemv.out_dim);
  }
  return std::nullopt;
}

GemvSchedule resolve_gemv_schedule(const NibbleGemv& gemv, GemvSchedule schedule) {
  if (schedule.column_lanes == 0) {
    // Two lanes (whole sectors) once K is deep enough for two k-subgroups of 16 k-lanes;
    // a shallower K keeps 32 k-lanes per subgroup, so each walks fewer rows.
    const bool deep = gemv.in_dim / kNibblesPerWord >= 2 * (kSubgroupSize / 2) * kMinSliceRows;
    schedule.column_lanes = gemv.out_dim % (2 * schedule.columns_per_lane) == 0 && deep ? 2 : 1;
  }
  if (schedule.k_subgroups == 0) {
    const std::uint64_t rows = gemv.in_dim / kNibblesPerWord;
    // A permuted input too large to stage gathers each row's x from global memory: at 512
    // invocations per workgroup ptxas holds that program to 40 registers on sm_86+ and
    // spills, so it stops at 256.
    const bool gathered = gemv.permuted_input && std::uint64_t{gemv.in_dim} * 4 > kMaxStagedXBytes;
    const std::uint32_t most = gathered ? kMaxGemvKSubgroups / 2 : kMaxGemvKSubgroups;
    schedule.k_subgroups = choose_k_subgroups(rows, schedule.k_lanes(), kMinSliceRows, most);
    // Without sidecars ptxas gives the program 32-40 registers: 48 of its warps per SM
    // (4096x11008: one wave of 4 k-subgroups instead of 1.3 of 8). The grouped program's
    // 36-52 registers allow 32-48, and its fewer k-subgroups would wait on loads twice
    // (two rounds of units per k-lane), so it keeps its split.
    if (gemv.group_size == 0 && !gemv.permuted_input) {
      constexpr std::uint32_t kUngroupedWarpsPerSm = 48;
      schedule.k_subgroups = fit_k_subgroups_to_one_wave(
          schedule.k_subgroups, gemv.out_dim / schedule.columns_per_subgroup(), kUngroupedWarpsPerSm);
    }
  }
  return schedule;
}

Program nibble_gemv(const NibbleGemv& gemv, const GemvSchedule& requested) {
  const GemvSchedule schedule = resolve_gemv_schedule(gemv, requested);
  if (auto reason = nibble_gemv_unsupported(gemv, schedule)) {
    throw OpError(fmt::format("Fix: {} has no fast schedule: {}; use \"schedule\": \"seed\".", gemv.program_name,
                              *reason));
  }
  const std::uint32_t rows = gemv.in_dim / kNibblesPerWord;  // packed rows of w
  const std::uint32_t group_rows = rows_per_group(gemv);
  const std::uint32_t groups = ceil_div(rows, group_rows);
  const bool partial_last_group = rows % group_rows != 0;
  const std::uint32_t k_subgroups = schedule.k_subgroups;
  // k-lanes of the whole workgroup: k_subgroups subgroups of 32 / column_lanes each.
  const std::uint32_t k_lanes = schedule.k_lanes() * k_subgroups;
  // Work unit of a k-lane: a (group, slice) pair.
  const std::uint32_t slices = slices_per_group(groups, group_rows, k_lanes, kMinSliceRows);
  const std::uint32_t slice_rows = group_rows / slices;
  const std::uint32_t units = groups * slices;
  // Without sidecars (linear_4bit) the k-lanes interleave rows instead: k-lane j takes
  // rows j, j + K, j + 2K, ... (K the workgroup's k-lanes) in one round of lane_rows rows,
  // so a warp's k-lanes read consecutive rows and their x values are one contiguous span
  // (a quarter of the L1 wavefronts of a unit per k-lane; 2-5% faster on an H200,
  // bench/results/gpu-nvidia-h200.md, "interleaved rows"). Its batches are the largest up
  // to rows_per_batch whose whole batches add at most an eighth of rows past the end.
  // Grouped rows keep their units: a group's sidecars apply to its rows' sums.
  const bool interleaved = gemv.group_size == 0 && !gemv.permuted_input;
  const std::uint32_t interleaved_rows = ceil_div(rows, k_lanes);
  std::uint32_t batch = batch_rows(slice_rows, schedule.rows_per_batch);
  if (interleaved) {
    batch = 1;
    for (std::uint32_t b = std::min(schedule.rows_per_batch, interleaved_rows); b > 1; --b) {
      if (8 * (ceil_div(interleaved_rows, b) * b - interleaved_rows) <= interleaved_rows) {
        batch = b;
        break;
      }
    }
  }
  const std::uint32_t lane_rows = interleaved ? ceil_div(interleaved_rows, batch) * batch : slice_rows;
  const std::uint32_t group_rounds = interleaved ? 1 : ceil_div(units, k_lanes);
  const bool partial_rows = interleaved ? rows != k_lanes * lane_rows : partial_last_group;
  const std::uint32_t columns = schedule.columns_per_lane;
  const std::uint32_t subgroup_columns = schedule.columns_per_subgroup();
  const std::uint32_t subgroups = gemv.out_dim / subgroup_columns;
  const std::uint32_t column_subgroups = schedule.subgroups_per_workgroup;  // per workgroup
  const std::uint32_t workgroup_size = column_subgroups * k_subgroups * kSubgroupSize;
  const bool grouped = gemv.group_size != 0;
  const char* op = gemv.program_name.c_str();
  std::uint32_t packed_words = checked_count(op, "k/8 * n", rows, gemv.out_dim);
  std::uint32_t sidecar_count = grouped ? checked_count(op, "group_count*n", groups, gemv.out_dim) : 0;

  const ScalarType activation = gemv.activation;
  const bool f32_activations = activation == ScalarType::F32;
  ProgramBuilder program(gemv.program_name);
  const bool batched = gemv.rows > 1;
  BufferRef x = program.input("x", activation, checked_count(op, "m*k (x elements)", gemv.rows, gemv.in_dim));
  BufferRef perm;
  if (gemv.permuted_input) perm = program.input("perm", ScalarType::U32, gemv.in_dim);
  BufferRef w = program.input("w", ScalarType::U32, packed_words);
  // A permuted input: x staged in shared memory as f32 (exactly widened), gathered from there.
  const bool staged = gemv.permuted_input && std::uint64_t{gemv.in_dim} * 4 <= kMaxStagedXBytes;
  BufferRef x_staged;
  if (staged) x_staged = program.shared("x_staged", ScalarType::F32, gemv.in_dim);
  // The k-subgroups' partial sums, one slot per column of the workgroup (SplitK.h), in
  // x_staged once every subgroup is done with it, where it has room.
  const std::uint32_t slots = column_subgroups * subgroup_columns;
  const bool meet_in_x = staged && std::uint64_t{k_subgroups} * slots <= gemv.in_dim;
  const KSubgroupMeeting meeting =
      declare_k_subgroup_meeting(program, k_subgroups, slots, ScalarType::F32, meet_in_x ? x_staged : BufferRef{});
  BufferRef scale, zero_point;
  if (grouped) {
    scale = program.input("scale", ScalarType::F32, sidecar_count);
    zero_point = program.input("zero_point", ScalarType::U32, sidecar_count);
  }
  BufferRef b = program.input("b", activation, gemv.out_dim);
  BufferRef out = program.output("out", activation, std::max(gemv.out_count, gemv.out_dim));
  if (!batched && gemv.out_count > gemv.out_dim) {
    program.set_output_byte_range("out", ByteRange{0, std::uint64_t{gemv.out_dim} * byte_size(activation)});
  }
  program.launch({workgroup_size, 1, 1}, {ceil_div(subgroups, column_subgroups), gemv.rows, 1});
  even_out_waves(program, kGemvLeastRegisters, kGemvLeastRegisters);
  program.body([&](Body& body) {
    body.region(gemv.region_id, [&](Body& region) {
      const WorkgroupSubgroup at = locate_subgroup(region, column_subgroups, k_subgroups);
      const Expr &local = at.local, &lane = at.lane, &subgroup = at.subgroup;
      const Expr &column_subgroup = at.column_subgroup, &k_subgroup = at.k_subgroup;
      // A batch: this workgroup row's row of x and of out (their first elements).
      Expr x_row = batched ? region.let("x_row", workgroup_id(1) * gemv.in_dim) : u32(0);
      Expr out_row = batched ? region.let("out_row", workgroup_id(1) * gemv.out_dim) : u32(0);
      auto in_row = [&](const Expr& index, const Expr& row) { return batched ? row + index : index; };
      if (staged) {
        // Every invocation of the workgroup copies x to shared memory in coalesced 4-element
        // chunks (f16/bf16 widened to f32 on the way), up to kStageChunks loads in flight
        // before their stores, then all meet at the barrier: the gathers below hit
        // shared-memory banks instead of one L1 sector per lane.
        const std::uint32_t chunks = gemv.in_dim / 4;
        const std::uint32_t rounds = ceil_div(chunks, workgroup_size);
        const std::uint32_t batch_rounds = std::min(rounds, kStageChunks);
        region.loop("stage", u32(0), u32(ceil_div(rounds, batch_rounds)), [&](Body& stage, Expr stage_batch) {
          std::vector<Expr> chunk, values;
          for (std::uint32_t b = 0; b < batch_rounds; ++b) {
            chunk.push_back(stage.let(fmt::format("stage_chunk{}", b),
                                      (stage_batch * batch_rounds + b) * workgroup_size + local));
            // Past the last chunk (a partial last round) the load reads the last chunk again.
            Expr first = chunks % workgroup_size == 0 && rounds % batch_rounds == 0
                             ? chunk[b] * 4u
                             : stage.let(fmt::format("stage_first{}", b), min(chunk[b], u32(chunks - 1)) * 4u);
            if (f32_activations) {
              values.push_back(stage.let(fmt::format("stage_x{}", b), x.load(in_row(first, x_row), 4)));
            } else {
              HalfWords halves = load_half_words(stage, x, in_row(first, x_row), 4, fmt::format("stage_words{}", b));
              values.push_back(make_vector({halves.element(0), halves.element(1), halves.element(2), halves.element(3)}));
            }
          }
          for (std::uint32_t b = 0; b < batch_rounds; ++b) {
            auto store = [&](Body& body) { body.store(x_staged, chunk[b] * 4u, values[b]); };
            if (chunks % workgroup_size == 0 && rounds % batch_rounds == 0) {
              store(stage);
            } else {
              stage.if_then(chunk[b] < chunks, store);
            }
          }
        });
        region.barrier();
      }
      Expr lane_k = schedule.column_lanes == 1 ? lane : region.let("lane_k", lane / schedule.column_lanes);
      Expr k_lane = k_subgroups == 1 ? lane_k : region.let("k_lane", k_subgroup * schedule.k_lanes() + lane_k);
      Expr column = region.let("column", subgroup * subgroup_columns + (lane % schedule.column_lanes) * columns);
      std::vector<Expr> acc;
      for (std::uint32_t c = 0; c < columns; ++c) acc.push_back(region.let(fmt::format("acc{}", c), f32(0.0f)));
      region.if_then(subgroup < subgroups, [&](Body& per_subgroup) {
        per_subgroup.loop("round", u32(0), u32(group_rounds), [&](Body& round_body, Expr round) {
          Expr unit, group, slice_first_row;
          if (!interleaved) {
            unit = round_body.let(slices == 1 ? "group" : "unit", round * k_lanes + k_lane);
            group = slices == 1 ? unit : round_body.let("group", unit / slices);
            // The slices of a group interleave its rows (slice s takes rows s, s + S, ... of
            // the group, S = slices), so the k-lanes sharing a group read consecutive rows
            // and their x values share 128-byte lines.
            slice_first_row = slices == 1 ? group * group_rows
                                          : round_body.let("slice_first_row", group * group_rows + unit % slices);
          }
          auto round_work = [&](Body& in_group) {
            // Per group: sum x*q per column and sum x, then the sidecars once.
            std::vector<Expr> dot;
            for (std::uint32_t c = 0; c < columns; ++c) {
              dot.push_back(grouped ? in_group.let(fmt::format("dot{}", c), f32(0.0f)) : acc[c]);
            }
            Expr x_sum = grouped ? in_group.let("x_sum", f32(0.0f)) : Expr();
            // The group's sidecars load first, in flight with its first batch of rows.
            Expr scales, zero_points;
            if (grouped) {
              Expr sidecar = in_group.let("sidecar", group * gemv.out_dim + column);
              scales = in_group.let("scales", scale.load(sidecar, columns));
              zero_points = in_group.let("zero_points", zero_point.load(sidecar, columns));
            }
            in_group.loop("batch", u32(0), u32(lane_rows / batch), [&](Body& batch_body, Expr batch_index) {
              // Rows first_row + r * S (a unit's, S = slices per group), or first_row + r * K (interleaved).
              const std::uint32_t row_stride = interleaved ? k_lanes : slices;
              Expr first_row = interleaved ? batch_body.let("first_row", batch_index * (batch * k_lanes) + k_lane)
                                           : batch_body.let("first_row", slice_first_row + batch_index * (batch * slices));
              // Every load of the batch first (bytes in flight), then the arithmetic.
              std::vector<Expr> words, x_low, x_high, valid;
              std::vector<HalfWords> x_halves;  // f16/bf16: a row's 8 x values in one u32x4
              std::vector<Expr> perm_low, perm_high;  // permuted input: a row's 8 perm entries
              for (std::uint32_t r = 0; r < batch; ++r) {
                Expr row = r == 0 ? first_row : first_row + r * row_stride;
                Expr in_range;
                if (partial_rows) {
                  in_range = batch_body.let(fmt::format("row_valid{}", r), row < rows);
                  row = batch_body.let(fmt::format("row{}", r), min(row, u32(rows - 1)));
                }
                valid.push_back(in_range);
                words.push_back(batch_body.let(fmt::format("words{}", r), w.load(row * gemv.out_dim + column, columns)));
                if (gemv.permuted_input) {
                  perm_low.push_back(batch_body.let(fmt::format("perm_low{}", r), perm.load(row * kNibblesPerWord, 4)));
                  perm_high.push_back(
                      batch_body.let(fmt::format("perm_high{}", r), perm.load(row * kNibblesPerWord + 4u, 4)));
                } else if (f32_activations) {
                  Expr first = in_row(row * kNibblesPerWord, x_row);
                  x_low.push_back(batch_body.let(fmt::format("x_low{}", r), x.load(first, 4)));
                  x_high.push_back(batch_body.let(fmt::format("x_high{}", r), x.load(first + 4u, 4)));
                } else {
                  x_halves.push_back(load_half_words(batch_body, x, in_row(row * kNibblesPerWord, x_row),
                                                     kNibblesPerWord, fmt::format("x_words{}", r)));
                }
              }
              // A permuted input: the batch's x gathers, after every weight and perm load
              // is issued, each value loaded (and widened) once per lane and row.
              std::vector<std::vector<Expr>> gathered(gemv.permuted_input ? batch : 0);
              for (std::uint32_t r = 0; r < gathered.size(); ++r) {
                for (std::uint32_t e = 0; e < kNibblesPerWord; ++e) {
                  Expr index = extract_lane(e < 4 ? perm_low[r] : perm_high[r], e % 4);
                  gathered[r].push_back(batch_body.let(fmt::format("x_gathered{}_{}", r, e),
                                                       staged ? x_staged[index] : widen(x[in_row(index, x_row)])));
                }
              }
              for (std::uint32_t r = 0; r < batch; ++r) {
                // Each word's nibbles 5..7 decode from the word shifted once (scaled_nibble_value).
                std::vector<Expr> word, high;
                for (std::uint32_t c = 0; c < columns; ++c) {
                  word.push_back(batch_body.let(fmt::format("word{}_{}", r, c), extract_lane(words[r], c)));
                  high.push_back(batch_body.let(fmt::format("high{}_{}", r, c), word[c] >> u32(20)));
                }
                for (std::uint32_t e = 0; e < kNibblesPerWord; ++e) {
                  Expr xe = gemv.permuted_input ? gathered[r][e]
                            : f32_activations   ? extract_lane(e < 4 ? x_low[r] : x_high[r], e % 4)
                                                : x_halves[r].element(e);
                  if (valid[r].defined()) xe = select(valid[r], xe, f32(0.0f));
                  Expr x_value = batch_body.let(fmt::format("x{}_{}", r, e), xe);
                  if (grouped) batch_body.assign(x_sum, x_sum + x_value);
                  // x * 16^-p (exact), times the nibble decoded in place as q * 16^p.
                  Expr x_scaled = nibble_position(e) == 0
                                      ? x_value
                                      : batch_body.let(fmt::format("x_scaled{}_{}", r, e),
                                                       x_value * f32(nibble_position_scale(e)));
                  for (std::uint32_t c = 0; c < columns; ++c) {
                    batch_body.assign(dot[c], fma(x_scaled, scaled_nibble_value(word[c], high[c], e), dot[c]));
                  }
                }
              }
            });
            if (grouped) {
              for (std::uint32_t c = 0; c < columns; ++c) {
                Expr z = cast(ScalarType::F32, extract_lane(zero_points, c));
                in_group.assign(acc[c], fma(extract_lane(scales, c), dot[c] - z * x_sum, acc[c]));
              }
            }
          };
          if (interleaved) {
            round_work(round_body);  // rows past the last are clamped and their x is 0
          } else {
            round_body.if_then(unit < units, round_work);
          }
        });
        // The subgroup's k-lanes' partial sums: a butterfly over the lane bits above the column lanes.
        for (std::uint32_t c = 0; c < columns; ++c) {
          for (std::uint32_t mask = schedule.column_lanes; mask < kSubgroupSize; mask *= 2) {
            per_subgroup.assign(acc[c], acc[c] + subgroup_shuffle(acc[c], lane ^ u32(mask)));
          }
        }
      });
      // The workgroup's k-subgroups meet in shared memory; k-subgroup 0 finishes.
      Expr owner = logical_and(subgroup < subgroups, lane < schedule.column_lanes);
      emit_k_subgroup_meeting(region, meeting, k_subgroup, owner,
                              column_subgroup * subgroup_columns + lane * columns, acc);
      region.if_then(k_subgroups == 1 ? owner : logical_and(owner, eq(k_subgroup, u32(0))), [&](Body& leader) {
        if (!f32_activations) {
          HalfWords bias = load_half_words(leader, b, column, columns, "bias");
          std::vector<Expr> sums;
          for (std::uint32_t c = 0; c < columns; ++c) sums.push_back(bias.element(c) + acc[c]);
          store_half_pairs(leader, out, in_row(column, out_row), sums);
          return;
        }
        Expr bias = leader.let("bias", b.load(column, columns));
        std::vector<Expr> sums;
        for (std::uint32_t c = 0; c < columns; ++c) sums.push_back(extract_lane(bias, c) + acc[c]);
        leader.store(out, in_row(column, out_row), make_vector(sums));
      });
    });
  });
  return program.build();
}

}  // namespace quantc::ir::ops
