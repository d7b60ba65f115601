// IR-text-in / IR-text-out pass tests in the style of LLVM/MLIR FileCheck tests.
//
// Each tests/passes/cases/*.qir file holds several cases separated by a line
// `// -----`. A case is a `// RUN: --passes=a,b` (or `// RUN: -O2`, optionally with
// `--fp-contract=off`) line, an input
// program, and the expected output as `// CHECK: ` (first line) and `// CHECK-NEXT: `
// lines, which must match the printed result exactly. Regenerate every expectation
// with scripts/update_pass_tests.sh (sets QUANTC_UPDATE_PASS_TESTS=1) and review the diff.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "lower/PassManager.h"

using namespace quantc;

namespace {

struct Case {
  std::string run_line;
  std::vector<std::string> input_lines;  // everything but CHECK lines
  std::string expected;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

std::vector<Case> parse_cases(const std::string& text) {
  std::vector<Case> cases(1);
  for (const std::string& line : split_lines(text)) {
    if (line == "// -----") {
      cases.emplace_back();
    } else if (line.rfind("// CHECK: ", 0) == 0) {
      cases.back().expected += line.substr(10) + "\n";
    } else if (line.rfind("// CHECK-NEXT: ", 0) == 0) {
      cases.back().expected += line.substr(15) + "\n";
    } else if (line == "// CHECK-EMPTY:") {
      cases.back().expected += "\n";
    } else {
      if (line.rfind("// RUN: ", 0) == 0) cases.back().run_line = line.substr(8);
      cases.back().input_lines.push_back(line);
    }
  }
  return cases;
}

lower::PassOptions options_for(const std::string& run_line) {
  lower::PassOptions options;
  options.verify_each = true;
  std::istringstream words(run_line);
  for (std::string word; words >> word;) {
    if (word.rfind("--passes=", 0) == 0) {
      options.passes = lower::parse_pass_list(word.substr(9));
    } else if (word == "--fp-contract=off") {
      options.fp_contract = false;
    } else {
      options.level = lower::parse_optimization_level(word);
    }
  }
  return options;
}

std::string with_checks(const Case& test_case, const std::string& actual) {
  std::string text;
  for (const std::string& line : test_case.input_lines) text += line + "\n";
  while (text.size() >= 2 && text[text.size() - 2] == '\n') text.pop_back();  // one trailing newline
  bool first = true;
  for (const std::string& line : split_lines(actual)) {
    text += line.empty() ? "// CHECK-EMPTY:\n" : (first ? "// CHECK: " : "// CHECK-NEXT: ") + line + "\n";
    first = false;
  }
  return text;
}

}  // namespace

TEST_CASE("pass case files produce their CHECK lines", "[cases]") {
  namespace fs = std::filesystem;
  fs::path directory = fs::path(QUANTC_SOURCE_DIR) / "tests" / "passes" / "cases";
  bool update = std::getenv("QUANTC_UPDATE_PASS_TESTS") != nullptr;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() == ".qir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 3);
  for (const fs::path& file : files) {
    std::ifstream stream(file);
    std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    std::vector<Case> cases = parse_cases(text);
    CHECK(cases.size() >= 2);
    std::vector<std::string> rewritten;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      std::string input;
      for (const std::string& line : cases[i].input_lines) input += line + "\n";
      INFO(file.filename().string() << " case " << i + 1 << " (" << cases[i].run_line << ")");
      REQUIRE_FALSE(cases[i].run_line.empty());
      ir::Program program = ir::parse_program(input, file.string());
      std::string actual = ir::print(lower::run_passes(program, options_for(cases[i].run_line)));
      if (update) {
        rewritten.push_back(with_checks(cases[i], actual));
      } else {
        CHECK(actual == cases[i].expected);
      }
    }
    if (update) {
      std::ofstream out(file);
      for (std::size_t i = 0; i < rewritten.size(); ++i) out << (i ? "// -----\n" : "") << rewritten[i];
    }
  }
}
