// Unit tests of the hand-written PTX emitter (lower/LowerToPtx.cpp, ptx/PtxWriter.cpp).
#include <catch2/catch.hpp>
#include <regex>

#include "ir/Builder.h"
#include "ir/ops/Linear4Bit.h"
#include "lower/LowerToPtx.h"
#include "ptx/PtxWriter.h"
#include "tests/ptx/PtxTestSupport.h"
#include "tests/ptx/SharedMemoryProgram.h"
#include "tests/ptx/SplitReductionProgram.h"

using namespace quantc;
using namespace quantc::ir;
using quantc::testing::count_occurrences;

namespace {

/// out[i] = x[i] * 2 over 128 invocations; `extra` adds statements to the body.
Program small_program(const std::function<void(Body&, Expr, const BufferRef&, const BufferRef&)>& extra = {}) {
  ProgramBuilder program("small");
  BufferRef x = program.input("x", ScalarType::F32, 128);
  BufferRef out = program.output("out", ScalarType::F32, 128);
  program.launch({128, 1, 1}, {1, 1, 1});
  program.body([&](Body& body) {
    Expr i = body.let("i", invocation_id(0));
    body.store(out, i, x[i] * 2.0f);
    if (extra) extra(body, i, x, out);
  });
  return program.build();
}

std::string emit(const Program& program, int sm = 80) { return lower::lower_to_ptx(program, ptx::Target{sm}); }

}  // namespace

TEST_CASE("header: .version is the target's minimum PTX ISA, then .target and .address_size", "[emitter]") {
  const std::map<int, std::string> expected = {{75, "6.3"}, {80, "7.0"}, {86, "7.1"}, {89, "7.8"},
                                               {90, "7.8"}, {100, "8.6"}, {120, "8.7"}};
  Program program = small_program();
  for (const ptx::Target& target : ptx::supported_targets()) {
    std::string ptx = emit(program, target.sm);
    INFO(target.name());
    CHECK(ptx.find(".version " + expected.at(target.sm) + "\n.target " + target.name() + "\n.address_size 64\n") !=
          std::string::npos);
  }
}

TEST_CASE("header: every supported target's .version is accepted by ptxas", "[emitter][ptxas]") {
  if (!testing::ptxas_or_skip()) return;
  Program program = small_program();
  for (const ptx::Target& target : ptx::supported_targets()) {
    testing::require_assembles(emit(program, target.sm), target, "small");
  }
}

TEST_CASE("entry: one .param .u64 per buffer in binding order, .maxntid before the body without a semicolon",
          "[emitter]") {
  Program program = ops::linear_4bit_affine_grouped(64, 16, 32);
  std::string ptx = emit(program);
  CHECK(count_occurrences(ptx, ".param .u64") == program.buffers.size());
  CHECK(ptx.find(".visible .entry linear_4bit_affine_grouped(\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_0,\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_1,\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_2,\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_3,\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_4,\n"
                 "\t.param .u64 linear_4bit_affine_grouped_param_5\n"
                 ")\n.maxntid 256, 1, 1\n{\n") != std::string::npos);
  CHECK(count_occurrences(ptx, "cvta.to.global.u64") == program.buffers.size());
  CHECK(ptx.find(".maxntid 256, 1, 1;") == std::string::npos);
}

TEST_CASE("loads: ld.global.nc for read-only buffers, ld.global otherwise, mul.wide.u32 addressing", "[emitter]") {
  Program program = small_program([](Body& body, Expr i, const BufferRef&, const BufferRef& out) {
    body.store(out, i, out[i] + 1.0f);
  });
  std::string ptx = emit(program);
  CHECK(count_occurrences(ptx, "ld.global.nc.f32") == 1);  // x
  CHECK(count_occurrences(ptx, "ld.global.f32") == 1);     // out (read-write)
  CHECK(count_occurrences(ptx, "st.global.f32") == 2);
  CHECK(count_occurrences(ptx, "mul.wide.u32") >= 1);
  // Float arithmetic uses the .rn forms, which ptxas may not contract into an FMA.
  CHECK(count_occurrences(ptx, "mul.rn.f32") == 1);
  CHECK(count_occurrences(ptx, "add.rn.f32") == 1);
  CHECK(ptx.find("mul.f32") == std::string::npos);
  CHECK(ptx.find("add.f32") == std::string::npos);
}

