// The PTX vocabulary (ptx/Isa.h) and the instruction table (ptx/InstructionTable.h):
// every row and type renders and parses back to the same row and spelling, the
// spellings nvcc emits resolve to the expected rows, unknown spellings are refused by
// name, availability (target_supports, min_sm, min_ptx) agrees with ptxas, and the
// table's own invariants hold.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "PtxTestSupport.h"
#include "ptx/InstructionTable.h"
#include "ptx/Isa.h"
#include "ptx/Ptxas.h"

using namespace quantc::ptx;

namespace {

std::vector<ValueType> types_in(TypeSet set) {
  std::vector<ValueType> types;
  for (unsigned i = 1; i < kValueTypeCount; ++i) {
    if (contains(set, static_cast<ValueType>(i))) types.push_back(static_cast<ValueType>(i));
  }
  return types;
}

/// A mnemonic of `row` with the given types and the mode words its opcode cannot be
/// rendered without (a state space for cvta, a comparison for setp, ...).
Mnemonic representative(const InstructionForm& row, ValueType type, ValueType source_type) {
  Mnemonic m;
  m.opcode = row.opcode;
  m.type = type;
  m.source_type = source_type;
  switch (row.opcode) {
    case Opcode::Cvta: m.space = StateSpace::Global; break;
    case Opcode::Ld:
    case Opcode::St:
    case Opcode::Atom:
    case Opcode::Red: m.space = StateSpace::Global; break;
    case Opcode::Ldu: m.space = StateSpace::Global; break;
    case Opcode::Setp:
    case Opcode::Set: m.compare = Compare::Lt; break;
    case Opcode::Shfl: m.mode = static_cast<std::uint8_t>(ShuffleMode::Butterfly); break;
    case Opcode::Vote: m.mode = static_cast<std::uint8_t>(VoteMode::Ballot); break;
    case Opcode::Testp: m.mode = static_cast<std::uint8_t>(TestProperty::Finite); break;
    case Opcode::Shf: m.mode = static_cast<std::uint8_t>(ShiftDirection::Right); break;
    case Opcode::Mma: m.row_col = true; break;  // .m16n8k16 is mode 0
    case Opcode::Ldmatrix: m.matrices = 4; m.space = StateSpace::Shared; break;  // .m8n8 is mode 0
    case Opcode::CpAsync: m.space = StateSpace::Shared; m.global_source = true; break;
    default: break;
  }
  if (row.modifiers & kRounding) m.rounding = Rounding::Nearest;
  return m;
}

/// The same mnemonic with every optional flag modifier the row takes written out.
Mnemonic with_flags(const InstructionForm& row, Mnemonic m) {
  if (row.modifiers & kFtz) m.ftz = true;
  if (row.modifiers & kSat) m.saturate = true;
  if (row.modifiers & kSatFinite) m.saturate_finite = true;
  if (row.modifiers & kNan) m.propagate_nan = true;
  if (row.modifiers & kRelu) m.relu = true;
  if (row.modifiers & kMulMode) m.mul_mode = MulMode::Lo;
  if (row.modifiers & kBoolOp) m.bool_op = BoolOp::Or;
  if (row.modifiers & kApprox) m.approx = true;
  if (row.modifiers & kClamp) m.clamp = true;
  if (row.modifiers & kUniform) m.uniform = true;
  if (row.modifiers & kVector) m.vector = 4;
  if ((row.modifiers & kCache) && (row.opcode == Opcode::Ld)) m.non_coherent = true;
  if ((row.modifiers & kMode) && row.opcode == Opcode::Prmt) m.mode = static_cast<std::uint8_t>(PermuteMode::Rc16);
  return m;
}

const InstructionForm& row_named(std::string_view name) {
  const auto& rows = instruction_forms();
  auto it = std::find_if(rows.begin(), rows.end(), [&](const InstructionForm& row) { return row.name == name; });
  if (it == rows.end()) throw std::logic_error(fmt::format("no row named {}", name));
  return *it;
}

std::string resolve(std::string_view text) { return std::string(find_form(parse_mnemonic(text)).name); }

}  // namespace

