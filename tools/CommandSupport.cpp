#include "tools/CommandSupport.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace quantc::tools {

ir::ops::OpSpec load_spec(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw CommandError(fmt::format("cannot read spec file '{}'", path));
  std::string text(std::istreambuf_iterator<char>(file), {});
  return ir::ops::parse_spec(text, path);
}

ptx::Target resolve_target(const std::optional<std::string>& command_line, const ir::ops::OpSpec& spec) {
  try {
    if (command_line) return ptx::parse_target(*command_line);
    if (spec.target) return ptx::parse_target(*spec.target);
  } catch (const std::invalid_argument& error) {
    throw CommandError(error.what());
  }
  return ptx::default_target();
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::path temporary = directory / fmt::format(".{}.tmp.{}", target.filename().string(), ::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw CommandError(fmt::format("cannot write '{}': folder missing or not writable", path));
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.flush();
    if (!file) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw CommandError(fmt::format("cannot write '{}': disk full or I/O error", path));
    }
  }
  std::error_code error;
  fs::rename(temporary, target, error);
  if (error) {
    fs::remove(temporary, error);
    throw CommandError(fmt::format("cannot write '{}': {}", path, error.message()));
  }
}

std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& option) {
  auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw CommandError(fmt::format("{} expects NAME=FILE.npy, got '{}'", option, text));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

}  // namespace quantc::tools
