// f16 and bf16 activations (ir/ops/Activation.h) on every linear and matmul op, both
// schedules, on the reference interpreter. For each op and each of f16 and bf16:
//  - semantics: the f16/bf16 program's output is exactly round(y), y the f32 program's
//    output for the exactly widened inputs, on random values and on edge cases (+-0,
//    the smallest and largest subnormal halves, the smallest normal, and the largest
//    finite value, whose sums overflow f16's 65504 and must round to inf). In the f64
//    modes (nf4_gemm "accumulate": "f64", nf4_gemm_transpose) y is itself the f32
//    rounding of the f64 sum the half program rounds directly, so where y lies exactly
//    halfway between two halves either neighbour is the single rounding of the sum;
//  - accuracy: against a double oracle written here from each op's definition,
//    |out - exact| <= B + u_h*(|exact| + B) + eta_h, with B = 2*u*L*T the f32 bound of
//    the op headers (u = 2^-24; T the sum of |term| plus |bias|; L = 2*K + 32 for a
//    reduction of K terms, above the longest rounding chain of either schedule: the
//    seed's sequential K products and adds, or the fast chunks plus the zero-point,
//    scale, butterfly and split-K roundings), u_h = 2^-11 (f16) or 2^-8 (bf16),
//    eta_h = 2^-25 or 2^-134 (half the smallest subnormal); and +-inf where |exact| - B
//    is past the overflow threshold (65520 for f16);
//  - the fast schedule against the seed on the same inputs:
//    |fast - seed| <= 2*B + u_h*(|fast| + |seed|) + 2*eta_h.
// The rounding helpers are ir::arith's, which tests/ir/arithmetic_tests.cpp pins against
// CUDA's host half and bfloat16 conversions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Arithmetic.h"
#include "ir/Builder.h"
#include "ir/IRVisitor.h"
#include "ir/ops/Activation.h"
#include "ir/ops/QuantizedGemv.h"
#include "ir/ops/Registry.h"
#include "runtime/backends/reference/Interpreter.h"
#include "tests/reference/FormatOracles.h"

using namespace quantc;
using namespace quantc::ir;
using namespace quantc::ir::ops;
using quantc::runtime::BufferSet;
using quantc::runtime::HostBuffer;
namespace reference = quantc::runtime::reference;
namespace arith = quantc::ir::arith;

namespace {

constexpr double kU = 0x1p-24;

const OpInfo& op_named(const std::string& name) {
  const OpInfo* op = OpRegistry::builtin().find(name);
  REQUIRE(op != nullptr);
  return *op;
}

bool has_activation(const OpInfo& op) {
  for (const ParamSpec& param : op.params) {
    if (param.name == "activation") return true;
  }
  return false;
}

/// `args` without "activation": the f32 program of the same shape and schedule.
OpArgs f32_args(const OpArgs& args) {
  OpArgs result;
  for (const auto& [name, value] : args.values()) {
    if (name != "activation") result.set(name, value);
  }
  return result;
}

std::string describe(const std::string& op, const OpArgs& args) {
  std::ostringstream text;
  text << op;
  for (const auto& [name, value] : args.values()) {
    text << " " << name << "=";
    if (const auto* number = std::get_if<std::uint32_t>(&value)) text << *number;
    else if (const auto* flag = std::get_if<bool>(&value)) text << (*flag ? "true" : "false");
    else text << std::get<std::string>(value);
  }
  return text.str();
}

/// The f64 modes, where the half output rounds the f64 sum directly.
bool f64_mode(const std::string& op, const OpArgs& args) {
  if (op == "nf4_gemm_transpose") return true;
  return op == "nf4_gemm" && !(args.has("accumulate") && args.choice("accumulate") == "f32");
}

/// The output buffer's name and its logical element count.
const BufferDecl& output_of(const Program& program) {
  for (const BufferDecl& decl : program.buffers) {
    if (decl.is_output()) return decl;
  }
  FAIL("no output buffer in " << program.name);
  return program.buffers.front();
}

std::size_t logical_outputs(const BufferDecl& out) {
  return (out.readable_range().end - out.readable_range().begin) / byte_size(out.element);
}

// --- inputs ------------------------------------------------------------------------

enum class Values { Random, Edge, Huge };

const char* to_string(Values values) {
  return values == Values::Random ? "random" : values == Values::Edge ? "edge" : "huge";
}

long double largest_finite(const arith::FloatFormat& f) {
  return std::ldexp(2.0L - std::ldexp(1.0L, -f.mantissa_bits), f.max_exponent);
}

/// An activation value (exact in `f`): uniform in [-1, 1), or, for Edge, a cycle of +0,
/// -0, the smallest and largest subnormals, the smallest normal (signs alternating) and
/// random values; Huge: magnitudes in [largest/2, largest], random signs.
long double activation_value(const arith::FloatFormat& f, Values values, std::size_t i, std::mt19937& engine) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const long double sign = engine() % 2 ? -1.0L : 1.0L;
  const long double tiny = std::ldexp(1.0L, f.min_exponent - f.mantissa_bits);
  switch (values) {
    case Values::Random:
      return unit(engine);
    case Values::Edge:
      switch (i % 8) {
        case 0: return 0.0L;
        case 1: return -0.0L;
        case 2: return sign * tiny;                                             // smallest subnormal
        case 3: return sign * tiny * (std::ldexp(1.0L, f.mantissa_bits) - 1);  // largest subnormal
        case 4: return sign * std::ldexp(1.0L, f.min_exponent);                // smallest normal
        case 5: return sign * tiny * (1 + engine() % 64);                      // small subnormals
        default: return unit(engine);
      }
    case Values::Huge:
      return sign * largest_finite(f) * (0.5L + 0.5L * std::fabs(unit(engine)));
  }
  return 0;
}