TEST_CASE("every row and type renders, parses back to the same spelling and resolves to that row", "[ptx][isa]") {
  std::set<std::string_view> reached;
  unsigned combinations = 0;
  for (const InstructionForm& row : instruction_forms()) {
    std::vector<ValueType> types = row.types ? types_in(row.types) : std::vector<ValueType>{ValueType::None};
    std::vector<ValueType> sources =
        row.source_types ? types_in(row.source_types) : std::vector<ValueType>{ValueType::None};
    for (ValueType type : types) {
      for (ValueType source : sources) {
        const Mnemonic plain = representative(row, type, source);
        for (const Mnemonic& m : {plain, with_flags(row, plain)}) {
          ++combinations;
          const std::string text = to_string(m);
          INFO("row " << row.name << ": '" << text << "'");
          Mnemonic parsed;
          REQUIRE_NOTHROW(parsed = parse_mnemonic(text));
          CHECK(to_string(parsed) == text);
          CHECK(parsed.opcode == row.opcode);
          CHECK(parsed.type == type);
          CHECK(parsed.source_type == source);
          CHECK((parsed.present & ~row.modifiers) == 0);
          const InstructionForm* found = nullptr;
          REQUIRE_NOTHROW(found = &find_form(parsed));
          if (found->form == row.form) {
            reached.insert(row.name);
            continue;
          }
          // Another row took it: allowed only for an earlier row of the same opcode that
          // lists the same types (rows overlap, e.g. Cvt and CvtBFloat16Wide on
          // cvt.f64.f64), and it must execute the same way.
          INFO("resolved to " << found->name);
          CHECK(found->form < row.form);
          CHECK(found->opcode == row.opcode);
          CHECK(contains(found->types, type));
          CHECK(found->semantics == row.semantics);
        }
      }
    }
  }
  for (const InstructionForm& row : instruction_forms()) {
    INFO("row " << row.name << " is shadowed by earlier rows for every one of its types");
    CHECK(reached.count(row.name) == 1);
  }
  CHECK(combinations > 300);
}