TEST_CASE("subgroup operations: shfl.sync.idx, a 16-8-4-2-1 shfl.sync.bfly butterfly, vote.sync.ballot",
          "[emitter]") {
  ProgramBuilder builder("subgroups");
  BufferRef x = builder.input("x", ScalarType::F32, 32);
  BufferRef out = builder.output("out", ScalarType::F32, 32);
  BufferRef ballot = builder.output("ballot", ScalarType::U32, 32);
  builder.launch({32, 1, 1}, {1, 1, 1});
  builder.body([&](Body& body) {
    Expr i = body.let("i", local_id(0));
    Expr shuffled = body.let("shuffled", subgroup_shuffle(x[i], i ^ 1u));
    body.store(out, i, subgroup_add(shuffled));
    body.store(ballot, i, subgroup_ballot(x[i] > 0.0f));
  });
  std::string ptx = emit(builder.build());
  CHECK(count_occurrences(ptx, "shfl.sync.idx.b32") == 1);
  CHECK(std::regex_search(ptx, std::regex(R"(shfl\.sync\.idx\.b32 \t%f\d+, %f\d+, %r\d+, 0x1f, 0xffffffff;)")));
  std::regex butterfly(R"(shfl\.sync\.bfly\.b32 \t%f\d+, %f\d+, (\d+), 0x1f, 0xffffffff;\n\tadd\.rn\.f32)");
  std::vector<std::string> offsets;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), butterfly); it != std::sregex_iterator(); ++it) {
    offsets.push_back((*it)[1].str());
  }
  CHECK(offsets == std::vector<std::string>{"16", "8", "4", "2", "1"});
  CHECK(std::regex_search(ptx, std::regex(R"(vote\.sync\.ballot\.b32 \t%r\d+, %p\d+, 0xffffffff;)")));
}

TEST_CASE("Lookup of a 16-entry table lowers to 15 selp and no memory access", "[emitter]") {
  std::vector<std::uint64_t> table;
  for (int k = 0; k < 16; ++k) table.push_back(Literal::f32(static_cast<float>(k) / 8.0f - 1.0f).as<Literal>()->bits);
  Program program = small_program([&](Body& body, Expr i, const BufferRef&, const BufferRef& out) {
    body.store(out, i, Lookup::make(ScalarType::F32, table, i & 15u));
  });
  std::string ptx = emit(program);
  CHECK(count_occurrences(ptx, "selp.f32") == 15);
  CHECK(count_occurrences(ptx, "ld.global") == 1);  // only x[i]
  CHECK(ptx.find("0fBF800000") != std::string::npos);  // table[0] = -1.0 as an immediate
}

TEST_CASE("If and Loop lower to setp + @p bra, Barrier to bar.sync 0, Return to ret", "[emitter]") {
  Program program = small_program([](Body& body, Expr i, const BufferRef& x, const BufferRef& out) {
    Expr acc = body.let("acc", f32(0.0f));
    body.loop("k", u32(0), i, [&](Body& loop, Expr k) { loop.assign(acc, acc + x[k]); });
    body.barrier();
    body.if_then_else(
        i < 7u, [&](Body& then) { then.store(out, i, acc); }, [&](Body& otherwise) { otherwise.return_(); });
  });
  std::string ptx = emit(program);
  CHECK(std::regex_search(ptx, std::regex(R"(setp\.ge\.u32 \t(%p\d+), %r\d+, %r\d+;\n\t@\1 bra \t\$L__end_loop_\d+;)")));
  CHECK(std::regex_search(ptx, std::regex(R"(setp\.lt\.u32 \t(%p\d+), %r\d+, 7;\n\t@!\1 bra \t\$L__else_\d+;)")));
  CHECK(count_occurrences(ptx, "bar.sync \t0;") == 1);
  CHECK(count_occurrences(ptx, "\tret;") == 2);
  CHECK(ptx.find("\t// for k: u32 in 0u32 .. i\n") != std::string::npos);
  CHECK(ptx.find("\t// let acc: f32 = 0.0f32\n") != std::string::npos);
}

TEST_CASE("the op programs carry one comment line per region and statement", "[emitter]") {
  std::string ptx = emit(ops::linear_4bit(16, 8));
  CHECK(ptx.find("\t// region \"vyre-libs::nn::linear_4bit\"\n") != std::string::npos);
  CHECK(ptx.find("\t// end region \"vyre-libs::nn::linear_4bit\"\n") != std::string::npos);
  CHECK(ptx.find("\t//   let i: u32 = invocation_id.x\n") != std::string::npos);
  CHECK(ptx.find("fma.rn.f32") == std::string::npos);  // linear_4bit has no Fma: no fusion
}

