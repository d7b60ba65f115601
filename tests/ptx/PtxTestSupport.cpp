#include "tests/ptx/PtxTestSupport.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iterator>
#include <map>
#include <sstream>
#include <variant>

#include "ir/Builder.h"
#include "lower/driver/Compiler.h"
#include "lower/LowerToPtx.h"

namespace quantc::testing {

using namespace quantc::ir;

// What `quantc emit` produces by default: the -O2 pipeline, verified after every pass.
ir::Program program_for_test(const ops::OpInfo& op, const ops::OpArgs& args) {
  lower::PassOptions options;
  options.verify_each = true;
  return lower::optimize(op.build(args), options);
}

std::string emit_for_test(const ir::Program& program, const ptx::Target& target) {
  return lower::lower_to_ptx(program, target);
}

std::vector<ptx::Target> sweep_targets() {
  const char* list = std::getenv("QUANTC_SWEEP_TARGETS");
  if (list == nullptr || *list == '\0') return ptx::supported_targets();
  std::vector<ptx::Target> targets;
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) targets.push_back(ptx::parse_target(name));
  return targets;
}

std::vector<SweepConfiguration> sweep_configurations() {
  constexpr lower::OptimizationLevel kLevels[] = {lower::OptimizationLevel::O0, lower::OptimizationLevel::O1,
                                                  lower::OptimizationLevel::O2};
  const char* one_level = std::getenv("QUANTC_SWEEP_ONE_LEVEL");
  const bool diagonal = one_level != nullptr && std::string(one_level) == "1";
  std::vector<SweepConfiguration> configurations;
  const std::vector<ptx::Target> targets = sweep_targets();
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (diagonal) {
      configurations.push_back({targets[t], kLevels[t % std::size(kLevels)]});
    } else {
      for (lower::OptimizationLevel level : kLevels) configurations.push_back({targets[t], level});
    }
  }
  return configurations;
}

bool ptxas_or_skip() {
  if (ptx::ptxas_available()) return true;
  const char* require = std::getenv("QUANTC_REQUIRE_PTXAS");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("ptxas not found on PATH nor in the CUDA toolkit bin directory, and QUANTC_REQUIRE_PTXAS=1");
  }
  WARN("SKIPPED: ptxas not found (install the CUDA toolkit or set PATH); set QUANTC_REQUIRE_PTXAS=1 to fail instead");
  return false;
}

std::string spec_stem(const ops::OpInfo& op, const ops::OpArgs& args) {
  std::string stem = op.name;
  for (const auto& [name, value] : args.values()) {
    std::string text;
    if (const auto* number = std::get_if<std::uint32_t>(&value)) text = std::to_string(*number);
    if (const auto* flag = std::get_if<bool>(&value)) text = *flag ? "true" : "false";
    if (const auto* choice = std::get_if<std::string>(&value)) text = *choice;
    stem += fmt::format("__{}-{}", name, text);
  }
  return stem;
}

std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

void require_assembles(const std::string& ptx, const ptx::Target& target, const std::string& what,
                       bool require_no_spills) {
  ptx::PtxasResult result = ptx::run_ptxas(ptx, target);
  INFO(what << " on " << target.name() << "\n$ " << result.command << "\n" << result.log);
  if (!result.success) UNSCOPED_INFO("PTX:\n" << ptx);
  REQUIRE(result.success);
  if (require_no_spills) {
    CHECK(result.spill_store_bytes == 0);
    CHECK(result.spill_load_bytes == 0);
  }
  CHECK(result.registers > 0);
}

namespace {

constexpr std::uint32_t kInvocations = 64;
constexpr std::uint32_t kSlots = 512;

const std::vector<ScalarType>& value_types() {
  static const std::vector<ScalarType> types = {ScalarType::U8,  ScalarType::I8,  ScalarType::U16, ScalarType::U32,
                                                ScalarType::I32, ScalarType::U64, ScalarType::I64, ScalarType::F16,
                                                ScalarType::BF16, ScalarType::F32, ScalarType::F64, ScalarType::Bool};
  return types;
}

const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> ops = {
      BinaryOp::Add,    BinaryOp::Sub,   BinaryOp::Mul,    BinaryOp::Div, BinaryOp::Rem, BinaryOp::Min,
      BinaryOp::Max,    BinaryOp::BitAnd, BinaryOp::BitOr, BinaryOp::BitXor, BinaryOp::Shl, BinaryOp::Shr,
      BinaryOp::Eq,     BinaryOp::Ne,    BinaryOp::Lt,     BinaryOp::Le,  BinaryOp::Gt,  BinaryOp::Ge,
      BinaryOp::LogicalAnd, BinaryOp::LogicalOr};
  return ops;
}