TEST_CASE("the spellings nvcc emits resolve to the expected rows", "[ptx][isa]") {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"ld.global.nc.v4.u32", "Ld"},
      {"ld.global.nc.L1::no_allocate.v4.u32", "Ld"},
      {"ld.shared.v4.f32", "Ld"},
      {"st.shared.v4.f32", "St"},
      {"st.global.v2.u32", "St"},
      {"ld.param.u64", "Ld"},
      {"ldu.global.u32", "Ldu"},
      {"shfl.sync.bfly.b32", "Shfl"},
      {"shfl.sync.idx.b32", "Shfl"},
      {"vote.sync.ballot.b32", "Vote"},
      {"setp.lt.and.f32", "F32Setp"},
      {"setp.ne.s32", "IntSetp"},
      {"setp.gtu.f16", "HalfSetp"},
      {"cvt.rn.f16x2.f32", "CvtPackHalf"},
      {"cvt.rn.bf16x2.f32", "CvtPackHalf"},
      {"cvt.rn.f16.f32", "Cvt"},
      {"cvt.f32.f16", "Cvt"},
      {"cvt.f32.bf16", "CvtFromBFloat16"},
      {"cvt.rn.bf16.f32", "CvtToBFloat16"},
      {"cvt.rzi.s32.f32", "Cvt"},
      {"cvt.rn.bf16.f64", "CvtBFloat16Wide"},
      {"cvt.rn.satfinite.f16x2.f32", "CvtPackHalf"},
      {"cvt.rn.satfinite.relu.bf16x2.f32", "CvtPackHalf"},
      {"cvt.rn.relu.satfinite.f16x2.f32", "CvtPackHalf"},
      {"cvt.rn.satfinite.bf16.f32", "CvtToBFloat16"},
      {"cvt.rn.satfinite.f16.f32", "Cvt"},
      {"cvt.rn.sat.f16.f32", "Cvt"},
      {"cvt.rn.relu.f16.f32", "Cvt"},
      {"cvta.to.global.u64", "Cvta"},
      {"prmt.b32", "Prmt"},
      {"prmt.b32.f4e", "Prmt"},
      {"prmt.b32.rc16", "Prmt"},
      {"lop3.b32", "Lop3"},
      {"shf.l.wrap.b32", "Shf"},
      {"shf.r.clamp.b32", "Shf"},
      {"bar.warp.sync", "BarWarpSync"},
      {"bar.sync", "Bar"},
      {"barrier.sync.aligned", "Barrier"},
      {"fma.rn.f16x2", "HalfFma"},
      {"fma.rn.bf16x2", "BFloat16Fma"},
      {"fma.rn.relu.bf16x2", "BFloat16Fma"},
      {"sub.f16x2", "HalfSub"},
      {"add.rn.bf16x2", "BFloat16Add"},
      {"mul.bf16x2", "BFloat16Mul"},
      {"min.bf16x2", "BFloat16Min"},
      {"max.NaN.f16x2", "HalfMax"},
      {"neg.bf16x2", "BFloat16Neg"},
      {"abs.bf16x2", "BFloat16Abs"},
      {"atom.global.add.f32", "Atom"},
      {"atom.global.cas.b32", "Atom"},
      {"atom.global.max.s32", "Atom"},
      {"red.global.add.u32", "Red"},
      {"red.relaxed.gpu.global.add.f32", "Red"},
      {"mul.wide.u32", "IntMul"},
      {"mad.lo.s32", "IntMad"},
      {"fma.rn.f32", "F32Fma"},
      {"div.rn.f64", "F64Div"},
      {"mov.b32", "Mov"},
      {"selp.b32", "Selp"},
      {"membar.gl", "Membar"},
  };
  for (auto [text, row] : cases) {
    INFO(text);
    CHECK(resolve(text) == row);
  }
  // What the parsed mnemonic records.
  Mnemonic ld = parse_mnemonic("ld.global.nc.v4.u32");
  CHECK(ld.space == StateSpace::Global);
  CHECK(ld.non_coherent);
  CHECK(ld.vector == 4);
  CHECK(ld.type == ValueType::U32);
  Mnemonic setp = parse_mnemonic("setp.lt.and.f32");
  CHECK(setp.compare == Compare::Lt);
  CHECK(setp.bool_op == BoolOp::And);
  Mnemonic atom_and = parse_mnemonic("atom.global.and.b32");  // .and is atom's operation, not a bool op
  CHECK(static_cast<AtomicOp>(atom_and.mode) == AtomicOp::And);
  CHECK(atom_and.bool_op == BoolOp::None);
  Mnemonic prmt = parse_mnemonic("prmt.b32.ecl");
  CHECK(static_cast<PermuteMode>(prmt.mode) == PermuteMode::Ecl);
  Mnemonic shf = parse_mnemonic("shf.l.clamp.b32");
  CHECK(static_cast<ShiftDirection>(shf.mode) == ShiftDirection::Left);
  CHECK(shf.clamp);
  // .satfinite is a modifier of its own, not .sat (clamp to [0, 1]).
  Mnemonic satfinite = parse_mnemonic("cvt.rn.satfinite.bf16x2.f32");
  CHECK(satfinite.saturate_finite);
  CHECK_FALSE(satfinite.saturate);
  CHECK(satfinite.present == (kRounding | kSatFinite));
  CHECK(to_string(satfinite) == "cvt.rn.satfinite.bf16x2.f32");
  CHECK(to_string(parse_mnemonic("cvt.rn.sat.f16.f32")) == "cvt.rn.sat.f16.f32");
  Mnemonic pack = parse_mnemonic("cvt.rn.f16x2.f32");
  CHECK(pack.type == ValueType::F16x2);
  CHECK(pack.source_type == ValueType::F32);
  CHECK(pack.rounding == Rounding::Nearest);
  CHECK(parse_mnemonic("bar.warp.sync").opcode == Opcode::BarWarp);
  // Modifiers in another order render in the canonical order.
  CHECK(to_string(parse_mnemonic("ld.nc.v4.global.u32")) == "ld.global.nc.v4.u32");
  CHECK(to_string(parse_mnemonic("setp.and.lt.f32")) == "setp.lt.and.f32");
  CHECK(to_string(parse_mnemonic("fma.relu.rn.bf16x2")) == "fma.rn.relu.bf16x2");
  // Ignorable cache qualifiers are accepted and dropped; .nc is kept.
  CHECK(to_string(parse_mnemonic("ld.global.nc.L1::no_allocate.v4.u32")) == "ld.global.nc.v4.u32");
  CHECK(to_string(parse_mnemonic("ld.shared::cta.u32")) == "ld.shared.u32");
}