template <class T>
void fill(HostBuffer& buffer, auto&& generate) {
  std::vector<T> values(buffer.bytes.size() / sizeof(T));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(generate(i));
  buffer = HostBuffer::from(buffer.element, values);
}

/// Inputs for `program` (the f16/bf16 program of `op`): activations of kind `values`,
/// finite weights, positive block scales, small integer zero points.
BufferSet make_inputs(const std::string& op, const Program& program, Values values, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), small(0.01f, 0.1f), near_one(0.5f, 2.0f);
  BufferSet buffers = runtime::allocate_buffers(program);
  for (const BufferDecl& decl : program.buffers) {
    if (decl.is_written()) continue;
    HostBuffer& buffer = buffers[decl.name];
    const std::string& name = decl.name;
    if (decl.element == ScalarType::F16 || decl.element == ScalarType::BF16) {
      const arith::FloatFormat format = arith::format_of(decl.element);
      fill<std::uint16_t>(buffer, [&](std::size_t i) {
        return arith::round_to_format(activation_value(format, values, i, engine), format);
      });
    } else if (name == "zero_point") {
      fill<std::uint32_t>(buffer, [&](std::size_t) { return engine() & 15u; });
    } else if (name == "perm") {  // act_order: a random permutation of the input features
      std::vector<std::uint32_t> perm(decl.count);
      for (std::uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), engine);
      buffer = HostBuffer::from(ScalarType::U32, perm);
    } else if (name == "zero_points") {
      fill<float>(buffer, [&](std::size_t) { return float(engine() % 16) - 4.0f + 0.25f; });
    } else if (name == "global_scale") {
      fill<float>(buffer, [&](std::size_t) { return 0.75f; });
    } else if (name == "scales" && decl.element == ScalarType::U8) {  // nvfp4: finite E4M3 codes 2^-4 .. 2^3
      fill<std::uint8_t>(buffer, [&](std::size_t) { return (0x20 + engine() % 0x40) | (engine() % 5 == 0 ? 0x80 : 0); });
    } else if (name == "scale" || name == "scales") {
      fill<float>(buffer, [&](std::size_t) { return small(engine); });
    } else if (name == "row_scales") {
      fill<float>(buffer, [&](std::size_t) { return engine() % 2 ? near_one(engine) : -near_one(engine); });
    } else if (name == "b_scales") {
      fill<float>(buffer, [&](std::size_t) { return near_one(engine); });
    } else {
      // Weights: random bits; FP8 codes with bit 6 clear are finite in both formats.
      const bool fp8 = op == "dequant_matmul_fp8";
      for (auto& byte : buffer.bytes) byte = static_cast<std::uint8_t>(engine() & (fp8 ? 0xBFu : 0xFFu));
    }
  }
  return buffers;
}

/// The f32 program's inputs: every f16/bf16 buffer widened exactly, the rest as given.
BufferSet widened(const Program& f32_program, const BufferSet& half_inputs) {
  BufferSet buffers = runtime::allocate_buffers(f32_program);
  for (const BufferDecl& decl : f32_program.buffers) {
    if (decl.is_written()) continue;
    const HostBuffer& given = half_inputs.at(decl.name);
    if (given.element == ScalarType::F16 || given.element == ScalarType::BF16) {
      REQUIRE(decl.element == ScalarType::F32);
      const arith::FloatFormat format = arith::format_of(given.element);
      std::vector<float> values;
      for (std::uint16_t bits : given.as<std::uint16_t>()) {
        // Every f16 and bf16 value is an f32 (a bf16 is the top half of its f32's bits).
        values.push_back(given.element == ScalarType::BF16 ? std::bit_cast<float>(std::uint32_t{bits} << 16)
                                                           : static_cast<float>(arith::decode(bits, format)));
      }
      buffers[decl.name] = HostBuffer::from(ScalarType::F32, values);
    } else {
      buffers[decl.name] = given;
    }
  }
  return buffers;
}