Expr some_literal(ScalarType type, double value) {
  if (type == ScalarType::Bool) return boolean(value != 0);
  return literal(type, value);
}

/// Stores values into per-type output buffers at index i + 64 * slot.
struct Outputs {
  std::map<ScalarType, BufferRef> buffers;
  std::map<ScalarType, std::uint32_t> next_slot;
  Expr invocation;
  void store(Body& body, const Expr& value) {
    std::uint32_t slot = next_slot[value.type().element()]++;
    REQUIRE(slot < kSlots);
    body.store(buffers.at(value.type().element()), invocation + kInvocations * slot, value);
  }
};

std::optional<Expr> try_make(const std::function<Expr()>& make) {
  try {
    return make();
  } catch (const IRError&) {
    return std::nullopt;  // not valid for this type: skipped on purpose
  }
}

/// Integer divisors forced odd (never zero) when the program is meant to run.
Expr safe_divisor(BinaryOp op, const Expr& divisor, bool executable) {
  bool integer_division = (op == BinaryOp::Div || op == BinaryOp::Rem) && is_integer(divisor.type());
  return executable && integer_division ? (divisor | 1.0) : divisor;
}

void type_region(Body& body, ScalarType type, const BufferRef& input, const BufferRef& output, Outputs& outputs,
                 bool executable) {
  std::string t(to_string(type));
  Expr i = outputs.invocation;
  Expr a = body.let("a_" + t, input[i]);
  Expr b = body.let("b_" + t, input[i + kInvocations]);
  Expr c = body.let("c_" + t, output[i]);  // load from a read-write buffer: ld.global
  for (BinaryOp op : binary_ops()) {
    for (auto [lhs, rhs] : {std::pair{a, b}, std::pair{a, some_literal(type, 3)}, std::pair{some_literal(type, 5), c}}) {
      if (auto value = try_make([&, lhs = lhs, rhs = rhs] { return Binary::make(op, lhs, safe_divisor(op, rhs, executable)); })) {
        outputs.store(body, *value);
      }
    }
  }
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Not, UnaryOp::Abs}) {
    if (auto value = try_make([&] { return Unary::make(op, a); })) outputs.store(body, *value);
  }
  for (ScalarType target : value_types()) outputs.store(body, Cast::make(target, a));
  outputs.store(body, Cast::make(ScalarType::U32, some_literal(type, 7)));
  outputs.store(body, select(ne(a, b), a, b));
  if (is_float(type)) {
    outputs.store(body, fma(a, b, c));
    outputs.store(body, fma(a, some_literal(type, 2), some_literal(type, 0.5)));
  }
  std::vector<std::uint64_t> table;
  for (int k = 0; k < 16; ++k) {
    table.push_back(type == ScalarType::Bool ? k % 2 : Literal::from_double(type, k * 3.0).as<Literal>()->bits);
  }
  outputs.store(body, Lookup::make(type, table, i & 15u));
  outputs.store(body, Lookup::make(type, std::vector<std::uint64_t>(table.begin(), table.begin() + 5), i % 5u));
  outputs.store(body, Lookup::make(type, std::vector<std::uint64_t>(table.begin(), table.begin() + 1), i & 0u));
  outputs.store(body, Lookup::make(type, table, u32(4)));
  // Assign, and an if/else whose branches differ per lane.
  Expr v = body.let("v_" + t, a);
  body.if_then_else(
      eq(a, b), [&](Body& then) { then.assign(v, b); }, [&](Body& otherwise) { otherwise.assign(v, c); });
  outputs.store(body, v);
}

