#include "ir/ops/Linear4Bit.h"

#include <fmt/format.h>

#include "ir/Builder.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/SplitK.h"
#include "ir/ops/TensorGemm.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kLinear4BitWorkgroupInvocations = 256;
constexpr std::uint32_t kLanesPerOutput = 32;  // one subgroup per output (grouped op)
constexpr std::uint32_t kOutputsPerWorkgroup = kLinear4BitWorkgroupInvocations / kLanesPerOutput;
constexpr char kLinear4BitId[] = "vyre-libs::nn::linear_4bit";

void check_dims(const char* op, std::uint32_t in_dim, std::uint32_t out_dim) {
  require_nonzero(op, "k", in_dim, "empty reduction");
  require_nonzero(op, "n", out_dim, "empty output");
}

void check_divisible_by_8(const char* op, std::uint32_t in_dim) {
  if (in_dim % 8 != 0) {
    throw OpError(fmt::format("Fix: {} k={} is not divisible by 8; pad weights to a multiple of 8.", op, in_dim));
  }
}

}  // namespace

Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, ScalarType activation) {
  const char* op = "linear_4bit";
  check_dims(op, in_dim, out_dim);
  check_divisible_by_8(op, in_dim);
  std::uint32_t packed_words = checked_count(op, "k/8 * n", in_dim / 8, out_dim);

  ProgramBuilder program("linear_4bit");
  BufferRef x = program.input("x", activation, in_dim);
  BufferRef w = program.input("w", ScalarType::U32, packed_words);
  BufferRef b = program.input("b", activation, out_dim);
  BufferRef out = program.output("out", activation, out_dim);
  program.launch({kLinear4BitWorkgroupInvocations, 1, 1}, {ceil_div(out_dim, kLinear4BitWorkgroupInvocations), 1, 1});
  program.body([&](Body& body) {
    body.region(kLinear4BitId, [&](Body& region) {
      Expr i = region.let("i", invocation_id(0));
      region.if_then(i < out_dim, [&](Body& then) {
        Expr acc = then.let("acc", widen(b[i]));
        then.loop("k", u32(0), u32(in_dim), [&](Body& loop, Expr k) {
          Expr word = w[(k / 8u) * out_dim + i];
          loop.assign(acc, acc + widen(x[k]) * cast(ScalarType::F32, nibble(word, k % 8u)));
        });
        then.store(out, i, narrow(activation, acc));
      });
    });
  });
  return program.build();
}