TEST_CASE("Fma lowers to fma.rn", "[emitter]") {
  Program program = small_program([](Body& body, Expr i, const BufferRef& x, const BufferRef& out) {
    body.store(out, i, fma(x[i], f32(3.0f), x[i + 1u]));
  });
  CHECK(count_occurrences(emit(program), "fma.rn.f32") == 1);
}

TEST_CASE("emission is deterministic", "[emitter]") {
  Program first = quantc::testing::every_construct_program();
  CHECK(emit(first) == emit(first));
  CHECK(emit(first, 90) == emit(quantc::testing::every_construct_program(), 90));
}

TEST_CASE("errors: unknown targets list the supported ones, bad names are IRError", "[emitter]") {
  Program program = small_program();
  CHECK_THROWS_WITH(lower::lower_to_ptx(program, ptx::Target{81}),
                    Catch::Contains("sm_81") && Catch::Contains("sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120"));
  Program renamed = program;
  renamed.name = "not-an-identifier";
  CHECK_THROWS_AS(lower::lower_to_ptx(renamed, ptx::Target{80}), IRError);
  CHECK_THROWS_WITH(lower::lower_to_ptx(renamed, ptx::Target{80}), Catch::Contains("not-an-identifier"));
}

TEST_CASE("every IR node kind and value type lowers and assembles on every target", "[emitter][ptxas]") {
  Program program = quantc::testing::every_construct_program();
  std::string ptx = emit(program);
  for (const char* kind : {"ld.global.nc.u8", "ld.global.nc.s8", "ld.global.nc.u16", "ld.global.nc.b16",
                           "ld.global.nc.f64", "ld.global.nc.s64", "st.global.u8", "cvt.rzi.s32.f16",
                           "cvt.rn.f16.f32", "setp.neu.f32", "shl.b64", "bfe.s32", "xor.pred", "not.pred"}) {
    INFO(kind);
    CHECK(ptx.find(kind) != std::string::npos);
  }
  if (!testing::ptxas_or_skip()) return;
  for (const ptx::Target& target : ptx::supported_targets()) {
    // A synthetic kernel with ~1000 live stores: ptxas may spill a little on some
    // targets; spills are checked on the registered ops (PtxasTests.cpp).
    testing::require_assembles(emit(program, target.sm), target, "every_construct", false);
  }
}

TEST_CASE("PtxWriter: per-class counters, declarations in one place, version raised by instructions",
          "[emitter][writer]") {
  using ptx::Mnemonic;
  using ptx::Opcode;
  using ptx::ValueType;
  ptx::PtxWriter writer(ptx::Target{80});
  CHECK(writer.new_register(ptx::RegisterClass::B32) == "%r1");
  CHECK(writer.new_register(ptx::RegisterClass::B32) == "%r2");
  CHECK(writer.new_register(ptx::RegisterClass::F64) == "%fd1");
  CHECK(writer.new_register(ptx::RegisterClass::Predicate) == "%p1");
  CHECK(writer.new_label("loop") == "$L__loop_1");
  CHECK(writer.version() == ptx::PtxVersion{7, 0});
  writer.emit(Mnemonic::of(Opcode::Add, ValueType::S32), {"%r2", "%r1", "1"});
  CHECK(writer.version() == ptx::PtxVersion{7, 0});  // add.s32 needs nothing newer than sm_80's minimum
  // The table's row for cvt.f32.bf16 needs PTX ISA 7.1: the module's .version follows.
  writer.emit(Mnemonic::of(Opcode::Cvt, ValueType::F32, ValueType::BF16), {"%f1", "%h1"});
  CHECK(writer.version() == ptx::PtxVersion{7, 1});
  CHECK(writer.version_reason() == "cvt.f32.bf16");
  // Stores read both results, so neither is dead code.
  writer.emit(Mnemonic::of(Opcode::St, ValueType::S32).in(ptx::StateSpace::Global), {"[%rd1]", "%r2"});
  writer.emit(Mnemonic::of(Opcode::St, ValueType::F32).in(ptx::StateSpace::Global), {"[%rd1+4]", "%f1"});
  std::string text = writer.finish({"k", {"k_param_0"}, {32, 1, 1}, {}}, {"test"});
  CHECK(text.find(".version 7.1\n") != std::string::npos);
  CHECK(text.find("\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .f64 \t%fd<2>;\n") != std::string::npos);
  CHECK(text.find("\tadd.s32 \t%r2, %r1, 1;\n") != std::string::npos);
  CHECK(text.find("\tcvt.f32.bf16 \t%f1, %h1;\n") != std::string::npos);
  CHECK(text.find(".b16") == std::string::npos);  // unused classes are not declared
  CHECK(ptx::is_ptx_identifier("linear_4bit"));
  CHECK_FALSE(ptx::is_ptx_identifier("4bit"));
  CHECK_FALSE(ptx::is_ptx_identifier("a-b"));
  CHECK(ptx::f32_immediate(0x3F800000) == "0f3F800000");
}

