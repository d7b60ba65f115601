// The parser reads exactly what the printer writes.
#include <catch2/catch.hpp>

#include "TestPrograms.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Registry.h"
#include "lower/PassManager.h"
#include "lower/passes/Passes.h"
#include "tests/ptx/SharedMemoryProgram.h"
#include "tests/ptx/SplitReductionProgram.h"

using namespace quantc;
using namespace quantc::ir;

namespace {
void check_round_trip(const Program& program) {
  std::string text = print(program);
  Program parsed = parse_program(text, program.name);
  INFO(text);
  CHECK(print(parsed) == text);
  CHECK(verify(parsed).empty());
  CHECK(parsed.buffers == program.buffers);
}
}  // namespace

TEST_CASE("every registered op's test shapes round-trip through the printer and parser", "[parser]") {
  for (const ops::OpInfo& op : ops::OpRegistry::builtin().all()) {
    for (const ops::OpArgs& args : op.test_shapes) check_round_trip(op.build(args));
  }
}

TEST_CASE("a program using every construct round-trips", "[parser]") {
  Program program = testing::every_construct_program();
  check_round_trip(program);
  std::string text = print(program);
  CHECK(text.find("f32(inf)") != std::string::npos);
  CHECK(text.find("f32(nan 0x7fc00001)") != std::string::npos);
  CHECK(text.find("lookup<u32>[1u32, 2u32, 3u32, 4294967295u32]") != std::string::npos);
  CHECK(text.find("let quad: f32x4 = x[at].v4") != std::string::npos);
  CHECK(text.find("let pair: f16x2 = h[at].v2.align(2)") != std::string::npos);
  CHECK(text.find("words[at].v2.align(4) = make_vector(bitcast<u32>(halves), permute(i, (i + 1u32), 12816u32))") !=
        std::string::npos);
  CHECK(text.find("extract_lane(quad, 2)") != std::string::npos);
  CHECK(text.find("insert_lane(") != std::string::npos);
  CHECK(text.find("cast<bf16x2>(") != std::string::npos);
  CHECK(text.find("0.15625bf16") != std::string::npos);
}

