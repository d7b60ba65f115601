#include "ir/ops/Quantize.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Nibbles.h"

namespace quantc::ir::ops {

const std::array<float, 16> kNf4Table = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

std::array<float, 15> nf4_thresholds() {
  std::array<float, 15> thresholds{};
  for (std::size_t i = 0; i < thresholds.size(); ++i) {
    double midpoint = (double{kNf4Table[i]} + double{kNf4Table[i + 1]}) / 2.0;  // exact in f64
    float rounded = static_cast<float>(midpoint);
    if (double{rounded} > midpoint) rounded = std::nextafter(rounded, -std::numeric_limits<float>::infinity());
    thresholds[i] = rounded;
  }
  return thresholds;
}

std::vector<std::uint64_t> nf4_lookup_table() {
  std::vector<std::uint64_t> table;
  for (float value : kNf4Table) table.push_back(std::bit_cast<std::uint32_t>(value));
  return table;
}

namespace {

constexpr std::uint32_t kWorkgroupInvocations = 256;
constexpr std::uint32_t kSubgroupLanes = 32;
constexpr std::uint32_t kSubgroupsPerWorkgroup = kWorkgroupInvocations / kSubgroupLanes;
constexpr float kTwoPow23 = 8388608.0f;
constexpr float kRelativeEpsilon = 1.0f / 1048576.0f;  // 2^-20
constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr char kSeedId[] = "oxicuda-dnn::quantize";

enum class Scheme { Int4Symmetric, Int4Asymmetric, Nf4 };

const char* op_name(Scheme scheme) { return scheme == Scheme::Nf4 ? "quantize_nf4" : "quantize_int4"; }

void check_common(const char* op, std::uint32_t n, std::uint32_t group_size) {
  if (n == 0) throw OpError(fmt::format("Fix: {} n=0 is invalid: nothing to quantize; pass n > 0.", op));
  if (group_size == 0) {
    throw OpError(fmt::format("Fix: {} group_size=0 is invalid: group size must be > 0 (typically 32, 64 or 128).", op));
  }
}

void check_index_range(const char* op, std::uint32_t n, std::uint32_t group_size) {
  // The last pair of groups may extend up to 2*group_size elements past n; its element
  // indices must still fit in u32.
  if (std::uint64_t{n} + 2 * std::uint64_t{group_size} > std::numeric_limits<std::uint32_t>::max()) {
    throw OpError(fmt::format("Fix: {} n={} with group_size={} overflows u32 element indices; keep n + 2*group_size "
                              "below 2^32.",
                              op, n, group_size));
  }
}

Expr is_nan(const Expr& value) { return ne(value, value); }
Expr is_finite(const Expr& value) { return abs(value) < kInfinity; }

/// Round half to even of an f32 (see the header: bit-identical to cvt.rni.f32.f32).
Expr round_half_even(Body& body, const std::string& name, const Expr& value) {
  Expr magnitude = body.let(name + "_magnitude", abs(value));
  Expr rounded = body.let(name + "_rounded_magnitude", (magnitude + kTwoPow23) - kTwoPow23);
  // Zeros (either sign) and values of magnitude >= 2^23 are already integers and pass
  // through unchanged, so the sign of zero is kept as cvt.rni keeps it.
  Expr in_range = logical_and(magnitude < kTwoPow23, magnitude > 0.0);
  return body.let(name, select(in_range, select(value < 0.0, -rounded, rounded), value));
}

/// The per-group quantities every code of the group needs.
struct GroupParams {
  Expr scale;       // f32
  Expr zero_point;  // f32, asymmetric only
};

/// The group's lane-combined statistics: absmax (symmetric, NF4) or min/max of its
/// finite elements. Lanes stride over the group; the combine is a butterfly.
struct GroupStats {
  Expr absmax, minimum, maximum;
};

GroupStats reduce_group(Body& body, Scheme scheme, const BufferRef& x, std::uint32_t n, std::uint32_t group_size,
                        const Expr& group, const Expr& lane, const std::string& suffix) {
  Expr start = body.let("group_start" + suffix, group * group_size);
  const bool asymmetric = scheme == Scheme::Int4Asymmetric;
  Expr local_absmax, local_min, local_max;
  if (asymmetric) {
    local_min = body.let("lane_min" + suffix, f32(kInfinity));
    local_max = body.let("lane_max" + suffix, f32(-kInfinity));
  } else {
    local_absmax = body.let("lane_absmax" + suffix, f32(0.0f));
  }
  body.loop("stride" + suffix, u32(0), u32(ceil_div(group_size, kSubgroupLanes)), [&](Body& loop, Expr stride) {
    Expr offset = loop.let("offset" + suffix, stride * kSubgroupLanes + lane);
    Expr element = loop.let("element" + suffix, start + offset);
    loop.if_then(logical_and(offset < group_size, element < n), [&](Body& valid) {
      Expr value = valid.let("value" + suffix, x[element]);
      valid.if_then(is_finite(value), [&](Body& finite) {
        if (asymmetric) {
          finite.assign(local_min, min(local_min, value));
          finite.assign(local_max, max(local_max, value));
        } else {
          finite.assign(local_absmax, max(local_absmax, abs(value)));
        }
      });
    });
  });
  if (asymmetric) {
    return {Expr(), body.let("group_min" + suffix, subgroup_min(local_min)),
            body.let("group_max" + suffix, subgroup_max(local_max))};
  }
  return {body.let("group_absmax" + suffix, subgroup_max(local_absmax)), Expr(), Expr()};
}

GroupParams group_params(Body& body, Scheme scheme, const GroupStats& stats, const std::string& suffix) {
  switch (scheme) {
    case Scheme::Int4Symmetric:
      return {body.let("scale" + suffix, max(stats.absmax, f32(kQuantizeEpsilon)) / 7.0), Expr()};
    case Scheme::Nf4:
      return {body.let("scale" + suffix, stats.absmax), Expr()};
    case Scheme::Int4Asymmetric: {
      // No finite element: min stays +inf and max -inf; treat the group as all zeros.
      Expr empty = body.let("group_empty" + suffix, stats.maximum < stats.minimum);
      Expr low = body.let("group_low" + suffix, select(empty, f32(0.0f), stats.minimum));
      Expr high = body.let("group_high" + suffix, select(empty, f32(0.0f), stats.maximum));
      Expr epsilon = body.let("epsilon" + suffix,
                              max(f32(kQuantizeEpsilon), max(abs(low), abs(high)) * kRelativeEpsilon));
      Expr range = body.let("range" + suffix,
                            min(max(high - low, epsilon), f32(std::numeric_limits<float>::max())));
      Expr scale = body.let("scale" + suffix, range / 15.0);
      Expr rounded_zero = round_half_even(body, "rounded_zero_point" + suffix, -low / scale);
      // -0 (from a group whose minimum is +0) is stored as +0 so the zero point's bits
      // do not depend on the sign of zero the min reduction happened to keep.
      Expr zero = body.let("zero_point" + suffix, select(eq(rounded_zero, f32(0.0f)), f32(0.0f), rounded_zero));
      return {scale, zero};
    }
  }
  return {};
}

/// The 4-bit code (u32 in 0..15) of `value` under `params`.
Expr encode(Body& body, Scheme scheme, const Expr& value, const Expr& scale, const Expr& zero_point,
            const std::string& name) {
  switch (scheme) {
    case Scheme::Int4Symmetric: {
      Expr rounded = round_half_even(body, name + "_rounded", value / scale);
      Expr code = cast(ScalarType::U32, min(max(rounded, f32(-8.0f)), f32(7.0f)) + 8.0);
      return body.let(name, select(is_nan(value), u32(8), code));
    }
    case Scheme::Int4Asymmetric: {
      Expr rounded = round_half_even(body, name + "_rounded", value / scale);
      Expr code = cast(ScalarType::U32, min(max(rounded + zero_point, f32(0.0f)), f32(15.0f)));
      Expr zero_code = cast(ScalarType::U32, min(max(zero_point, f32(0.0f)), f32(15.0f)));
      return body.let(name, select(is_nan(value), zero_code, code));
    }
    case Scheme::Nf4: {
      Expr normalized = body.let(name + "_normalized", value / select(scale > 0.0, scale, f32(1.0f)));
      Expr code = u32(0);
      for (float threshold : nf4_thresholds()) code = code + select(normalized > threshold, u32(1), u32(0));
      return body.let(name, select(is_nan(value), u32(7), code));
    }
  }
  return Expr();
}

Program build_quantizer(Scheme scheme, std::uint32_t n, std::uint32_t group_size) {
  const char* op = op_name(scheme);
  check_common(op, n, group_size);
  check_index_range(op, n, group_size);
  const std::uint32_t group_count = ceil_div(n, group_size);
  const std::uint32_t pair_count = ceil_div(group_count, 2);
  const std::uint32_t packed_bytes = ceil_div(n, 2);
  const std::uint32_t strides = ceil_div(group_size, kSubgroupLanes);

  std::string name = scheme == Scheme::Int4Symmetric    ? "quantize_int4_symmetric"
                     : scheme == Scheme::Int4Asymmetric ? "quantize_int4_asymmetric"
                                                        : "quantize_nf4";
  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, n);
  BufferRef packed = program.output("packed", ScalarType::U8, packed_bytes);
  BufferRef scale = program.output("scale", ScalarType::F32, group_count);
  BufferRef zero_point;
  if (scheme == Scheme::Int4Asymmetric) zero_point = program.output("zero_point", ScalarType::F32, group_count);
  program.launch({kWorkgroupInvocations, 1, 1}, {ceil_div(pair_count, kSubgroupsPerWorkgroup), 1, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      Expr lane = region.let("lane", local % kSubgroupLanes);
      // Uniform across a subgroup: all 32 lanes share `pair`, so the guard below keeps
      // the subgroup operations in subgroup-uniform control flow.
      Expr pair = region.let("pair", workgroup_id(0) * kSubgroupsPerWorkgroup + local / kSubgroupLanes);
      region.if_then(pair < pair_count, [&](Body& per_pair) {
        std::array<GroupParams, 2> params;
        for (std::uint32_t half = 0; half < 2; ++half) {
          std::string suffix = half == 0 ? "_even" : "_odd";
          Expr group = per_pair.let("group" + suffix, pair * 2u + half);
          GroupStats stats = reduce_group(per_pair, scheme, x, n, group_size, group, lane, suffix);
          params[half] = group_params(per_pair, scheme, stats, suffix);
          per_pair.if_then(logical_and(group < group_count, eq(lane, u32(0))), [&](Body& leader) {
            leader.store(scale, group, params[half].scale);
            if (scheme == Scheme::Int4Asymmetric) leader.store(zero_point, group, params[half].zero_point);
          });
        }
        // First element of the pair's odd group: elements below it use the even group.
        Expr odd_start = per_pair.let("odd_group_start", (pair * 2u + 1u) * group_size);
        per_pair.loop("byte_stride", u32(0), u32(strides), [&](Body& loop, Expr stride) {
          Expr byte_in_pair = loop.let("byte_in_pair", stride * kSubgroupLanes + lane);
          Expr byte = loop.let("byte", pair * group_size + byte_in_pair);
          loop.if_then(logical_and(byte_in_pair < group_size, byte < packed_bytes), [&](Body& owned) {
            Expr low_element = owned.let("low_element", byte * 2u);
            Expr high_element = owned.let("high_element", low_element + 1u);
            auto code_of = [&](const Expr& element, const Expr& value, const std::string& code_name) {
              Expr in_even = owned.let(code_name + "_in_even_group", element < odd_start);
              Expr element_scale = owned.let(code_name + "_scale", select(in_even, params[0].scale, params[1].scale));
              Expr element_zero;
              if (scheme == Scheme::Int4Asymmetric) {
                element_zero = owned.let(code_name + "_zero_point",
                                         select(in_even, params[0].zero_point, params[1].zero_point));
              }
              return encode(owned, scheme, value, element_scale, element_zero, code_name);
            };
            Expr low_code = code_of(low_element, owned.let("low_value", x[low_element]), "low_code");
            // Clamped index keeps the load in bounds when n is odd; the code is then 0.
            Expr high_value = owned.let("high_value", x[min(high_element, u32(n - 1))]);
            Expr high_code = code_of(high_element, high_value, "high_code");
            Expr high_nibble = select(high_element < n, high_code, u32(0));
            owned.store(packed, byte, cast(ScalarType::U8, low_code | (high_nibble << 4u)));
          });
        });
      });
    });
  });
  return program.build();
}