TEST_CASE("PtxWriter drops instructions whose results nothing reads, and only those", "[emitter][writer]") {
  using ptx::Mnemonic;
  using ptx::Opcode;
  using ptx::ValueType;
  ptx::PtxWriter writer(ptx::Target{80});
  const Mnemonic add = Mnemonic::of(Opcode::Add, ValueType::U32);
  writer.emit(add, {"%r3", "%r1", "4"});  // read only by %r4's add: dead once that is
  writer.emit(add, {"%r4", "%r3", "8"});  // read by nothing
  writer.emit(Mnemonic::of(Opcode::Mul, ValueType::U32).multiply(ptx::MulMode::Wide), {"%rd5", "%r1", "4"});
  writer.emit(Mnemonic::of(Opcode::Ld, ValueType::U32).in(ptx::StateSpace::Global), {"%r9", "[%rd5+16]"});
  writer.emit(add, {"%r8", "%r8", "1"});  // reads itself: kept
  writer.emit(Mnemonic::of(Opcode::Setp, ValueType::U32).compare_with(ptx::Compare::Lt), {"%p6", "%r9", "3"});
  writer.emit_guarded("%p6", false, add, {"%r7", "%r9", "1"});  // guarded: kept
  writer.emit(Mnemonic::of(Opcode::Ld, ValueType::U32).in(ptx::StateSpace::Global), {"%r10", "[%rd5]"});  // a load: kept
  const std::string text = writer.finish({"k", {"k_param_0"}, {32, 1, 1}, {}}, {"test"});
  CHECK(text.find("%r3, %r1, 4") == std::string::npos);
  CHECK(text.find("%r4, %r3, 8") == std::string::npos);
  for (const char* kept : {"\tmul.wide.u32 \t%rd5, %r1, 4;\n", "\tld.global.u32 \t%r9, [%rd5+16];\n",
                           "\tadd.u32 \t%r8, %r8, 1;\n", "\tsetp.lt.u32 \t%p6, %r9, 3;\n",
                           "\t@%p6 add.u32 \t%r7, %r9, 1;\n", "\tld.global.u32 \t%r10, [%rd5];\n"}) {
    INFO(kept);
    CHECK(text.find(kept) != std::string::npos);
  }
}

TEST_CASE("PtxWriter refuses an instruction form the target cannot run, naming form, sm_ and target",
          "[emitter][writer]") {
  using ptx::Mnemonic;
  using ptx::Opcode;
  using ptx::ValueType;
  ptx::PtxWriter turing(ptx::Target{75});
  CHECK_THROWS_WITH(turing.emit(Mnemonic::of(Opcode::Fma, ValueType::BF16x2).round(ptx::Rounding::Nearest), {"%r1", "%r2", "%r3", "%r4"}),
                    Catch::Contains("'fma.rn.bf16x2' needs sm_80 (PTX ISA 7.0); target sm_75 cannot run it"));
  CHECK_THROWS_AS(turing.emit(Mnemonic::of(Opcode::Min, ValueType::F16), {"%h1", "%h2", "%h3"}), ptx::UnsupportedInstruction);
  ptx::PtxWriter ampere(ptx::Target{80});
  CHECK_THROWS_WITH(ampere.emit(Mnemonic::of(Opcode::Add, ValueType::BF16).round(ptx::Rounding::Nearest), {"%h1", "%h2", "%h3"}),
                    Catch::Contains("needs sm_90") && Catch::Contains("target sm_80"));
  ampere.emit(Mnemonic::of(Opcode::Min, ValueType::F16), {"%h1", "%h2", "%h3"});  // sm_80 has it
  // A spelling with no row at all is refused too.
  CHECK_THROWS_WITH(ampere.emit(Mnemonic::of(Opcode::Lop3, ValueType::B64), {"%rd1", "%rd2", "%rd3", "%rd4", "0"}),
                    Catch::Contains("cannot emit") && Catch::Contains("lop3.b64"));
  ptx::PtxWriter hopper(ptx::Target{90});
  hopper.emit(Mnemonic::of(Opcode::Add, ValueType::BF16x2).round(ptx::Rounding::Nearest), {"%r1", "%r2", "%r3"});
  CHECK(hopper.version() == ptx::PtxVersion{7, 8});
}