TEST_CASE("vector and 16-bit float syntax errors name the line and the fix", "[parser]") {
  const std::string header =
      "program \"p\" workgroup_size(64, 1, 1) workgroup_count(1, 1, 1)\n"
      "buffer @0 x: read_only f32[64]\nbuffer @1 y: read_write u32[64]\n";
  auto error_of = [&](const std::string& body) {
    try {
      parse_program(header + "{\n" + body + "\n}\n");
    } catch (const ParseError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of("let v: f32x3 = x[0u32]"), Catch::Contains("unknown type 'f32x3'"));
  CHECK_THAT(error_of("let v: f32x4 = x[0u32].v4.align(3)"), Catch::Contains("alignment 3 is invalid for f32x4"));
  CHECK_THAT(error_of("let v: f32x2 = x[0u32].v4"), Catch::Contains("declared f32x2 but its value has type f32x4"));
  CHECK_THAT(error_of("y[0u32].v2 = 1u32"), Catch::Contains("store to y[...].v2 of a u32 value"));
  CHECK_THAT(error_of("y[0u32].as<u32x2> = 1u32"),
             Catch::Contains("store to y[...].as<u32x2> of a u32 value; the value must be u32x2"));
  CHECK_THAT(error_of("y[0u32].as<f32> = 1.0f32"), Catch::Contains("a reinterpreting store writes u32 words"));
  CHECK_THAT(error_of("let v: u32 = extract_lane(x[0u32].v4, 4)"), Catch::Contains("lane 4 of f32x4"));
  CHECK_THAT(error_of("let v: u32 = bitcast<u32>(x[0u32].v2)"), Catch::Contains("same width"));
  CHECK_THAT(error_of("let v: f32x2 = cast<f32x2>(x[0u32].v4)"), Catch::Contains("changes the lane count"));
  CHECK_THAT(error_of("let v: u32 = permute(1u32, 2u32, 1.0f32)"), Catch::Contains("operands must be u32"));
  CHECK_THAT(error_of("let v: bool = (x[0u32].v2 < x[2u32].v2)"), Catch::Contains("not defined on vectors"));
}

TEST_CASE("literals of every type parse to the same bits", "[parser]") {
  for (Expr literal : {Literal::i32(-2147483647 - 1), Literal::u64(~0ull), Literal::make(ScalarType::I64, 1ull << 63),
                       Literal::f32(1e-45f), Literal::f32(-0.0f), Literal::f32(3.4028235e38f), Literal::f64(0.1),
                       Literal::f64(-1e-308), Literal::from_double(ScalarType::F16, 65504.0),
                       Literal::from_double(ScalarType::BF16, -3.3895314e38), Literal::make(ScalarType::BF16, 0x0001),
                       Literal::make(ScalarType::BF16, 0x7fc1), Literal::make(ScalarType::F16, 0xfc00),
                       Literal::make(ScalarType::F32, 0xff800000u), Literal::make(ScalarType::F64, 0x7ff8000000000123ull),
                       Literal::make(ScalarType::U8, 255), Literal::make(ScalarType::I8, 0x80), Literal::boolean(true)}) {
    Expr parsed = parse_expr(print(literal));
    INFO(print(literal));
    CHECK(parsed.type() == literal.type());
    CHECK(parsed.as<Literal>()->bits == literal.as<Literal>()->bits);
  }
}

TEST_CASE("parse errors name line, column and the problem", "[parser]") {
  auto error_of = [](const std::string& text) {
    try {
      parse_program(text, "case.qir");
    } catch (const ParseError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  std::string header = "program \"p\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\nbuffer @0 x: read_only f32[4]\n";
  CHECK(error_of(header + "{\n  let a: u32 = b\n}\n") == "case.qir:4:16: error: use of undeclared variable 'b'");
  CHECK(error_of(header + "{\n  let a: u32 = 5\n}\n").find("case.qir:4:16: error: literal '5' lacks its type suffix") == 0);
  CHECK(error_of(header + "{\n  let a: u32 = (1u32 + 1.0f32)\n}\n").find("case.qir:4:16: error: Binary '+': operand types differ") == 0);
  CHECK(error_of(header + "{\n  let a: f32 = y[0u32]\n}\n") == "case.qir:4:16: error: use of undeclared buffer 'y'");
  CHECK(error_of(header + "{\n  let a: u8 = 300u8\n}\n") == "case.qir:4:15: error: literal '300u8' is out of range for u8");
  CHECK(error_of(header + "{\n  let a: u32 = 1u32\n") == "case.qir:5:1: error: expected '}' before the end of input");
  CHECK(error_of("program \"p\" workgroup_size(32, 1) workgroup_count(1, 1, 1)\n{\n}\n") ==
        "case.qir:1:33: error: expected ',', found ')'");
  CHECK(error_of(header + "{\n  let a: i32 = 1u32\n}\n") == "case.qir:4:10: error: let a is declared i32 but its value has type u32");
}

TEST_CASE("a request for resident workgroups round-trips and only a program with one prints it", "[parser]") {
  const std::string header = "program \"p\" workgroup_size(256, 1, 1) workgroup_count(512, 1, 1)";
  const std::string rest = "\nbuffer @0 x: read_only f32[4]\n{\n}\n";
  const Program program = parse_program(header + " min_resident_workgroups(4)" + rest, "resident.qir");
  CHECK(program.min_resident_workgroups == 4);
  check_round_trip(program);
  CHECK_THAT(print(program), Catch::StartsWith(header + " min_resident_workgroups(4)\n"));
  const Program plain = parse_program(header + rest, "plain.qir");
  CHECK(plain.min_resident_workgroups == 0);
  CHECK_THAT(print(plain), Catch::StartsWith(header + "\n"));
  CHECK_THROWS_WITH(parse_program(header + " min_resident_workgroups 4" + rest, "bad.qir"),
                    Catch::Contains("bad.qir:1:") && Catch::Contains("expected '('"));
}

TEST_CASE("reserved shared memory round-trips after the residency request, and only a program with some prints it",
          "[parser]") {
  const std::string header = "program \"p\" workgroup_size(128, 1, 1) workgroup_count(2752, 1, 1)";
  const std::string rest = "\nbuffer @0 x: read_only f32[4]\n{\n}\n";
  const std::string both = header + " min_resident_workgroups(7) reserved_shared_bytes(17856)";
  const Program program = parse_program(both + rest, "reserved.qir");
  CHECK(program.reserved_shared_bytes == 17856);
  CHECK(program.min_resident_workgroups == 7);
  check_round_trip(program);
  CHECK_THAT(print(program), Catch::StartsWith(both + "\n"));
  const Program alone = parse_program(header + " reserved_shared_bytes(16)" + rest, "alone.qir");
  CHECK(alone.reserved_shared_bytes == 16);
  CHECK(alone.min_resident_workgroups == 0);
  CHECK(parse_program(header + rest, "plain.qir").reserved_shared_bytes == 0);
  CHECK_THROWS_WITH(parse_program(header + " reserved_shared_bytes(16) min_resident_workgroups(7)" + rest, "order.qir"),
                    Catch::Contains("order.qir:1:"));
}

TEST_CASE("workgroup arrays round-trip and their header states the static shared bytes", "[parser][shared]") {
  const Program program = quantc::testing::shared_memory_program();
  check_round_trip(program);
  const std::string text = print(program);
  CHECK_THAT(text, Catch::Contains("shared partial: f32[128]\nshared tile: u32[512]\nshared octets: u8[130]\n"
                                   "shared wide_tile: f64[128]\nshared half_tile: f16[256]\n"
                                   "// static shared memory: 4240 bytes\n"));
  // 512 + 2048 + 130 (rounded up to 144 before the next array) + 1024 + 512.
  CHECK(program.static_shared_bytes() == 4240);
  CHECK(parse_program(text, "shared.qir").shared == program.shared);
  // Optimized programs keep their arrays (and still round-trip).
  check_round_trip(lower::run_passes(program, lower::PassOptions{}));
}

TEST_CASE("workgroup array syntax errors name the problem", "[parser][shared]") {
  auto error_of = [](const std::string& text) {
    try {
      parse_program(text, "case.qir");
    } catch (const ParseError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const std::string header = "program \"p\" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n";
  CHECK_THAT(error_of(header + "shared t f32[4]\n{\n}\n"), Catch::Contains("case.qir:2:10: error: expected ':'"));
  CHECK(error_of(header + "shared t: f32[4]\n{\n  let a: u32 = t[0u32]\n}\n").find("case.qir:4:") == 0);
  CHECK(error_of(header + "shared t: f32[4]\n{\n  let a: f32 = t[0u32]\n  t[1u32] = a\n}\n") == "no error");
}

TEST_CASE("CSE never merges workgroup-array loads across a barrier or a store", "[passes][shared]") {
  // `before` and `after` both read partial[mirror]; a barrier and a store lie between.
  const Program optimized = lower::eliminate_common_subexpressions(quantc::testing::shared_memory_program());
  const std::string text = print(optimized);
  INFO(text);
  std::size_t loads = 0;
  for (std::size_t at = text.find("partial[mirror]"); at != std::string::npos; at = text.find("partial[mirror]", at + 1)) {
    ++loads;
  }
  CHECK(loads == 2);
  CHECK(verify(optimized).empty());
  // The whole -O2 pipeline keeps them too.
  const std::string pipeline = print(lower::run_passes(quantc::testing::shared_memory_program(), lower::PassOptions{}));
  CHECK_THAT(pipeline, Catch::Contains("let before: f32 = partial[mirror]"));
  CHECK_THAT(pipeline, Catch::Contains("let after: f32 = partial[mirror]"));
}

TEST_CASE("scratch buffers, atomics and fences round-trip through the text format", "[parser][atomic]") {
  const Program program = quantc::testing::split_reduction_program();
  check_round_trip(program);
  const std::string text = print(program);
  CHECK_THAT(text, Catch::Contains("buffer @2 partials: scratch f32[12]\nbuffer @3 arrivals: scratch u32[3]\n"));
  CHECK_THAT(text, Catch::Contains("    fence\n    let drawn: u32 = atomic_add(arrivals[row], 1u32)\n"));
  check_round_trip(lower::run_passes(program, lower::PassOptions{}));
  const Program parsed = parse_program(text, "split.qir");
  CHECK(parsed.buffers == program.buffers);
  CHECK(parsed.buffers[2].is_scratch());
  CHECK_FALSE(parsed.buffers[2].is_output());
  CHECK(parsed.buffers[2].is_written());
}

TEST_CASE("every pass keeps each atomic once, in place, and no load moves across a fence", "[passes][atomic]") {
  // The ticket is drawn once per workgroup even though `drawn` is not read again; the two
  // loads of the same scratch element on either side of the fence stay two loads.
  const std::string source = R"(program "p" workgroup_size(32, 1, 1) workgroup_count(2, 1, 1)
buffer @0 out: write_only u32[2]
buffer @1 counts: scratch u32[4]
{
  let lane: u32 = local_id.x
  let before: u32 = counts[1u32]
  fence
  let unused: u32 = atomic_add(counts[0u32], 1u32)
  for k: u32 in 0u32 .. 3u32 {
    let again: u32 = atomic_add(counts[2u32], lane)
    let same: u32 = atomic_add(counts[2u32], lane)
    out[workgroup_id.x] = (again + same)
  }
  let after: u32 = counts[1u32]
  out[workgroup_id.x] = (before + after)
}
)";
  const Program program = parse_program(source, "atomics.qir");
  for (const char* passes : {"dce", "cse", "licm", "unroll_loops", "fold_constants"}) {
    INFO(passes);
    lower::PassOptions options;
    options.passes = {passes};
    const std::string text = print(lower::run_passes(program, options));
    CHECK_THAT(text, Catch::Contains("let unused: u32 = atomic_add(counts[0u32], 1u32)"));
    CHECK_THAT(text, Catch::Contains("let before: u32 = counts[1u32]"));
    CHECK_THAT(text, Catch::Contains("let after: u32 = counts[1u32]"));
    std::size_t atomics = 0;
    for (std::size_t at = text.find("atomic_add(counts[2u32]"); at != std::string::npos;
         at = text.find("atomic_add(counts[2u32]", at + 1)) {
      ++atomics;
    }
    // Two per iteration: in the loop, or six once the loop of three is unrolled.
    CHECK((atomics == 2 || (std::string(passes) == "unroll_loops" && atomics == 6)));
  }
}
