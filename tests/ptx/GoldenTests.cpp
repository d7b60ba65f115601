// Golden files: the IR text and PTX of every registered op at each of its test shapes,
// for sm_80 and sm_90. Regenerate with (see tests/golden/README.md):
//   QUANTC_UPDATE_GOLDEN=1 ./build/tests/ptx/ptx_tests "[golden]"
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Printer.h"
#include "ir/ops/Registry.h"
#include "tests/ptx/PtxTestSupport.h"

using namespace quantc;
namespace fs = std::filesystem;

namespace {

const fs::path& golden_directory() {
  static const fs::path directory = fs::path(QUANTC_SOURCE_DIR) / "tests" / "golden";
  return directory;
}

bool updating() {
  const char* update = std::getenv("QUANTC_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

/// A unified-style diff (" ", "-", "+" lines, 3 lines of context) from an LCS table.
std::string line_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = split_lines(expected), b = split_lines(actual);
  std::vector<std::vector<unsigned>> common(a.size() + 1, std::vector<unsigned>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  std::vector<std::pair<char, std::string>> edits;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      edits.emplace_back(' ', a[i++]);
      ++j;
    } else if (i < a.size() && (j == b.size() || common[i + 1][j] >= common[i][j + 1])) {
      edits.emplace_back('-', a[i++]);
    } else {
      edits.emplace_back('+', b[j++]);
    }
  }
  std::string out = "--- golden\n+++ emitted\n";
  const std::size_t context = 3;
  for (std::size_t k = 0; k < edits.size(); ++k) {
    bool near_change = false;
    for (std::size_t d = (k >= context ? k - context : 0); d < std::min(edits.size(), k + context + 1); ++d) {
      near_change |= edits[d].first != ' ';
    }
    if (near_change) out += std::string(1, edits[k].first) + edits[k].second + "\n";
    else if (k > 0 && out.back() == '\n' && out.substr(out.size() - 4) != "...\n") out += "...\n";
  }
  return out;
}

void check_golden(const std::string& file_name, const std::string& actual) {
  fs::path path = golden_directory() / file_name;
  if (updating()) {
    fs::create_directories(golden_directory());
    std::ofstream(path, std::ios::binary) << actual;
    WARN("updated golden file " << path.string());
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    FAIL("missing golden file " << path.string()
                                << "; create it with: QUANTC_UPDATE_GOLDEN=1 ./build/tests/ptx/ptx_tests \"[golden]\"");
  }
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() != actual) {
    FAIL("golden mismatch for " << path.string() << " (regenerate with QUANTC_UPDATE_GOLDEN=1 "
                                << "./build/tests/ptx/ptx_tests \"[golden]\" if the change is intended)\n"
                                << line_diff(expected.str(), actual));
  }
}

}  // namespace

TEST_CASE("golden IR text and PTX for every registered op and test shape", "[golden]") {
  for (const ir::ops::OpInfo& op : ir::ops::OpRegistry::builtin().all()) {
    for (const ir::ops::OpArgs& args : op.test_shapes) {
      const std::string stem = testing::spec_stem(op, args);
      SECTION(stem) {
        ir::Program program = testing::program_for_test(op, args);
        check_golden(stem + ".ir", ir::print(program));
        for (int sm : {80, 90}) {
          ptx::Target target{sm};
          check_golden(stem + "." + target.name() + ".ptx", testing::emit_for_test(program, target));
        }
      }
    }
  }
}

TEST_CASE("golden diff output names the changed lines", "[golden][diff]") {
  std::string diff = line_diff("a\nb\nc\n", "a\nB\nc\n");
  CHECK(diff.find("-b\n+B\n") != std::string::npos);
  CHECK(diff.find(" a\n") != std::string::npos);
}
