#include "ir/ops/DequantMatmul.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/Builder.h"
#include "ir/ops/Checks.h"
#include "ir/ops/Nibbles.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kWorkgroupInvocations = 128;  // along n
constexpr std::uint32_t kMaxTileRows = 4;             // rows of out per invocation
constexpr std::uint32_t kNvfp4BlockSize = 16;

constexpr char kInt8Id[] = "rlx::dequant_matmul_int8";
constexpr char kInt4Id[] = "rlx::dequant_matmul_int4";
constexpr char kFp8Id[] = "rlx::dequant_matmul_fp8";
constexpr char kNvfp4Id[] = "rlx::dequant_matmul_nvfp4";

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
  checked_count(op, "ceil(n/128)*128 (column invocations)", ceil_div(dims.n, kWorkgroupInvocations),
                kWorkgroupInvocations);
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
  program.launch({kWorkgroupInvocations, 1, 1},
                 {ceil_div(dims.n, kWorkgroupInvocations), ceil_div(dims.m, tile), 1});
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
              k_body.assign(acc[t], acc[t] + decoder.product(x[x_base[t] + p], weight));
            }
          });
        });
        for (std::uint32_t t = 0; t < tile; ++t) {
          Expr row = row_begin + double(t);
          auto store = [&](Body& target) { target.store(out, row * double(dims.n) + column, acc[t]); };
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
                             std::uint32_t block_size, bool asymmetric, ScalarType weight_element,
                             std::uint32_t weight_count,
                             const std::function<Expr(Body&, const BufferRef&, const Expr& element)>& code) {
  const std::uint32_t blocks = ceil_div(dims.k, block_size);
  const std::uint32_t sidecar_count = checked_count(name, "ceil(k/block_size)*n (sidecar elements)", blocks, dims.n);

  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, dims.m * dims.k);
  BufferRef w = program.input("w", weight_element, weight_count);
  BufferRef scales = program.input("scales", ScalarType::F32, sidecar_count);
  BufferRef zero_points;
  if (asymmetric) zero_points = program.input("zero_points", ScalarType::F32, sidecar_count);
  BufferRef out = program.output("out", ScalarType::F32, dims.m * dims.n);

  Expr block_scale, block_zero_point;
  WeightDecoder decoder;
  decoder.block_size = block_size;
  decoder.begin_block = [&](Body& block_body, const Expr& block, const Expr& column) {
    Expr sidecar = block_body.let("sidecar", block * double(dims.n) + column);
    block_scale = block_body.let("block_scale", scales[sidecar]);
    if (asymmetric) block_zero_point = block_body.let("block_zero_point", zero_points[sidecar]);
  };
  decoder.weight = [&](Body& k_body, const Expr& p, const Expr& column) {
    Expr value = k_body.let("code", code(k_body, w, p * double(dims.n) + column));
    return asymmetric ? (value - block_zero_point) * block_scale : value * block_scale;
  };
  emit_tiled_matmul(program, op_id, dims, tile, x, out, decoder);
  return program.build();
}

void check_block_size(const char* op, std::uint32_t block_size) {
  require_nonzero(op, "block_size", block_size, "every k-block needs at least one element; pass block_size >= 1");
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

Program dequant_matmul_int8(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric) {
  const char* name = "dequant_matmul_int8";
  check_block_size(name, block_size);
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  return block_affine_program(name, kInt8Id, dims, tile, block_size, asymmetric, ScalarType::I8, k * n,
                              [](Body&, const BufferRef& w, const Expr& element) {
                                return cast(ScalarType::F32, w[element]);
                              });
}

Program dequant_matmul_int4(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                           bool asymmetric) {
  const char* name = "dequant_matmul_int4";
  check_block_size(name, block_size);
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  return block_affine_program(name, kInt4Id, dims, tile, block_size, asymmetric, ScalarType::U8,
                              ceil_div(k * n, 2),
                              [](Body& body, const BufferRef& w, const Expr& element) {
                                return cast(ScalarType::F32, byte_buffer_nibble(body, w, element));
                              });
}

Program dequant_matmul_fp8(std::uint32_t m, std::uint32_t k, std::uint32_t n, Fp8Format format) {
  const char* name = "dequant_matmul_fp8";
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, m * k);
  BufferRef w = program.input("w", ScalarType::U8, k * n);
  BufferRef scales = program.input("scales", ScalarType::F32, n);
  BufferRef out = program.output("out", ScalarType::F32, m * n);

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
  emit_tiled_matmul(program, kFp8Id, dims, tile, x, out, decoder);
  return program.build();
}

Program dequant_matmul_nvfp4(std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  const char* name = "dequant_matmul_nvfp4";
  const MatmulDims dims{m, k, n};
  const std::uint32_t tile = check_matmul_dims(name, dims);
  const std::uint32_t blocks = ceil_div(k, kNvfp4BlockSize);
  const std::uint32_t scale_count = checked_count(name, "ceil(k/16)*n (scale bytes)", blocks, n);
  ProgramBuilder program(name);
  BufferRef x = program.input("x", ScalarType::F32, m * k);
  BufferRef w = program.input("w", ScalarType::U8, ceil_div(k * n, 2));
  BufferRef scales = program.input("scales", ScalarType::U8, scale_count);
  BufferRef global_scale = program.input("global_scale", ScalarType::F32, 1);
  BufferRef out = program.output("out", ScalarType::F32, m * n);

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
  emit_tiled_matmul(program, kNvfp4Id, dims, tile, x, out, decoder);
  return program.build();
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
OpArgs fp8_shape(std::uint32_t m, std::uint32_t k, std::uint32_t n, const char* format) {
  OpArgs args = dims_shape(m, k, n);
  args.set("format", std::string(format));
  return args;
}

Fp8Format fp8_format_arg(const OpArgs& args) {
  const std::string& text = args.choice("format");
  if (auto format = parse_fp8_format(text)) return *format;
  throw OpError(fmt::format("Fix: dequant_matmul_fp8 format=\"{}\" is unknown; use \"e4m3\" or \"e5m2\".", text));
}
}  // namespace

