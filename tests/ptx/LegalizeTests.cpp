// Legalization (lower/Legalize.h): each rule's output shape on the targets where it
// applies and does not, and the contract for every program: the legalized program
// verifies and the reference interpreter gives the same bytes as for the original.
#include <catch2/catch.hpp>

#include <bit>
#include <functional>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "lower/Legalize.h"
#include "ptx/Target.h"
#include "runtime/Buffers.h"
#include "runtime/backends/reference/Interpreter.h"
#include "tests/ptx/PtxTestSupport.h"

using namespace quantc;
using namespace quantc::ir;
using quantc::testing::count_occurrences;

namespace {

/// A one-workgroup program with inputs a/b (type `type`, 64 elements) and output out
/// (`out_type`); `body` writes the statement under test with the invocation index.
Program program_with(ScalarType type, ScalarType out_type,
                     const std::function<void(Body&, Expr, BufferRef&, BufferRef&, BufferRef&)>& body) {
  ProgramBuilder program("legalize");
  BufferRef a = program.input("a", type, 64);
  BufferRef b = program.input("b", type, 64);
  BufferRef out = program.output("out", out_type, 64);
  program.launch({64, 1, 1}, {1, 1, 1});
  program.body([&](Body& block) { body(block, block.let("i", invocation_id(0)), a, b, out); });
  return program.build();
}

std::string legalized_text(const Program& program, int sm) { return print(lower::legalize(program, ptx::Target{sm})); }

}  // namespace

TEST_CASE("legalize: a Lookup becomes a tree of selects on the index bits", "[legalize]") {
  Program program = program_with(ScalarType::U32, ScalarType::F32, [](Body& body, Expr i, BufferRef& a, BufferRef&,
                                                                      BufferRef& out) {
    std::vector<std::uint64_t> table;
    for (int k = 0; k < 16; ++k) table.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(k) - 8.0f));
    body.store(out, i, Lookup::make(ScalarType::F32, table, a[i] & 15u));
  });
  REQUIRE(count_occurrences(print(program), "lookup<") == 1);
  std::string text = legalized_text(program, 80);
  CHECK(count_occurrences(text, "lookup<") == 0);
  CHECK(count_occurrences(text, "select(") == 15);  // 16 entries: 8 + 4 + 2 + 1
}

TEST_CASE("legalize: a shuffle lane not proven below 32 selects the invocation's own value", "[legalize]") {
  auto shuffled = [](bool masked) {
    return program_with(ScalarType::U32, ScalarType::U32, [masked](Body& body, Expr i, BufferRef& a, BufferRef& b,
                                                                   BufferRef& out) {
      Expr lane = masked ? (b[i] & 31u) : b[i];
      body.store(out, i, subgroup_shuffle(a[i], lane));
    });
  };
  std::string unproven = legalized_text(shuffled(false), 80);
  CHECK(count_occurrences(unproven, "select(") == 1);
  CHECK(unproven.find("< 32u32") != std::string::npos);
  CHECK(count_occurrences(legalized_text(shuffled(true), 80), "select(") == 0);
}

TEST_CASE("legalize: narrow integer arithmetic runs in 32 bits and truncates back", "[legalize]") {
  Program program = program_with(ScalarType::U8, ScalarType::U8, [](Body& body, Expr i, BufferRef& a, BufferRef& b,
                                                                    BufferRef& out) {
    body.store(out, i, a[i] + b[i]);
  });
  std::string text = legalized_text(program, 80);
  CHECK(text.find("cast<u8>((cast<u32>(a[i]) + cast<u32>(b[i])))") != std::string::npos);
}

TEST_CASE("legalize: bool buffers are read and written as u8", "[legalize]") {
  Program program = program_with(ScalarType::Bool, ScalarType::Bool, [](Body& body, Expr i, BufferRef& a, BufferRef& b,
                                                                        BufferRef& out) {
    body.store(out, i, logical_and(a[i], b[i]));
  });
  Program legalized = lower::legalize(program, ptx::Target{80});
  for (const BufferDecl& buffer : legalized.buffers) CHECK(buffer.element == ScalarType::U8);
  CHECK(verify(legalized).empty());
}

