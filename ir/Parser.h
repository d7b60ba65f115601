// Reads the IR text format that ir/Printer.h writes, so print(parse(print(p))) ==
// print(p) for every program. Pass tests (tests/passes/cases/*.qir) and
// `quantc opt FILE.qir` are written in it.
//
// Beyond the printer's output the parser accepts `//` line comments and any amount of
// whitespace between tokens. Variable types are not printed at their uses, so the
// parser tracks the declarations in scope (Let, Loop) and the program's buffers, and
// builds every node through its validating `make` factory: ill-typed text is reported
// with the factory's message at the offending position.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ir/Program.h"

namespace quantc::ir {

/// A syntax or type error in IR text. what() is "SOURCE:LINE:COLUMN: error: MESSAGE"
/// (lines and columns count from 1, columns in bytes).
class ParseError : public IRError {
 public:
  ParseError(const std::string& source, int line, int column, const std::string& message);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

/// Parses one whole program (header, buffers, `{ body }`). Does not run the verifier;
/// callers that need a well-formed program call verify_or_throw afterwards.
/// Throws ParseError for text that is not a program, naming line and column;
/// `source_name` (e.g. the file path) prefixes the message. Text nested deeper than
/// kMaxNestingDepth (ir/IR.h) is a ParseError at the first token past the limit, found
/// before the parser recurses further, so no input can exhaust its stack. Any bytes are
/// safe to pass (the entry point of the IR parser's fuzz target).
Program parse_program(std::string_view text, std::string_view source_name = "<input>");

/// Parses one expression. `variables` gives the types of the variables it may use and
/// `program` (may be null) the buffers its loads and len() refer to.
/// Throws ParseError as parse_program does, also for trailing text after the expression.
Expr parse_expr(std::string_view text, const std::map<std::string, Type>& variables = {},
                const Program* program = nullptr);

}  // namespace quantc::ir