/// Runs `program` on its caller buffers from `inputs` (several host threads: split-K
/// workgroups meet in whatever order they finish) and returns the whole output buffer.
HostBuffer run(const Program& program, const BufferSet& inputs) {
  BufferSet buffers = runtime::allocate_buffers(program);
  for (const BufferDecl& decl : program.buffers) {
    if (!decl.is_written()) buffers[decl.name] = inputs.at(decl.name);
  }
  reference::RunOptions options;
  options.threads = 4;
  reference::run(program, buffers, options);
  for (const BufferDecl& decl : program.buffers) {
    if (!decl.is_scratch()) continue;
    for (std::uint8_t byte : buffers.at(decl.name).bytes) REQUIRE(byte == 0);  // left zeroed
  }
  return buffers.at(output_of(program).name);
}

double half_value(const HostBuffer& buffer, std::size_t i) {
  const std::uint16_t bits = buffer.as<std::uint16_t>()[i];
  return static_cast<double>(arith::decode(bits, arith::format_of(buffer.element)));
}

// --- the semantics check -----------------------------------------------------------

/// Checks out == round(y) element by element (see the file comment for the f64 modes).
void check_rounds_f32_result(const HostBuffer& half_out, const HostBuffer& f32_out, std::size_t count, bool f64,
                             const std::string& context) {
  const arith::FloatFormat format = arith::format_of(half_out.element);
  const std::vector<std::uint16_t> got = half_out.as<std::uint16_t>();
  const std::vector<float> y = f32_out.as<float>();
  std::size_t mismatches = 0, ties = 0;
  std::string first;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint16_t want = static_cast<std::uint16_t>(arith::round_to_format(y[i], format));
    if (got[i] == want) continue;
    if (std::isnan(y[i]) && arith::is_nan_encoding(got[i], format)) continue;
    if (f64) {
      const auto down = arith::round_to_format(y[i], format, arith::Rounding::TowardNegative);
      const auto up = arith::round_to_format(y[i], format, arith::Rounding::TowardPositive);
      const long double middle = (arith::decode(down, format) + arith::decode(up, format)) / 2;
      if (middle == static_cast<long double>(y[i]) && (got[i] == down || got[i] == up)) {
        ++ties;
        continue;
      }
    }
    if (mismatches++ == 0) {
      std::ostringstream text;
      text << "element " << i << ": f32 result " << y[i] << " rounds to 0x" << std::hex << want << ", the "
           << ir::to_string(half_out.element) << " program stored 0x" << got[i];
      first = text.str();
    }
  }
  INFO(context << ": " << mismatches << " of " << count << " outputs are not round(f32 result); first " << first
               << " (" << ties << " f64 ties)");
  CHECK(mismatches == 0);
}

/// The semantics check of one shape for one half type, on the three kinds of values.
void check_semantics(const std::string& op_name, const OpArgs& half_args, std::uint32_t seed) {
  const OpInfo& op = op_named(op_name);
  Program half = op.build(half_args);
  Program single = op.build(f32_args(half_args));
  const BufferDecl& out = output_of(half);
  REQUIRE(out.element == activation_of(half_args));
  REQUIRE(output_of(single).element == ScalarType::F32);
  const std::size_t count = logical_outputs(out);
  REQUIRE(count == logical_outputs(output_of(single)));
  for (Values values : {Values::Random, Values::Edge, Values::Huge}) {
    BufferSet inputs = make_inputs(op_name, half, values, seed + static_cast<std::uint32_t>(values));
    HostBuffer half_out = run(half, inputs);
    HostBuffer f32_out = run(single, widened(single, inputs));
    check_rounds_f32_result(half_out, f32_out, count, f64_mode(op_name, half_args),
                            describe(op_name, half_args) + " " + to_string(values));
  }
}

// --- the double oracle --------------------------------------------------------------

struct Exact {
  double value = 0;
  double magnitude = 0;  // T: sum of |term| (+ |bias|)
};

struct Oracle {
  std::vector<Exact> outputs;
  std::uint32_t reduction = 0;  // K, the terms of one output
};

template <class T>
std::vector<T> values_of(const BufferSet& in, const std::string& name) {
  return in.at(name).as<T>();
}

std::uint32_t byte_of_words(const std::vector<std::uint32_t>& words, std::uint64_t byte) {
  return (words[byte / 4] >> (8 * (byte % 4))) & 0xFFu;
}

using quantc::testing::e2m1_value;
using quantc::testing::fp8_value;
using quantc::testing::nf4_value;

