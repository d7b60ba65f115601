// IR text (.qir): ir::parse_program, then what `quantc opt FILE.qir` does with it
// (tools/commands/Emit.cpp: the -O2 pipeline, which verifies its input first, and the
// printer). Text that is not a program must be a ParseError; a parsed program that the
// verifier refuses is rejected there. For every parsed program the printer and the
// parser must agree (ir/Parser.h: print(parse(print(p))) == print(p)), and the pipeline
// must not fail on a program the verifier accepted.
#include <string>
#include <string_view>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "lower/driver/Compiler.h"
#include "tests/fuzz/FuzzTargets.h"

namespace quantc::fuzz {

Outcome ir_text_target(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ir::Program program;
  try {
    program = ir::parse_program(text, "fuzz.qir");
  } catch (const ir::ParseError&) {
    return Outcome::Rejected;
  }
  const std::string printed = ir::print(program);
  std::string reprinted;
  try {
    reprinted = ir::print(ir::parse_program(printed, "printed.qir"));
  } catch (const ir::ParseError& error) {
    throw InvariantViolation(std::string("the parser rejects the printer's output: ") + error.what());
  }
  if (reprinted != printed) throw InvariantViolation("print(parse(print(p))) != print(p)");
  if (!ir::verify(program).empty()) return Outcome::Rejected;
  const ir::Program optimized = lower::optimize(program, lower::PassOptions{});
  if (!ir::verify(optimized).empty()) throw InvariantViolation("the -O2 pipeline made a verified program invalid");
  ir::print(optimized);
  return Outcome::Accepted;
}

}  // namespace quantc::fuzz
