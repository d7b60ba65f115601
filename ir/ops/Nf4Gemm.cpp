#include "ir/ops/Nf4Gemm.h"

#include <fmt/format.h>

#include <limits>
#include <string>

#include "ir/Builder.h"
#include "ir/ops/Nibbles.h"
#include "ir/ops/Quantize.h"

namespace quantc::ir::ops {
namespace {

constexpr std::uint32_t kWorkgroupInvocations = 256;
constexpr std::uint32_t kBlockSize = 64;       // NF4 values per scale block along k
constexpr std::uint32_t kWordsPerBlock = 8;    // 64 nibbles = 32 bytes = 8 u32 words
constexpr std::uint32_t kNibblesPerWord = 8;
constexpr std::uint32_t kMaxGridY = 65535;
constexpr char kSeedId[] = "aprender-gpu::nf4_gemm";

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
Expr dequantize(const Expr& code, const Expr& scale) {
  return Lookup::make(ScalarType::F32, nf4_lookup_table(), code) * scale;
}

/// acc + a * weight, in the accumulator's type (f64: exact product, one rounding).
Expr accumulate(const Expr& acc, const Expr& a, const Expr& weight) {
  if (acc.type() == ScalarType::F64) return fma(cast(ScalarType::F64, a), cast(ScalarType::F64, weight), acc);
  return fma(a, weight, acc);
}

Expr zero_accumulator(Nf4Accumulation accumulation) {
  return accumulation == Nf4Accumulation::F64 ? f64(0.0) : f32(0.0f);
}

}  // namespace

Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k, Nf4Accumulation accumulation) {
  const char* op = "nf4_gemm";
  check_dims(op, m, n, k);
  check_count(op, "m*k", m, k);
  check_count(op, "m*n", m, n);
  check_count(op, "n*k/8", n, k / 8);
  const std::uint32_t blocks_per_column = k / kBlockSize;

  ProgramBuilder program(accumulation == Nf4Accumulation::F64 ? "nf4_gemm" : "nf4_gemm_f32_accumulate");
  BufferRef a = program.input("a", ScalarType::F32, m * k);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", ScalarType::F32, m * n);
  program.launch({kWorkgroupInvocations, 1, 1}, {ceil_div(n, kWorkgroupInvocations), m, 1});
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
              Expr weight = nibbles.let("weight", dequantize(code, scale));
              nibbles.assign(acc, accumulate(acc, a[k_base + position], weight));
            });
          });
        });
        then.store(c, row * n + column, cast(ScalarType::F32, acc));
      });
    });
  });
  return program.build();
}

Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  const char* op = "nf4_gemm_transpose";
  check_dims(op, m, n, k);
  check_count(op, "m*n", m, n);
  check_count(op, "m*k", m, k);
  check_count(op, "n*k/8", n, k / 8);
  const std::uint32_t blocks_per_column = k / kBlockSize;

  ProgramBuilder program("nf4_gemm_transpose");
  BufferRef a = program.input("a", ScalarType::F32, m * n);
  BufferRef b_nf4 = program.input("b_nf4", ScalarType::U32, n * (k / 8));
  BufferRef b_scales = program.input("b_scales", ScalarType::F32, n * blocks_per_column);
  BufferRef c = program.output("c", ScalarType::F32, m * k);
  program.launch({kWorkgroupInvocations, 1, 1}, {ceil_div(k, kWorkgroupInvocations), m, 1});
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
          Expr weight = columns.let("weight", dequantize(code, b_scales[block_index]));
          columns.assign(acc, accumulate(acc, a[a_row + b_column], weight));
        });
        then.store(c, row * k + b_row, cast(ScalarType::F32, acc));
      });
    });
  });
  return program.build();
}

namespace {
OpArgs shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) { return OpArgs::dims({{"m", m}, {"n", n}, {"k", k}}); }
OpArgs shape(std::uint32_t m, std::uint32_t n, std::uint32_t k, const char* accumulate) {
  OpArgs args = shape(m, n, k);
  args.set("accumulate", std::string(accumulate));
  return args;
}

Nf4Accumulation parse_accumulation(const std::string& text) {
  if (text == "f64") return Nf4Accumulation::F64;
  if (text == "f32") return Nf4Accumulation::F32;
  throw OpError(fmt::format("Fix: nf4_gemm accumulate=\"{}\" is not supported; use \"f64\" or \"f32\".", text));
}
}  // namespace

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
  const std::string layout = "B k x n in 64-row blocks, column-major block order: b_scales[col*(k/64)+block], "
                             "b_nf4 bytes (col*(k/64)+block)*32 + t, low nibble first (read as u32 words)";
  std::vector<OpInfo> ops;
  ops.push_back(OpInfo{
      .name = "nf4_gemm",
      .summary = "C[m,n] = A[m,k] @ dequant(B_nf4[k,n]), NF4 code book in registers",
      .layout = layout + "; A, C row-major; one invocation per output",
      .seed = seed,
      .params = {m, n, k, accumulate},
      .buffers = {{"a", "input", ScalarType::F32, "m*k"},
                  {"b_nf4", "weight", ScalarType::U32, "n*k/8"},
                  {"b_scales", "sidecar", ScalarType::F32, "n*k/64"},
                  {"c", "output", ScalarType::F32, "m*n"}},
      .build = [](const OpArgs& args) {
        Nf4Accumulation accumulation =
            args.has("accumulate") ? parse_accumulation(args.choice("accumulate")) : Nf4Accumulation::F64;
        return nf4_gemm(args.u32("m"), args.u32("n"), args.u32("k"), accumulation);
      },
      .test_shapes = {shape(1, 1, 64, "f64"), shape(3, 33, 128, "f64"), shape(2, 5, 192, "f32"),
                      shape(1, 300, 64, "f64")},
  });
  ops.push_back(OpInfo{
      .name = "nf4_gemm_transpose",
      .summary = "C[m,k] = A[m,n] @ dequant(B_nf4[k,n])^T (backward pass), f64 accumulation",
      .layout = layout + "; A, C row-major; one invocation per output",
      .seed = seed,
      .params = {m, n, k},
      .buffers = {{"a", "input", ScalarType::F32, "m*n"},
                  {"b_nf4", "weight", ScalarType::U32, "n*k/8"},
                  {"b_scales", "sidecar", ScalarType::F32, "n*k/64"},
                  {"c", "output", ScalarType::F32, "m*k"}},
      .build = [](const OpArgs& args) { return nf4_gemm_transpose(args.u32("m"), args.u32("n"), args.u32("k")); },
      .test_shapes = {shape(1, 1, 64), shape(3, 33, 128), shape(2, 3, 320)},
  });
  return ops;
}

}  // namespace quantc::ir::ops