/// exact = sum of terms (and the bias); each op from its definition in its header.
Oracle oracle(const std::string& op, const OpArgs& args, const BufferSet& in) {
  Oracle result;
  auto add = [](Exact& e, double term) {
    e.value += term;
    e.magnitude += std::fabs(term);
  };
  if (op == "linear_4bit" || op == "linear_4bit_affine_grouped") {
    const std::uint32_t in_dim = args.u32("k"), out_dim = args.u32("n");
    const bool grouped = op == "linear_4bit_affine_grouped";
    const std::uint32_t group = grouped ? args.u32("group_size") : 1;
    auto x = values_of<float>(in, "x"), b = values_of<float>(in, "b");
    auto w = values_of<std::uint32_t>(in, "w");
    std::vector<float> scale = grouped ? values_of<float>(in, "scale") : std::vector<float>{};
    std::vector<std::uint32_t> zero = grouped ? values_of<std::uint32_t>(in, "zero_point") : std::vector<std::uint32_t>{};
    // act_order: input feature k of w multiplies x[perm[k]].
    std::vector<std::uint32_t> perm(in_dim);
    for (std::uint32_t k = 0; k < in_dim; ++k) perm[k] = k;
    if (in.count("perm")) perm = values_of<std::uint32_t>(in, "perm");
    result.reduction = in_dim;
    for (std::uint32_t i = 0; i < out_dim; ++i) {
      Exact e;
      add(e, b[i]);
      for (std::uint32_t k = 0; k < in_dim; ++k) {
        const double q = (w[(k / 8) * out_dim + i] >> (4 * (k % 8))) & 0xF;
        const double xk = x[perm[k]];
        if (!grouped) {
          add(e, xk * q);
          continue;
        }
        const std::uint32_t sidecar = (k / group) * out_dim + i;
        e.value += xk * (q - zero[sidecar]) * scale[sidecar];
        e.magnitude += std::fabs(xk) * (q + zero[sidecar]) * std::fabs(scale[sidecar]);
      }
      result.outputs.push_back(e);
    }
  } else if (op == "int4_matvec_f32_scaled" || op == "int4_batched_matvec_f32_scaled") {
    const std::uint32_t batch = args.has("m") ? args.u32("m") : 1, rows = args.u32("n"),
                        cols = args.u32("k"), words_per_row = (cols + 7) / 8;
    auto x = values_of<float>(in, "x"), scales = values_of<float>(in, "row_scales");
    auto w = values_of<std::uint32_t>(in, "weights");
    result.reduction = cols;
    for (std::uint32_t b = 0; b < batch; ++b) {
      for (std::uint32_t r = 0; r < rows; ++r) {
        Exact e;
        for (std::uint32_t c = 0; c < cols; ++c) {
          const std::uint32_t nibble = (w[r * words_per_row + c / 8] >> (4 * (c % 8))) & 0xF;
          const double q = nibble >= 8 ? double(nibble) - 16 : double(nibble);
          add(e, double(scales[r]) * double(x[b * cols + c]) * q);
        }
        result.outputs.push_back(e);
      }
    }
  } else if (op.rfind("dequant_matmul_", 0) == 0) {
    const std::uint32_t m = args.u32("m"), k = args.u32("k"), n = args.u32("n");
    auto x = values_of<float>(in, "x");
    const std::vector<std::uint8_t>& w = in.at("w").bytes;
    result.reduction = k;
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) {
        Exact e;
        for (std::uint32_t p = 0; p < k; ++p) {
          const std::uint64_t element = std::uint64_t{p} * n + j;
          const double xv = x[i * k + p];
          const std::uint32_t nibble = (w[element / 2] >> (4 * (element % 2))) & 0xF;
          if (op == "dequant_matmul_int8" || op == "dequant_matmul_int4") {
            const std::uint32_t block = args.u32("block_size"), sidecar = (p / block) * n + j;
            const double q = op == "dequant_matmul_int8" ? double(static_cast<std::int8_t>(w[element])) : double(nibble);
            const double s = values_of<float>(in, "scales")[sidecar];
            const double z = args.boolean("asymmetric") ? values_of<float>(in, "zero_points")[sidecar] : 0.0;
            e.value += xv * (q - z) * s;
            e.magnitude += std::fabs(xv) * (std::fabs(q) + std::fabs(z)) * std::fabs(s);
          } else if (op == "dequant_matmul_fp8") {
            add(e, xv * fp8_value(w[element], args.choice("format") == "e4m3") * values_of<float>(in, "scales")[j]);
          } else {  // nvfp4
            const double scale = fp8_value(in.at("scales").bytes[(p / 16) * n + j], true);
            add(e, xv * e2m1_value(nibble) * scale * values_of<float>(in, "global_scale")[0]);
          }
        }
        result.outputs.push_back(e);
      }
    }
  } else if (op == "nf4_gemm" || op == "nf4_gemm_transpose") {
    const std::uint32_t m = args.u32("m"), n = args.u32("n"), k = args.u32("k"), blocks = k / 64;
    auto a = values_of<float>(in, "a"), scales = values_of<float>(in, "b_scales");
    auto words = values_of<std::uint32_t>(in, "b_nf4");
    auto b_at = [&](std::uint32_t row, std::uint32_t column) {  // dequantized B[row, column], exactly
      const std::uint32_t block = column * blocks + row / 64;
      const std::uint32_t byte = byte_of_words(words, std::uint64_t{block} * 32 + (row % 64) / 2);
      return nf4_value(byte >> (4 * (row % 2))) * double(scales[block]);
    };
    const bool transpose = op == "nf4_gemm_transpose";
    result.reduction = transpose ? n : k;
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t o = 0; o < (transpose ? k : n); ++o) {
        Exact e;
        for (std::uint32_t r = 0; r < result.reduction; ++r) {
          add(e, transpose ? double(a[i * n + r]) * b_at(o, r) : double(a[i * k + r]) * b_at(r, o));
        }
        result.outputs.push_back(e);
      }
    }
  } else {
    FAIL("no oracle for " << op);
  }
  return result;
}

