// The -O2 PTX of every shipped spec and every op's test shapes has no work left that
// CSE or folding should have removed: no pure instruction repeated within a basic block
// on unchanged operands, no `selp` with identical arms, no multiply by 1 (mul.wide by 1
// for byte addresses included), no add/or/shift by 0, no comparison of two immediates,
// and no arithmetic or move whose result nothing reads (PtxWriter's dead-code
// elimination). Checker tests first show each finding is detected.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/ops/Spec.h"
#include "lower/driver/Compiler.h"

using namespace quantc;
namespace fs = std::filesystem;

namespace {

struct Instruction {
  std::string opcode;                 // "mul.wide.u32"
  std::vector<std::string> operands;  // destination first
};

std::string trim(const std::string& text) {
  std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  std::size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

bool is_immediate(const std::string& operand) {
  if (operand.empty()) return false;
  if (operand.rfind("0f", 0) == 0 || operand.rfind("0d", 0) == 0) return true;
  std::size_t start = operand[0] == '-' ? 1 : 0;
  return start < operand.size() && std::isdigit(static_cast<unsigned char>(operand[start]));
}

bool is_one(const std::string& operand) { return operand == "1" || operand == "0f3F800000"; }

/// Instructions whose result depends on more than their operands (memory, lanes,
/// control), or that only move a value.
bool has_side_effects_or_moves(const std::string& opcode) {
  for (const char* prefix : {"ld.", "st.", "atom", "red.", "shfl", "vote", "bar", "membar", "fence", "mov", "cvta",
                             "activemask", "call", "ret", "bra"}) {
    if (opcode.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

/// One line per finding: "line N: what: the instruction".
std::vector<std::string> redundancies(const std::string& ptx) {
  std::vector<std::string> findings;
  std::map<std::pair<std::string, std::vector<std::string>>, std::size_t> available;  // (opcode, sources) -> line
  std::istringstream stream(ptx);
  std::size_t number = 0;
  auto report = [&](const std::string& what, const std::string& text) {
    findings.push_back("line " + std::to_string(number) + ": " + what + ": " + text);
  };
  for (std::string line; std::getline(stream, line);) {
    ++number;
    std::string text = trim(line.substr(0, line.find("//")));
    if (text.empty()) continue;
    // A label, a branch, a guarded instruction or a brace ends the basic block.
    if (text.back() == ':' || text[0] == '@' || text[0] == '{' || text[0] == '}' || text.rfind("bra", 0) == 0) {
      available.clear();
      continue;
    }
    if (text.back() != ';' || text[0] == '.') continue;  // directives
    text.pop_back();
    std::size_t space = text.find_first_of(" \t");
    if (space == std::string::npos) continue;
    Instruction instruction{text.substr(0, space), {}};
    std::stringstream operands(text.substr(space + 1));
    for (std::string operand; std::getline(operands, operand, ',');) instruction.operands.push_back(trim(operand));
    const std::string& opcode = instruction.opcode;
    const std::vector<std::string>& ops = instruction.operands;
    if (ops.empty()) continue;
    std::vector<std::string> sources(ops.begin() + 1, ops.end());

    if (opcode.rfind("selp", 0) == 0 && ops.size() == 4 && ops[1] == ops[2]) report("selp with identical arms", text);
    if (opcode.rfind("mul", 0) == 0 && ops.size() == 3 && (is_one(ops[1]) || is_one(ops[2]))) report("multiply by 1", text);
    for (const char* identity : {"add", "sub", "or", "xor", "shl", "shr"}) {
      if (opcode.rfind(std::string(identity) + ".", 0) == 0 && ops.size() == 3 && ops[2] == "0") {
        report("operation with 0", text);
      }
    }
    if (opcode.rfind("setp", 0) == 0 && ops.size() == 3 && is_immediate(ops[1]) && is_immediate(ops[2])) {
      report("comparison of two immediates", text);
    }

    // Anything written kills the available expressions that read it.
    const std::string& destination = ops[0];
    std::erase_if(available, [&](const auto& entry) {
      const std::vector<std::string>& read = entry.first.second;
      return std::find(read.begin(), read.end(), destination) != read.end();
    });
    if (has_side_effects_or_moves(opcode)) continue;
    auto key = std::make_pair(opcode, sources);
    if (auto found = available.find(key); found != available.end()) {
      report("repeats line " + std::to_string(found->second), text);
    } else {
      available.emplace(key, number);
    }
  }
  return findings;
}

/// The virtual registers (%r7, %rd3, ...) named in `text`, special registers excluded.
std::vector<std::string> registers_in(const std::string& text) {
  std::vector<std::string> found;
  for (std::size_t i = text.find('%'); i != std::string::npos; i = text.find('%', i + 1)) {
    std::size_t end = i + 1;
    while (end < text.size() && std::islower(static_cast<unsigned char>(text[end]))) ++end;
    const std::size_t digits = end;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (digits > i + 1 && end > digits) found.push_back(text.substr(i, end - i));
  }
  return found;
}

/// One line per unguarded arithmetic, conversion or move instruction whose destination
/// register no instruction reads: "line N: unread result: the instruction".
std::vector<std::string> unread_results(const std::string& ptx) {
  struct Written {
    std::size_t line;
    std::string destination, text;
  };
  std::vector<Written> written;
  std::map<std::string, std::size_t> reads;
  std::istringstream stream(ptx);
  std::size_t number = 0;
  for (std::string line; std::getline(stream, line);) {
    ++number;
    std::string text = trim(line.substr(0, line.find("//")));
    if (text.empty() || text.back() != ';' || text[0] == '.') continue;
    text.pop_back();
    const std::size_t space = text.find_first_of(" \t");
    const std::string opcode = text.substr(0, space);
    const std::string operands = space == std::string::npos ? "" : text.substr(space + 1);
    const std::string first = trim(operands.substr(0, operands.find(',')));
    const std::vector<std::string> first_registers = registers_in(first);
    const bool plain_destination = first_registers.size() == 1 && first_registers.front() == first;
    const bool pure = !has_side_effects_or_moves(opcode) || opcode.rfind("mov", 0) == 0;
    const bool writes = text[0] != '@' && pure && plain_destination;
    const std::string read = writes ? operands.substr(std::min(operands.size(), operands.find(',') + 1)) : text;
    for (const std::string& name : registers_in(read)) ++reads[name];
    if (writes) written.push_back({number, first, text});
  }
  std::vector<std::string> findings;
  for (const Written& w : written) {
    if (reads[w.destination] == 0) findings.push_back("line " + std::to_string(w.line) + ": unread result: " + w.text);
  }
  return findings;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void require_no_redundancy(const std::string& ptx, const std::string& what) {
  std::vector<std::string> findings = redundancies(ptx);
  for (std::string& unread : unread_results(ptx)) findings.push_back(std::move(unread));
  std::string listed;
  for (const std::string& finding : findings) listed += "\n  " + finding;
  INFO(what << listed);
  CHECK(findings.empty());
}

}  // namespace

TEST_CASE("the redundancy checker finds each kind of leftover", "[redundancy]") {
  const std::string ptx = R"(
	mul.wide.u32 	%rd1, %r1, 4;
	add.s64 	%rd2, %rd0, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	selp.f32 	%f1, 0f3B000000, 0f3B000000, %p1;
	mul.wide.u32 	%rd4, %r2, 1;
	add.u32 	%r3, %r2, 0;
	setp.lt.u32 	%p2, 3, 32;
$L__next:
	mul.wide.u32 	%rd5, %r1, 4;
	mov.u32 	%r1, %r9;
	mul.wide.u32 	%rd6, %r1, 4;
)";
  std::vector<std::string> findings = redundancies(ptx);
  REQUIRE(findings.size() == 5);
  CHECK(findings[0] == "line 4: repeats line 2: mul.wide.u32 \t%rd3, %r1, 4");
  CHECK(findings[1].find("selp with identical arms") != std::string::npos);
  CHECK(findings[2].find("multiply by 1") != std::string::npos);
  CHECK(findings[3].find("operation with 0") != std::string::npos);
  CHECK(findings[4].find("comparison of two immediates") != std::string::npos);
}

TEST_CASE("the unread-result checker finds an instruction whose destination nothing reads", "[redundancy]") {
  // %r3 is read only by %r4's add, which nothing reads; %r5 feeds a load's address, %r6 a
  // guard, %r7 a store; the loop counter %r8 reads itself.
  const std::string ptx = R"(
	add.u32 	%r3, %r1, 4;
	add.u32 	%r4, %r3, 8;
	mul.wide.u32 	%rd5, %r1, 4;
	ld.global.u32 	%r9, [%rd5+16];
	setp.lt.u32 	%p6, %r9, 3;
	@%p6 bra 	$L__end;
	mov.u32 	%r7, %tid.x;
	st.global.u32 	[%rd5], %r7;
	add.u32 	%r8, %r8, 1;
	shl.b32 	%r10, %r9, 2;
)";
  std::vector<std::string> findings = unread_results(ptx);
  REQUIRE(findings.size() == 2);
  CHECK(findings[0] == "line 3: unread result: add.u32 \t%r4, %r3, 8");
  CHECK(findings[1] == "line 11: unread result: shl.b32 \t%r10, %r9, 2");
}

TEST_CASE("O2 PTX of every shipped spec has no repeated, foldable or dead instruction", "[redundancy]") {
  fs::path specs = fs::path(QUANTC_SOURCE_DIR) / "examples" / "specs";
  std::size_t checked = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(specs)) {
    if (entry.path().extension() != ".json") continue;
    ir::ops::OpSpec spec = ir::ops::parse_spec(read_text(entry.path()), entry.path().filename().string());
    for (const char* target : {"sm_80", "sm_90"}) {
      lower::CompiledKernel kernel = lower::compile(ir::ops::build_program(spec), {ptx::parse_target(target)});
      require_no_redundancy(kernel.ptx, entry.path().filename().string() + " on " + target);
      ++checked;
    }
  }
  CHECK(checked >= 30);
}

TEST_CASE("O2 PTX of every op's test shapes has no repeated, foldable or dead instruction", "[redundancy]") {
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    for (const ir::ops::OpArgs& args : op.test_shapes) {
      lower::CompiledKernel kernel = lower::compile(op.build(args), {ptx::parse_target("sm_90")});
      require_no_redundancy(kernel.ptx, op.name);
    }
  }
}