TEST_CASE("workgroup arrays lower to .shared arrays with 32-bit addresses and ld/st.shared", "[emitter][shared]") {
  const Program program = quantc::testing::shared_memory_program();
  const std::string ptx = emit(program, 90);
  INFO(ptx);
  CHECK(ptx.find("\t.shared .align 16 .b8 \tshared_memory_shared_partial[512];\n") != std::string::npos);
  CHECK(ptx.find("\t.shared .align 16 .b8 \tshared_memory_shared_octets[130];\n") != std::string::npos);
  CHECK(count_occurrences(ptx, ".shared .align 16 .b8") == 5);
  CHECK(std::regex_search(ptx, std::regex(R"(mov\.u32 \t%r\d+, shared_memory_shared_tile;)")));
  CHECK(std::regex_search(ptx, std::regex(R"(st\.shared\.v4\.u32 \t\[%r\d+\], \{%r\d+, %r\d+, %r\d+, %r\d+\};)")));
  CHECK(std::regex_search(ptx, std::regex(R"(ld\.shared\.v4\.u32 \t\{%r\d+, %r\d+, %r\d+, %r\d+\}, \[%r\d+\];)")));
  CHECK(std::regex_search(ptx, std::regex(R"(ld\.shared\.f64 \t%fd\d+, \[%r\d+\];)")));
  CHECK(std::regex_search(ptx, std::regex(R"(st\.shared\.u8 \t\[shared_memory_shared_octets\+128\], %r\d+;)")));
  CHECK(std::regex_search(ptx, std::regex(R"(ld\.shared\.f32 \t%f\d+, \[shared_memory_shared_partial\+20\];)")));
  CHECK(count_occurrences(ptx, "bar.sync \t0;") == 3);
  CHECK(ptx.find("ld.global.nc.f32") != std::string::npos);  // global loads unchanged
  CHECK(ptx.find("ld.shared.nc") == std::string::npos);
}

TEST_CASE("workgroup arrays assemble with ptxas on every target, which counts their bytes", "[emitter][shared][ptxas]") {
  if (!quantc::testing::ptxas_or_skip()) return;
  const Program program = quantc::testing::shared_memory_program();
  for (const ptx::Target& target : ptx::supported_targets()) {
    const std::string ptx = emit(program, target.sm);
    quantc::testing::require_assembles(ptx, target, "shared_memory");
    const ptx::PtxasResult result = ptx::run_ptxas(ptx, target);
    REQUIRE(result.functions.size() == 1);
    CHECK(result.functions[0].static_shared_bytes == 4240);
  }
}

TEST_CASE("atomics and fences lower to atom.global.add and fence.acq_rel.gpu and assemble on every target",
          "[emitter][atomic][ptxas]") {
  const Program program = quantc::testing::split_reduction_program();
  const std::string ptx = emit(program, 90);
  INFO(ptx);
  CHECK(std::regex_search(ptx, std::regex(R"(atom\.global\.add\.u32 \t%r\d+, \[%rd\d+\], 1;)")));
  CHECK(count_occurrences(ptx, "fence.acq_rel.gpu;") == 2);
  // Scratch buffers are read and written like outputs: no read-only (.nc) loads of them.
  CHECK(ptx.find("scratch f32[12] (48 bytes): allocate zero-filled once") != std::string::npos);
  if (!quantc::testing::ptxas_or_skip()) return;
  for (const ptx::Target& target : ptx::supported_targets()) {
    quantc::testing::require_assembles(emit(program, target.sm), target, "split_reduction");
  }
}
