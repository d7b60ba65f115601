#include "ptx/Ptxas.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace quantc::ptx {

namespace fs = std::filesystem;

namespace {

bool is_executable(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

/// A temporary directory removed when this object goes away.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "quantc-ptxas-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) {
      throw PtxasError(fmt::format("cannot create a temporary directory from {}: {}", pattern, std::strerror(errno)));
    }
    path_ = buffer.data();
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) throw PtxasError(fmt::format("cannot write {}", path.string()));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs `argv` with stdout and stderr both redirected to `log_path`; returns the exit
/// status (-1 when the process died from a signal).
int spawn_and_wait(const std::vector<std::string>& argv, const fs::path& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> arguments;
  for (const std::string& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);
  pid_t child = 0;
  int spawn_error = ::posix_spawn(&child, arguments[0], &actions, nullptr, arguments.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    throw PtxasError(fmt::format("cannot start {}: {}", argv[0], std::strerror(spawn_error)));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw PtxasError(fmt::format("waiting for {} failed: {}", argv[0], std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::optional<std::string> find_ptxas() {
  if (const char* path_variable = std::getenv("PATH")) {
    std::string_view remaining = path_variable;
    while (!remaining.empty()) {
      std::size_t colon = remaining.find(':');
      std::string_view directory = remaining.substr(0, colon);
      remaining = colon == std::string_view::npos ? std::string_view() : remaining.substr(colon + 1);
      if (directory.empty()) continue;
      fs::path candidate = fs::path(directory) / "ptxas";
      if (is_executable(candidate)) return candidate.string();
    }
  }
#ifdef QUANTC_CUDA_BIN_DIR
  fs::path toolkit_candidate = fs::path(QUANTC_CUDA_BIN_DIR) / "ptxas";
  if (is_executable(toolkit_candidate)) return toolkit_candidate.string();
#endif
  return std::nullopt;
}

bool ptxas_available() { return find_ptxas().has_value(); }

void parse_ptxas_log(std::string_view log, PtxasResult& result) {
  result.functions = parse_ptxas_report(log);
  const ResourceTotals totals = total_resources(result.functions);
  result.registers = totals.registers;
  result.spill_store_bytes = totals.spill_store_bytes;
  result.spill_load_bytes = totals.spill_load_bytes;
}

std::vector<std::string> ptxas_options(int optimization_level, AssemblyMode mode) {
  if (optimization_level < 0 || optimization_level > 3) {
    throw std::invalid_argument(
        fmt::format("ptxas optimization level {} is out of range; use 0, 1, 2 or 3", optimization_level));
  }
  // --compile-only: nvJitLink always assembles PTX as a relocatable object, and ptxas's
  // whole-program mode allocates registers differently; see the docstring.
  std::vector<std::string> options = {"-v", fmt::format("-O{}", optimization_level)};
  if (mode == AssemblyMode::Relocatable) options.push_back("--compile-only");
  return options;
}

PtxasResult run_ptxas(std::string_view ptx, const Target& target, int optimization_level, AssemblyMode mode) {
  std::vector<std::string> argv = ptxas_options(optimization_level, mode);  // checks the level before any work
  std::optional<std::string> ptxas = find_ptxas();
  if (!ptxas) {
    std::string toolkit_directory = "(none configured)";
#ifdef QUANTC_CUDA_BIN_DIR
    toolkit_directory = QUANTC_CUDA_BIN_DIR;
#endif
    throw PtxasError(fmt::format(
        "ptxas not found on PATH nor in the CUDA toolkit bin directory {}; install the CUDA toolkit or add its "
        "bin directory to PATH",
        toolkit_directory));
  }
  TemporaryDirectory directory;
  const fs::path ptx_path = directory.path() / "kernel.ptx";
  const fs::path object_path = directory.path() / "kernel.o";
  const fs::path log_path = directory.path() / "ptxas.log";
  write_file(ptx_path, ptx);
  argv.insert(argv.begin(), *ptxas);
  argv.insert(argv.end(), {"--gpu-name", target.name(), ptx_path.string(), "-o", object_path.string()});
  PtxasResult result;
  for (const std::string& argument : argv) result.command += (result.command.empty() ? "" : " ") + argument;
  result.exit_status = spawn_and_wait(argv, log_path);
  result.success = result.exit_status == 0;
  result.log = read_file(log_path);
  parse_ptxas_log(result.log, result);
  return result;
}

}  // namespace quantc::ptx
