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

TEST_CASE("an installed quantc is usable from another CMake project", "[install]") {
  const fs::path work = quantc_test::temporary_process_folder("quantc-install-test-");
  const fs::path prefix = work / "prefix";
  const fs::path build = work / "build";
  const fs::path log = work / "log.txt";
  const std::string cmake = QUANTC_CMAKE_COMMAND;

  REQUIRE(run(fmt::format("'{}' --install '{}' --prefix '{}'", cmake, QUANTC_BINARY_DIR, prefix.string()), log) == 0);
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
  fs::remove_all(work);
}