TEST_CASE("unknown opcodes, modifiers and types and forms outside the table raise PtxSyntaxError naming the spelling",
          "[ptx][isa]") {
  CHECK_THROWS_MATCHES(parse_mnemonic("frob.b32"), PtxSyntaxError, Catch::Message("unsupported instruction 'frob' in 'frob.b32'"));
  CHECK_THROWS_MATCHES(parse_mnemonic("add.xyz.f32"), PtxSyntaxError,
                       Catch::Message("unsupported modifier '.xyz' in 'add.xyz.f32'"));
  CHECK_THROWS_AS(parse_mnemonic("add.f33"), PtxSyntaxError);
  CHECK_THROWS_WITH(parse_mnemonic("add.f33"), Catch::Contains("'.f33'"));
  CHECK_THROWS_AS(parse_mnemonic("ld.global.v8.u32"), PtxSyntaxError);
  CHECK_THROWS_WITH(parse_mnemonic("ld.global.v8.u32"), Catch::Contains("'.v8'"));
  CHECK_THROWS_AS(parse_mnemonic("cvt.rn.f16.f32.f32"), PtxSyntaxError);
  CHECK_THROWS_WITH(parse_mnemonic("cvt.rn.f16.f32.f32"), Catch::Contains("more than two types in 'cvt.rn.f16.f32.f32'"));
  CHECK_THROWS_AS(parse_mnemonic("shfl.sync.sideways.b32"), PtxSyntaxError);
  CHECK_THROWS_WITH(parse_mnemonic("shfl.sync.sideways.b32"), Catch::Contains("'.sideways'"));
  // .ecl is a prmt mode, not a shfl one; .and on setp is a bool op but not on add.
  CHECK_THROWS_AS(parse_mnemonic("shfl.sync.ecl.b32"), PtxSyntaxError);
  CHECK_THROWS_AS(parse_mnemonic("add.and.s32"), PtxSyntaxError);
  CHECK_THROWS_WITH(parse_mnemonic("add.and.s32"), Catch::Contains("'.and'"));
  // mma: .row.col in that order, and four types D A B C with B = A and C = D.
  CHECK_THROWS_WITH(parse_mnemonic("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32"), Catch::Contains("takes .row.col"));
  CHECK_THROWS_WITH(parse_mnemonic("mma.sync.aligned.m16n8k16.f32.f16.f16.f32"), Catch::Contains("needs .row.col"));
  CHECK_THROWS_WITH(parse_mnemonic("mma.sync.aligned.m16n8k16.row.col.f32.f16.bf16.f32"),
                    Catch::Contains("B's type equal to A's"));
  CHECK_THROWS_WITH(parse_mnemonic("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16"),
                    Catch::Contains("C's to D's"));
  CHECK_THROWS_WITH(parse_mnemonic("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"), Catch::Contains("'.m8n8k4'"));
  CHECK_THROWS_WITH(parse_mnemonic("ldmatrix.sync.aligned.m8n8.shared.b16"), Catch::Contains("needs .x1, .x2 or .x4"));
  CHECK_THROWS_WITH(parse_mnemonic("cp.async.ca.global.shared"), Catch::Contains("from .global to .shared"));
  CHECK(to_string(parse_mnemonic("cp.async.cg.shared.global")) == "cp.async.cg.shared.global");
  CHECK(to_string(parse_mnemonic("cp.async.wait_group")) == "cp.async.wait_group");
  // Parsed, but no row: the message names the whole spelling.
  for (std::string_view text : {"setp.lt.bf16", "lop3.b64", "fma.rn.s32", "add.pred", "shfl.sync.bfly.b64",
                                "neg.ftz.bf16", "min.NaN.f64", "prmt.b16", "ld.global.v4.pred", "add.v4.f32",
                                "ld.global.f16x2", "atom.global.add.f16x2", "cvt.rn.f16x2.f64",
                                // ptxas: "Illegal modifier '.sat' for instruction 'cvt'" /
                                // "Illegal modifier '.satfinite' for instruction 'add'"
                                "cvt.rn.sat.bf16x2.f32", "cvt.rn.sat.f16x2.f32", "cvt.rn.sat.bf16.f32",
                                "add.satfinite.f32"}) {
    INFO(text);
    Mnemonic m = parse_mnemonic(text);
    CHECK_THROWS_MATCHES(find_form(m), PtxSyntaxError,
                         Catch::Message(fmt::format("no instruction form '{}' (unsupported type, modifier or vector width)",
                                                    text)));
  }
}

