// The harness of the CLI tests: runs the built quantc binary and reads what it wrote.
#pragma once

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/io/Npy.h"
#include "tests/ProcessFolder.h"

namespace fs = std::filesystem;
using quantc::runtime::HostBuffer;
using quantc::runtime::NpyArray;

namespace quantc_cli_test {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

/// Runs quantc with `arguments`; `environment` ("NAME=value ") prefixes the command. The
/// kernel cache defaults to one in the build tree, so tests never touch ~/.cache.
inline Result run_quantc(const std::string& arguments, const std::string& environment = "") {
  const std::string test_cache = "QUANTC_CACHE_DIR=" + std::string(QUANTC_BINARY_DIR) + "/test-kernel-cache ";
  std::string command = test_cache + environment + std::string(QUANTC_CLI_PATH) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char chunk[4096];
  while (std::size_t read = fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, read);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline fs::path scratch_dir() {
  return quantc_test::temporary_process_folder("quantc_cli_tests_");
}

inline std::string write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

inline std::string spec_path(const std::string& name) { return std::string(QUANTC_SOURCE_DIR) + "/examples/specs/" + name; }

template <class T>
inline std::string write_npy(const fs::path& path, quantc::ir::ScalarType element, const std::vector<T>& values) {
  return write_text(path, quantc::runtime::to_npy_bytes({HostBuffer::from(element, values), {}}));
}

inline std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

}  // namespace quantc_cli_test

using namespace quantc_cli_test;