namespace {

/// The most rows of x: one workgroup row of the seed's grid each.
constexpr std::uint32_t kMaxRows = 65535;

/// The affine op's parameter checks (OpError as documented) and its `out` element count,
/// shared by every schedule so that they reject the same shapes and declare the same buffers.
std::uint32_t affine_grouped_out_count(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                       std::uint32_t m) {
  const char* op = "linear_4bit_affine_grouped";
  check_dims(op, in_dim, out_dim);
  require_nonzero(op, "group_size", group_size, "group size must be > 0");
  require_nonzero(op, "m", m, "no activation rows; pass m >= 1");
  if (m > kMaxRows) {
    throw OpError(fmt::format("Fix: {} m={} is above {} (one workgroup row per row of x); split the batch.", op, m,
                              kMaxRows));
  }
  check_divisible_by_8(op, in_dim);
  checked_count(op, "k/8 * n", in_dim / 8, out_dim);
  checked_count(op, "group_count*n (sidecar elements)", ceil_div(in_dim, group_size), out_dim);
  if (m > 1) {
    checked_count(op, "m*k (x elements)", m, in_dim);
    return checked_count(op, "m*n (out elements)", m, out_dim);
  }
  return checked_count(op, "ceil(n/8)*256 (padded outputs)", ceil_div(out_dim, kOutputsPerWorkgroup),
                       kLinear4BitWorkgroupInvocations);
}

}  // namespace

Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   ScalarType activation, bool act_order, std::uint32_t m) {
  const std::uint32_t out_count = affine_grouped_out_count(in_dim, out_dim, group_size, m);
  const bool batch = m > 1;
  const std::uint32_t packed_words = in_dim / 8 * out_dim;
  const std::uint32_t group_count = ceil_div(in_dim, group_size);
  const std::uint32_t sidecar_count = group_count * out_dim;
  const std::uint32_t workgroups = ceil_div(out_dim, kOutputsPerWorkgroup);
  std::uint32_t chunks = ceil_div(in_dim, kLanesPerOutput);

  ProgramBuilder program("linear_4bit_affine_grouped");
  BufferRef x = program.input("x", activation, m * in_dim);
  BufferRef perm;
  if (act_order) perm = program.input("perm", ScalarType::U32, in_dim);
  BufferRef w = program.input("w", ScalarType::U32, packed_words);
  BufferRef scale = program.input("scale", ScalarType::F32, sidecar_count);
  BufferRef zero_point = program.input("zero_point", ScalarType::U32, sidecar_count);
  BufferRef b = program.input("b", activation, out_dim);
  BufferRef out = program.output("out", activation, out_count);
  if (!batch) program.set_output_byte_range("out", ByteRange{0, std::uint64_t{out_dim} * byte_size(activation)});
  program.launch({kLinear4BitWorkgroupInvocations, 1, 1}, {workgroups, m, 1});
  program.body([&](Body& body) {
    body.region(kLinear4BitAffineGroupedId, [&](Body& region) {
      // A batch runs the seed's program once per row of x: workgroup row r reads x[r, :]
      // and writes out[r, :].
      Expr row = batch ? region.let("row", workgroup_id(1)) : Expr();
      auto x_at = [&](const Expr& feature) { return batch ? x[row * in_dim + feature] : x[feature]; };
      Expr local = region.let("local", local_id(0));
      Expr warp = region.let("warp", local / kLanesPerOutput);
      Expr lane = region.let("lane", local % kLanesPerOutput);
      Expr out_idx = region.let("out_idx", workgroup_id(0) * kOutputsPerWorkgroup + warp);
      region.if_then(out_idx < out_dim, [&](Body& per_output) {
        Expr local_acc = per_output.let("local_acc", f32(0.0f));
        per_output.loop("chunk", u32(0), u32(chunks), [&](Body& loop, Expr chunk) {
          Expr k = loop.let("k", chunk * kLanesPerOutput + lane);
          Expr lane_in_word = loop.let("lane_in_word", lane & 7u);
          Expr word_leader_lane = loop.let("word_leader_lane", lane & 0xFFFFFFF8u);
          Expr word_leader_k = loop.let("word_leader_k", chunk * kLanesPerOutput + word_leader_lane);
          Expr packed_word_lane = loop.let("packed_word_lane", u32(0));
          loop.if_then(logical_and(eq(lane_in_word, u32(0)), word_leader_k < in_dim), [&](Body& leader) {
            leader.assign(packed_word_lane, w[(word_leader_k / 8u) * out_dim + out_idx]);
          });
          Expr packed_word = loop.let("packed_word", subgroup_shuffle(packed_word_lane, word_leader_lane));
          // Unlike the seed, the sidecar loads sit inside the k < in_dim guard: for the last
          // chunk's lanes past in_dim, k / group_size can reach group_count and the seed's
          // load would read past the sidecar buffers.
          loop.if_then(k < in_dim, [&](Body& in_range) {
            Expr sidecar_idx = in_range.let("sidecar_idx", (k / group_size) * out_dim + out_idx);
            Expr group_scale = in_range.let("group_scale", scale[sidecar_idx]);
            Expr group_zero_point = in_range.let("group_zero_point", zero_point[sidecar_idx]);
            Expr weight = (cast(ScalarType::F32, nibble(packed_word, lane_in_word)) -
                           cast(ScalarType::F32, group_zero_point)) *
                          group_scale;
            Expr activation_value = x_at(act_order ? perm[k] : k);
            in_range.assign(local_acc, local_acc + widen(activation_value) * weight);
          });
        });
        Expr warp_sum = per_output.let("warp_sum", subgroup_add(local_acc));
        per_output.if_then(eq(lane, u32(0)), [&](Body& leader) {
          leader.store(out, batch ? row * out_dim + out_idx : out_idx, narrow(activation, widen(b[out_idx]) + warp_sum));
        });
      });
    });
  });
  return program.build();
}