struct HalfBound {
  double u, eta, overflow;
};

HalfBound half_bound(ScalarType type) {
  if (type == ScalarType::F16) return {0x1p-11, 0x1p-25, 65520.0};
  return {0x1p-8, 0x1p-134, std::ldexp(1.0, 128) - std::ldexp(1.0, 119)};
}

/// |out - exact| within the bound of the file comment, or +-inf past the threshold.
void check_against_oracle(const Oracle& expected, const HostBuffer& out, const std::string& context) {
  const HalfBound h = half_bound(out.element);
  const double chain = 2.0 * expected.reduction + 32;
  std::size_t checked_overflow = 0;
  for (std::size_t i = 0; i < expected.outputs.size(); ++i) {
    const Exact& e = expected.outputs[i];
    const double b = 2 * kU * chain * e.magnitude;
    const double got = half_value(out, i);
    INFO(context << " output " << i << ": " << got << ", exact " << e.value << ", f32 bound " << b);
    if (std::fabs(e.value) - b > h.overflow) {
      CHECK(std::isinf(got));
      CHECK(std::signbit(got) == std::signbit(e.value));
      ++checked_overflow;
      continue;
    }
    if (std::fabs(e.value) + b >= h.overflow) continue;  // either side of the threshold is right
    CHECK(std::fabs(got - e.value) <= b + h.u * (std::fabs(e.value) + b) + h.eta);
  }
  INFO(context << ": " << checked_overflow << " outputs past the overflow threshold");
}

/// The accuracy and fast-vs-seed checks of one shape (schedule "fast" in `args`).
void check_accuracy(const std::string& op_name, const OpArgs& half_args, Values values, std::uint32_t seed) {
  const OpInfo& op = op_named(op_name);
  Program program = op.build(half_args);
  BufferSet inputs = make_inputs(op_name, program, values, seed);
  HostBuffer out = run(program, inputs);
  Program single = op.build(f32_args(half_args));
  BufferSet f32_inputs = widened(single, inputs);
  const Oracle expected = oracle(op_name, half_args, f32_inputs);
  REQUIRE(expected.outputs.size() == logical_outputs(output_of(program)));
  const std::string context = describe(op_name, half_args) + " " + to_string(values);
  check_against_oracle(expected, out, context);
  if (!half_args.has("schedule") || half_args.choice("schedule") != "fast") return;
  OpArgs seed_args = half_args;
  seed_args.set("schedule", std::string("seed"));
  Program seed_program = op.build(seed_args);
  REQUIRE(seed_program.caller_buffers() == program.caller_buffers());  // the same files feed either schedule
  HostBuffer seed_out = run(seed_program, inputs);
  const HalfBound h = half_bound(out.element);
  const double chain = 2.0 * expected.reduction + 32;
  for (std::size_t i = 0; i < expected.outputs.size(); ++i) {
    const double fast = half_value(out, i), seed_value = half_value(seed_out, i);
    const double b = 2 * kU * chain * expected.outputs[i].magnitude;
    INFO(context << " output " << i << ": fast " << fast << ", seed " << seed_value << ", exact "
                 << expected.outputs[i].value);
    if (std::fabs(expected.outputs[i].value) - b > h.overflow) {  // both past the threshold: the same inf
      CHECK(std::isinf(fast));
      CHECK(fast == seed_value);
      continue;
    }
    if (std::fabs(expected.outputs[i].value) + b >= h.overflow) continue;  // either side of it is right
    CHECK(std::fabs(fast - seed_value) <= 2 * b + h.u * (std::fabs(fast) + std::fabs(seed_value)) + 2 * h.eta);
  }
}