TEST_CASE("target_supports: bf16 add needs sm_90, bf16x2 fma and f16 min sm_80, f16x2 fma sm_53", "[ptx][isa]") {
  auto supports = [](int sm, std::string_view text) { return target_supports(Target{sm}, find_form(parse_mnemonic(text))); };
  CHECK_FALSE(supports(89, "add.bf16"));
  CHECK(supports(90, "add.bf16"));
  CHECK(supports(100, "add.rn.bf16x2"));
  CHECK_FALSE(supports(86, "mul.bf16x2"));
  CHECK_FALSE(supports(75, "fma.rn.bf16x2"));
  CHECK(supports(80, "fma.rn.bf16x2"));
  CHECK_FALSE(supports(75, "min.f16"));
  CHECK(supports(80, "min.f16"));
  CHECK(supports(80, "max.NaN.f16x2"));
  CHECK_FALSE(supports(52, "fma.rn.f16x2"));
  CHECK(supports(53, "fma.rn.f16x2"));
  CHECK(supports(75, "fma.rn.f16x2"));
  CHECK_FALSE(supports(75, "cvt.rn.f16x2.f32"));
  CHECK(supports(80, "cvt.rn.f16x2.f32"));
  CHECK_FALSE(supports(86, "cvt.rn.bf16.f64"));
  CHECK(supports(90, "cvt.rn.bf16.f64"));
  CHECK(supports(80, "cvt.f32.bf16"));
  CHECK(supports(61, "dp4a.s32.s32"));
  CHECK_FALSE(supports(60, "dp4a.s32.s32"));
  CHECK_FALSE(supports(30, "lop3.b32"));
  CHECK(supports(50, "lop3.b32"));
  CHECK(row_named("BFloat16Add").min_ptx == PtxVersion{7, 8});
  CHECK(row_named("CvtFromBFloat16").min_ptx == PtxVersion{7, 1});
  CHECK(row_named("CvtPackHalf").min_ptx == PtxVersion{7, 0});
}

TEST_CASE("the half and bf16 rows' min_sm and min PTX ISA agree with ptxas", "[ptx][isa][ptxas]") {
  if (!quantc::testing::ptxas_or_skip()) return;
  // One instruction per row whose availability starts at or above ptxas's lowest
  // target (sm_75): ptxas must accept it at the row's sm_ and PTX ISA version and
  // refuse it on the supported target just below, or with the PTX ISA version before.
  struct Probe {
    std::string_view row, instruction;
  };
  const Probe probes[] = {
      {"HalfMin", "min.f16 %h1, %h2, %h3;"},
      {"HalfMax", "max.NaN.f16x2 %r1, %r2, %r3;"},
      {"BFloat16Add", "add.rn.bf16x2 %r1, %r2, %r3;"},
      {"BFloat16Sub", "sub.bf16 %h1, %h2, %h3;"},
      {"BFloat16Mul", "mul.rn.bf16 %h1, %h2, %h3;"},
      {"BFloat16Fma", "fma.rn.relu.bf16x2 %r1, %r2, %r3, %r1;"},
      {"BFloat16Min", "min.bf16x2 %r1, %r2, %r3;"},
      {"BFloat16Max", "max.bf16 %h1, %h2, %h3;"},
      {"BFloat16Neg", "neg.bf16x2 %r1, %r2;"},
      {"BFloat16Abs", "abs.bf16 %h1, %h2;"},
      {"CvtToBFloat16", "cvt.rn.bf16.f32 %h1, %f1;"},
      {"CvtFromBFloat16", "cvt.f32.bf16 %f1, %h1;"},
      {"CvtBFloat16Wide", "cvt.rn.bf16.f64 %h1, %fd1;"},
      {"CvtPackHalf", "cvt.rn.f16x2.f32 %r1, %f1, %f2;"},
      {"Ldmatrix", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r0, %r1, %r2, %r3}, [%r0];"},
      {"CpAsync", "cp.async.cg.shared.global [%r0], [%rd0], 16;"},
      {"CpAsync", "cp.async.ca.shared.global [%r0], [%rd0], 4;"},
      {"CpAsyncCommit", "cp.async.commit_group;"},
      {"CpAsyncWait", "cp.async.wait_group 1;"},
      {"Ldmatrix", "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r0];"},
      {"Mma", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, "
              "{%r0, %r1}, {%f0, %f1, %f2, %f3};"},
      {"Mma", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, "
              "{%r0, %r1}, {%f0, %f1, %f2, %f3};"},
  };
  auto assemble = [](int sm, PtxVersion version, std::string_view instruction) {
    std::string ptx = fmt::format(
        ".version {}\n.target sm_{}\n.address_size 64\n.visible .entry probe()\n{{\n"
        "  .reg .b16 %h<4>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .reg .f32 %f<4>;\n  .reg .f64 %fd<4>;\n  {}\n"
        "  ret;\n}}\n",
        version.to_string(), sm, instruction);
    return run_ptxas(ptx, Target{sm});
  };
  const std::vector<Target>& targets = supported_targets();
  for (const Probe& probe : probes) {
    const InstructionForm& row = row_named(probe.row);
    INFO(probe.instruction);
    std::string mnemonic(probe.instruction.substr(0, probe.instruction.find_first_of(" ;")));
    REQUIRE(find_form(parse_mnemonic(mnemonic)).name == probe.row);
    // The lowest supported target at or above the row's sm_, with the higher of the
    // row's and the target's PTX ISA versions.
    auto at = std::find_if(targets.begin(), targets.end(), [&](const Target& t) { return t.sm >= row.min_sm; });
    REQUIRE(at != targets.end());
    PtxVersion version = std::max(row.min_ptx, at->min_ptx_version());
    PtxasResult accepted = assemble(at->sm, version, probe.instruction);
    INFO(accepted.log);
    CHECK(accepted.success);
    if (at->sm == row.min_sm && at != targets.begin()) {
      const Target& below = *(at - 1);
      CHECK_FALSE(assemble(below.sm, std::max(version, below.min_ptx_version()), probe.instruction).success);
    }
    if (row.min_ptx > at->min_ptx_version() && row.min_ptx.minor > 0) {
      PtxVersion before{row.min_ptx.major, row.min_ptx.minor - 1};
      CHECK_FALSE(assemble(at->sm, before, probe.instruction).success);
    }
  }
}

