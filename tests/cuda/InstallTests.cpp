// Installs the build tree into a temporary prefix, then configures, builds and runs
// examples/embed against it with find_package(quantc). Slow (a full CMake project):
// tagged [install].
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include "tests/ProcessFolder.h"

namespace fs = std::filesystem;

namespace {
/// Runs `command`, appending its output to `log`; returns the exit status.
int run(const std::string& command, const fs::path& log) {
  const std::string redirected = fmt::format("{} >> '{}' 2>&1", command, log.string());
  const int status = std::system(redirected.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}
}  // namespace

/// Installs `component` ("" for the default: the static flavor) into `work`/prefix, then
/// configures, builds and runs examples/embed against it. Returns the prefix and the log.
std::pair<fs::path, std::string> install_and_embed(const fs::path& work, const std::string& component) {
  const fs::path prefix = work / "prefix";
  const fs::path build = work / "build";
  const fs::path log = work / "log.txt";
  const std::string cmake = QUANTC_CMAKE_COMMAND;
  const std::string only = component.empty() ? "" : fmt::format(" --component {}", component);
  REQUIRE(run(fmt::format("'{}' --install '{}'{} --prefix '{}'", cmake, QUANTC_BINARY_DIR, only, prefix.string()), log) ==
          0);
  CHECK(fs::exists(prefix / "lib/cmake/quantc/quantcConfig.cmake"));
  CHECK(fs::exists(prefix / "include/quantc/ir/Builder.h"));
  CHECK(fs::exists(prefix / "include/quantc/runtime/backends/cuda/Launch.h"));
  // Same compiler and sanitizer flags as the installed libraries (empty flags when not sanitized).
  const int configured =
      run(fmt::format("'{}' -S '{}/examples/embed' -B '{}' -G Ninja -DCMAKE_PREFIX_PATH='{}' "
                      "-DCMAKE_CXX_COMPILER='{}' -DCMAKE_CXX_FLAGS='{}'",
                      cmake, QUANTC_SOURCE_DIR, build.string(), prefix.string(), QUANTC_CXX_COMPILER,
                      QUANTC_CONSUMER_CXX_FLAGS),
          log);
  INFO(read_all(log));
  REQUIRE(configured == 0);
  REQUIRE(run(fmt::format("'{}' --build '{}'", cmake, build.string()), log) == 0);
  REQUIRE(run(fmt::format("'{}/quantc_embed_example'", build.string()), log) == 0);
  const std::string output = read_all(log);
  CHECK_THAT(output, Catch::Contains("built program axpy"));
  CHECK_THAT(output, Catch::Contains("host check: ok"));
  // Every backend of the registry is reachable from an installed tree.
  CHECK_THAT(output, Catch::Contains("reference backend: matches") && Catch::Contains("emulator backend: matches"));
  // No installed CMake file names a path of the machine that built quantc.
  for (const auto& entry : fs::directory_iterator(prefix / "lib/cmake/quantc")) {
    const std::string text = read_all(entry.path());
    INFO(entry.path());
    CHECK_THAT(text, !Catch::Contains("/usr/") && !Catch::Contains(QUANTC_BINARY_DIR) &&
                         !Catch::Contains(QUANTC_SOURCE_DIR));
  }
  return {prefix, output};
}

TEST_CASE("an installed quantc is usable from another CMake project", "[install]") {
  const fs::path work = quantc_test::temporary_process_folder("quantc-install-test-");
  const auto [prefix, output] = install_and_embed(work, "");
  CHECK(fs::exists(prefix / "lib/libquantc_ir.a"));
  CHECK_FALSE(fs::exists(prefix / "lib/libquantc.so"));
}

TEST_CASE("the shared flavor installs libquantc.so whose package needs only nlohmann_json and cuda.h", "[install]") {
  const fs::path work = quantc_test::temporary_process_folder("quantc-install-shared-test-");
  const auto [prefix, output] = install_and_embed(work, "shared");
  CHECK(fs::exists(prefix / "lib/libquantc.so"));
  CHECK_FALSE(fs::exists(prefix / "lib/libquantc_ir.a"));
  const std::string config = read_all(prefix / "lib/cmake/quantc/quantcConfig.cmake");
  CHECK_THAT(config, Catch::Contains("find_dependency(nlohmann_json 3)") && Catch::Contains("find_dependency(CUDAToolkit)"));
  for (const char* private_dependency : {"fmt", "OpenSSL", "LLVM", "NvJitLink"}) {
    INFO(private_dependency);
    CHECK_THAT(config, !Catch::Contains(private_dependency));
  }
  // The example links the shared library, not the archives.
  const fs::path log = work / "needed.txt";
  REQUIRE(run(fmt::format("readelf -d '{}'", (work / "build/quantc_embed_example").string()), log) == 0);
  CHECK_THAT(read_all(log), Catch::Contains("libquantc.so"));
}