struct Shape {
  std::string op;
  OpArgs args;  // schedule included, activation not
};

OpArgs block(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size, bool asymmetric,
             const char* schedule) {
  OpArgs args = OpArgs::dims({{"m", m}, {"k", k}, {"n", n}, {"block_size", block_size}});
  args.set("asymmetric", asymmetric);
  return scheduled(args, schedule);
}

OpArgs with_choice(OpArgs args, const char* key, const char* value) {
  args.set(key, std::string(value));
  return args;
}

OpArgs with_flag(OpArgs args, const char* key) {
  args.set(key, true);
  return args;
}

/// Shapes beyond the registry's small ones: split-K, sliced groups, batch tiles, partial
/// rows and columns, both x paths of the dequant GEMV (vector and scalar), both nf4_gemm
/// modes, and seed shapes with several rows.
std::vector<Shape> accuracy_shapes() {
  using D = std::initializer_list<std::pair<const char*, std::uint32_t>>;
  auto dims = [](D values) { return OpArgs::dims(values); };
  return {
      {"linear_4bit", scheduled(dims({{"k", 136}, {"n", 16}}), "fast")},
      {"linear_4bit", scheduled(dims({{"k", 1024}, {"n", 64}}), "fast")},
      {"linear_4bit", scheduled(dims({{"k", 64}, {"n", 300}}), "seed")},
      {"linear_4bit_affine_grouped", scheduled(dims({{"k", 200}, {"n", 8}, {"group_size", 64}}), "fast")},
      {"linear_4bit_affine_grouped", scheduled(dims({{"k", 1024}, {"n", 32}, {"group_size", 128}}), "fast")},
      {"linear_4bit_affine_grouped", scheduled(dims({{"k", 72}, {"n", 9}, {"group_size", 24}}), "seed")},
      {"linear_4bit_affine_grouped",
       with_flag(scheduled(dims({{"k", 1024}, {"n", 32}, {"group_size", 128}}), "fast"), "act_order")},
      {"linear_4bit_affine_grouped",
       with_flag(scheduled(dims({{"k", 72}, {"n", 9}, {"group_size", 24}}), "seed"), "act_order")},
      {"int4_matvec_f32_scaled", scheduled(dims({{"n", 5}, {"k", 1056}}), "fast")},
      {"int4_matvec_f32_scaled", scheduled(dims({{"n", 9}, {"k", 263}}), "seed")},
      {"int4_batched_matvec_f32_scaled", scheduled(dims({{"m", 3}, {"n", 6}, {"k", 256}}), "fast")},
      {"int4_batched_matvec_f32_scaled", scheduled(dims({{"m", 1}, {"n", 8}, {"k", 512}}), "fast")},
      {"int4_batched_matvec_f32_scaled", scheduled(dims({{"m", 5}, {"n", 9}, {"k", 71}}), "seed")},
      {"dequant_matmul_int8", block(1, 1024, 32, 16, true, "fast")},   // split-K over 2
      {"dequant_matmul_int8", block(1, 37, 48, 16, false, "fast")},    // scalar x loads
      {"dequant_matmul_int8", block(4, 7, 130, 3, false, "seed")},
      {"dequant_matmul_int4", block(1, 2050, 96, 16, false, "fast")},  // split-K over 4, partial warp
      {"dequant_matmul_int4", block(1, 64, 64, 32, true, "fast")},
      {"dequant_matmul_int4", block(5, 64, 33, 32, true, "seed")},
      {"dequant_matmul_fp8", with_choice(scheduled(dims({{"m", 1}, {"k", 2048}, {"n", 32}}), "fast"), "format", "e4m3")},
      {"dequant_matmul_fp8", with_choice(scheduled(dims({{"m", 1}, {"k", 33}, {"n", 48}}), "fast"), "format", "e5m2")},
      {"dequant_matmul_fp8", with_choice(scheduled(dims({{"m", 6}, {"k", 33}, {"n", 129}}), "seed"), "format", "e4m3")},
      {"dequant_matmul_nvfp4", scheduled(dims({{"m", 1}, {"k", 4100}, {"n", 64}}), "fast")},
      {"dequant_matmul_nvfp4", scheduled(dims({{"m", 1}, {"k", 23}, {"n", 96}}), "fast")},
      {"dequant_matmul_nvfp4", scheduled(dims({{"m", 3}, {"k", 20}, {"n", 9}}), "seed")},
      {"nf4_gemm", with_choice(scheduled(dims({{"m", 1}, {"n", 12}, {"k", 192}}), "fast"), "accumulate", "f64")},
      {"nf4_gemm", with_choice(scheduled(dims({{"m", 1}, {"n", 5}, {"k", 1024}}), "fast"), "accumulate", "f32")},
      {"nf4_gemm", with_choice(scheduled(dims({{"m", 3}, {"n", 33}, {"k", 128}}), "seed"), "accumulate", "f64")},
      {"nf4_gemm", with_choice(scheduled(dims({{"m", 2}, {"n", 5}, {"k", 192}}), "seed"), "accumulate", "f32")},
      {"nf4_gemm_transpose", scheduled(dims({{"m", 1}, {"n", 40}, {"k", 128}}), "fast")},
      {"nf4_gemm_transpose", scheduled(dims({{"m", 1}, {"n", 300}, {"k", 128}}), "fast")},  // split-K over 8
      {"nf4_gemm_transpose", scheduled(dims({{"m", 3}, {"n", 33}, {"k", 128}}), "seed")},
  };
}

