// Helpers for the tests that run nvcc-compiled kernels in the emulator: compile
// kernels/<name>.cu to PTX for an architecture, and move typed arrays in and out of
// DeviceBuffers.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator::testing {

inline std::string find_nvcc() {
  if (std::filesystem::exists(QUANTC_NVCC)) return QUANTC_NVCC;
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return "";
}

/// True when QUANTC_REQUIRE_NVCC=1 (CI's .ci/run): a missing nvcc fails the nvcc tests
/// instead of skipping them.
inline bool nvcc_required() {
  const char* required = std::getenv("QUANTC_REQUIRE_NVCC");
  return required != nullptr && std::string(required) == "1";
}

/// The PTX of kernels/<name>.cu compiled with `nvcc -ptx -arch=<arch> -O3`, or ""
/// (with a warning; a failure under QUANTC_REQUIRE_NVCC=1) when nvcc is unavailable.
/// A failed compile fails the test and prints nvcc's log. Each (name, arch) is
/// compiled once per test run.
inline std::string compile(const std::string& name, const std::string& arch = "sm_80") {
  static std::map<std::string, std::string> cache;
  const std::string key = name + "." + arch;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    if (nvcc_required()) {
      FAIL("nvcc not found (neither " QUANTC_NVCC " nor on PATH) and QUANTC_REQUIRE_NVCC=1: cannot compile the nvcc "
           "validation kernel "
           << name);
    }
    WARN("nvcc not found (neither " QUANTC_NVCC " nor on PATH): skipping the nvcc validation kernel " << name
                                                                         << "; set QUANTC_REQUIRE_NVCC=1 to fail instead");
    return "";
  }
  std::filesystem::path directory = std::filesystem::path(QUANTC_BINARY_DIR) / "emulator_nvcc_ptx";
  std::filesystem::create_directories(directory);
  std::filesystem::path source = std::filesystem::path(QUANTC_EMULATOR_KERNELS) / (name + ".cu");
  std::filesystem::path output = directory / (key + ".ptx");
  std::filesystem::path log = directory / (key + ".log");
  std::string command = "\"" + nvcc + "\" -ptx -arch=" + arch + " -O3 \"" + source.string() + "\" -o \"" +
                        output.string() + "\" > \"" + log.string() + "\" 2>&1";
  int status = std::system(command.c_str());
  std::ifstream log_stream(log);
  std::stringstream log_text;
  log_text << log_stream.rdbuf();
  INFO("nvcc command: " << command);
  INFO("nvcc log: " << log_text.str());
  REQUIRE(status == 0);
  std::ifstream stream(output);
  std::stringstream text;
  text << stream.rdbuf();
  cache[key] = text.str();
  return cache[key];
}

template <class T>
DeviceBuffer buffer_of(const std::string& name, const std::vector<T>& values) {
  DeviceBuffer buffer{name, std::vector<std::uint8_t>(values.size() * sizeof(T))};
  std::memcpy(buffer.bytes.data(), values.data(), buffer.bytes.size());
  return buffer;
}

template <class T>
std::vector<T> values_of(const DeviceBuffer& buffer) {
  std::vector<T> values(buffer.bytes.size() / sizeof(T));
  std::memcpy(values.data(), buffer.bytes.data(), buffer.bytes.size());
  return values;
}

}  // namespace quantc::runtime::emulator::testing
