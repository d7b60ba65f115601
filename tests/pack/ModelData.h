// The real-model test data (all-MiniLM-L6-v2, fetched by scripts/fetch_model.sh into the
// git-ignored data/ folder). A test that needs it fails when it is absent, naming the
// script, so a test run cannot silently pass without the real model; setting
// QUANTC_SKIP_MODEL_TESTS=1 turns the failure into a logged skip.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace quantc::test {

/// data/models/all-MiniLM-L6-v2/model.safetensors under the source tree, or nullopt
/// after a WARN when it is absent and QUANTC_SKIP_MODEL_TESTS=1; FAILs the test (with
/// the fix) when it is absent otherwise.
inline std::optional<std::filesystem::path> minilm_model_path() {
  const std::filesystem::path model =
      std::filesystem::path(QUANTC_SOURCE_DIR) / "data/models/all-MiniLM-L6-v2/model.safetensors";
  if (std::filesystem::exists(model)) return model;
  const char* skip = std::getenv("QUANTC_SKIP_MODEL_TESTS");
  if (skip && std::string(skip) == "1") {
    WARN("SKIPPED (QUANTC_SKIP_MODEL_TESTS=1): " << model << " absent");
    return std::nullopt;
  }
  FAIL(model << " is absent: run scripts/fetch_model.sh (or set QUANTC_SKIP_MODEL_TESTS=1 to skip real-model tests)");
  return std::nullopt;
}

}  // namespace quantc::test