Program linear_4bit(std::uint32_t in_dim, std::uint32_t out_dim, KernelSchedule schedule, ScalarType activation) {
  NibbleGemv gemv{"linear_4bit", kLinear4BitId, in_dim, out_dim, 0, out_dim, activation};
  if (schedule == KernelSchedule::Seed || (schedule == KernelSchedule::Auto && nibble_gemv_unsupported(gemv))) {
    return linear_4bit(in_dim, out_dim, activation);
  }
  check_dims("linear_4bit", in_dim, out_dim);  // the seed's errors first, as for the affine op
  check_divisible_by_8("linear_4bit", in_dim);
  return nibble_gemv(gemv);
}

Program linear_4bit_affine_grouped(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size,
                                   KernelSchedule schedule, ScalarType activation, bool act_order, std::uint32_t m) {
  if (schedule == KernelSchedule::Seed) {
    return linear_4bit_affine_grouped(in_dim, out_dim, group_size, activation, act_order, m);
  }
  const std::uint32_t out_count = affine_grouped_out_count(in_dim, out_dim, group_size, m);
  NibbleGemv gemv{"linear_4bit_affine_grouped", kLinear4BitAffineGroupedId, in_dim, out_dim, group_size,
                  out_count, activation, act_order, m};
  if (m > 1 && schedule == KernelSchedule::Fast) {
    // Batches: "fast" is the tensor-core GEMM (ir/ops/TensorGemm.h, sm_80+, f16/bf16) where
    // it runs the shape, else the fast GEMV once per row. "auto" never takes the tensor
    // cores here, since op constructors do not know the target (build_program,
    // ir/ops/Spec.h, asks for "fast" for a program built for sm_80+).
    TensorGemmShape shape{TensorWeights::Gptq, m, in_dim, out_dim, group_size, BlockAffineMode::ZeroPoint, activation};
    shape.act_order = act_order;
    const std::optional<std::string> no_tensor = tensor_gemm_unsupported(shape);
    if (!no_tensor) return tensor_gemm(shape);
    if (const std::optional<std::string> no_gemv = nibble_gemv_unsupported(gemv)) {
      throw OpError(fmt::format("Fix: linear_4bit_affine_grouped has no fast schedule for m={}: not the tensor cores "
                                "({}), nor the GEMV per row ({}); use \"schedule\": \"seed\" (or \"auto\").",
                                m, *no_tensor, *no_gemv));
    }
  }
  if (schedule == KernelSchedule::Auto && nibble_gemv_unsupported(gemv)) {
    return linear_4bit_affine_grouped(in_dim, out_dim, group_size, activation, act_order, m);
  }
  return nibble_gemv(gemv);
}

namespace {

/// The affine op's test shape: k, n, group_size, the schedule, act_order and m.
OpArgs affine_shape(std::uint32_t in_dim, std::uint32_t out_dim, std::uint32_t group_size, const char* schedule,
                    bool act_order, std::uint32_t m = 1) {
  OpArgs args = scheduled(OpArgs::dims({{"k", in_dim}, {"n", out_dim}, {"group_size", group_size}}),
                          schedule);
  args.set("act_order", act_order);
  if (m != 1) args.set("m", m);
  return args;
}

}  // namespace