const char* name_of(ScalarType type) { return type == ScalarType::F16 ? "f16" : "bf16"; }

/// Loads of buffer `buffer` in a program: (type, reinterpreting).
struct LoadCollector : IRVisitor {
  std::string buffer;
  std::vector<std::pair<Type, bool>> loads;
  void visit_Load(const Load& node) override {
    if (node.buffer == buffer) loads.emplace_back(node.type, node.reinterpret);
    IRVisitor::visit_Load(node);
  }
};

}  // namespace

TEST_CASE("every linear and matmul op takes f16 and bf16 activations on both schedules", "[activation]") {
  std::size_t ops = 0;
  for (const OpInfo& op : OpRegistry::builtin().all()) {
    if (!has_activation(op)) continue;
    ++ops;
    bool seed_shapes[2] = {false, false}, fast_shapes[2] = {false, false};
    for (const OpArgs& args : op.test_shapes) {
      if (!args.has("activation") || args.choice("activation") == "f32") continue;
      const int type = args.choice("activation") == "f16" ? 0 : 1;
      (args.choice("schedule") == "fast" ? fast_shapes : seed_shapes)[type] = true;
      Program program = op.build(args);
      INFO(describe(op.name, args));
      // x (or a), the bias and the output hold the activation type; the weights do not change.
      Program single = op.build(f32_args(args));
      REQUIRE(program.buffers.size() == single.buffers.size());
      for (std::size_t i = 0; i < program.buffers.size(); ++i) {
        const BufferDecl& half = program.buffers[i];
        const BufferDecl& f32 = single.buffers[i];
        CHECK(half.name == f32.name);
        CHECK(half.count == f32.count);
        const bool activation_typed = half.name == "x" || half.name == "a" || half.name == "b" || half.is_output();
        CHECK(half.element == (activation_typed ? activation_of(args) : f32.element));
      }
    }
    INFO(op.name << ": registry test shapes for f16/bf16 on the seed and the fast schedule");
    CHECK(seed_shapes[0]);
    CHECK(seed_shapes[1]);
    CHECK(fast_shapes[0]);
    CHECK(fast_shapes[1]);
  }
  CHECK(ops == 10);
}

TEST_CASE("f16/bf16 outputs are the f32 result on widened inputs rounded once (registry shapes)", "[activation]") {
  std::uint32_t seed = 100;
  for (const OpInfo& op : OpRegistry::builtin().all()) {
    for (const OpArgs& args : op.test_shapes) {
      if (!args.has("activation") || args.choice("activation") == "f32") continue;
      DYNAMIC_SECTION(describe(op.name, args)) { check_semantics(op.name, args, seed); }
      seed += 7;
    }
  }
}

TEST_CASE("f16/bf16 outputs are the f32 result on widened inputs rounded once (larger shapes)", "[activation]") {
  std::uint32_t seed = 500;
  for (const Shape& shape : accuracy_shapes()) {
    for (ScalarType type : {ScalarType::F16, ScalarType::BF16}) {
      OpArgs args = activated(shape.args, name_of(type));
      DYNAMIC_SECTION(describe(shape.op, args)) { check_semantics(shape.op, args, seed); }
      seed += 3;
    }
  }
}

TEST_CASE("f16/bf16 outputs are within the stated bound of a double oracle, fast within it of the seed",
          "[activation]") {
  std::uint32_t seed = 900;
  for (const Shape& shape : accuracy_shapes()) {
    for (ScalarType type : {ScalarType::F16, ScalarType::BF16}) {
      OpArgs args = activated(shape.args, name_of(type));
      DYNAMIC_SECTION(describe(shape.op, args)) {
        check_accuracy(shape.op, args, Values::Random, seed);
        check_accuracy(shape.op, args, Values::Edge, seed + 1);
        // f16 magnitudes near 65504: outputs round to inf past 65520. (bf16's range is
        // f32's, so its largest values overflow the f32 sums themselves: the semantics
        // test covers them.)
        if (type == ScalarType::F16) check_accuracy(shape.op, args, Values::Huge, seed + 2);
      }
      seed += 5;
    }
  }
}

