// Replays every file of tests/fuzz/corpus/<target>/ through its fuzz target
// (FuzzTargets.h), in every normal build and without clang: the seed corpus, and every
// input a fuzzer once crashed on (kept there as crash-*), stay covered by ctest and by
// the sanitizer job. Files named valid-* must be accepted and invalid-* rejected;
// anything else (inputs libFuzzer found, crash reproducers) only has to return.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/FuzzTargets.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void replay(const std::string& name) {
  const quantc::fuzz::Target* target = nullptr;
  for (const auto& candidate : quantc::fuzz::all_targets()) {
    if (candidate.name == name) target = &candidate;
  }
  REQUIRE(target != nullptr);
  const fs::path corpus = fs::path(QUANTC_SOURCE_DIR) / "tests/fuzz/corpus" / name;
  REQUIRE(fs::is_directory(corpus));
  std::vector<fs::path> files;
  for (const auto& item : fs::directory_iterator(corpus)) files.push_back(item.path());
  std::sort(files.begin(), files.end());
  int valid = 0, invalid = 0;
  for (const fs::path& file : files) {
    const std::string stem = file.filename().string();
    INFO(file.string());
    const std::vector<std::uint8_t> bytes = read_bytes(file);
    quantc::fuzz::Outcome outcome{};
    REQUIRE_NOTHROW(outcome = target->run(bytes.data(), bytes.size()));
    if (stem.rfind("valid", 0) == 0) {
      CHECK(outcome == quantc::fuzz::Outcome::Accepted);
      ++valid;
    } else if (stem.rfind("invalid", 0) == 0) {
      CHECK(outcome == quantc::fuzz::Outcome::Rejected);
      ++invalid;
    }
  }
  // Every seed corpus has both kinds, so a target that accepts or rejects everything fails.
  CHECK(valid >= 1);
  CHECK(invalid >= 1);
}

}  // namespace

TEST_CASE("the safetensors fuzz corpus replays without a crash", "[fuzz]") { replay("safetensors"); }
TEST_CASE("the npy fuzz corpus replays without a crash", "[fuzz]") { replay("npy"); }
TEST_CASE("the spec fuzz corpus replays without a crash", "[fuzz]") { replay("spec"); }
TEST_CASE("the ir_text fuzz corpus replays without a crash", "[fuzz]") { replay("ir_text"); }
TEST_CASE("the cache_entry fuzz corpus replays without a crash", "[fuzz]") { replay("cache_entry"); }
TEST_CASE("the gguf fuzz corpus replays without a crash", "[fuzz]") { replay("gguf"); }

TEST_CASE("every fuzz target has a replay test and a corpus", "[fuzz]") {
  for (const auto& target : quantc::fuzz::all_targets()) {
    INFO(target.name);
    CHECK(fs::is_directory(fs::path(QUANTC_SOURCE_DIR) / "tests/fuzz/corpus" / target.name));
  }
  CHECK(quantc::fuzz::all_targets().size() == 6);
}