std::vector<OpInfo> linear_4bit_ops() {
  const std::string seed = "vyre-libs-0.6.3 nn::linear_4bit";
  ParamSpec k{"k", ParamType::U32, "input features, the reduction length (the seed's in_dim)", "", "> 0, multiple of 8", {},
              {"in_dim"}};
  ParamSpec n{"n", ParamType::U32, "output features (the seed's out_dim)", "", "> 0", {}, {"out_dim"}};
  ParamSpec group_size{"group_size", ParamType::U32, "input features per scale/zero-point group", "", "> 0", {}};
  ParamSpec act_order{"act_order", ParamType::Bool,
                      "read x through perm: input feature k of w multiplies x[perm[k]] (GPTQ act-order, rows sorted "
                      "by group at convert time)",
                      "false", "", {}};
  ParamSpec m{"m", ParamType::U32,
              "activation rows: x [m, k], out [m, n]; m > 1 runs on the tensor cores with \"schedule\": \"fast\" "
              "(f16/bf16; else the fast GEMV once per row, as \"auto\" does without a target of sm_80+)",
              "1", "> 0, <= 65535", {}};
  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "linear_4bit",
      .summary = "out[i] = b[i] + sum_k x[k] * w4[k, i] (unsigned nibbles, no scale)",
      .layout = "w u32 word (k/8)*n + i, nibble k%8 at bits 4*(k%8)",
      .seed = seed,
      .params = {k, n, schedule_param(), activation_param()},
      .buffers = {activation_buffer("x", "input", "k"),
                  {"w", "weight", ScalarType::U32, "k/8 * n", {"k/8", "n"}},
                  activation_buffer("b", "bias", "n"),
                  activation_buffer("out", "output", "n")},
      .build =
          [](const OpArgs& args) {
            return linear_4bit(args.u32("k"), args.u32("n"), schedule_of(args), activation_of(args));
          },
      .test_shapes = {scheduled(OpArgs::dims({{"k", 8}, {"n", 4}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 64}, {"n", 300}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 256}, {"n", 33}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 64}, {"n", 16}}), "fast"),
                      scheduled(OpArgs::dims({{"k", 136}, {"n", 24}}), "fast"),
                      // K split across 4 and 2 subgroups of a workgroup (resolve_gemv_schedule)
                      scheduled(OpArgs::dims({{"k", 1024}, {"n", 16}}), "fast"),
                      // interleaved rows with a partial last batch (389 rows over the k-lanes)
                      scheduled(OpArgs::dims({{"k", 3112}, {"n", 8}}), "fast"),
                      // batches of 6 rows: 11 rows per k-lane rounded to 12, the last clamped
                      scheduled(OpArgs::dims({{"k", 11264}, {"n", 8}}), "fast"),
                      activated(scheduled(OpArgs::dims({{"k", 512}, {"n", 8}}), "fast"), "bf16"),
                      activated(scheduled(OpArgs::dims({{"k", 16}, {"n", 5}}), "seed"), "f16"),
                      activated(scheduled(OpArgs::dims({{"k", 16}, {"n", 5}}), "seed"), "bf16"),
                      activated(scheduled(OpArgs::dims({{"k", 136}, {"n", 16}}), "fast"), "f16"),
                      activated(scheduled(OpArgs::dims({{"k", 136}, {"n", 16}}), "fast"), "bf16")},
  });
  ops.push_back(OpInfo{
      .name = "linear_4bit_affine_grouped",
      .summary = "out[i] = b[i] + sum_k x[k] * (w4[k, i] - zero_point[g, i]) * scale[g, i], g = k / group_size "
                 "(act_order: x[perm[k]])",
      .layout = "w as linear_4bit; sidecars [ceil(k/group_size), n] (output fastest); one subgroup per output",
      .seed = seed,
      .params = {k, n, group_size, act_order, schedule_param(), activation_param(), m},
      .buffers = with_split_k_buffers(
          {activation_buffer("x", "input", "m * k", {"m", "k"}),
           {"perm", "index", ScalarType::U32, "k (act_order only)", {"k"}},
           {"w", "weight", ScalarType::U32, "k/8 * n", {"k/8", "n"}},
           {"scale", "sidecar", ScalarType::F32, "ceil(k/group_size) * n", {"ceil(k/group_size)", "n"}},
           {"zero_point", "sidecar", ScalarType::U32, "ceil(k/group_size) * n", {"ceil(k/group_size)", "n"}},
           activation_buffer("b", "bias", "n"),
           activation_buffer("out", "output",
                             "m * n for m > 1; ceil(n/8) * 256 at m = 1 (elements [0, n) are the result)")},
          ScalarType::F32, "splits * 16 * n * M/16 * ceil(m/M) (m > 1)",
          "n/32 * ceil(m/M) (m > 1: the tensor-core GEMM, M = 16 for m <= 16, else 32)"),
      .build =
          [](const OpArgs& args) {
            return linear_4bit_affine_grouped(args.u32("k"), args.u32("n"), args.u32("group_size"),
                                              schedule_of(args), activation_of(args),
                                              args.has("act_order") && args.boolean("act_order"),
                                              args.has("m") ? args.u32("m") : 1);
          },
      .test_shapes = {scheduled(OpArgs::dims({{"k", 8}, {"n", 2}, {"group_size", 4}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 32}, {"n", 8}, {"group_size", 32}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 256}, {"n", 20}, {"group_size", 64}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 72}, {"n", 9}, {"group_size", 24}}), "seed"),
                      scheduled(OpArgs::dims({{"k", 256}, {"n", 16}, {"group_size", 64}}), "fast"),
                      scheduled(OpArgs::dims({{"k", 72}, {"n", 8}, {"group_size", 24}}), "fast"),
                      scheduled(OpArgs::dims({{"k", 200}, {"n", 8}, {"group_size", 128}}), "fast"),
                      // K split across 2 and 4 subgroups of a workgroup, the first with a partial last group
                      scheduled(OpArgs::dims({{"k", 1000}, {"n", 8}, {"group_size", 64}}), "fast"),
                      activated(scheduled(OpArgs::dims({{"k", 1024}, {"n", 8}, {"group_size", 128}}), "fast"),
                                "f16"),
                      activated(scheduled(OpArgs::dims({{"k", 40}, {"n", 9}, {"group_size", 16}}), "seed"),
                                "f16"),
                      activated(scheduled(OpArgs::dims({{"k", 40}, {"n", 9}, {"group_size", 16}}), "seed"),
                                "bf16"),
                      activated(scheduled(OpArgs::dims({{"k", 200}, {"n", 8}, {"group_size", 64}}), "fast"),
                                "f16"),
                      activated(scheduled(OpArgs::dims({{"k", 200}, {"n", 8}, {"group_size", 64}}), "fast"),
                                "bf16"),
                      // act_order: x read through perm. Seed: groups that do and do not align
                      // to the 32-lane chunks; fast: whole groups per k-lane, sliced groups
                      // with a partial last group (clamped rows), 16-bit gathers, and an x too
                      // large to stage in shared memory (gathered from global memory).
                      affine_shape(72, 9, 24, "seed", true), affine_shape(256, 20, 64, "seed", true),
                      affine_shape(256, 16, 32, "fast", true), affine_shape(200, 8, 128, "fast", true),
                      affine_shape(12800, 4, 128, "fast", true), affine_shape(1024, 8, 128, "fast", true),
                      activated(affine_shape(40, 9, 16, "seed", true), "f16"),
                      activated(affine_shape(200, 8, 64, "fast", true), "f16"),
                      activated(affine_shape(200, 8, 64, "fast", true), "bf16"),
                      // batches: the seed once per row; "fast" where the tensor cores refuse
                      // (f32, n % 32): the fast GEMV once per row, with k-subgroups, act-order
                      // from shared and from global memory (the tensor cores' programs, sm_80+
                      // and f16/bf16 only, are swept by tests/backends/TensorGemmTests.cpp)
                      activated(affine_shape(72, 9, 24, "seed", false, 3), "f16"),
                      affine_shape(40, 9, 16, "seed", true, 2),
                      affine_shape(200, 8, 64, "fast", false, 3),
                      activated(affine_shape(200, 8, 64, "fast", false, 2), "f16"),
                      activated(affine_shape(1024, 8, 128, "fast", false, 3), "bf16"),
                      affine_shape(256, 16, 32, "fast", true, 2),
                      activated(affine_shape(12800, 4, 128, "fast", true, 2), "f16")},
  });
  return ops;
}

}  // namespace quantc::ir::ops