std::vector<OpInfo> dequant_matmul_ops() {
  const std::string seed = "rlx-cpu thunk.rs dequant_matmul_*";
  const std::string layout = "x [m, k], W [k, n], out [m, n], all row-major; invocation = 1 column x 4 rows";
  ParamSpec m{"m", ParamType::U32, "activation rows", "", "> 0, ceil(m/4) <= 65535", {}};
  ParamSpec k{"k", ParamType::U32, "reduction length", "", "> 0", {}};
  ParamSpec n{"n", ParamType::U32, "output columns", "", "> 0", {}};
  ParamSpec block_size{"block_size", ParamType::U32, "consecutive k sharing one scale/zero point", "", "> 0", {}};
  ParamSpec asymmetric{"asymmetric", ParamType::Bool, "subtract a per-block f32 zero point", "false", "", {}};
  ParamSpec format{"format", ParamType::Choice, "FP8 encoding of W", "\"e4m3\"", "", {"e4m3", "e5m2"}};
  const std::string sidecar_count = "ceil(k/block_size) * n";
  const BufferSpec x{"x", "input", ScalarType::F32, "m * k"};
  const BufferSpec out{"out", "output", ScalarType::F32, "m * n"};
  const BufferSpec scales{"scales", "sidecar", ScalarType::F32, sidecar_count};
  const BufferSpec zero_points{"zero_points", "sidecar", ScalarType::F32, sidecar_count + " (asymmetric only)"};

  auto build_block = [](auto constructor) {
    return [constructor](const OpArgs& args) {
      return constructor(args.u32("m"), args.u32("k"), args.u32("n"), args.u32("block_size"),
                         args.boolean("asymmetric"));
    };
  };
  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "dequant_matmul_int8",
      .summary = "out = x @ ((f32(W) - zero_point) * scale), W i8 with per-block sidecars",
      .layout = layout + "; W i8 element p*n + j; sidecars [ceil(k/block_size), n]",
      .seed = seed,
      .params = {m, k, n, block_size, asymmetric},
      .buffers = {x, {"w", "weight", ScalarType::I8, "k * n"}, scales, zero_points, out},
      .build = build_block(dequant_matmul_int8),
      .test_shapes = {block_shape(1, 8, 4, 4, false), block_shape(3, 20, 9, 8, true),
                      block_shape(5, 64, 33, 32, true), block_shape(4, 7, 130, 3, false)},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_int4",
      .summary = "out = x @ ((f32(W4) - zero_point) * scale), unsigned nibbles with per-block sidecars",
      .layout = layout + "; element p*n + j is nibble (low first) of byte (p*n + j)/2",
      .seed = seed,
      .params = {m, k, n, block_size, asymmetric},
      .buffers = {x, {"w", "weight", ScalarType::U8, "ceil(k*n / 2)"}, scales, zero_points, out},
      .build = build_block(dequant_matmul_int4),
      .test_shapes = {block_shape(1, 8, 4, 4, false), block_shape(3, 20, 9, 8, true),
                      block_shape(5, 64, 33, 32, true), block_shape(2, 9, 7, 5, false)},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_fp8",
      .summary = "out[i, j] = sum_p (x[i, p] * fp8(W[p, j])) * scales[j] (OCP E4M3 or E5M2)",
      .layout = layout + "; W u8 codes element p*n + j; scales [n]",
      .seed = seed,
      .params = {m, k, n, format},
      .buffers = {x, {"w", "weight", ScalarType::U8, "k * n"}, {"scales", "sidecar", ScalarType::F32, "n"}, out},
      .build =
          [](const OpArgs& args) {
            return dequant_matmul_fp8(args.u32("m"), args.u32("k"), args.u32("n"), fp8_format_arg(args));
          },
      .test_shapes = {fp8_shape(1, 8, 4, "e4m3"), fp8_shape(3, 9, 7, "e5m2"), fp8_shape(6, 33, 129, "e4m3"),
                      fp8_shape(2, 16, 9, "e5m2")},
  });
  ops.push_back(OpInfo{
      .name = "dequant_matmul_nvfp4",
      .summary = "out = x @ (e2m1(W4) * e4m3(block scale) * global_scale), 16-element k blocks",
      .layout = layout + "; W nibbles as int4; scales u8 [ceil(k/16), n]; global_scale [1]",
      .seed = seed,
      .params = {m, k, n},
      .buffers = {x,
                  {"w", "weight", ScalarType::U8, "ceil(k*n / 2)"},
                  {"scales", "sidecar", ScalarType::U8, "ceil(k/16) * n"},
                  {"global_scale", "sidecar", ScalarType::F32, "1"},
                  out},
      .build = [](const OpArgs& args) { return dequant_matmul_nvfp4(args.u32("m"), args.u32("k"), args.u32("n")); },
      .test_shapes = {dims_shape(1, 16, 4), dims_shape(3, 20, 9), dims_shape(5, 64, 33), dims_shape(2, 7, 3)},
  });
  return ops;
}

}  // namespace quantc::ir::ops