/// Vector values: 128- and 64-bit loads and stores (aligned and under-aligned), packed
/// f16x2/bf16x2 arithmetic, lane-by-lane arithmetic on u32/f32 vectors, lane
/// construction and extraction, bitcasts between the widths, byte permutes.
void vector_region(Body& body, const std::map<ScalarType, BufferRef>& inputs, const std::map<ScalarType, BufferRef>& vector_outputs,
                   Outputs& outputs, bool executable) {
  Expr i = outputs.invocation;
  Expr slot = body.let("vector_slot", (i & 31u) * 4u);  // a multiple of 4 below 128: 16-byte aligned for 32-bit lanes
  const BufferRef& in_u32 = inputs.at(ScalarType::U32);
  const BufferRef& in_f32 = inputs.at(ScalarType::F32);
  Expr u4 = body.let("u4", in_u32.load(slot, 4));
  Expr u2 = body.let("u2", in_u32.load(slot + 2u, 2));
  Expr f4 = body.let("f4", in_f32.load(slot, 4));
  Expr f2 = body.let("f2", in_f32.load(slot, 2, 4));  // under-aligned: two scalar loads
  Expr h2 = body.let("h2", inputs.at(ScalarType::F16).load(slot, 2));
  Expr b2 = body.let("b2", inputs.at(ScalarType::BF16).load(slot + 2u, 2));
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Min, BinaryOp::Max, BinaryOp::BitXor,
                      BinaryOp::Shr, BinaryOp::Div}) {
    for (const Expr& v : {u4, u2, f4, f2, h2, b2}) {
      if (auto value = try_make([&] { return Binary::make(op, v, executable && op == BinaryOp::Div && is_integer(v.type()) ? v | 1.0 : v); })) {
        for (unsigned lane = 0; lane < v.type().lanes(); ++lane) outputs.store(body, extract_lane(*value, lane));
      }
    }
  }
  for (const Expr& v : {f4, h2, b2}) {
    Expr fused = fma(v, v, v);
    outputs.store(body, extract_lane(fused, 1));
    outputs.store(body, extract_lane(-v, 0));
    outputs.store(body, extract_lane(abs(v), 1));
  }
  Expr packed = body.let("packed", cast(Type(ScalarType::F16, 2), f2));
  outputs.store(body, extract_lane(packed, 0));
  outputs.store(body, extract_lane(cast(Type(ScalarType::BF16, 2), f2), 1));
  outputs.store(body, extract_lane(cast(Type(ScalarType::F32, 2), h2), 1));
  outputs.store(body, extract_lane(cast(Type(ScalarType::F32, 2), u2), 0));
  outputs.store(body, extract_lane(insert_lane(u4, 2, u32(7)), 2));
  outputs.store(body, extract_lane(insert_lane(h2, 1, extract_lane(h2, 0)), 1));
  outputs.store(body, extract_lane(insert_lane(b2, 0, extract_lane(b2, 1)), 0));
  outputs.store(body, bitcast(ScalarType::U32, h2));
  outputs.store(body, bitcast(ScalarType::U64, u2));
  outputs.store(body, bitcast(ScalarType::F64, f2));
  outputs.store(body, extract_lane(bitcast(Type(ScalarType::U32, 2), bitcast(ScalarType::I64, u2)), 1));
  outputs.store(body, extract_lane(bitcast(Type(ScalarType::F16, 2), extract_lane(u4, 0)), 1));
  outputs.store(body, bitcast(ScalarType::U16, extract_lane(h2, 1)));
  outputs.store(body, bitcast(ScalarType::F16, cast(ScalarType::U16, i)));
  outputs.store(body, permute(extract_lane(u4, 0), extract_lane(u4, 1), u32(0x5140)));
  outputs.store(body, permute(extract_lane(u4, 2), extract_lane(u4, 3), extract_lane(u4, 0) & 0xffffu));
  outputs.store(body, extract_lane(select(i < 9u, f4, f4 * 2.0), 3));
  outputs.store(body, extract_lane(make_vector({extract_lane(f4, 3), f32(1.5f)}), 0));
  outputs.store(body, extract_lane(make_vector({Literal::from_double(ScalarType::F16, 1.0), extract_lane(h2, 1)}), 0));
  // Vector stores: 16- and 8-byte aligned, and an under-aligned one split by legalization.
  Expr at = body.let("vector_at", i * 4u);
  body.store(vector_outputs.at(ScalarType::U32), at, u4);
  body.store(vector_outputs.at(ScalarType::F32), at, f4 + f4);
  body.store(vector_outputs.at(ScalarType::F32), at + 256u, f2, 4);
  body.store(vector_outputs.at(ScalarType::F16), at, h2 * h2);
  body.store(vector_outputs.at(ScalarType::BF16), at + 2u, b2, 2);
}

}  // namespace