/// Shared shape of the dequantizers: one invocation per element; `value` maps the
/// element's code (u32) and group index to its f32 value.
Program build_dequantizer(const std::string& name, Scheme scheme, std::uint32_t n, std::uint32_t group_size) {
  const char* op = scheme == Scheme::Nf4 ? "dequantize_nf4" : "dequantize_int4";
  check_common(op, n, group_size);
  const std::uint32_t group_count = ceil_div(n, group_size);
  ProgramBuilder program(name);
  BufferRef packed = program.input("packed", ScalarType::U8, ceil_div(n, 2));
  BufferRef scale = program.input("scale", ScalarType::F32, group_count);
  BufferRef zero_point;
  if (scheme == Scheme::Int4Asymmetric) zero_point = program.input("zero_point", ScalarType::F32, group_count);
  BufferRef y = program.output("y", ScalarType::F32, n);
  program.launch({kWorkgroupInvocations, 1, 1}, {ceil_div(n, kWorkgroupInvocations), 1, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr i = region.let("i", invocation_id(0));
      region.if_then(i < n, [&](Body& then) {
        Expr byte = then.let("byte", cast(ScalarType::U32, packed[i / 2u]));
        Expr code = then.let("code", nibble(byte, i & 1u));
        Expr group = then.let("group", i / group_size);
        Expr group_scale = then.let("group_scale", scale[group]);
        Expr code_value = cast(ScalarType::F32, code);
        Expr value;
        switch (scheme) {
          case Scheme::Int4Symmetric: value = (code_value - 8.0) * group_scale; break;
          case Scheme::Int4Asymmetric: value = (code_value - zero_point[group]) * group_scale; break;
          case Scheme::Nf4: value = Lookup::make(ScalarType::F32, nf4_lookup_table(), code) * group_scale; break;
        }
        then.store(y, i, value);
      });
    });
  });
  return program.build();
}

}  // namespace