TEST_CASE("instruction table invariants: unique names, pipes set, real min_sm, vectors only on ld/ldu/st",
          "[ptx][isa]") {
  const auto& rows = instruction_forms();
  std::set<std::string_view> names;
  const std::set<int> real_architectures = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75,
                                            80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const InstructionForm& row = rows[i];
    INFO("row " << row.name);
    CHECK(static_cast<std::size_t>(row.form) == i);
    CHECK(&form(row.form) == &row);
    CHECK(names.insert(row.name).second);
    CHECK(static_cast<unsigned>(row.pipe) < kPipeCount);
    CHECK(to_string(row.pipe) != "?");
    CHECK(real_architectures.count(row.min_sm) == 1);
    CHECK(row.min_ptx >= PtxVersion{1, 0});
    CHECK_FALSE(row.semantics.empty());
    const bool memory_access = row.opcode == Opcode::Ld || row.opcode == Opcode::Ldu || row.opcode == Opcode::St;
    if (!memory_access) {
      CHECK(row.vector_widths == kScalar);
      CHECK((row.modifiers & kVector) == 0);
    } else {
      CHECK(row.vector_widths == kScalarOrVector);
      CHECK((row.modifiers & kVector) != 0);
    }
    // Operand signatures use only the documented letters, with balanced brackets.
    int depth = 0;
    for (char c : row.operands) {
      CHECK(std::string_view("tswupal[]").find(c) != std::string_view::npos);
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      CHECK((depth == 0 || depth == 1));
    }
    CHECK(depth == 0);
    // Pipes follow the opcode family.
    switch (row.opcode) {
      case Opcode::Ld: case Opcode::Ldu: case Opcode::St: case Opcode::Atom: case Opcode::Red:
        CHECK(row.pipe == Pipe::Memory);
        break;
      case Opcode::Cvt: CHECK(row.pipe == Pipe::Conversion); break;
      case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask: CHECK(row.pipe == Pipe::Shuffle); break;
      case Opcode::Bra: case Opcode::Ret: case Opcode::Exit: case Opcode::Bar: case Opcode::BarWarp:
      case Opcode::Barrier:
        CHECK(row.pipe == Pipe::Control);
        break;
      default:
        if (row.types != 0 && (row.types & ~(types::kF16 | types::kBF16)) == 0) CHECK(row.pipe == Pipe::Fp16);
        break;
    }
    // bf16 arithmetic needs sm_80, f16 arithmetic sm_53.
    if ((row.types & types::kBF16) != 0) CHECK(row.min_sm >= 80);
    if ((row.types & types::kF16) != 0 && row.opcode != Opcode::Cvt) CHECK(row.min_sm >= 53);
  }
  CHECK(rows.size() == names.size());
}