TEST_CASE("rounding at the top of the range: the largest finite stays, the tie and past it give inf", "[activation]") {
  // linear_4bit with x = (top, 0, ..., 0) and nibble 0 of column i = q[i]: out[i] = b[i] + top * q[i],
  // each sum exact in f32 (or an f32 overflow), then rounded once. top is the largest finite
  // value of the type and ulp its spacing there (f16: 65504 and 32).
  for (const char* schedule : {"seed", "fast"}) {
    for (ScalarType type : {ScalarType::F16, ScalarType::BF16}) {
      const arith::FloatFormat format = arith::format_of(type);
      const long double top = largest_finite(format);
      const long double ulp = std::ldexp(1.0L, format.max_exponent - format.mantissa_bits);
      const long double tiny = std::ldexp(1.0L, format.min_exponent - format.mantissa_bits);
      const std::vector<std::uint32_t> q = {1, 1, 1, 2, 1, 0, 1, 0};
      const std::vector<long double> b = {0.0L, ulp / 4, -top, 0.0L, ulp / 2, -0.0L, -ulp / 2, tiny};
      auto encode = [&](long double v) { return static_cast<std::uint16_t>(arith::round_to_format(v, format)); };
      std::vector<std::uint16_t> x_bits(8, 0), b_bits;
      x_bits[0] = encode(top);
      for (long double v : b) b_bits.push_back(encode(v));
      OpArgs args = activated(scheduled(OpArgs::dims({{"k", 8}, {"n", 8}}), schedule), name_of(type));
      Program program = op_named("linear_4bit").build(args);
      BufferSet buffers = runtime::allocate_buffers(program);
      buffers["x"] = HostBuffer::from(type, x_bits);
      buffers["w"] = HostBuffer::from(ScalarType::U32, q);  // word i = column i's nibbles for k = 0..7
      buffers["b"] = HostBuffer::from(type, b_bits);
      reference::run(program, buffers);
      const std::vector<std::uint16_t> out = buffers.at("out").as<std::uint16_t>();
      const auto inf = static_cast<std::uint16_t>(format.infinity());
      INFO(name_of(type) << " " << schedule);
      CHECK(out[0] == encode(top));            // the largest finite value stays
      CHECK(out[1] == encode(top));            // top + ulp/4 rounds down to it
      CHECK(out[2] == 0);                      // -top + top = +0
      CHECK(out[3] == inf);                    // 2 * top: inf (bf16: the f32 sum itself overflows)
      CHECK(out[4] == inf);                    // top + ulp/2, the tie, rounds to the even neighbour: inf
      CHECK(out[5] == 0);                      // -0 + top * 0: +0, the f32 sum's sign
      CHECK(out[6] == encode(top - ulp));      // top - ulp/2, a tie, rounds to the even top - ulp
      CHECK(out[7] == encode(tiny));           // the smallest subnormal passes through exactly
      if (type == ScalarType::F16) {
        CHECK(out[0] == 0x7BFF);  // 65504
        CHECK(out[4] == 0x7C00);  // 65520 -> inf
        CHECK(out[6] == 0x7BFE);  // 65488 -> 65472
        CHECK(out[7] == 0x0001);  // 2^-24
      }
    }
  }
}

TEST_CASE("the fast schedules stream f16/bf16 activations as u32 words", "[activation]") {
  // x (a) is read with reinterpreting u32 vector loads of the f32 program's width or
  // wider, never half by half (except the dequant GEMV's scalar path for k % 4 != 0 and
  // the transpose's one activation per column).
  struct Expectation {
    std::string op;
    OpArgs args;
    std::string buffer;
    unsigned lanes;
  };
  const std::vector<Expectation> expectations = {
      {"linear_4bit", scheduled(OpArgs::dims({{"k", 136}, {"n", 16}}), "fast"), "x", 4},
      {"int4_matvec_f32_scaled", scheduled(OpArgs::dims({{"n", 5}, {"k", 1056}}), "fast"), "x", 4},
      {"dequant_matmul_int8", block(1, 64, 32, 32, true, "fast"), "x", 2},
      {"nf4_gemm", scheduled(OpArgs::dims({{"m", 1}, {"n", 12}, {"k", 192}}), "fast"), "a", 4},
  };
  for (const Expectation& e : expectations) {
    for (ScalarType type : {ScalarType::F16, ScalarType::BF16}) {
      Program program = op_named(e.op).build(activated(e.args, name_of(type)));
      LoadCollector loads;
      loads.buffer = e.buffer;
      loads.visit(program.entry);
      INFO(e.op << " " << name_of(type));
      REQUIRE(!loads.loads.empty());
      for (const auto& [load_type, reinterpret] : loads.loads) {
        CHECK(reinterpret);
        CHECK(load_type == Type(ScalarType::U32, e.lanes));
      }
    }
  }
}