ir::Program every_construct_program(bool executable) {
  ProgramBuilder program("every_construct");
  std::map<ScalarType, BufferRef> inputs;
  Outputs outputs;
  for (ScalarType type : value_types()) {
    inputs[type] = program.input(fmt::format("in_{}", to_string(type)), type, 2 * kInvocations);
  }
  for (ScalarType type : value_types()) {
    outputs.buffers[type] = program.output(fmt::format("out_{}", to_string(type)), type, kInvocations * kSlots);
  }
  std::map<ScalarType, BufferRef> vector_outputs;
  for (ScalarType type : {ScalarType::U32, ScalarType::F32, ScalarType::F16, ScalarType::BF16}) {
    vector_outputs[type] = program.output(fmt::format("out_vector_{}", to_string(type)), type, kInvocations * 8);
  }
  program.launch({kInvocations, 1, 1}, {1, 1, 1});
  program.body([&](Body& body) {
    outputs.invocation = body.let("i", invocation_id(0));
    for (ScalarType type : value_types()) {
      body.region(fmt::format("every_construct::{}", to_string(type)),
                  [&](Body& region) { type_region(region, type, inputs[type], outputs.buffers[type], outputs, executable); });
    }
    body.region("every_construct::vectors",
                [&](Body& region) { vector_region(region, inputs, vector_outputs, outputs, executable); });
    body.region("every_construct::launch", [&](Body& region) {
      Expr i = outputs.invocation;
      for (unsigned axis = 0; axis < 3; ++axis) {
        outputs.store(region, invocation_id(axis));
        outputs.store(region, workgroup_id(axis));
        outputs.store(region, local_id(axis));
      }
      outputs.store(region, subgroup_local_id());
      outputs.store(region, subgroup_size());
      outputs.store(region, BufferLength::make("in_f32"));
      // Subgroup operations at full-subgroup convergence.
      Expr x = inputs[ScalarType::F32][i];
      Expr n = inputs[ScalarType::U32][i];
      Expr s = inputs[ScalarType::I32][i];
      outputs.store(region, subgroup_shuffle(x, (i + 1u) & 31u));
      outputs.store(region, subgroup_shuffle(n, i + 40u));
      outputs.store(region, subgroup_shuffle(s, u32(3)));
      outputs.store(region, subgroup_shuffle(s, u32(33)));
      for (const Expr& value : {x, n, s}) {
        outputs.store(region, subgroup_add(value));
        outputs.store(region, subgroup_max(value));
        outputs.store(region, subgroup_min(value));
      }
      outputs.store(region, subgroup_ballot(n < 7u));
      // Loops with per-lane bounds of several integer types.
      Expr acc = region.let("acc", f32(0.0f));
      region.loop("k", u32(0), i, [&](Body& loop, Expr k) {
        loop.assign(acc, acc + cast(ScalarType::F32, k));
      });
      region.loop("k8", literal(ScalarType::U8, 1), cast(ScalarType::U8, i), [&](Body& loop, Expr k) {
        loop.store(outputs.buffers[ScalarType::U8], i, k);
      });
      region.loop("k64", literal(ScalarType::I64, -3), cast(ScalarType::I64, i), [&](Body& loop, Expr k) {
        loop.if_then(k > literal(ScalarType::I64, 5), [&](Body& then) { then.store(outputs.buffers[ScalarType::I64], i, k); });
      });
      outputs.store(region, acc);
      region.barrier();
      region.if_then(eq(i, u32(63)), [&](Body& then) { then.return_(); });
      outputs.store(region, i);
    });
  });
  return program.build();
}

}  // namespace quantc::testing
