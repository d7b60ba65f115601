#include "ir/ops/Quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <tuple>
#include <limits>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/SplitK.h"

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

const std::array<float, 16> kBnbFp4Table = [] {
  const std::array<float, 16> steps = {0.0f,  0.0625f,  8.0f,  12.0f,  4.0f,  6.0f,  2.0f,  3.0f,
                                       -0.0f, -0.0625f, -8.0f, -12.0f, -4.0f, -6.0f, -2.0f, -3.0f};
  std::array<float, 16> table{};
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = steps[i] / 12.0f;  // one f32 rounding each
  return table;
}();

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

std::vector<std::uint64_t> f32_lookup_table(const std::array<float, 16>& values) {
  std::vector<std::uint64_t> table;
  for (float value : values) table.push_back(std::bit_cast<std::uint32_t>(value));
  return table;
}

std::vector<std::uint64_t> nf4_lookup_table() { return f32_lookup_table(kNf4Table); }

namespace {

constexpr std::uint32_t kQuantizeWorkgroupInvocations = 256;
constexpr std::uint32_t kQuantizeSubgroupsPerWorkgroup = kQuantizeWorkgroupInvocations / kSubgroupSize;
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
  body.loop("stride" + suffix, u32(0), u32(ceil_div(group_size, kSubgroupSize)), [&](Body& loop, Expr stride) {
    Expr offset = loop.let("offset" + suffix, stride * kSubgroupSize + lane);
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

/// How a program rounds half to even: the seed's magic-number expression (round_half_even)
/// or one cvt.rni (round_with_cvt); the two give the same bits wherever the quantizers use
/// them (see round_half_even).
using RoundHalfEven = Expr (*)(Body&, const std::string&, const Expr&);

Expr round_with_cvt(Body& body, const std::string& name, const Expr& value) { return body.let(name, round_even(value)); }

GroupParams group_params(Body& body, Scheme scheme, const GroupStats& stats, const std::string& suffix,
                         RoundHalfEven round = round_half_even) {
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
      Expr rounded_zero = round(body, "rounded_zero_point" + suffix, -low / scale);
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
            const std::string& name, RoundHalfEven round = round_half_even) {
  switch (scheme) {
    case Scheme::Int4Symmetric: {
      Expr rounded = round(body, name + "_rounded", value / scale);
      Expr code = cast(ScalarType::U32, min(max(rounded, f32(-8.0f)), f32(7.0f)) + 8.0);
      return body.let(name, select(is_nan(value), u32(8), code));
    }
    case Scheme::Int4Asymmetric: {
      Expr rounded = round(body, name + "_rounded", value / scale);
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
  const std::uint32_t strides = ceil_div(group_size, kSubgroupSize);

  std::string name = scheme == Scheme::Int4Symmetric    ? "quantize_int4_symmetric"
                     : scheme == Scheme::Int4Asymmetric ? "quantize_int4_asymmetric"
                                                        : "quantize_nf4";
  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, n);
  BufferRef packed = program.output("packed", ScalarType::U8, packed_bytes);
  BufferRef scale = program.output("scale", ScalarType::F32, group_count);
  BufferRef zero_point;
  if (scheme == Scheme::Int4Asymmetric) zero_point = program.output("zero_point", ScalarType::F32, group_count);
  program.launch({kQuantizeWorkgroupInvocations, 1, 1}, {ceil_div(pair_count, kQuantizeSubgroupsPerWorkgroup), 1, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      Expr lane = region.let("lane", local % kSubgroupSize);
      // Uniform across a subgroup: all 32 lanes share `pair`, so the guard below keeps
      // the subgroup operations in subgroup-uniform control flow.
      Expr pair = region.let("pair", workgroup_id(0) * kQuantizeSubgroupsPerWorkgroup + local / kSubgroupSize);
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
          Expr byte_in_pair = loop.let("byte_in_pair", stride * kSubgroupSize + lane);
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
  program.launch({kQuantizeWorkgroupInvocations, 1, 1}, {ceil_div(n, kQuantizeWorkgroupInvocations), 1, 1});
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

// ---------------------------------------------------------------------------------
// Fast schedules (see the header).

constexpr std::uint32_t kFastDequantSlots = 4;  // bytes per invocation (j = 0..3)
constexpr std::uint32_t kFastDequantSubgroupBytes = kFastDequantSlots * kSubgroupSize;
/// The word dequantizer (build_word_dequantizer): slots of 16 words, a lane pair's half
/// words.
constexpr std::uint32_t kWordDequantSlotWords = kSubgroupSize / 2;
/// Slots a lane: 16 where even the grid of 8-slot subgroups would pass the warps kTargetSms
/// SMs hold at once (kMaxResidentInvocations each), so that the index arithmetic spreads
/// over 64 codes (4096x4096: 0.39 -> 0.33 instructions per packed byte with the f32x4
/// sidecars); 8 below it, where more and shorter warps decide (the grid is latency-bound:
/// MiniLM's 384x1536 took 1.3 us with 8, 1.9 with 16 on the H100 model).
std::uint32_t word_dequant_slots(std::uint32_t words) {
  constexpr std::uint64_t kResidentSubgroups = std::uint64_t{kTargetSms} * kMaxResidentInvocations / kSubgroupSize;
  return words / (8 * kWordDequantSlotWords) > kResidentSubgroups ? 16 : 8;
}
constexpr std::uint32_t kFastQuantizeMaxGroup = 512;
constexpr std::uint32_t kFastQuantizeTargetSlots = 4;  // byte slots a lane aims to hold
constexpr std::uint32_t kFastQuantizeTargetWords = 2;  // word slots a lane aims to hold
constexpr std::uint32_t kFastQuantizeSectorWords = 8;  // u32 words in a 32-byte sector

std::uint32_t next_power_of_two(std::uint32_t value) {
  std::uint32_t power = 1;
  while (power < value) power *= 2;
  return power;
}

/// The exact f32 value of a nibble (u32 0..15) minus `offset` (0 or 8):
/// bitcast(2^23 | q) - (2^23 + offset), one exact subtraction.
Expr magic_nibble(const Expr& code, float offset) {
  return bitcast(ScalarType::F32, code | u32(kMagicBits)) - f32(kMagic + offset);
}

/// The fast dequantizers' buffers and what each subgroup starts from.
struct DequantFrame {
  BufferRef packed, scale, zero_point, y;
  Expr lane, subgroup, book;  // book: NF4's register code book (kNf4Table[lane & 15]), else undefined
};

/// A fast dequantizer's program: its buffers (packed u8[ceil(n/2)], scale, zero point when
/// asymmetric, y f32[n]), `subgroups` subgroups of 8 per workgroup, and `per_subgroup`
/// under a subgroup-uniform guard (the NF4 shuffles run with all 32 lanes).
Program fast_dequantizer_program(const std::string& name, Scheme scheme, std::uint32_t n, std::uint32_t group_size,
                                 std::uint32_t subgroups,
                                 const std::function<void(Body&, const DequantFrame&)>& per_subgroup) {
  const std::uint32_t group_count = ceil_div(n, group_size);
  ProgramBuilder program(name);
  DequantFrame frame;
  frame.packed = program.input("packed", ScalarType::U8, ceil_div(n, 2));
  frame.scale = program.input("scale", ScalarType::F32, group_count);
  if (scheme == Scheme::Int4Asymmetric) frame.zero_point = program.input("zero_point", ScalarType::F32, group_count);
  frame.y = program.output("y", ScalarType::F32, n);
  program.launch({kQuantizeWorkgroupInvocations, 1, 1}, {ceil_div(subgroups, kQuantizeSubgroupsPerWorkgroup), 1, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      frame.lane = region.let("lane", local % kSubgroupSize);
      frame.subgroup = region.let("subgroup", workgroup_id(0) * kQuantizeSubgroupsPerWorkgroup + local / kSubgroupSize);
      region.if_then(frame.subgroup < subgroups, [&](Body& sg) {
        if (scheme == Scheme::Nf4) {
          frame.book = sg.let("code_book", Lookup::make(ScalarType::F32, nf4_lookup_table(), frame.lane & 15u));
        }
        per_subgroup(sg, frame);
      });
    });
  });
  return program.build();
}

/// The fast dequantizer where n and group_size are multiples of 8 (see the header): lane l
/// of subgroup s takes half l % 2 of u32 word 16Hs + 16h + l / 2 of `packed` (h = 0..H-1,
/// H = word_dequant_slots), four codes of one group, and stores their four values with one
/// f32x4 store, so that each store request of the subgroup writes 512 contiguous bytes
/// (whole sectors).
Program build_word_dequantizer(const std::string& name, Scheme scheme, std::uint32_t n, std::uint32_t group_size) {
  const std::uint32_t words = n / kNibblesPerWord;
  const std::uint32_t slots = word_dequant_slots(words);
  const std::uint32_t subgroup_words = slots * kWordDequantSlotWords;
  const std::uint32_t subgroups = ceil_div(words, subgroup_words);
  const bool exact_cover = words % subgroup_words == 0;  // no clamps, no guards
  const std::uint32_t words_per_group = group_size / kNibblesPerWord;
  // Slot h's group is slot 0's plus 16h / words_per_group when that divides evenly.
  const bool group_steps = exact_cover && kWordDequantSlotWords % words_per_group == 0;
  // One group a slot (group_size 128), the same in every lane: a subgroup's sidecars are
  // `slots` consecutive f32 from a multiple of them, read as f32x4 loads.
  const bool vector_sidecars = group_steps && words_per_group == kWordDequantSlotWords;
  return fast_dequantizer_program(name, scheme, n, group_size, subgroups, [&](Body& sg, const DequantFrame& frame) {
    const BufferRef &packed = frame.packed, &scale = frame.scale, &zero_point = frame.zero_point, &y = frame.y;
    const Expr &lane = frame.lane, &subgroup = frame.subgroup, &book = frame.book;
    Expr first_word = sg.let("first_word", subgroup * subgroup_words + lane / 2u);
    // Bits of the lane's half of each word: codes 4 * (lane % 2) .. + 3 at nibbles 0..3.
    Expr half_shift = sg.let("half_shift", (lane & 1u) * 16u);
    Expr first_group;
    if (vector_sidecars) {
      first_group = sg.let("first_group", subgroup * slots);
    } else if (group_steps) {
      first_group = sg.let("first_group", first_word / words_per_group);
    }
    // The element of y the lane's slot-0 store starts at.
    Expr first_element = sg.let("first_element", first_word * kNibblesPerWord + (lane & 1u) * 4u);
    // Loads first: every word, scale and zero point of the slots. With exact cover the
    // slots' indices are slot 0's plus a constant, which the PTX folds into the address
    // ([addr+c]).
    std::vector<Expr> word_index, codes, scales, zero_points;
    if (vector_sidecars) {
      for (std::uint32_t v = 0; v < slots / 4; ++v) {
        Expr at = v == 0 ? first_group : first_group + u32(4 * v);
        Expr scale4 = sg.let(fmt::format("scales{}", v), scale.load(at, 4));
        Expr zero4 = scheme == Scheme::Int4Asymmetric ? sg.let(fmt::format("zero_points{}", v), zero_point.load(at, 4))
                                                      : Expr();
        for (std::uint32_t lane_of = 0; lane_of < 4; ++lane_of) {
          scales.push_back(extract_lane(scale4, lane_of));
          if (zero4.defined()) zero_points.push_back(extract_lane(zero4, lane_of));
        }
      }
    }
    for (std::uint32_t h = 0; h < slots; ++h) {
      const std::string suffix = fmt::format("{}", h);
      const std::uint32_t step = h * kWordDequantSlotWords;  // words past slot 0
      word_index.push_back(h == 0 || exact_cover ? first_word : sg.let("word" + suffix, first_word + step));
      Expr at = exact_cover ? first_word : sg.let("load_word" + suffix, min(word_index[h], u32(words - 1)));
      Expr byte_index = exact_cover && h > 0 ? at * 4u + u32(4 * step) : at * 4u;
      codes.push_back(sg.let("codes" + suffix, packed.load_words(byte_index, 1)));
      if (vector_sidecars) continue;
      Expr slot_word = exact_cover && h > 0 ? first_word + u32(step) : at;
      Expr group = group_steps ? (h == 0 ? first_group : first_group + u32(step / words_per_group))
                               : sg.let("group" + suffix, slot_word / words_per_group);
      scales.push_back(sg.let("scale" + suffix, scale[group]));
      if (scheme == Scheme::Int4Asymmetric) zero_points.push_back(sg.let("zero_point" + suffix, zero_point[group]));
    }
    for (std::uint32_t h = 0; h < slots; ++h) {
      const std::string suffix = fmt::format("{}", h);
      Expr half = sg.let("half" + suffix, codes[h] >> half_shift);
      std::vector<Expr> values;
      for (std::uint32_t e = 0; e < kNibblesPerWord / 2; ++e) {
        Expr value;
        if (scheme == Scheme::Nf4) {
          value = shuffled_code(book, half, e) * scales[h];
        } else {
          // Codes decode in place (nibble_plus_bias: one lop3, one exact subtraction).
          Expr biased = nibble_plus_bias(half, e);
          const float bias = nibble_bias(e);
          value = scheme == Scheme::Int4Symmetric ? (biased - f32(bias + 8.0f)) * scales[h]
                                                  : ((biased - f32(bias)) - zero_points[h]) * scales[h];
        }
        values.push_back(sg.let(fmt::format("y{}_{}", h, e), value));
      }
      auto store = [&](Body& at) {
        Expr first = h == 0 ? first_element : first_element + u32(h * kWordDequantSlotWords * kNibblesPerWord);
        at.store(y, first, make_vector({values[0], values[1], values[2], values[3]}));
      };
      if (exact_cover) {
        store(sg);
      } else {
        sg.if_then(word_index[h] < words, store);
      }
    }
  });
}

Program build_fast_dequantizer(const std::string& name, Scheme scheme, std::uint32_t n, std::uint32_t group_size) {
  const char* op = scheme == Scheme::Nf4 ? "dequantize_nf4" : "dequantize_int4";
  check_common(op, n, group_size);
  if (n % kNibblesPerWord == 0 && group_size % kNibblesPerWord == 0) {
    return build_word_dequantizer(name, scheme, n, group_size);
  }
  const std::uint32_t group_count = ceil_div(n, group_size);
  const std::uint32_t packed_bytes = ceil_div(n, 2);
  const std::uint32_t full_pairs = n / 2;  // bytes whose two elements are both < n
  const std::uint32_t subgroups = ceil_div(packed_bytes, kFastDequantSubgroupBytes);
  // Every byte slot of every subgroup is a byte of the buffer: no clamps, no guards.
  const bool exact_cover = n % 2 == 0 && packed_bytes % kFastDequantSubgroupBytes == 0;
  const bool even_groups = group_size % 2 == 0;  // a byte's two elements share a group
  // Subgroup-uniform groups: slot j of subgroup s covers elements [256s + 64j, +64).
  const bool uniform_groups = group_size % 64 == 0 && (256 % group_size == 0 || group_size % 256 == 0);

  return fast_dequantizer_program(name, scheme, n, group_size, subgroups, [&](Body& sg, const DequantFrame& frame) {
    const BufferRef &packed = frame.packed, &scale = frame.scale, &zero_point = frame.zero_point, &y = frame.y;
    const Expr &lane = frame.lane, &subgroup = frame.subgroup, &book = frame.book;
    Expr first_byte = sg.let("first_byte", subgroup * kFastDequantSubgroupBytes + lane);
    // Loads first: every code byte, scale and zero point of the four slots.
    struct Slot {
      Expr byte, raw, scale_low, scale_high, zero_low, zero_high;
    };
    std::vector<Slot> slots(kFastDequantSlots);
    std::vector<std::pair<std::uint32_t, std::pair<Expr, Expr>>> uniform_sidecars;  // group offset -> loads
    auto sidecars_of = [&](Body& at, const Expr& group, const std::string& suffix) {
      Expr s = at.let("scale" + suffix, scale[group]);
      Expr z = scheme == Scheme::Int4Asymmetric ? at.let("zero_point" + suffix, zero_point[group]) : Expr();
      return std::pair{s, z};
    };
    for (std::uint32_t j = 0; j < kFastDequantSlots; ++j) {
      Slot& slot = slots[j];
      const std::string suffix = fmt::format("{}", j);
      slot.byte = j == 0 ? first_byte : sg.let("byte" + suffix, first_byte + j * kSubgroupSize);
      Expr at = exact_cover ? slot.byte : sg.let("load_byte" + suffix, min(slot.byte, u32(packed_bytes - 1)));
      slot.raw = sg.let("raw" + suffix, cast(ScalarType::U32, packed[at]));
      if (uniform_groups) {
        // Slot j's group: (256*subgroup + 64*j) / group_size, the same for all lanes.
        const std::uint32_t offset = group_size >= 256 ? 0 : 64 * j / group_size;
        auto found = std::find_if(uniform_sidecars.begin(), uniform_sidecars.end(),
                                  [&](const auto& entry) { return entry.first == offset; });
        if (found == uniform_sidecars.end()) {
          Expr group = group_size >= 256 ? subgroup / (group_size / 256) : subgroup * (256 / group_size) + offset;
          if (!exact_cover) group = min(group, u32(group_count - 1));
          uniform_sidecars.push_back({offset, sidecars_of(sg, sg.let("group" + suffix, group), suffix)});
          found = std::prev(uniform_sidecars.end());
        }
        slot.scale_low = slot.scale_high = found->second.first;
        slot.zero_low = slot.zero_high = found->second.second;
      } else if (even_groups) {
        Expr group = sg.let("group" + suffix, at / (group_size / 2));
        std::tie(slot.scale_low, slot.zero_low) = sidecars_of(sg, group, suffix);
        slot.scale_high = slot.scale_low;
        slot.zero_high = slot.zero_low;
      } else {
        Expr low_element = sg.let("low_element" + suffix, at * 2u);
        Expr low_group = sg.let("low_group" + suffix, low_element / group_size);
        // An odd n's last byte has no high element; its group index is clamped in range.
        Expr high_group = (low_element + 1u) / group_size;
        if (n % 2 == 1) high_group = min(high_group, u32(group_count - 1));
        high_group = sg.let("high_group" + suffix, high_group);
        std::tie(slot.scale_low, slot.zero_low) = sidecars_of(sg, low_group, "_low" + suffix);
        std::tie(slot.scale_high, slot.zero_high) = sidecars_of(sg, high_group, "_high" + suffix);
      }
    }
    for (std::uint32_t j = 0; j < kFastDequantSlots; ++j) {
      const Slot& slot = slots[j];
      const std::string suffix = fmt::format("{}", j);
      Expr low_code = sg.let("low_code" + suffix, slot.raw & 0xFu);
      Expr high_code = sg.let("high_code" + suffix, slot.raw >> 4u);
      auto value_of = [&](const Expr& code, const Expr& s, const Expr& z) {
        switch (scheme) {
          case Scheme::Int4Symmetric: return magic_nibble(code, 8.0f) * s;
          case Scheme::Int4Asymmetric: return (magic_nibble(code, 0.0f) - z) * s;
          case Scheme::Nf4: return subgroup_shuffle(book, code) * s;
        }
        return Expr();
      };
      Expr low = sg.let("low" + suffix, value_of(low_code, slot.scale_low, slot.zero_low));
      Expr high = sg.let("high" + suffix, value_of(high_code, slot.scale_high, slot.zero_high));
      Expr pair = make_vector({low, high});
      if (exact_cover) {
        sg.store(y, slot.byte * 2u, pair);
        continue;
      }
      if (full_pairs > 0) {
        sg.if_then(slot.byte < full_pairs, [&](Body& whole) { whole.store(y, slot.byte * 2u, pair); });
      }
      if (n % 2 == 1) {
        sg.if_then(eq(slot.byte, u32(full_pairs)), [&](Body& last) { last.store(y, u32(n - 1), low); });
      }
    }
  });
}

/// How the fast quantizer splits groups over lanes (see the header). A unit is what one
/// store writes: a byte (2 codes) or, where n and group_size are multiples of 8, a u32
/// word (8 codes).
struct QuantizeSplit {
  std::uint32_t unit_elements = 0;  // 2 (byte units) or 8 (word units)
  std::uint32_t group_units = 0;    // gs / unit_elements
  std::uint32_t group_lanes = 0;    // S: lanes per group (power of two, <= 32)
  std::uint32_t slots = 0;          // P: units per lane
  std::uint32_t groups_per_subgroup = 0;
  bool words() const { return unit_elements == kNibblesPerWord; }
};

QuantizeSplit quantize_split(std::uint32_t n, std::uint32_t group_size) {
  QuantizeSplit split;
  const bool words = n % kNibblesPerWord == 0 && group_size % kNibblesPerWord == 0;
  split.unit_elements = words ? kNibblesPerWord : 2;
  split.group_units = group_size / split.unit_elements;
  if (!words) {
    split.group_lanes =
        std::min(kSubgroupSize, next_power_of_two(ceil_div(split.group_units, kFastQuantizeTargetSlots)));
  } else if (split.group_units <= kFastQuantizeSectorWords) {
    split.group_lanes = next_power_of_two(split.group_units);  // one word a lane; groups lie back to back
  } else {
    // At least a sector's 8 words per group, so each word store writes whole sectors.
    split.group_lanes = std::clamp(next_power_of_two(ceil_div(split.group_units, kFastQuantizeTargetWords)),
                                   kFastQuantizeSectorWords, kSubgroupSize);
  }
  split.slots = ceil_div(split.group_units, split.group_lanes);
  split.groups_per_subgroup = kSubgroupSize / split.group_lanes;
  return split;
}

/// Lane-local then group-wide max (or min) over the group's S lanes: a shuffle-xor
/// butterfly within aligned blocks of S lanes; the whole subgroup's reduction when S = 32.
Expr group_reduce(Body& body, const Expr& value, bool take_max, std::uint32_t group_lanes, const Expr& lane,
                  const std::string& name) {
  if (group_lanes == kSubgroupSize) return body.let(name, take_max ? subgroup_max(value) : subgroup_min(value));
  Expr acc = body.let(name, value);
  for (std::uint32_t mask = group_lanes / 2; mask >= 1; mask /= 2) {
    Expr other = subgroup_shuffle(acc, lane ^ u32(mask));
    body.assign(acc, take_max ? max(acc, other) : min(acc, other));
  }
  return acc;
}

/// The NF4 code of `value`: the number of nf4_thresholds() that value / divisor exceeds,
/// by binary search over `thresholds` (lane i holds threshold i & 15); NaN -> 7.
///
/// The count c is built from the top bit down: c = 8*(v > t7), c += 4 if v > t[c+3],
/// c += 2 if v > t[c+1], c += 1 if v > t[c]. As probe indices: i2 = c + 3 in {3, 11},
/// i1 = i2 - 2 or i2 + 2 = i2 ^ 2 or i2 ^ 6, i0 = i1 - 1 or i1 + 1 = i1 ^ 1 or i1 ^ 3 and
/// code = i0 or i0 | 1 (one select and one bit operation per step). Immutable lets keep
/// every index's range provable (<= 15), so each probe is one shfl. The last three
/// steps test "v <= t" and take the upper branch when it is false: the same for every
/// number, and a NaN (every compare false) walks 0 -> +4 -> +2 -> +1 = 7, the seed's
/// NaN code, without a separate NaN select.
Expr encode_nf4_search(Body& body, const Expr& value, const Expr& divisor, const Expr& thresholds,
                       const std::string& name) {
  Expr normalized = body.let(name + "_normalized", value / divisor);
  Expr probe2 = body.let(name + "_probe2", select(normalized > nf4_thresholds()[7], u32(11), u32(3)));
  Expr probe1 = body.let(name + "_probe1", probe2 ^ select(normalized <= subgroup_shuffle(thresholds, probe2),
                                                            u32(2), u32(6)));
  Expr probe0 = body.let(name + "_probe0", probe1 ^ select(normalized <= subgroup_shuffle(thresholds, probe1),
                                                            u32(1), u32(3)));
  return body.let(name, probe0 | select(normalized <= subgroup_shuffle(thresholds, probe0), u32(0), u32(1)));
}

Program build_fast_quantizer(Scheme scheme, std::uint32_t n, std::uint32_t group_size);

}  // namespace

std::optional<std::string> fast_quantizer_unsupported(std::uint32_t n, std::uint32_t group_size) {
  (void)n;
  if (group_size % 2 != 0) {
    return fmt::format("group_size={} is odd (a packed byte would hold codes of two groups)", group_size);
  }
  if (group_size > kFastQuantizeMaxGroup) {
    return fmt::format("group_size={} is above {} (the fast quantizer keeps a group's values in registers)",
                       group_size, kFastQuantizeMaxGroup);
  }
  return std::nullopt;
}

namespace {

Program build_fast_quantizer(Scheme scheme, std::uint32_t n, std::uint32_t group_size) {
  const char* op = op_name(scheme);
  check_common(op, n, group_size);
  check_index_range(op, n, group_size);
  if (auto reason = fast_quantizer_unsupported(n, group_size)) {
    throw OpError(fmt::format("Fix: {} has no fast schedule: {}; use \"schedule\": \"seed\".", op, *reason));
  }
  const QuantizeSplit split = quantize_split(n, group_size);
  const std::uint32_t group_count = ceil_div(n, group_size);
  const std::uint32_t packed_bytes = ceil_div(n, 2);
  const std::uint32_t full_pairs = n / 2;
  const std::uint32_t unit_count = split.words() ? n / kNibblesPerWord : packed_bytes;
  const std::uint32_t subgroups = ceil_div(group_count, split.groups_per_subgroup);
  const bool asymmetric = scheme == Scheme::Int4Asymmetric;
  // Every group of every subgroup exists and every unit holds unit_elements elements < n.
  const bool exact_cover = group_count % split.groups_per_subgroup == 0 && n % group_size == 0;
  // The word program rounds with cvt.rni; the byte program keeps the seed's expression.
  const RoundHalfEven round = split.words() ? round_with_cvt : round_half_even;

  std::string name = scheme == Scheme::Int4Symmetric    ? "quantize_int4_symmetric"
                     : scheme == Scheme::Int4Asymmetric ? "quantize_int4_asymmetric"
                                                        : "quantize_nf4";
  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, n);
  BufferRef packed = program.output("packed", ScalarType::U8, packed_bytes);
  BufferRef scale = program.output("scale", ScalarType::F32, group_count);
  BufferRef zero_point;
  if (asymmetric) zero_point = program.output("zero_point", ScalarType::F32, group_count);
  program.launch({kQuantizeWorkgroupInvocations, 1, 1}, {ceil_div(subgroups, kQuantizeSubgroupsPerWorkgroup), 1, 1});
  program.body([&](Body& body) {
    body.region(kSeedId, [&](Body& region) {
      Expr local = region.let("local", local_id(0));
      Expr lane = region.let("lane", local % kSubgroupSize);
      Expr subgroup = region.let("subgroup", workgroup_id(0) * kQuantizeSubgroupsPerWorkgroup + local / kSubgroupSize);
      // Subgroup-uniform guard: the shuffles below run with all 32 lanes.
      region.if_then(subgroup < subgroups, [&](Body& sg) {
        Expr thresholds;
        if (scheme == Scheme::Nf4) {
          std::vector<std::uint64_t> table;
          for (float t : nf4_thresholds()) table.push_back(std::bit_cast<std::uint32_t>(t));
          table.push_back(std::bit_cast<std::uint32_t>(kInfinity));  // lane 15: never read
          thresholds = sg.let("thresholds", Lookup::make(ScalarType::F32, table, lane & 15u));
        }
        Expr lane_in_group = sg.let("lane_in_group", lane % split.group_lanes);
        Expr group = sg.let("group", subgroup * split.groups_per_subgroup + lane / split.group_lanes);
        Expr group_first_unit = sg.let("group_first_unit", group * split.group_units);
        Expr last_value;
        if (n % 2 == 1) last_value = sg.let("last_value", x[u32(n - 1)]);
        struct Slot {
          Expr unit;
          std::vector<Expr> values;  // the unit's elements, lowest first
          std::vector<Expr> valid;   // per value; undefined: always valid
          Expr whole_pair;           // odd n only: unit < n/2, both elements exist
        };
        std::vector<Slot> slots(split.slots);
        // Loads first: the lane's values, all in flight together.
        for (std::uint32_t p = 0; p < split.slots; ++p) {
          Slot& slot = slots[p];
          const std::string suffix = fmt::format("{}", p);
          const bool overhang = (p + 1) * split.group_lanes > split.group_units;  // may reach the next group
          Expr in_group = lane_in_group + p * split.group_lanes;
          slot.unit = sg.let("unit" + suffix, p == 0 ? group_first_unit + lane_in_group : group_first_unit + in_group);
          if (n % 2 == 1) slot.whole_pair = sg.let("whole_pair" + suffix, slot.unit < full_pairs);
          Expr low_valid, high_valid;
          if (!exact_cover || overhang) {
            Expr valid = slot.unit < unit_count;
            if (overhang) valid = logical_and(in_group < split.group_units, valid);
            low_valid = sg.let("valid" + suffix, valid);
            high_valid = n % 2 == 1 ? sg.let("high_valid" + suffix, logical_and(low_valid, slot.whole_pair)) : low_valid;
          }
          if (split.words()) {
            // Eight consecutive values: two f32x4 loads (32 bytes, the lane's own sector).
            Expr word = exact_cover && !overhang ? slot.unit : sg.let("word" + suffix, min(slot.unit, u32(unit_count - 1)));
            for (std::uint32_t half = 0; half < 2; ++half) {
              Expr quad = sg.let(fmt::format("quad{}_{}", p, half), x.load(word * kNibblesPerWord + half * 4u, 4));
              for (std::uint32_t i = 0; i < 4; ++i) {
                slot.values.push_back(sg.let(fmt::format("value{}_{}", p, 4 * half + i), extract_lane(quad, i)));
              }
            }
            slot.valid.assign(kNibblesPerWord, low_valid);
            continue;
          }
          slot.valid = {low_valid, high_valid};
          if (full_pairs == 0) {
            slot.values = {last_value, last_value};
            continue;
          }
          Expr pair_index = exact_cover && !overhang ? slot.unit : sg.let("pair" + suffix, min(slot.unit, u32(full_pairs - 1)));
          Expr values = sg.let("values" + suffix, x.load(pair_index * 2u, 2));
          Expr low = extract_lane(values, 0);
          if (n % 2 == 1) low = select(slot.whole_pair, low, last_value);
          slot.values = {sg.let("low_value" + suffix, low), sg.let("high_value" + suffix, extract_lane(values, 1))};
        }
        // The group's statistics: finite values only, as the seed's reduction. A value left
        // out becomes NaN, which min and max pass over (one select feeds both of them).
        GroupStats stats;
        const Expr nan = Literal::make(ScalarType::F32, 0x7fffffffu);
        auto finite_or_nan = [&](const Expr& value, const Expr& valid, const Expr& magnitude) {
          Expr keep = magnitude < kInfinity;
          if (valid.defined()) keep = logical_and(valid, keep);
          return select(keep, asymmetric ? value : magnitude, nan);
        };
        Expr lane_min, lane_max, lane_absmax;
        if (asymmetric) {
          lane_min = sg.let("lane_min", f32(kInfinity));
          lane_max = sg.let("lane_max", f32(-kInfinity));
        } else {
          lane_absmax = sg.let("lane_absmax", f32(0.0f));
        }
        for (std::uint32_t p = 0; p < split.slots; ++p) {
          for (std::size_t v = 0; v < slots[p].values.size(); ++v) {
            const Expr& value = slots[p].values[v];
            const Expr& valid = slots[p].valid[v];
            Expr magnitude = sg.let(fmt::format("magnitude{}_{}", p, v), abs(value));
            Expr kept = sg.let(fmt::format("kept{}_{}", p, v), finite_or_nan(value, valid, magnitude));
            if (asymmetric) {
              sg.assign(lane_min, min(lane_min, kept));
              sg.assign(lane_max, max(lane_max, kept));
            } else {
              sg.assign(lane_absmax, max(lane_absmax, kept));
            }
          }
        }
        if (asymmetric) {
          stats.minimum = group_reduce(sg, lane_min, false, split.group_lanes, lane, "group_min");
          stats.maximum = group_reduce(sg, lane_max, true, split.group_lanes, lane, "group_max");
        } else {
          stats.absmax = group_reduce(sg, lane_absmax, true, split.group_lanes, lane, "group_absmax");
        }
        GroupParams params = group_params(sg, scheme, stats, "", round);
        Expr leader = eq(lane_in_group, u32(0));
        if (!exact_cover) leader = logical_and(leader, group < group_count);
        sg.if_then(leader, [&](Body& store) {
          store.store(scale, group, params.scale);
          if (asymmetric) store.store(zero_point, group, params.zero_point);
        });
        Expr divisor;
        if (scheme == Scheme::Nf4) divisor = sg.let("divisor", select(params.scale > 0.0, params.scale, f32(1.0f)));
        // Codes from registers, one store per unit: code v at bits 4v.
        for (std::uint32_t p = 0; p < split.slots; ++p) {
          const Slot& slot = slots[p];
          Expr packed_codes;
          for (std::size_t v = 0; v < slot.values.size(); ++v) {
            const std::string code_name = split.words() ? fmt::format("code{}_{}", p, v)
                                                        : fmt::format("{}_code{}", v == 0 ? "low" : "high", p);
            Expr code = scheme == Scheme::Nf4
                            ? encode_nf4_search(sg, slot.values[v], divisor, thresholds, code_name)
                            : encode(sg, scheme, slot.values[v], params.scale, params.zero_point, code_name, round);
            // An odd n's last byte has no high element: its high nibble is 0.
            if (v == 1 && n % 2 == 1) code = select(slot.whole_pair, code, u32(0));
            packed_codes = v == 0 ? code : packed_codes | (code << u32(4 * v));
          }
          auto store_unit = [&](Body& to) {
            if (split.words()) {
              to.store_words(packed, slot.unit * 4u, packed_codes);
            } else {
              to.store(packed, slot.unit, cast(ScalarType::U8, packed_codes));
            }
          };
          if (slot.valid.front().defined()) {
            sg.if_then(slot.valid.front(), store_unit);
          } else {
            store_unit(sg);
          }
        }
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

/// Fast where the schedule asks for it or (auto) where it can run; the seed's errors first.
bool use_fast_quantizer(Scheme scheme, std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule) {
  if (schedule == KernelSchedule::Seed) return false;
  check_common(op_name(scheme), n, group_size);
  check_index_range(op_name(scheme), n, group_size);
  return schedule == KernelSchedule::Fast || !fast_quantizer_unsupported(n, group_size);
}

}  // namespace

Program quantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric, KernelSchedule schedule) {
  const Scheme scheme = symmetric ? Scheme::Int4Symmetric : Scheme::Int4Asymmetric;
  return use_fast_quantizer(scheme, n, group_size, schedule) ? build_fast_quantizer(scheme, n, group_size)
                                                             : quantize_int4(n, group_size, symmetric);
}

Program dequantize_int4(std::uint32_t n, std::uint32_t group_size, bool symmetric, KernelSchedule schedule) {
  if (schedule == KernelSchedule::Seed) return dequantize_int4(n, group_size, symmetric);
  return symmetric ? build_fast_dequantizer("dequantize_int4_symmetric", Scheme::Int4Symmetric, n, group_size)
                   : build_fast_dequantizer("dequantize_int4_asymmetric", Scheme::Int4Asymmetric, n, group_size);
}

Program quantize_nf4(std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule) {
  return use_fast_quantizer(Scheme::Nf4, n, group_size, schedule) ? build_fast_quantizer(Scheme::Nf4, n, group_size)
                                                                  : quantize_nf4(n, group_size);
}

Program dequantize_nf4(std::uint32_t n, std::uint32_t group_size, KernelSchedule schedule) {
  if (schedule == KernelSchedule::Seed) return dequantize_nf4(n, group_size);
  return build_fast_dequantizer("dequantize_nf4", Scheme::Nf4, n, group_size);
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
  std::vector<OpArgs> int4_seed = {shape(1, 1, true),   shape(7, 2, false),  shape(65, 31, true),
                                   shape(65, 31, false), shape(300, 64, true), shape(129, 128, false)};
  std::vector<OpArgs> nf4_seed = {shape(1, 1), shape(7, 2), shape(65, 31), shape(300, 64), shape(129, 128)};
  // Fast shapes: exact cover (512 g64, 1024 g128), partial last group and odd n, small
  // and overhanging groups (g2, g10: S*P > gs/2), odd group sizes (dequantizers only).
  // Where n and group_size are multiples of 8 both read and write whole words: 512 g64 and
  // 1024 g128 exactly, 1000 g40 (5 words a group, idle lanes, a partial last subgroup),
  // 1000 g96 (a second word slot overhanging the group, a partial last group).
  std::vector<OpArgs> int4_fast = {shape(512, 64, true),   shape(1024, 128, false), shape(301, 64, false),
                                   shape(7, 2, true),      shape(133, 10, false),   shape(4099, 256, true),
                                   shape(1000, 40, false), shape(1000, 40, true),   shape(1000, 96, false)};
  std::vector<OpArgs> nf4_fast = {shape(512, 64), shape(1024, 128), shape(301, 64), shape(7, 2), shape(133, 10),
                                  shape(1000, 40), shape(1000, 96)};
  auto shapes = [&](const std::vector<OpArgs>& seed_shapes, const std::vector<OpArgs>& fast_shapes,
                    std::vector<OpArgs> dequant_only) {
    std::vector<OpArgs> all;
    for (const OpArgs& args : seed_shapes) all.push_back(scheduled(args, "seed"));
    for (const OpArgs& args : fast_shapes) all.push_back(scheduled(args, "fast"));
    for (const OpArgs& args : dequant_only) all.push_back(scheduled(args, "fast"));
    return all;
  };
  std::vector<OpArgs> int4_shapes = shapes(int4_seed, int4_fast, {});
  std::vector<OpArgs> nf4_shapes = shapes(nf4_seed, nf4_fast, {});
  // Dequantizers also: odd group sizes (the byte program) and whole subgroups of the word
  // program at group 128 (2048: its sidecars by f32x4 loads).
  std::vector<OpArgs> int4_dequant_shapes =
      shapes(int4_seed, int4_fast, {shape(65, 31, true), shape(65, 31, false), shape(2048, 128, false)});
  std::vector<OpArgs> nf4_dequant_shapes = shapes(nf4_seed, nf4_fast, {shape(65, 31), shape(2048, 128)});
  ops.push_back(OpInfo{
      .name = "quantize_int4",
      .summary = "group-wise INT4: symmetric q = clamp(round(v/scale), -8, 7) + 8 with scale = absmax/7, or asymmetric "
                 "q = clamp(round(v/scale) + zero, 0, 15) with scale = range/15",
      .layout = packing + "; scale/zero_point f32[ceil(n/group_size)]; seed: one subgroup per pair of groups; fast: a "
                          "group in registers of up to 32 lanes (f32x4 loads and u32 word stores where n and group_size are "
                          "multiples of 8, else f32x2 loads and byte stores; shuffle butterfly)",
      .seed = seed,
      .params = {n, group_size, symmetric, schedule_param()},
      .buffers = {{"x", "input", ScalarType::F32, "n"},
                  {"packed", "output", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "output", ScalarType::F32, "ceil(n/group_size)"},
                  {"zero_point", "output", ScalarType::F32, "ceil(n/group_size) (asymmetric only)"}},
      .build = [](const OpArgs& args) {
        return quantize_int4(args.u32("n"), args.u32("group_size"), args.boolean("symmetric"), schedule_of(args));
      },
      .test_shapes = int4_shapes,
  });
  ops.push_back(OpInfo{
      .name = "dequantize_int4",
      .summary = "y[i] = (q_i - 8) * scale[g] (symmetric) or (q_i - zero_point[g]) * scale[g], g = i / group_size",
      .layout = packing + "; seed: one invocation per element; fast: a lane pair shares each of 16 (small grids: 8) "
                          "coalesced u32 words, each lane decoding its half (n, group_size multiples of 8; else bytes), f32x4 stores",
      .seed = seed,
      .params = {n, group_size, symmetric, schedule_param()},
      .buffers = {{"packed", "input", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "sidecar", ScalarType::F32, "ceil(n/group_size)"},
                  {"zero_point", "sidecar", ScalarType::F32, "ceil(n/group_size) (asymmetric only)"},
                  {"y", "output", ScalarType::F32, "n"}},
      .build = [](const OpArgs& args) {
        return dequantize_int4(args.u32("n"), args.u32("group_size"), args.boolean("symmetric"), schedule_of(args));
      },
      .test_shapes = int4_dequant_shapes,
  });
  ops.push_back(OpInfo{
      .name = "quantize_nf4",
      .summary = "group-wise NF4: scale = absmax, code = nearest NF4 value to v/scale (ties to the lower code)",
      .layout = packing + "; scale f32[ceil(n/group_size)]; seed: one subgroup per pair of groups; fast: a group in "
                          "registers of up to 32 lanes (f32x4 loads and u32 word stores where n and group_size are multiples "
                          "of 8, else f32x2 loads and byte stores; shuffle butterfly, threshold binary search)",
      .seed = seed,
      .params = {n, group_size, schedule_param()},
      .buffers = {{"x", "input", ScalarType::F32, "n"},
                  {"packed", "output", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "output", ScalarType::F32, "ceil(n/group_size)"}},
      .build = [](const OpArgs& args) {
        return quantize_nf4(args.u32("n"), args.u32("group_size"), schedule_of(args));
      },
      .test_shapes = nf4_shapes,
  });
  ops.push_back(OpInfo{
      .name = "dequantize_nf4",
      .summary = "y[i] = NF4[q_i] * scale[i / group_size] (code book: seed a register select tree, fast a shuffle)",
      .layout = packing + "; seed: one invocation per element; fast: a lane pair shares each of 16 (small grids: 8) "
                          "coalesced u32 words, each lane decoding its half (n, group_size multiples of 8; else bytes), f32x4 stores",
      .seed = seed,
      .params = {n, group_size, schedule_param()},
      .buffers = {{"packed", "input", ScalarType::U8, "ceil(n/2)"},
                  {"scale", "sidecar", ScalarType::F32, "ceil(n/group_size)"},
                  {"y", "output", ScalarType::F32, "n"}},
      .build = [](const OpArgs& args) {
        return dequantize_nf4(args.u32("n"), args.u32("group_size"), schedule_of(args));
      },
      .test_shapes = nf4_dequant_shapes,
  });
  return ops;
}

}  // namespace quantc::ir::ops