Program quantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric) {
  return build_quantizer(symmetric ? Scheme::Int4Symmetric : Scheme::Int4Asymmetric, n, group_size);
}

Program dequantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric) {
  return symmetric ? build_dequantizer("dequantize_int4_symmetric", Scheme::Int4Symmetric, n, group_size)
                   : build_dequantizer("dequantize_int4_asymmetric", Scheme::Int4Asymmetric, n, group_size);
}

Program quantize_nf4(std::uint32_t n, std::uint32_t group_size) { return build_quantizer(Scheme::Nf4, n, group_size); }

Program dequantize_nf4(std::uint32_t n, std::uint32_t group_size) {
  return build_dequantizer("dequantize_nf4", Scheme::Nf4, n, group_size);
}

namespace {
OpArgs shape(std::uint32_t n, std::uint32_t group_size) { return OpArgs::dims({{"n", n}, {"group_size", group_size}}); }
OpArgs shape(std::uint32_t n, std::uint32_t group_size, bool symmetric) {
  OpArgs args = shape(n, group_size);
  args.set("symmetric", symmetric);
  return args;
}
}  // namespace

std::vector<OpInfo> quantize_ops() {
  const std::string seed = "oxicuda-dnn-0.1.7 quantize (INT4/NF4), defects corrected (see ir/ops/Quantize.h)";
  ParamSpec n{"n", ParamType::U32, "elements in the vector", "", "> 0", {}};
  ParamSpec group_size{"group_size", ParamType::U32, "consecutive elements sharing a scale", "64", "> 0", {}};
  ParamSpec symmetric{"symmetric", ParamType::Bool, "symmetric (zero point 8) or asymmetric (per-group zero point)",
                      "true", "", {}};
  const std::string packing = "packed u8[ceil(n/2)]: byte b = element 2b (low nibble) | element 2b+1 (high nibble)";
  std::vector<OpInfo> ops;
  std::vector<OpArgs> int4_shapes = {shape(1, 1, true),   shape(7, 2, false),  shape(65, 31, true),
                                     shape(65, 31, false), shape(300, 64, true), shape(129, 128, false)};
  std::vector<OpArgs> nf4_shapes = {shape(1, 1), shape(7, 2), shape(65, 31), shape(300, 64), shape(129, 128)};
  ops.push_back(OpInfo{
      .name = "quantize_int4",
      .summary = "group-wise INT4: symmetric q = clamp(round(v/scale), -8, 7) + 8 with scale = absmax/7, or asymmetric "
                 "q = clamp(round(v/scale) + zero, 0, 15) with scale = range/15",
      .layout = packing + "; scale/zero_point f32[ceil(n/group_size)]; one subgroup per pair of groups",
      .seed = seed,
      .params = {n, group_size, symmetric},
      .buffers = {{"x", "input", ScalarType::F32, "n"},
                  {"packed", "output", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "output", ScalarType::F32, "ceil(n/group_size)"},
                  {"zero_point", "output", ScalarType::F32, "ceil(n/group_size) (asymmetric only)"}},
      .build = [](const OpArgs& args) {
        return quantize_int4(args.u32("n"), args.u32("group_size"), args.boolean("symmetric"));
      },
      .test_shapes = int4_shapes,
  });
  ops.push_back(OpInfo{
      .name = "dequantize_int4",
      .summary = "y[i] = (q_i - 8) * scale[g] (symmetric) or (q_i - zero_point[g]) * scale[g], g = i / group_size",
      .layout = packing + "; one invocation per element",
      .seed = seed,
      .params = {n, group_size, symmetric},
      .buffers = {{"packed", "input", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "sidecar", ScalarType::F32, "ceil(n/group_size)"},
                  {"zero_point", "sidecar", ScalarType::F32, "ceil(n/group_size) (asymmetric only)"},
                  {"y", "output", ScalarType::F32, "n"}},
      .build = [](const OpArgs& args) {
        return dequantize_int4(args.u32("n"), args.u32("group_size"), args.boolean("symmetric"));
      },
      .test_shapes = int4_shapes,
  });
  ops.push_back(OpInfo{
      .name = "quantize_nf4",
      .summary = "group-wise NF4: scale = absmax, code = nearest NF4 value to v/scale (ties to the lower code)",
      .layout = packing + "; scale f32[ceil(n/group_size)]; one subgroup per pair of groups",
      .seed = seed,
      .params = {n, group_size},
      .buffers = {{"x", "input", ScalarType::F32, "n"},
                  {"packed", "output", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "output", ScalarType::F32, "ceil(n/group_size)"}},
      .build = [](const OpArgs& args) { return quantize_nf4(args.u32("n"), args.u32("group_size")); },
      .test_shapes = nf4_shapes,
  });
  ops.push_back(OpInfo{
      .name = "dequantize_nf4",
      .summary = "y[i] = NF4[q_i] * scale[i / group_size] (code book as a register select tree)",
      .layout = packing + "; one invocation per element",
      .seed = seed,
      .params = {n, group_size},
      .buffers = {{"packed", "input", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "sidecar", ScalarType::F32, "ceil(n/group_size)"},
                  {"y", "output", ScalarType::F32, "n"}},
      .build = [](const OpArgs& args) { return dequantize_nf4(args.u32("n"), args.u32("group_size")); },
      .test_shapes = nf4_shapes,
  });
  return ops;
}

}  // namespace quantc::ir::ops