TEST_CASE("legalize: an under-aligned vector access splits into the widest aligned pieces", "[legalize]") {
  auto copy = [](unsigned alignment) {
    return program_with(ScalarType::U32, ScalarType::U32, [alignment](Body& body, Expr i, BufferRef& a, BufferRef&,
                                                                      BufferRef& out) {
      Expr at = (i % 15u) * 4u;
      body.store(out, at, a.load(at, 4, alignment), alignment);
    });
  };
  std::string natural = legalized_text(copy(0), 80);
  CHECK(count_occurrences(natural, ".v4") == 2);  // one load, one store
  std::string eight = legalized_text(copy(8), 80);
  CHECK(count_occurrences(eight, ".v4") == 0);
  CHECK(eight.find("a[((i % 15u32) * 4u32)].v2") != std::string::npos);  // two 8-byte loads
  CHECK(eight.find("a[(((i % 15u32) * 4u32) + 2u32)].v2") != std::string::npos);
  CHECK(count_occurrences(eight, "].v2 = ") == 2);  // two 8-byte stores
  std::string four = legalized_text(copy(4), 80);
  CHECK(count_occurrences(four, ".v") == 0);
  CHECK(count_occurrences(four, "a[") == 4);
  CHECK(count_occurrences(four, "out[") == 4);
}

TEST_CASE("legalize: 16-bit float arithmetic follows what each target has", "[legalize]") {
  auto binary = [](ScalarType type) {
    return program_with(type, type, [](Body& body, Expr i, BufferRef& a, BufferRef& b, BufferRef& out) {
      body.store(out, i, a[i] + b[i]);
      body.store(out, i + 0u, min(a[i], b[i]));
    });
  };
  // f16 add is native everywhere (sm_53+); f16 min from sm_80, widened through f32 before.
  std::string f16_75 = legalized_text(binary(ScalarType::F16), 75);
  CHECK(f16_75.find("(a[i] + b[i])") != std::string::npos);
  CHECK(f16_75.find("cast<f16>(min(cast<f32>(a[i]), cast<f32>(b[i])))") != std::string::npos);
  CHECK(legalized_text(binary(ScalarType::F16), 80).find("min(a[i], b[i])") != std::string::npos);
  // bf16 add: widened on sm_75, fma with 1 on sm_80..89, native on sm_90.
  std::string bf16_75 = legalized_text(binary(ScalarType::BF16), 75);
  CHECK(bf16_75.find("(a[i] + b[i])") == std::string::npos);
  CHECK(bf16_75.find("cast<f32>") != std::string::npos);
  std::string bf16_80 = legalized_text(binary(ScalarType::BF16), 80);
  CHECK(bf16_80.find("fma(a[i], 1.0bf16, b[i])") != std::string::npos);
  CHECK(legalized_text(binary(ScalarType::BF16), 90).find("(a[i] + b[i])") != std::string::npos);
}

TEST_CASE("legalize: f16x2 arithmetic stays packed, u32x4 arithmetic goes lane by lane", "[legalize]") {
  Program packed = program_with(ScalarType::F16, ScalarType::F16, [](Body& body, Expr i, BufferRef& a, BufferRef& b,
                                                                     BufferRef& out) {
    Expr at = (i % 32u) * 2u;
    body.store(out, at, a.load(at, 2) * b.load(at, 2));
  });
  std::string packed_text = legalized_text(packed, 80);
  CHECK(packed_text.find("(a[((i % 32u32) * 2u32)].v2 * b[((i % 32u32) * 2u32)].v2)") != std::string::npos);
  CHECK(count_occurrences(packed_text, "extract_lane") == 0);

  Program lanes = program_with(ScalarType::U32, ScalarType::U32, [](Body& body, Expr i, BufferRef& a, BufferRef& b,
                                                                    BufferRef& out) {
    Expr at = (i % 16u) * 4u;
    body.store(out, at, a.load(at, 4) + b.load(at, 4));
  });
  std::string lanes_text = legalized_text(lanes, 80);
  CHECK(count_occurrences(lanes_text, "make_vector(") == 1);
  CHECK(count_occurrences(lanes_text, "extract_lane(") == 8);  // 4 lanes, 2 operands
}

TEST_CASE("legalize: every construct program verifies and computes the same bytes on every target", "[legalize]") {
  Program program = quantc::testing::every_construct_program(true);
  runtime::BufferSet inputs = runtime::random_buffers(program, 3);
  runtime::BufferSet expected = inputs;
  runtime::reference::run(program, expected);
  for (const ptx::Target& target : ptx::supported_targets()) {
    INFO(target.name());
    Program legalized = lower::legalize(program, target);
    REQUIRE(verify(legalized).empty());
    // bool buffers became u8 buffers holding the same bytes (0 or 1).
    runtime::BufferSet actual = inputs;
    for (const BufferDecl& buffer : legalized.buffers) actual.at(buffer.name).element = buffer.element;
    runtime::reference::run(legalized, actual);
    for (const BufferDecl& buffer : program.buffers) {
      INFO(buffer.name);
      CHECK(actual.at(buffer.name).bytes == expected.at(buffer.name).bytes);
    }
  }
}
